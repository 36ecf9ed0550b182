import { describe, expect, it } from 'vitest';
import type { Chain, KernelHooks } from './chain.ts';
import { ruleTail } from './iptables/rule-text.ts';
import { RuleRenderer } from './rule-renderer.ts';

const byName = (chains: readonly Chain[]): Record<string, string[]> => Object.fromEntries(chains.map((c) => [c.name, c.rules.map(ruleTail)]));
const hooks = (h: readonly KernelHooks[]): Array<[string, string[], string[]]> => h.map((k) => [k.chain, k.inserts.map(ruleTail), k.appends.map(ruleTail)]);

const ACCEPT_ACCEPTED = '-m mark --mark 0x10000/0x10000 -j ACCEPT';
const HOST_ACCEPTED = '-m comment --comment "Host endpoint policy accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT';
const CLEAR_ALL = '-j MARK --set-xmark 0x0/0xf0000';

// Felix rules/static_test.go (filter FORWARD, INPUT, OUTPUT; raw PREROUTING and OUTPUT; mangle
// PREROUTING and POSTROUTING), without the IPIP/VXLAN/WireGuard/IPVS/cidr-block rules Tessera
// does not program.
describe("static chains in Felix's order", () => {
  const v4 = new RuleRenderer({ ipVersion: 4 });

  it('filter cali-FORWARD: clear the marks but accept; from-hep-forward unless already accepted; workload dispatch; to-hep-forward', () => {
    expect(byName(v4.staticChains())['cali-FORWARD']).toEqual([
      '-j MARK --set-xmark 0x0/0xe0000',
      '-m mark --mark 0x0/0x10000 -j cali-from-hep-forward',
      '-m comment --comment "From workload to anywhere" -i cali+ -j cali-from-wl-dispatch',
      '-m comment --comment "From anywhere to workload" -o cali+ -j cali-to-wl-dispatch',
      '-j cali-to-hep-forward',
    ]);
  });

  it('filter cali-INPUT: workloads go to cali-wl-to-host first (host endpoint policy never sees them), then already-accepted, then host endpoint ingress policy', () => {
    expect(byName(v4.staticChains())['cali-INPUT']).toEqual(['-i cali+ -g cali-wl-to-host', ACCEPT_ACCEPTED, CLEAR_ALL, '-j cali-from-host-endpoint', HOST_ACCEPTED]);
  });

  it('filter cali-OUTPUT: already-accepted; host → local workload always allowed; host endpoint egress policy for traffic not DNATed', () => {
    expect(byName(v4.staticChains())['cali-OUTPUT']).toEqual([
      ACCEPT_ACCEPTED,
      '-m comment --comment "Host to local workload is always allowed" -o cali+ -j RETURN',
      CLEAR_ALL,
      '-m conntrack ! --ctstate DNAT -j cali-to-host-endpoint',
      HOST_ACCEPTED,
    ]);
  });

  it('every workload prefix gets its dispatch rules in cali-FORWARD, cali-INPUT and cali-OUTPUT', () => {
    const chains = byName(new RuleRenderer({ ipVersion: 4, interfacePrefixes: ['cali', 'tap'] }).staticChains());
    expect(chains['cali-INPUT']!.slice(0, 2)).toEqual(['-i cali+ -g cali-wl-to-host', '-i tap+ -g cali-wl-to-host']);
    expect(chains['cali-OUTPUT']!.filter((r) => r.endsWith('-j RETURN'))).toHaveLength(2);
    expect(chains['cali-FORWARD']!.filter((r) => r.includes('wl-dispatch'))).toHaveLength(4);
  });

  it('cali-wl-to-host ends with DefaultEndpointToHostAction (ACCEPT as Calico manifests set it, RETURN back to INPUT)', () => {
    for (const [action, target] of [['ACCEPT', '-j ACCEPT'], ['RETURN', '-j RETURN'], ['DROP', '-j DROP']] as const) {
      const chain = byName(new RuleRenderer({ ipVersion: 4, endpointToHostAction: action }).staticChains())['cali-wl-to-host']!;
      expect(chain).toEqual(['-j cali-from-wl-dispatch', `-m comment --comment "Configured DefaultEndpointToHostAction" ${target}`]);
    }
  });

  it('the static filter chains come with empty host dispatch chains, so every jump has a target from the start', () => {
    const chains = byName(v4.staticChains());
    for (const name of ['cali-from-host-endpoint', 'cali-to-host-endpoint', 'cali-from-hep-forward', 'cali-to-hep-forward']) expect(chains[name]).toEqual([]);
  });

  it('kernel hooks: filter INPUT/FORWARD/OUTPUT, raw PREROUTING/OUTPUT, mangle PREROUTING/POSTROUTING', () => {
    expect(hooks(v4.rawKernelHooks())).toEqual([
      ['PREROUTING', ['-j cali-PREROUTING'], []],
      ['OUTPUT', ['-j cali-OUTPUT'], []],
    ]);
    expect(hooks(v4.mangleKernelHooks())).toEqual([
      ['PREROUTING', ['-j cali-PREROUTING'], []],
      ['POSTROUTING', ['-j cali-POSTROUTING'], []],
    ]);
  });

  it('raw cali-OUTPUT: clear the marks, untracked host endpoint egress policy, ACCEPT what it accepted', () => {
    expect(byName(v4.rawChains())['cali-OUTPUT']).toEqual([CLEAR_ALL, '-j cali-to-host-endpoint', ACCEPT_ACCEPTED]);
  });

  it('mangle cali-PREROUTING (preDNAT) and cali-POSTROUTING (egress policy of DNATed host traffic; forwarded traffic skipped)', () => {
    const chains = byName(v4.mangleChains());
    expect(chains['cali-PREROUTING']).toEqual(['-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT', ACCEPT_ACCEPTED, '-j cali-from-host-endpoint', HOST_ACCEPTED]);
    expect(chains['cali-POSTROUTING']).toEqual([
      '-m mark --mark 0x10000/0x10000 -j RETURN',
      CLEAR_ALL,
      '-m conntrack --ctstate DNAT -j cali-to-host-endpoint',
      '-m comment --comment "Host endpoint policy accepted packet." -m mark --mark 0x10000/0x10000 -j RETURN',
    ]);
    expect(chains['cali-from-host-endpoint']).toEqual([]);
    expect(chains['cali-to-host-endpoint']).toEqual([]);
  });

  it('IPv6: the ICMPv6 neighbour discovery allows stay ahead of the workload egress policy', () => {
    const chain = byName(new RuleRenderer({ ipVersion: 6 }).staticChains())['cali-wl-to-host']!;
    expect(chain.slice(0, 6)).toEqual([130, 131, 132, 133, 135, 136].map((t) => `-p ipv6-icmp -m icmp6 --icmpv6-type ${t} -j ACCEPT`));
  });
});
