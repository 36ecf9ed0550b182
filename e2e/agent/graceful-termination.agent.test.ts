/**
 * Graceful termination on the real control plane (issue 12 point 3), with the runner's cluster:
 * controllers and one agent per node as processes, pods as network namespaces, real TCP.
 *
 * Pod y/b (node-2) is reachable only from x/a (node-1): a NetworkPolicy admits a, so x/c is
 * denied. An established connection a → b is open when b is deleted gracefully through the
 * API. There is no kubelet, so b stays Terminating with `deletionTimestamp` set — exactly what
 * the controllers see of a pod running its preStop hooks and draining. Calico keeps the
 * endpoint of such a pod until it is finished (workload-endpoint-builder.ts `podIsFinished`):
 * the connection keeps exchanging data and new connections still follow the policy. Once b is
 * finished (status.phase Succeeded, as the kubelet reports it), its endpoint is removed and
 * traffic to its address meets the unknown-interface drop — the connection included.
 *
 * Nothing here asserts wall-clock time: every wait is on an observable condition (the
 * controllers' work queue drained after a later event, the WorkloadEndpoint's presence, the
 * agent's applied generation) with a deadline.
 */
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { workloadEndpointName } from '../../src/convert/workload-endpoint-builder.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { E2eCluster } from '../runner/cluster.ts';
import { EchoServer, PersistentConnection } from '../runner/persistent-connection.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { ManifestObject, Probe, Scenario } from '../runner/scenario.ts';

const ECHO_PORT = 7000;
const PORTS = [{ name: 'http', containerPort: 80, protocol: 'TCP' as const }];
const pod = (namespace: string, name: string, ip: string, node: string) => ({ namespace, name, ip, node, labels: { pod: name }, containerPorts: PORTS });
const ns = (name: string) => ({ name, labels: { 'kubernetes.io/metadata.name': name, ns: name } });

/** b admits only a (every port): c, and anything else, is denied. */
const ONLY_FROM_A: ManifestObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'b-only-from-a', namespace: 'y' },
  spec: {
    podSelector: { matchLabels: { pod: 'b' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } }, podSelector: { matchLabels: { pod: 'a' } } }] }],
  },
};

const SCENARIO: Scenario = {
  name: 'graceful-termination',
  namespaces: [ns('x'), ns('y')],
  pods: [pod('x', 'a', '10.68.1.10', 'node-1'), pod('x', 'c', '10.68.1.11', 'node-1'), pod('y', 'b', '10.68.2.10', 'node-2')],
  policies: [ONLY_FROM_A],
  probes: [],
};
const B_IP = '10.68.2.10';
const A_TO_B: Probe = { from: 'x/a', to: 'y/b', port: 80, expected: true };
const C_TO_B: Probe = { from: 'x/c', to: 'y/b', port: 80, expected: false };

let cluster: E2eCluster;
let run: ScenarioRun;
let core: CoreV1Api;
let objects: CustomObjectsApi;
let echo: EchoServer | undefined;
let conn: PersistentConnection | undefined;

interface Wep {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { ipNetworks?: string[] };
}

async function endpoint(namespace: string, podName: string, node: string): Promise<Wep | undefined> {
  const list = (await objects.listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace, plural: 'workloadendpoints' })) as { items: Wep[] };
  return list.items.find((w) => w.metadata.name === workloadEndpointName(node, podName));
}

/** A labelled sample from the controllers' /metrics, e.g. `workqueue_depth{name="workload-endpoints"}`. */
async function controllersMetric(name: string, queue: string): Promise<number | undefined> {
  const { body } = await cluster.controllers!.get('/metrics');
  const m = new RegExp(`^${name}\\{name="${queue}"\\} (\\S+)$`, 'm').exec(body);
  return m === null ? undefined : Number(m[1]);
}

/**
 * Waits until the WorkloadEndpoint controller has reconciled every pod event up to now: a
 * later event (a label on x/c) is applied to c's endpoint — so the pod informer delivered
 * everything before it, in resourceVersion order — and then its work queue is empty with
 * nothing in progress, so the keys those events queued (FIFO, before c's) are done too.
 */
async function endpointControllerCaughtUp(marker: string): Promise<void> {
  await run.applyStep({ podLabels: [{ namespace: 'x', name: 'c', labels: { pod: 'c', marker } }], probes: [] });
  await pollUntil(async () => ((await endpoint('x', 'c', 'node-1'))?.metadata.labels?.['marker'] === marker ? true : undefined), {
    description: `x/c's WorkloadEndpoint to carry marker=${marker}`,
    timeoutMs: 30_000,
  });
  await pollUntil(
    async () => {
      const [depth, running] = await Promise.all([controllersMetric('workqueue_depth', 'workload-endpoints'), controllersMetric('workqueue_longest_running_processor_seconds', 'workload-endpoints')]);
      return depth === 0 && running === 0 ? true : undefined;
    },
    { description: 'the workload-endpoints work queue to be drained', timeoutMs: 30_000, intervalMs: 50 },
  );
}

async function agentGenerations(node: string): Promise<{ sent: number; applied: number }> {
  const agent = cluster.agents.get(node)!;
  const [sent, applied] = await Promise.all([agent.metric('tessera_agent_sent_generation'), agent.metric('tessera_agent_applied_generation')]);
  return { sent: sent ?? 0, applied: applied ?? 0 };
}

beforeAll(async () => {
  cluster = await E2eCluster.start({ log: () => undefined });
  core = cluster.admin.makeApiClient(CoreV1Api);
  objects = cluster.admin.makeApiClient(CustomObjectsApi);
  run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
  await run.setUp();
  await run.applyStep({ policies: SCENARIO.policies ?? [], probes: [] });
  const converged = await run.converge(0, [A_TO_B, C_TO_B]);
  expect(converged.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}: got ${r.got}`)).toEqual([]);
  echo = await EchoServer.start(cluster.network.pods.get('y/b')!, ECHO_PORT);
});

afterAll(async () => {
  conn?.close();
  echo?.stop();
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('graceful termination (real control plane, controllers and agents, netns pods, real TCP)', () => {
  it('an established connection to a terminating pod keeps working until the pod is finished; then its endpoint goes and its traffic is dropped', async () => {
    conn = await PersistentConnection.open(cluster.network.pods.get('x/a')!, B_IP, ECHO_PORT);
    expect(await conn.exchange(3_000)).toBe(true);
    const before = await endpoint('y', 'b', 'node-2');
    expect(before?.spec.ipNetworks).toEqual([`${B_IP}/32`]);

    // Delete b gracefully. No kubelet: it stays Terminating.
    await core.deleteNamespacedPod({ name: 'b', namespace: 'y', gracePeriodSeconds: 3_600 });
    const terminating = await core.readNamespacedPod({ name: 'b', namespace: 'y' });
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    await endpointControllerCaughtUp('1');
    await run.agentsIdle();

    // The endpoint — and so b's policy — stays while b terminates.
    expect(await endpoint('y', 'b', 'node-2')).toEqual(before);
    for (let i = 0; i < 5; i++) expect(await conn.exchange(3_000)).toBe(true);
    expect(await run.probeOnce(A_TO_B, 3_000)).toBe(true);
    expect(await run.probeOnce(C_TO_B)).toBe(false);
    expect(conn.closedBecause).toBeUndefined();

    // b finishes: the kubelet would report its terminal phase.
    const { sent } = await agentGenerations('node-2');
    await core.patchNamespacedPodStatus({ name: 'b', namespace: 'y', body: { status: { phase: 'Succeeded' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await pollUntil(async () => ((await endpoint('y', 'b', 'node-2')) === undefined ? true : undefined), {
      description: "y/b's WorkloadEndpoint to be deleted once b is finished",
      timeoutMs: 30_000,
    });
    await pollUntil(
      async () => {
        const g = await agentGenerations('node-2');
        return g.sent > sent && g.applied === g.sent ? true : undefined;
      },
      { description: "node-2's agent to apply the endpoint's removal", timeoutMs: 30_000, intervalMs: 20 },
    );

    // Traffic to b's address is dropped now: the established connection and new ones alike.
    expect(await conn.exchange(1_000)).toBe(false);
    expect(await run.probeOnce(A_TO_B, 1_000)).toBe(false);
    // Dropped, not reset, and it was one connection throughout.
    expect(conn.closedBecause).toBeUndefined();
    expect(echo?.accepted).toBe(1);
  });
});
