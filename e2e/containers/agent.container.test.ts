/**
 * `tessera agent` from localhost/tessera, run as the DaemonSet in manifests/ says — root with
 * capabilities dropped to NET_ADMIN, NET_RAW, SETUID and SETGID, read-only root, /run/xtables.lock and
 * /lib/modules from the host, the tessera-agent ServiceAccount's token — in the network
 * namespace of a "node" (hostNetwork). Pods are network namespaces wired to that node by
 * e2e/runner/network.ts; `tessera controllers` (a container too) turns their Pods and a
 * Kubernetes NetworkPolicy into Calico objects, and real TCP connections between the pods are
 * allowed and denied by the rules the agent container programs. When the DaemonSet sends the
 * agent to Typha (--typha-service), Typha runs on the node too, from its own Deployment
 * (e2e/containers/typha.ts).
 *
 * Also: the same container with NET_ADMIN taken away exits with status 3
 * (src/cli/node-exit-status.ts, cannot program iptables/ipset) after one error line.
 */
import { randomBytes } from 'node:crypto';

import {
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
import { ClusterNetwork, type PodNet } from '../runner/network.ts';
import { PodServer } from '../runner/pod-server.ts';
import { containersContext, type ContainersContext } from './context.ts';
import { API_NODE_ADDRESS, ContainerControlPlane } from './control-plane-containers.ts';
import { containerForTemplate, containerState, onlyContainer, readPodTemplate, waitPodReady } from './manifest-pod.ts';
import { podmanLogs } from './podman.ts';
import { startNodeTypha, typhaServiceOf } from './typha.ts';

const run = randomBytes(3).toString('hex');
const NS = `tc-${run}`;
const NODE = `tc-node-${run}`;
/** ClusterNetwork gives its first node 172.31.255.1 (e2e/runner/network.ts). */
const NODE_ADDRESS = '172.31.255.1';
const PORT = 8080;
const CONTROLLERS_METRICS_PORT = 9094;
const AGENT_METRICS_PORT = 9095;

const PODS = [
  { name: 'server', ip: '10.65.0.10', labels: { app: 'server' } },
  { name: 'allowed', ip: '10.65.0.11', labels: { role: 'allowed' } },
  { name: 'denied', ip: '10.65.0.12', labels: { role: 'denied' } },
] as const;

let ctx: ContainersContext;
let cp: ContainerControlPlane | undefined;
const network = new ClusterNetwork();
const containers: StartedTestContainer[] = [];
const servers = new Map<string, PodServer>();
const logs = new Map<string, string[]>();
let agentTemplate: V1PodTemplateSpec;
let agentSaDir: string;
let agentContainer: StartedTestContainer | undefined;

function collect(name: string): (line: string) => void {
  const lines: string[] = [];
  logs.set(name, lines);
  return (line) => lines.push(line);
}

async function probe(from: string, to: string): Promise<boolean> {
  const target = PODS.find((p) => p.name === to)!;
  return servers.get(from)!.probe('TCP', target.ip, PORT, 1_000);
}

async function startAgent(node: string, nodeNetns: string, capabilities?: readonly string[]): Promise<StartedTestContainer> {
  const container = await containerForTemplate(agentTemplate, {
    podName: `tessera-agent-${node}`,
    nodeName: node,
    serviceAccountDir: agentSaDir,
    apiAddress: API_NODE_ADDRESS,
    nodeNetns,
    runId: ctx.runId,
    ...(capabilities === undefined ? {} : { capabilities }),
    onLog: collect(`agent ${node}`),
  }).start();
  containers.push(container);
  return container;
}

/** The node's ruleset and IP sets and the agent's last log lines, for a failure message. */
function nodeDiagnostics(): string {
  const ns = network.nodeNs(NODE);
  const show = (args: string[]): string => {
    try {
      return network.exec(ns, args);
    } catch (err) {
      return `${args.join(' ')} failed: ${(err as Error).message}`;
    }
  };
  return [
    `--- iptables-nft-save -t filter in ${ns}`,
    show(['iptables-nft-save', '-t', 'filter']),
    `--- ipset list in ${ns}`,
    show(['ipset', 'list']),
    '--- agent log (tail)',
    ...(logs.get(`agent ${NODE}`) ?? []).slice(-15),
  ].join('\n');
}

describe('tessera agent in a container on a node, with the manifests capabilities', () => {
  beforeAll(async () => {
    ctx = containersContext();
    cp = await ContainerControlPlane.start(ctx);
    await cp.installManifests(ctx.tesseraImage);

    network.addNodes([NODE]);
    await cp.connectNode(network.nodeNs(NODE), NODE_ADDRESS);
    // The controllers Deployment is host-networked: on the node, like the agent.
    const controllersTemplate = await readPodTemplate(cp.admin, 'Deployment', 'tessera-controllers');
    const controllers = await containerForTemplate(controllersTemplate, {
      podName: `tessera-controllers-${run}`,
      nodeName: NODE,
      serviceAccountDir: await cp.serviceAccountDir('tessera-controllers'),
      ...(controllersTemplate.spec?.hostNetwork === true ? { nodeNetns: network.nodeNs(NODE), apiAddress: API_NODE_ADDRESS } : { apiAddress: cp.apiserverBridgeAddress }),
      runId: ctx.runId,
      onLog: collect('controllers'),
    }).start();
    containers.push(controllers);
    agentTemplate = await readPodTemplate(cp.admin, 'DaemonSet', 'tessera-agent');
    agentSaDir = await cp.serviceAccountDir('tessera-agent');
    // The DaemonSet may send the agent to Typha (manifests/45-typha.yaml): run it on the node.
    const typhaService = typhaServiceOf(agentTemplate);
    if (typhaService !== undefined) {
      const typha = await startNodeTypha(cp.admin, typhaService, NODE_ADDRESS, {
        nodeName: NODE,
        nodeNetns: network.nodeNs(NODE),
        serviceAccountDir: await cp.serviceAccountDir(typhaService.name),
        apiAddress: API_NODE_ADDRESS,
        runId: ctx.runId,
      });
      containers.push(typha.container);
      logs.set('typha', typha.logs);
    }
    const agent = await startAgent(NODE, network.nodeNs(NODE));
    agentContainer = agent;
    await waitPodReady(controllers, CONTROLLERS_METRICS_PORT, 'the controllers', () => logs.get('controllers') ?? []);
    // Ready = the first in-sync apply is done.
    await waitPodReady(agent, AGENT_METRICS_PORT, `the agent on ${NODE}`, () => logs.get(`agent ${NODE}`) ?? []);

    const core = cp.admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    for (const p of PODS) {
      const net: PodNet = network.addPod(NS, p.name, p.ip, NODE);
      servers.set(p.name, await PodServer.start(net, p.name === 'server' ? [{ port: PORT, protocol: 'TCP' }] : []));
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: p.name, namespace: NS, labels: { ...p.labels } },
          spec: { nodeName: NODE, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: PORT }] }] },
        },
      });
      await core.patchNamespacedPodStatus(
        { name: p.name, namespace: NS, body: { status: { phase: 'Running', podIP: p.ip, podIPs: [{ ip: p.ip }] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    const calico = cp.admin.makeApiClient(CustomObjectsApi);
    await pollUntil(
      async () => {
        const { items } = (await calico.listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: NS, plural: 'workloadendpoints' })) as {
          items: unknown[];
        };
        return items.length === PODS.length ? true : undefined;
      },
      { description: `a WorkloadEndpoint for each of the ${PODS.length} pods`, timeoutMs: 60_000 },
    );
  });

  afterAll(async () => {
    for (const s of servers.values()) s.stop();
    for (const c of containers) await c.stop({ timeout: 2_000 }).catch(() => undefined);
    if (process.env['TESSERA_CONTAINERS_LOGS'] !== undefined) {
      for (const [name, lines] of logs) process.stderr.write(`--- ${name}\n${lines.join('\n')}\n`);
    }
    network.destroy();
    await cp?.stop();
  });

  it('runs the image the applied DaemonSet names, as root with only NET_ADMIN, NET_RAW, SETUID and SETGID', async () => {
    expect(onlyContainer(agentTemplate).image).toBe(ctx.tesseraImage);
    const agent = agentContainer!;
    const { output } = await agent.exec(['sh', '-c', 'id -u; grep CapEff /proc/1/status']);
    const [uid, capEff] = output.trim().split('\n');
    expect(uid).toBe('0');
    // CAP_NET_ADMIN (12), CAP_NET_RAW (13), and CAP_SETGID (6) and CAP_SETUID (7) for tcpdump to drop root.
    expect(capEff).toMatch(/CapEff:\s+0*30c0$/);
  });

  it('allows and then denies real TCP connections between pods as a NetworkPolicy says', async () => {
    await pollUntil(async () => ((await probe('allowed', 'server')) && (await probe('denied', 'server')) ? true : undefined), {
      description: 'both clients to reach the server before any policy',
      timeoutMs: 30_000,
    });
    await cp!.admin.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({
      namespace: NS,
      body: {
        metadata: { name: 'server-from-allowed', namespace: NS },
        spec: {
          podSelector: { matchLabels: { app: 'server' } },
          policyTypes: ['Ingress'],
          ingress: [{ _from: [{ podSelector: { matchLabels: { role: 'allowed' } } }], ports: [{ protocol: 'TCP', port: PORT }] }],
        },
      },
    });
    await pollUntil(async () => (!(await probe('denied', 'server')) && (await probe('allowed', 'server')) ? true : undefined), {
      description: 'the denied client to be blocked and the allowed one let through by the policy',
      timeoutMs: 60_000,
    }).catch(async (err: unknown) => {
      const policies = await cp!.admin
        .makeApiClient(CustomObjectsApi)
        .listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: NS, plural: 'networkpolicies' });
      throw new Error(`${(err as Error).message}\n${nodeDiagnostics()}\n--- Calico policies in ${NS}\n${JSON.stringify(policies)}`, { cause: err });
    });
    expect(await probe('allowed', 'server')).toBe(true);
    expect(await probe('denied', 'server')).toBe(false);
  });

  it('without NET_ADMIN exits 3 after one error line naming the reason', async () => {
    const node = `tc-refused-${run}`;
    network.addNodes([node]);
    const agent = await startAgent(node, network.nodeNs(node), ['NET_RAW']);
    const state = await pollUntil(
      async () => {
        const { status, exitCode } = await containerState(agent);
        return status === 'exited' ? exitCode : undefined;
      },
      { description: 'the agent without NET_ADMIN to exit', timeoutMs: 60_000 },
    );
    expect(state).toBe(3);
    // From podman's log file, not the log stream: a container that exits this fast may be gone
    // before the stream attaches. conmon writes the file asynchronously: wait for the line.
    // Tessera logs levels by name (src/runtime/logger.ts).
    const isError = (l: { level: string }) => l.level === 'error' || l.level === 'fatal';
    const parse = (text: string) =>
      text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { level: string; msg: string; reason: string });
    const lines = await pollUntil(
      async () => {
        const text = await podmanLogs(agent.getId());
        const parsed = parse(text);
        return parsed.some(isError) ? parsed : undefined;
      },
      { description: 'the refusal log line', timeoutMs: 10_000 },
    );
    const errors = lines.filter(isError);
    expect(errors).toHaveLength(1);
    const error = errors[0]!;
    expect(error.msg).toBe('refusing to start: cannot program the dataplane');
    expect(error.reason).toMatch(/NET_ADMIN|permission|not permitted/i);
    process.stderr.write(`[containers] agent without NET_ADMIN: exit ${state}: ${JSON.stringify(error)}\n`);
  });
});
