/**
 * A node whose kubelet uses iptables-legacy, end to end with the real processes (the runner's
 * cluster: kube-apiserver + etcd, `tessera controllers`, one `tessera agent`, pods as network
 * namespaces, real probes):
 *
 * - the agent detects legacy (`--iptables-backend auto`), says so in its log, and enforces a
 *   NetworkPolicy through iptables-legacy alone — iptables-nft holds none of its rules;
 * - the uninstall path — agent stopped, then `tessera cleanup` — leaves the node's iptables
 *   (both backends, both families) and IP sets exactly as they were before the agent started,
 *   foreign rules and sets included, and traffic flows unfiltered again.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { inNs, nodeStateSnapshot } from '../dataplane/node-state.ts';
import { E2eCluster } from '../runner/cluster.ts';
import { REPO_ROOT } from '../runner/processes.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { ManifestObject, Probe, Scenario } from '../runner/scenario.ts';

const NODE = 'node-1';
const PORTS = [{ name: 'http', containerPort: 80, protocol: 'TCP' as const }];
const SCENARIO: Scenario = {
  name: 'legacy-uninstall',
  namespaces: [{ name: 'lx', labels: { 'kubernetes.io/metadata.name': 'lx' } }],
  pods: [
    { namespace: 'lx', name: 'a', ip: '10.69.1.10', node: NODE, labels: { pod: 'a' }, containerPorts: PORTS },
    { namespace: 'lx', name: 'b', ip: '10.69.1.11', node: NODE, labels: { pod: 'b' }, containerPorts: PORTS },
  ],
  probes: [],
};
const DENY_INTO_A: ManifestObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'deny-into-a', namespace: 'lx' },
  spec: { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Ingress'] },
};
const B_TO_A: Probe = { from: 'lx/b', to: 'lx/a', port: 80, protocol: 'TCP', expected: false };
const A_TO_B: Probe = { from: 'lx/a', to: 'lx/b', port: 80, protocol: 'TCP', expected: true };

/**
 * kubelet's hint and some foreign rules in legacy (both families), and a foreign IP set. The
 * foreign raw rule also makes the raw table (where the agent's anti-spoofing goes) exist before
 * the agent: legacy shows a table once anyone used it, so before and after compare like for like.
 */
const LEGACY_NODE = `*mangle
:KUBE-IPTABLES-HINT - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
*filter
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP
COMMIT
*raw
-A PREROUTING -m mark --mark 0x4000/0x4000 -j NOTRACK
COMMIT
`;

let cluster: E2eCluster;
let run: ScenarioRun;

beforeAll(async () => {
  cluster = await E2eCluster.start({ refreshSeconds: 3, log: () => undefined });
});

afterAll(async () => {
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('a legacy-iptables node: tessera agent (auto) and tessera cleanup, real processes and traffic', () => {
  it('enforces through legacy only, and cleanup returns the node to exactly its state before the agent', async () => {
    cluster.network.addNodes([NODE]);
    const ns = cluster.network.nodeNs(NODE);
    for (const family of ['iptables', 'ip6tables']) inNs(ns, [`${family}-legacy-restore`, '--noflush'], LEGACY_NODE);
    inNs(ns, ['ipset', 'restore'], 'create kube-foreign hash:ip family inet\nadd kube-foreign 10.9.9.9\n');
    const before = nodeStateSnapshot(ns);

    const agent = await cluster.startAgent(NODE);
    const log = readFileSync(join(cluster.dir, `agent-${NODE}.log`), 'utf8');
    const chosen = log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['msg'] === 'programming iptables-legacy');
    expect(chosen).toMatchObject({ iptablesBackend: 'legacy', mode: 'auto' });
    expect(String(chosen?.['reason'])).toContain("kubelet's KUBE-IPTABLES-HINT chain is in iptables-legacy");

    run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
    await run.setUp();
    await run.applyStep({ policies: [DENY_INTO_A], probes: [] });
    const results = await run.converge(0, [B_TO_A, A_TO_B]);
    expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}`)).toEqual([]);
    expect(inNs(ns, ['iptables-legacy-save', '-t', 'filter'])).toMatch(/^:cali-tw-\S+ - /m);
    expect(inNs(ns, ['iptables-nft-save'])).not.toContain('cali');

    // Uninstall: the agent goes first (its rules stay), then the cleanup removes them.
    expect(await agent.stop()).toBe(0);
    cluster.agents.delete(NODE);
    expect(await run.probeOnce(B_TO_A)).toBe(false);
    const cleanup = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'cleanup', '--netns', ns], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(cleanup.stderr).toBe('');
    expect(cleanup.status).toBe(0);
    expect(nodeStateSnapshot(ns)).toBe(before);
    expect(await run.probeOnce({ ...B_TO_A, expected: true }, 3_000)).toBe(true);
  });
});
