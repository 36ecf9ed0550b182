import { describe, expect, it } from 'vitest';
import type { Chain } from './chain.ts';
import { filterHostDispatchChains, mangleHostDispatchChains, rawHostDispatchChains } from './host-dispatch.ts';
import { ruleTail } from './iptables/rule-text.ts';

const byName = (chains: readonly Chain[]): Array<[string, string[]]> => chains.map((c) => [c.name, c.rules.map(ruleTail)]);

// Felix rules/dispatch_test.go "host endpoint rendering tests".
describe('host endpoint dispatch chains (Felix dispatch.go)', () => {
  it('apply on forward: from/to-host-endpoint and from/to-hep-forward, children before their root, names sharing a prefix in a child', () => {
    expect(byName(filterHostDispatchChains({ ifaces: ['eth1234', 'eth2333', 'eth2444'] }))).toEqual([
      ['cali-from-host-endpoint-2', ['-i eth2333 -g cali-fh-eth2333', '-i eth2444 -g cali-fh-eth2444']],
      ['cali-from-host-endpoint', ['-i eth1234 -g cali-fh-eth1234', '-i eth2+ -g cali-from-host-endpoint-2']],
      ['cali-to-host-endpoint-2', ['-o eth2333 -g cali-th-eth2333', '-o eth2444 -g cali-th-eth2444']],
      ['cali-to-host-endpoint', ['-o eth1234 -g cali-th-eth1234', '-o eth2+ -g cali-to-host-endpoint-2']],
      ['cali-from-hep-forward-2', ['-i eth2333 -g cali-fhfw-eth2333', '-i eth2444 -g cali-fhfw-eth2444']],
      ['cali-from-hep-forward', ['-i eth1234 -g cali-fhfw-eth1234', '-i eth2+ -g cali-from-hep-forward-2']],
      ['cali-to-hep-forward-2', ['-o eth2333 -g cali-thfw-eth2333', '-o eth2444 -g cali-thfw-eth2444']],
      ['cali-to-hep-forward', ['-o eth1234 -g cali-thfw-eth1234', '-o eth2+ -g cali-to-hep-forward-2']],
    ]);
  });

  it('with a default interface every chain, children too, ends in a goto to its chain; no workload skip in the filter table', () => {
    const chains = byName(filterHostDispatchChains({ ifaces: ['eth1234', 'eth2333', 'eth2444'], defaultIface: 'any-interface-at-all' }));
    expect(chains.map(([n, r]) => [n, r[r.length - 1]])).toEqual([
      ['cali-from-host-endpoint-2', '-g cali-fh-any-interface-at-all'],
      ['cali-from-host-endpoint', '-g cali-fh-any-interface-at-all'],
      ['cali-to-host-endpoint-2', '-g cali-th-any-interface-at-all'],
      ['cali-to-host-endpoint', '-g cali-th-any-interface-at-all'],
      ['cali-from-hep-forward-2', '-g cali-fhfw-_Nqh4HyA73udmyanQI'],
      ['cali-from-hep-forward', '-g cali-fhfw-_Nqh4HyA73udmyanQI'],
      ['cali-to-hep-forward-2', '-g cali-thfw-_Nqh4HyA73udmyanQI'],
      ['cali-to-hep-forward', '-g cali-thfw-_Nqh4HyA73udmyanQI'],
    ]);
    expect(byName(filterHostDispatchChains({ ifaces: [], defaultIface: 'any-interface-at-all' }))[1]).toEqual(['cali-to-host-endpoint', ['-g cali-th-any-interface-at-all']]);
  });

  it('no host endpoint: empty chains (packets return unpoliced)', () => {
    expect(byName(filterHostDispatchChains({ ifaces: [] })).map(([, r]) => r)).toEqual([[], [], [], []]);
  });

  it('mangle: preDNAT from-chain over the preDNAT interfaces; to-chain over all, skipping local workloads before the * default', () => {
    expect(byName(mangleHostDispatchChains({ ifaces: ['eth1'] }, { ifaces: ['eth0', 'eth1'], defaultIface: 'any-interface-at-all' }, ['cali']))).toEqual([
      ['cali-from-host-endpoint', ['-i eth1 -g cali-fh-eth1']],
      ['cali-to-host-endpoint', ['-o eth0 -g cali-th-eth0', '-o eth1 -g cali-th-eth1', '-m comment --comment "Skip egress WHEP policy for traffic to local workload" -o cali+ -j RETURN', '-g cali-th-any-interface-at-all']],
    ]);
    expect(byName(mangleHostDispatchChains({ ifaces: [], defaultIface: 'any-interface-at-all' }, { ifaces: [] }, ['cali']))[0]).toEqual(['cali-from-host-endpoint', ['-g cali-fh-any-interface-at-all']]);
  });

  it('raw (untracked): from and to over the given interfaces, never a default', () => {
    expect(byName(rawHostDispatchChains(['eth1234']))).toEqual([
      ['cali-from-host-endpoint', ['-i eth1234 -g cali-fh-eth1234']],
      ['cali-to-host-endpoint', ['-o eth1234 -g cali-th-eth1234']],
    ]);
  });
});
