/**
 * Bugs the differential test (verdict engine vs kernel) found, pinned where they were fixed.
 * Each case names the seed and round that found it. The protocol/notProtocol cases are also the
 * scenario calico-protocol-and-not-protocol in e2e/scenarios/calico-negations-icmp-service-accounts.json,
 * run by `tessera simulate` and the e2e runner; the ICMP cases are not, because the scenario
 * format probes TCP, UDP and SCTP only — the differential harness pings.
 */
import { describe, expect, it } from 'vitest';
import { ruleBody } from '../../src/dataplane/iptables/rule-text.ts';
import { RuleRenderer } from '../../src/dataplane/rule-renderer.ts';
import { rule } from '../../test/dataplane/fixtures.ts';
import { evaluateDirection, makePacket } from '../../src/simulate/verdict-engine.ts';
import { NodeState } from '../../src/simulate/node-state.ts';
import { makeRule } from '../../src/proto/index.ts';

const v4 = new RuleRenderer({ ipVersion: 4 });
const text = (r: ReturnType<RuleRenderer['renderRule']>): string[] => r.map((x) => ruleBody(x, '').trim());

describe('rule renderer: protocol next to notProtocol (seed 1 round 0)', () => {
  it('renders nothing for protocol X with notProtocol X: the rule matches no packet', () => {
    expect(text(v4.renderRule(rule({ action: 'allow', protocol: 'udp', notProtocol: 17 })))).toEqual([]);
  });

  it('renders one -p for protocol X with notProtocol Y (iptables refuses a second -p; X implies not Y)', () => {
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'tcp', notProtocol: 'udp' })))).toEqual(['-p tcp -j DROP']);
  });
});

describe('verdict engine: ICMP echo probes', () => {
  const state = new NodeState('node-1');
  const endpoint = (rules: Parameters<typeof makeRule>[0][]) => {
    state.apply([
      { type: 'ActivePolicyUpdate', id: { tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' }, policy: { inboundRules: rules.map(makeRule), outboundRules: [] } },
    ] as never);
    return { tiers: [{ name: 'default', defaultAction: 'Deny', ingressPolicies: [{ tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' }], egressPolicies: [] }], profileIds: [] } as never;
  };
  const ping4 = makePacket('10.0.0.1/32', '10.0.0.2/32', 'ICMP', 0);
  const ping6 = makePacket('fd00::1/128', 'fd00::2/128', 'ICMP', 0);

  it('matches an echo request by type, and by type and code 0, in its own family only', () => {
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp', icmp: { type: 8 } }]), 'ingress', ping4).allowed).toBe(true);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp', icmp: { type: 8, code: 0 } }]), 'ingress', ping4).allowed).toBe(true);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp', icmp: { type: 8, code: 1 } }]), 'ingress', ping4).allowed).toBe(false);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp' }]), 'ingress', ping6).allowed).toBe(false);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmpv6', icmp: { type: 128 } }]), 'ingress', ping6).allowed).toBe(true);
  });

  it('notICMP excludes the echo request; a named port never matches ICMP', () => {
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp', notIcmp: { type: 8 } }]), 'ingress', ping4).allowed).toBe(false);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', protocol: 'icmp', notIcmp: { type: 0 } }]), 'ingress', ping4).allowed).toBe(true);
    expect(evaluateDirection(state, endpoint([{ action: 'allow', dstNamedPortIpSetIds: ['n:x'] }]), 'ingress', ping4).allowed).toBe(false);
  });
});
