import { describe, expect, it } from 'vitest';
import type { CaliState, CaliTableState } from './cali-state.ts';
import { RecordingCommandRunner } from '../command-runner.ts';
import { OWNER_MARKER_CHAIN, claimNode, claimOwnership, judgeOwnership, ownerMarkerChain } from './ownership.ts';

const HOOK = '-A FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD';
const RAW_HOOK = '-A PREROUTING -m comment --comment "cali:6gwbT8clXdHdC1b1" -j cali-PREROUTING';

function table(over: Partial<CaliTableState>): CaliTableState {
  return { backend: 'nft', ipVersion: 4, table: 'filter', chains: [], hookRules: [], foreignReferences: [], ...over };
}

function state(tables: CaliTableState[], ipsets: string[] = []): CaliState {
  return { tables, ipsets, unreadable: [] };
}

describe('judgeOwnership', () => {
  const cases: Array<{ name: string; state: CaliState; verdict: 'none' | 'ours' | 'foreign'; reasons?: RegExp[] }> = [
    { name: 'nothing on the node', state: state([]), verdict: 'none' },
    { name: 'our chains with the marker', state: state([table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN], hookRules: [HOOK] })], ['cali40s:a']), verdict: 'ours' },
    { name: 'only the marker (claimed, nothing written yet)', state: state([table({ chains: [OWNER_MARKER_CHAIN] })]), verdict: 'ours' },
    {
      name: 'a crash after the first ipset restore, before the first iptables-restore: the claimed marker vouches for the sets',
      state: state([table({ chains: [OWNER_MARKER_CHAIN] })], ['cali40s:a', 'cali40n:b']),
      verdict: 'ours',
    },
    {
      name: 'our IP sets and the IPv4 marker, IPv6 not written yet (crash between the families)',
      state: state([table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] })], ['cali40s:a', 'cali60s:a']),
      verdict: 'ours',
    },
    {
      name: "Felix's filter chains (no marker)",
      state: state([table({ chains: ['cali-FORWARD', 'cali-INPUT'], hookRules: [HOOK] })]),
      verdict: 'foreign',
      reasons: [/^iptables-nft filter holds cali- chains \(cali-FORWARD, cali-INPUT\) without Tessera's marker chain cali-tessera-owner$/],
    },
    {
      name: "Felix's hook rules alone",
      state: state([table({ hookRules: [HOOK] })]),
      verdict: 'foreign',
      reasons: [/holds cali: hook rules/],
    },
    {
      // Felix's raw, mangle and nat tables (felix/fv/cali-iptables-dump.txt) next to our marked
      // filter table: raw and mangle hold the names Tessera writes too, nat gives Felix away.
      name: "Felix's raw, mangle and nat chains next to our marked filter table (Felix started after Tessera)",
      state: state([
        table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] }),
        table({ table: 'raw', chains: ['cali-OUTPUT', 'cali-PREROUTING', 'cali-from-host-endpoint', 'cali-rpf-skip', 'cali-to-host-endpoint'], hookRules: [RAW_HOOK] }),
        table({ table: 'mangle', chains: ['cali-PREROUTING', 'cali-POSTROUTING', 'cali-from-host-endpoint'] }),
        table({ table: 'nat', chains: ['cali-OUTPUT', 'cali-PREROUTING', 'cali-POSTROUTING', 'cali-nat-outgoing'] }),
      ]),
      verdict: 'foreign',
      reasons: [/^iptables-nft nat holds cali- chains Tessera never writes \(cali-OUTPUT, cali-PREROUTING, cali-POSTROUTING, cali-nat-outgoing\)$/],
    },
    {
      name: 'a raw or mangle chain only Felix writes (WireGuard, DSCP) next to our marked filter table',
      state: state([
        table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] }),
        table({ table: 'raw', chains: ['cali-PREROUTING', 'cali-wireguard-incoming-mark'] }),
        table({ table: 'mangle', chains: ['cali-POSTROUTING', 'cali-egress-dscp'] }),
      ]),
      verdict: 'foreign',
      reasons: [/^iptables-nft raw holds cali- chains Tessera never writes there \(cali-wireguard-incoming-mark\)$/, /^iptables-nft mangle holds cali- chains Tessera never writes there \(cali-egress-dscp\)$/],
    },
    {
      name: 'our host endpoint chains in raw and mangle, with the marker',
      state: state([
        table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] }),
        table({ table: 'raw', chains: ['cali-OUTPUT', 'cali-PREROUTING', 'cali-failsafe-in', 'cali-failsafe-out', 'cali-fh-eth0', 'cali-from-host-endpoint', 'cali-pi-gnp/nt', 'cali-rpf-skip', 'cali-th-eth0', 'cali-to-host-endpoint'] }),
        table({ table: 'mangle', chains: ['cali-POSTROUTING', 'cali-PREROUTING', 'cali-failsafe-in', 'cali-failsafe-out', 'cali-from-host-endpoint-e', 'cali-pro-_TI1Jm4dJqQzYb0Rx3u', 'cali-th-any-interface-at-all', 'cali-to-host-endpoint'] }),
      ]),
      verdict: 'ours',
    },
    {
      name: 'mangle chains named like ours without any marker',
      state: state([table({ table: 'mangle', chains: ['cali-PREROUTING'] })]),
      verdict: 'foreign',
      reasons: [/^iptables-nft mangle holds cali- chains \(cali-PREROUTING\) while no filter table of iptables-nft holds Tessera's marker chain/],
    },
    {
      name: 'our anti-spoofing raw chains, the marker in the same backend (the IPv4 filter table vouches for IPv6 raw too)',
      state: state([
        table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] }),
        table({ table: 'raw', chains: ['cali-PREROUTING', 'cali-rpf-skip'], hookRules: [RAW_HOOK] }),
        table({ table: 'raw', ipVersion: 6, chains: ['cali-PREROUTING', 'cali-rpf-skip'], hookRules: [RAW_HOOK] }),
      ]),
      verdict: 'ours',
    },
    {
      name: 'raw chains named like ours without any marker',
      state: state([table({ table: 'raw', chains: ['cali-PREROUTING', 'cali-rpf-skip'] })]),
      verdict: 'foreign',
      reasons: [/^iptables-nft raw holds cali- chains \(cali-PREROUTING, cali-rpf-skip\) while no filter table of iptables-nft holds Tessera's marker chain/],
    },
    {
      name: 'raw hook rules alone, marker only in the other backend',
      state: state([table({ backend: 'legacy', chains: [OWNER_MARKER_CHAIN] }), table({ table: 'raw', hookRules: [RAW_HOOK] })]),
      verdict: 'foreign',
      reasons: [/^iptables-nft raw holds cali: hook rules .* while no filter table of iptables-nft holds/],
    },
    {
      name: "Felix's IP sets without any marker",
      state: state([], ['cali40s:x', 'cali40all-ipam-pools']),
      verdict: 'foreign',
      reasons: [/^IP sets cali40s:x, cali40all-ipam-pools exist but no iptables table holds Tessera's marker chain/],
    },
    {
      name: 'Felix in the other backend, our marker in this one: foreign',
      state: state([table({ chains: [OWNER_MARKER_CHAIN] }), table({ backend: 'legacy', ipVersion: 6, chains: ['cali-FORWARD'] })]),
      verdict: 'foreign',
      reasons: [/^ip6tables-legacy filter holds cali- chains/],
    },
  ];
  it.each(cases)('$name → $verdict', ({ state: s, verdict, reasons }) => {
    const o = judgeOwnership(s);
    expect(o.verdict).toBe(verdict);
    if (reasons === undefined) expect(o.reasons).toEqual([]);
    else {
      expect(o.reasons).toHaveLength(reasons.length);
      reasons.forEach((r, i) => expect(o.reasons[i]).toMatch(r));
    }
  });

  it('reports which backends hold our marker (stale state after a backend switch)', () => {
    const o = judgeOwnership(state([table({ chains: [OWNER_MARKER_CHAIN] }), table({ backend: 'legacy', chains: ['cali-FORWARD', OWNER_MARKER_CHAIN] })]));
    expect(o.markedBackends).toEqual(['nft', 'legacy']);
  });

  it('long lists are cut after five names', () => {
    const o = judgeOwnership(state([], ['cali40a', 'cali40b', 'cali40c', 'cali40d', 'cali40e', 'cali40f', 'cali40g']));
    expect(o.reasons[0]).toContain('cali40a, cali40b, cali40c, cali40d, cali40e, … (7 in all)');
  });
});

describe('the marker', () => {
  it('is an owned chain name within Felix MaxChainNameLength, and empty', () => {
    expect(OWNER_MARKER_CHAIN.startsWith('cali-')).toBe(true);
    expect(OWNER_MARKER_CHAIN.length).toBeLessThanOrEqual(28);
    expect(ownerMarkerChain()).toEqual({ name: OWNER_MARKER_CHAIN, rules: [] });
  });

  it('claimOwnership declares it alone in the chosen backend IPv4 filter table', async () => {
    const runner = new RecordingCommandRunner();
    await claimOwnership(runner, 'legacy');
    expect(runner.calls).toEqual([
      { cmd: 'iptables-legacy-restore', args: ['--noflush', '--wait', '10', '--wait-interval', '50000'], stdin: '*filter\n:cali-tessera-owner - [0:0]\nCOMMIT\n' },
    ]);
  });

  it('claimOwnership names the command and its error', async () => {
    const runner = new RecordingCommandRunner(() => ({ code: 4, stdout: '', stderr: 'iptables-restore v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied\n' }));
    await expect(claimOwnership(runner, 'nft')).rejects.toThrow(/^iptables-nft-restore: writing the marker chain cali-tessera-owner failed \(exit 4\): .*Permission denied$/);
  });
});

describe('claimNode', () => {
  const felixFilter = '*filter\n:FORWARD ACCEPT [0:0]\n:cali-FORWARD - [0:0]\nCOMMIT\n';

  it('claims a node without cali- state', async () => {
    const runner = new RecordingCommandRunner();
    const c = await claimNode(runner, 'nft');
    expect(c).toMatchObject({ claimed: true, previous: 'none' });
    expect(runner.callsTo('iptables-nft-restore')).toHaveLength(1);
  });

  it("does not write anything on Felix's node", async () => {
    const runner = new RecordingCommandRunner(({ cmd }) => (cmd === 'iptables-nft-save' ? { code: 0, stdout: felixFilter, stderr: '' } : undefined));
    const c = await claimNode(runner, 'nft');
    expect(c.claimed).toBe(false);
    expect(c.ownership.reasons).toHaveLength(1);
    expect(runner.calls.filter((x) => x.cmd.endsWith('-restore'))).toEqual([]);
  });
});
