/**
 * `tessera controllers` from localhost/tessera, run as the Deployment in manifests/ says
 * (user 65532, no capabilities, read-only root) with the tessera-controllers ServiceAccount's
 * token — never admin credentials — against etcd + kube-apiserver containers on which
 * manifests/ were applied with kubectl. Proves those permissions suffice to write knp.default.*
 * policies (which admission reserves for exactly that ServiceAccount), kns.<ns> profiles and
 * WorkloadEndpoints, and that two replicas elect one leader and the other takes over the
 * Lease when the leader's container is stopped.
 */
import { randomBytes } from 'node:crypto';

import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pollUntil } from '../controlplane/poll-until.ts';
import { ClusterNetwork } from '../runner/network.ts';
import { containersContext, type ContainersContext } from './context.ts';
import { API_NODE_ADDRESS, ContainerControlPlane, TESSERA_NAMESPACE } from './control-plane-containers.ts';
import { containerForTemplate, onlyContainer, readPodTemplate, waitPodReady } from './manifest-pod.ts';

const run = randomBytes(3).toString('hex');
const NS = `tc-${run}`;
const NODE = `tc-node-${run}`;
const METRICS_PORT = 9094;

let ctx: ContainersContext;
let cp: ContainerControlPlane | undefined;
let template: V1PodTemplateSpec;
let saDir: string;
const replicas = new Map<string, StartedTestContainer>();
/** Each replica's node: the Deployment is host-networked, so a replica's identity starts with its node's name. */
const replicaNode = new Map<string, string>();
const logs = new Map<string, string[]>();
/** Node network namespaces for the host-networked replicas, one node each (172.31.255.1, .2). */
const network = new ClusterNetwork();

async function startReplica(podName: string, node: string): Promise<StartedTestContainer> {
  const lines: string[] = [];
  logs.set(podName, lines);
  const hostNetwork = template.spec?.hostNetwork === true;
  if (hostNetwork && !network.nodes.has(node)) {
    network.addNodes([node]);
    await cp!.connectNode(network.nodeNs(node), `172.31.255.${[...network.nodes.keys()].indexOf(node) + 1}`);
  }
  const container = await containerForTemplate(template, {
    podName,
    nodeName: node,
    serviceAccountDir: saDir,
    ...(hostNetwork ? { nodeNetns: network.nodeNs(node), apiAddress: API_NODE_ADDRESS } : { apiAddress: cp!.apiserverBridgeAddress }),
    runId: ctx.runId,
    onLog: (line) => lines.push(line),
  }).start();
  replicas.set(podName, container);
  replicaNode.set(podName, hostNetwork ? node : podName);
  return container;
}

function calico(plural: string, namespace: string) {
  return cp!.admin
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace, plural }) as Promise<{
    items: Array<{ metadata: { name: string }; spec?: Record<string, unknown> }>;
  }>;
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await cp!.admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'tessera-controllers', namespace: TESSERA_NAMESPACE });
  return lease.spec?.holderIdentity ?? undefined;
}

/** The replica (pod name) whose identity (`<hostname>_<random>`) holds the Lease, if any. */
async function leader(): Promise<string | undefined> {
  const holder = await leaseHolder().catch(() => undefined);
  return [...replicas.keys()].find((pod) => holder?.startsWith(`${replicaNode.get(pod)}_`) === true);
}

function denyAllPolicy(name: string) {
  return {
    metadata: { name, namespace: NS },
    spec: { podSelector: { matchLabels: { app: 'server' } }, policyTypes: ['Ingress'], ingress: [{ _from: [{ podSelector: { matchLabels: { role: 'client' } } }] }] },
  };
}

describe('tessera controllers in containers, with the manifests RBAC', () => {
  beforeAll(async () => {
    ctx = containersContext();
    cp = await ContainerControlPlane.start(ctx);
    await cp.installManifests(ctx.tesseraImage);
    template = await readPodTemplate(cp.admin, 'Deployment', 'tessera-controllers');
    saDir = await cp.serviceAccountDir('tessera-controllers');
    const a = await startReplica(`tessera-controllers-${run}-a`, `${NODE}-a`);
    const b = await startReplica(`tessera-controllers-${run}-b`, `${NODE}-b`);
    // Both replicas are ready while one leads and the other waits (warm caches).
    await Promise.all(
      [a, b].map((c, i) => waitPodReady(c, METRICS_PORT, `controllers replica ${i}`, () => [...logs.values()][i] ?? [])),
    );
  });

  afterAll(async () => {
    for (const [pod, c] of replicas) {
      await c.stop({ timeout: 2_000 }).catch(() => undefined);
      if (process.env['TESSERA_CONTAINERS_LOGS'] !== undefined) process.stderr.write(`--- ${pod}\n${logs.get(pod)?.join('\n')}\n`);
    }
    await cp?.stop();
    network.destroy();
  });

  it('runs the image the applied Deployment names, as 65532 with no capabilities', async () => {
    const container = onlyContainer(template);
    expect(container.image).toBe(ctx.tesseraImage);
    const [first] = replicas.values();
    const { output } = await first!.exec(['sh', '-c', 'id -u; grep CapEff /proc/1/status; touch /app/x 2>&1 || true']);
    const [uid, capEff, touch] = output.trim().split('\n');
    expect(uid).toBe('65532');
    expect(capEff).toMatch(/CapEff:\s+0+$/);
    expect(touch).toMatch(/Read-only file system/);
  });

  it('writes knp.default.* policies, kns. profiles and WorkloadEndpoints with only its ServiceAccount', async () => {
    const core = cp!.admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS, labels: { team: 'tc' } } } });
    await cp!.admin.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({ namespace: NS, body: denyAllPolicy('tc-web') });
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'web', namespace: NS, labels: { app: 'server' } },
        spec: { nodeName: NODE, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    await core.patchNamespacedPodStatus(
      { name: 'web', namespace: NS, body: { status: { phase: 'Running', podIP: '10.65.7.7', podIPs: [{ ip: '10.65.7.7' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    await pollUntil(async () => ((await calico('networkpolicies', NS)).items.some((p) => p.metadata.name === 'knp.default.tc-web') ? true : undefined), {
      description: `knp.default.tc-web in ${NS}`,
      timeoutMs: 60_000,
    });
    // Each kind has its own controller: the profile may come after the policy.
    await pollUntil(
      async () => {
        const profiles = (await cp!.admin
          .makeApiClient(CustomObjectsApi)
          .listClusterCustomObject({ group: 'projectcalico.org', version: 'v3', plural: 'profiles' })) as { items: Array<{ metadata: { name: string } }> };
        return profiles.items.some((p) => p.metadata.name === `kns.${NS}`) ? true : undefined;
      },
      { description: `profile kns.${NS}`, timeoutMs: 60_000 },
    );
    const endpoint = await pollUntil(
      async () => (await calico('workloadendpoints', NS)).items.find((w) => w.spec?.['pod'] === 'web'),
      { description: `the WorkloadEndpoint of ${NS}/web`, timeoutMs: 60_000 },
    );
    expect(endpoint.spec).toMatchObject({ node: NODE, pod: 'web', ipNetworks: ['10.65.7.7/32'] });
    // The ServiceAccount's RBAC was enough: no request was refused.
    expect([...logs.values()].flat().filter((line) => /forbidden/i.test(line))).toEqual([]);
  });

  it('elects one leader; when its container stops, the other replica takes the Lease and keeps converting', async () => {
    const first = await pollUntil(leader, { description: 'a replica to hold the Lease', timeoutMs: 60_000 });
    const other = [...replicas.keys()].find((pod) => pod !== first)!;
    await replicas.get(first)!.stop({ timeout: 10_000 });
    replicas.delete(first);
    const next = await pollUntil(async () => ((await leader()) === other ? other : undefined), {
      description: `${other} to take the Lease from ${first}`,
      // The Lease lasts 15 s (manifests/30-controllers.yaml); a SIGTERM'd leader may release it sooner.
      timeoutMs: 60_000,
    });
    expect(next).toBe(other);
    await cp!.admin.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({ namespace: NS, body: denyAllPolicy('tc-after-failover') });
    await pollUntil(
      async () => ((await calico('networkpolicies', NS)).items.some((p) => p.metadata.name === 'knp.default.tc-after-failover') ? true : undefined),
      { description: `knp.default.tc-after-failover written by ${other}`, timeoutMs: 60_000 },
    );
  });
});
