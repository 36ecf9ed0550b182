/**
 * `tessera cleanup` (the real CLI process) on real iptables and IP sets, for each backend:
 *
 * - a node the agent's path programmed (backend detected, node claimed, calc graph → driver:
 *   IPv4 and IPv6 chains and hooks in filter, raw and mangle, selector and named-port IP sets) goes back to exactly what it
 *   held before — the foreign chains, rules and IP sets seeded first included;
 * - `--dry-run` prints the plan and changes nothing; a second run finds nothing to remove;
 * - Felix-like state (cali- chains in filter and raw, a cali40 IP set, no marker) is refused
 *   with exit 4 and left alone, and `--force` removes it and only it.
 *
 * A built-in table the agent created (an empty nft `filter`, say) is not "state": the seed
 * writes into every table the run touches, so before and after compare like for like.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { afterEach, describe, expect, it } from 'vitest';
import { CalcGraph } from '../../src/calc/index.ts';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { resolveIptablesBackend } from '../../src/dataplane/iptables/iptables-backend.ts';
import { claimNode } from '../../src/dataplane/iptables/ownership.ts';
import { NODE, defaultTier, networkPolicy, nsProfile, workload } from './harness.ts';
import { createNetns } from './netns.ts';
import { inNs, nodeStateSnapshot } from './node-state.ts';

type Backend = 'nft' | 'legacy';
const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** What someone else keeps on the node: kubelet's hint, foreign chains and rules in three tables, IP sets. */
const FOREIGN = `*mangle
:KUBE-IPTABLES-HINT - [0:0]
COMMIT
*filter
:FOREIGN-CHAIN - [0:0]
-A FOREIGN-CHAIN -p tcp --dport 22 -j ACCEPT
-A INPUT -j FOREIGN-CHAIN
-A FORWARD -m comment --comment "operator rule" -j ACCEPT
-A OUTPUT -m mark --mark 0x1 -j DROP
COMMIT
*raw
:FOREIGN-RAW - [0:0]
-A PREROUTING -j FOREIGN-RAW
COMMIT
`;

/** Felix's layout in miniature: hooks with cali: hashes into filter and raw chains, no marker. */
const FELIX = `*raw
:cali-OUTPUT - [0:0]
:cali-PREROUTING - [0:0]
-A PREROUTING -m comment --comment "cali:6gwbT8clXdHdC1b1" -j cali-PREROUTING
-A OUTPUT -m comment --comment "cali:tVnHkvAo15HuiPy0" -j cali-OUTPUT
-A cali-PREROUTING -m comment --comment "cali:x8SBHMrdN1Fz3QHT" -j MARK --set-xmark 0x0/0xf0000
COMMIT
*filter
:cali-FORWARD - [0:0]
:cali-INPUT - [0:0]
-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD
-A INPUT -m comment --comment "cali:Cz_u1IQiXIMmKD4c" -j cali-INPUT
-A cali-INPUT -m comment --comment "cali:u4j8rFyG1gkfw3cD" -m set --match-set cali40all-ipam-pools src -j ACCEPT
COMMIT
`;

function seedForeign(ns: string, backend: Backend): void {
  for (const family of ['iptables', 'ip6tables']) inNs(ns, [`${family}-${backend}-restore`, '--noflush'], FOREIGN);
  inNs(ns, ['ipset', 'restore'], 'create foreign4 hash:ip family inet\nadd foreign4 10.9.9.9\ncreate foreign6 hash:ip family inet6\nadd foreign6 fd00::9\n');
}

function cleanupCli(ns: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'cleanup', '--netns', ns, ...args], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** What `tessera agent` does on start and in-sync, without the API server: detect, claim, program. */
async function programLikeTheAgent(ns: string): Promise<Backend> {
  const runner = new NetnsCommandRunner(ns);
  const { backend } = await resolveIptablesBackend('auto', runner);
  const claim = await claimNode(runner, backend);
  expect(claim.claimed).toBe(true);
  const graph = new CalcGraph({ nodeName: NODE });
  graph.onUpdates(
    [
      defaultTier(),
      nsProfile('shop'),
      workload('web', '10.65.0.2', 'calibk0', { app: 'web' }, 'fd00:65::2'),
      workload('client', '10.65.0.3', 'calibk1', { app: 'client' }, 'fd00:65::3'),
      networkPolicy('web-ingress', {
        selector: "app == 'web'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', protocol: 'UDP', source: { selector: "app == 'client'" }, destination: { ports: ['dns'] } }],
      }),
    ].map((resource) => ({ op: 'upsert' as const, resource })),
  );
  graph.onStatusUpdated('in-sync');
  const driver = new DataplaneDriver({ runner, backend, ipVersions: [4, 6] });
  const stop = new AbortController();
  const running = driver.run(stop.signal);
  try {
    driver.send(graph.flush());
    await driver.flushed();
  } finally {
    stop.abort();
    await running;
  }
  return backend;
}

describe.each(['nft', 'legacy'] as const)('tessera cleanup on real iptables-%s', (backend) => {
  const namespaces: Array<{ destroy: () => void }> = [];
  const fresh = (): string => {
    const ns = createNetns('bk');
    namespaces.push(ns);
    return ns.name;
  };
  afterEach(() => {
    for (const ns of namespaces.splice(0)) ns.destroy();
  });

  it('after the agent programmed the node, leaves iptables and IP sets exactly as they were before it', async () => {
    const ns = fresh();
    seedForeign(ns, backend);
    const before = nodeStateSnapshot(ns);

    expect(await programLikeTheAgent(ns)).toBe(backend);
    const programmed = nodeStateSnapshot(ns);
    expect(programmed).toContain(':cali-tw-calibk0 - [0:0]');
    expect(programmed).toContain(':cali-tessera-owner - [0:0]');
    // Anti-spoofing: the raw chains and the PREROUTING hook, in both families; the mangle
    // table's PREROUTING hook (host endpoints' preDNAT policy) jumps to its own cali-PREROUTING.
    expect(programmed.match(/^:cali-rpf-skip - \[0:0\]$/gm)).toHaveLength(2);
    expect(programmed.match(/^-A PREROUTING -m comment --comment "cali:\S+" -j cali-PREROUTING$/gm)).toHaveLength(4);
    expect(programmed.match(/^-A POSTROUTING -m comment --comment "cali:\S+" -j cali-POSTROUTING$/gm)).toHaveLength(2);
    expect(programmed).toMatch(/\ncreate cali40s:/);
    expect(programmed).toMatch(/\ncreate cali60n:/);

    const dry = cleanupCli(ns, '--dry-run');
    expect(dry.stderr).toBe('');
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain(`# iptables-${backend}-restore --noflush`);
    expect(dry.stdout).toContain(`# ip6tables-${backend}-restore --noflush`);
    expect(dry.stdout).toMatch(/# ipset restore\ndestroy cali[46]0/);
    expect(nodeStateSnapshot(ns)).toBe(programmed);

    const run = cleanupCli(ns);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`removed iptables-${backend} filter: 5 hook rule(s)`);
    expect(run.stdout).toContain(`removed iptables-${backend} raw: 2 hook rule(s), 7 chain(s)`);
    expect(run.stdout).toContain(`removed ip6tables-${backend} raw: 2 hook rule(s), 7 chain(s)`);
    expect(run.stdout).toContain(`removed ip6tables-${backend} mangle: 2 hook rule(s), 6 chain(s)`);
    expect(run.stdout).toContain('IP set(s)');
    expect(nodeStateSnapshot(ns)).toBe(before);

    expect(cleanupCli(ns)).toMatchObject({ status: 0, stdout: 'nothing to remove: no cali- chains, hook rules or IP sets of Tessera on this node\n' });
  });

  it("refuses Felix's chains and sets (exit 4, nothing touched); --force removes them and nothing else", () => {
    const ns = fresh();
    seedForeign(ns, backend);
    const before = nodeStateSnapshot(ns);
    inNs(ns, ['ipset', 'create', 'cali40all-ipam-pools', 'hash:net']);
    inNs(ns, [`iptables-${backend}-restore`, '--noflush'], FELIX);
    const felix = nodeStateSnapshot(ns);

    const refused = cleanupCli(ns);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toContain("refusing: this node's cali- state was not written by Tessera");
    expect(refused.stderr).toContain(`iptables-${backend} raw holds cali- chains (cali-OUTPUT, cali-PREROUTING) while no filter table of iptables-${backend} holds Tessera's marker chain`);
    expect(refused.stderr).toContain(`iptables-${backend} filter holds cali- chains (cali-FORWARD, cali-INPUT) without Tessera's marker chain cali-tessera-owner`);
    expect(nodeStateSnapshot(ns)).toBe(felix);

    const forced = cleanupCli(ns, '--force');
    expect(forced.stderr).toBe('');
    expect(forced.status).toBe(0);
    expect(nodeStateSnapshot(ns)).toBe(before);
  });
});
