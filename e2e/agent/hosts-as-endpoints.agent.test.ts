/**
 * "Hosts as endpoints" in the process runner, on the real control plane it starts: scenario
 * nodes get their addresses in their node namespaces, their labels and InternalIPs on their
 * Node objects, servers for their hostPorts; probes from and to nodes are real connections
 * (e2e/runner/testdata/hosts-as-endpoints.json: no HostEndpoint, so host traffic is not policed;
 * IPv4 and IPv6).
 * After the scenario everything is undone. A HostEndpoint object is applied like any other, or,
 * on a checkout whose manifests have no HostEndpoint CRD, fails the scenario naming it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { E2eCluster } from '../runner/cluster.ts';
import { REPO_ROOT } from '../runner/processes.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import { loadScenarioFiles, nodeAddress, type Scenario } from '../runner/scenario.ts';

const FILE = join(REPO_ROOT, 'e2e/runner/testdata/hosts-as-endpoints.json');
const SCENARIOS = loadScenarioFiles([FILE]).flatMap((f) => [...f.scenarios]);

let cluster: E2eCluster;

beforeAll(async () => {
  // As main.ts starts them: a node with an IPv6 address of its own is dual-stack.
  const dualStackNodes = [...new Set(SCENARIOS.flatMap((s) => (s.nodes ?? []).filter((n) => nodeAddress(n, 6) !== undefined).map((n) => n.name)))];
  cluster = await E2eCluster.start({ dualStackNodes, log: () => undefined });
});

afterAll(async () => {
  await cluster?.close();
});

async function nodeObject(name: string): Promise<{ labels: Record<string, string>; internalIPs: string[] }> {
  const node = await cluster.admin.makeApiClient(CoreV1Api).readNode({ name });
  return { labels: node.metadata?.labels ?? {}, internalIPs: (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address) };
}

function addressesIn(node: string): string {
  return cluster.network.exec(cluster.network.nodeNs(node), ['ip', '-o', 'addr', 'show']);
}

describe('scenario nodes as endpoints (process runner, real control plane, netns, real probes)', () => {
  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s: every probe from and to a node gets its expected verdict', async (_name, scenario) => {
    const results = await new ScenarioRun(cluster, scenario, { settleMs: 20_000 }).run();
    expect(results.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to} ${r.probe.port}/${r.probe.protocol ?? 'TCP'}: got ${String(r.got)}`)).toEqual([]);
  });

  it('while a scenario runs its nodes carry its labels, InternalIPs and addresses; afterwards none of them', async () => {
    const scenario = SCENARIOS[0] as Scenario;
    const node1 = scenario.nodes?.[0];
    expect(node1?.name).toBe('node-1');
    const run = new ScenarioRun(cluster, scenario, { settleMs: 20_000 });
    try {
      await run.setUp();
      expect(await nodeObject('node-1')).toEqual({ labels: node1?.labels, internalIPs: [node1?.ip] });
      expect(addressesIn('node-1')).toContain(`${node1?.ip}/32`);
      // On the link to node-2 (the interface node-2's traffic arrives on), not only on lo.
      expect(addressesIn('node-1').split('\n').filter((l) => l.includes(`${node1?.ip}/32`)).map((l) => l.split(/\s+/)[1])).toEqual(expect.arrayContaining(['lo', 'tsn1']));
    } finally {
      await run.tearDown();
    }
    expect(await nodeObject('node-1')).toEqual({ labels: { 'kubernetes.io/hostname': 'node-1' }, internalIPs: [] });
    expect(addressesIn('node-1')).not.toContain(`${node1?.ip}/32`);
    expect(cluster.network.exec(cluster.network.nodeNs('node-2'), ['ip', 'route', 'show'])).not.toContain(node1?.ip);
  });

  it('a HostEndpoint is applied like any other object, or the scenario fails naming it (never skipped)', async () => {
    const hep = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'HostEndpoint',
      metadata: { name: 'node-1-all' },
      spec: { node: 'node-1', interfaceName: '*', expectedIPs: ['10.65.0.1'], profiles: ['projectcalico-default-allow'] },
    };
    const scenario: Scenario = { ...(SCENARIOS[0] as Scenario), name: 'hosts-with-a-hep', policies: [hep] };
    const crdInstalled = readFileSync(join(REPO_ROOT, 'manifests/01-crds.yaml'), 'utf8').includes('hostendpoints.projectcalico.org');
    const run = new ScenarioRun(cluster, scenario, { settleMs: 20_000 });
    if (crdInstalled) {
      // A `*` HostEndpoint with the allow-all profile and no policy admits all host traffic
      // (reference §A.4, §C), and forwarded traffic too: every verdict is as without it.
      const results = await run.run();
      expect(results.length).toBe(scenario.probes?.length);
      expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}`)).toEqual([]);
    } else {
      await expect(run.run()).rejects.toThrow(/cannot apply projectcalico\.org\/v3 HostEndpoint node-1-all \(the API server has no hostendpoints\.projectcalico\.org resource: its CRD is not installed\)/);
    }
  });
});
