import { describe, expect, it } from 'vitest';
import { ruleBody } from './iptables/rule-text.ts';
import { RuleRenderer } from './rule-renderer.ts';

/** `cali-wl-to-host` as rule bodies, for one family. */
function wlToHost(ipVersion: 4 | 6): string[] {
  const chain = new RuleRenderer({ ipVersion }).staticChains().find((c) => c.name === 'cali-wl-to-host')!;
  return chain.rules.map((r) => ruleBody(r, '').trim());
}

describe('RuleRenderer: cali-wl-to-host (Felix filterWorkloadToHostChain)', () => {
  it('accepts neighbour discovery and MLD from workloads in IPv6 before egress policy and the DefaultEndpointToHostAction', () => {
    expect(wlToHost(6)).toEqual([
      ...[130, 131, 132, 133, 135, 136].map((t) => `-p ipv6-icmp -m icmp6 --icmpv6-type ${t} -j ACCEPT`),
      '-j cali-from-wl-dispatch',
      '-m comment --comment "Configured DefaultEndpointToHostAction" -j DROP',
    ]);
  });

  it('has no ICMPv6 rules in IPv4 (ARP does not pass through iptables)', () => {
    expect(wlToHost(4)).toEqual(['-j cali-from-wl-dispatch', '-m comment --comment "Configured DefaultEndpointToHostAction" -j DROP']);
  });
});
