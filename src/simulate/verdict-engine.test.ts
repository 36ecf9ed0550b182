import { describe, expect, it } from 'vitest';
import { RuleRenderer, profileChainName } from '../dataplane/index.ts';
import { ruleBody } from '../dataplane/iptables/rule-text.ts';
import { makeRule, type Rule, type RuleInit } from '../proto/index.ts';
import { endpoint, npId, policy, port, tier } from '../../test/dataplane/fixtures.ts';
import { NodeState } from './node-state.ts';
import { EPHEMERAL_PORTS, evaluateDirection, makePacket, ruleMismatch, type Packet } from './verdict-engine.ts';

const renderers = { 4: new RuleRenderer({ ipVersion: 4 }), 6: new RuleRenderer({ ipVersion: 6 }) } as const;
const empty = new NodeState('node-1');

/** Packets that every in-family positive net below contains and no in-family negated net does. */
const PACKETS: Readonly<Record<4 | 6, Packet>> = {
  4: makePacket('10.1.1.1/32', '10.1.1.2/32', 'TCP', 80),
  6: makePacket('fd00::1/128', 'fd00::2/128', 'TCP', 80),
};
const POS = { 'v4-only': ['10.0.0.0/8'], 'v6-only': ['fd00::/64'], mixed: ['10.0.0.0/8', 'fd00::/64'] } as const;
const NEG = { 'v4-only': ['192.168.0.0/16'], 'v6-only': ['fd99::/64'], mixed: ['192.168.0.0/16', 'fd99::/64'] } as const;

describe('verdict engine and renderer decide the same family filter (issue 27 item 2)', () => {
  for (const field of ['srcNets', 'notSrcNets', 'dstNets', 'notDstNets'] as const) {
    for (const contents of ['v4-only', 'v6-only', 'mixed'] as const) {
      for (const ipVersion of [4, 6, undefined] as const) {
        for (const family of [4, 6] as const) {
          const nets = field.startsWith('not') ? NEG[contents] : POS[contents];
          // Felix FilterRuleToIPVersion: kept iff the ipVersion allows it and the list keeps an entry of the family.
          const kept = (ipVersion === undefined || ipVersion === family) && (contents === 'mixed' || contents === (family === 4 ? 'v4-only' : 'v6-only'));
          it(`${field} ${contents}, ipVersion ${ipVersion ?? 'absent'}, IPv${family}: ${kept ? 'rendered and matches' : 'not rendered, matches nothing'}`, () => {
            const rule = makeRule({ action: 'allow', [field]: [...nets], ...(ipVersion === undefined ? {} : { ipVersion }) });
            expect(renderers[family].renderRule(rule).length > 0).toBe(kept);
            expect(ruleMismatch(rule, PACKETS[family], empty, true) === undefined).toBe(kept);
          });
        }
      }
    }
  }
});

/** One endpoint whose ingress is `rules` in a Deny tier, on a fresh node. */
function ingressOnly(rules: readonly Rule[]): { state: NodeState; ep: ReturnType<typeof endpoint> } {
  const id = npId('ns', 'p');
  const state = new NodeState('node-1');
  state.apply([{ type: 'ActivePolicyUpdate', id, policy: policy(rules) }]);
  return { state, ep: endpoint({ tiers: [tier('default', [id])], profileIds: ['kns.ns'] }) };
}

describe("the audit's input: source.notNets [fd00::/64] Allow on IPv4 traffic", () => {
  const rule = makeRule({ action: 'allow', notSrcNets: ['fd00::/64'] });

  it('is not in the IPv4 chain', () => {
    expect(renderers[4].renderRule(rule)).toEqual([]);
    expect(renderers[6].renderRule(rule).length).toBeGreaterThan(0);
  });

  it('the verdict engine agrees: IPv4 traffic is dropped at the end of the tier, IPv6 outside fd00::/64 is allowed', () => {
    const { state, ep } = ingressOnly([rule]);
    const v4 = evaluateDirection(state, ep, 'ingress', makePacket('10.0.0.1/32', '10.0.0.2/32', 'TCP', 80), true);
    expect(v4.allowed).toBe(false);
    expect(v4.decision).toEqual({ kind: 'end-of-tier', action: 'deny', tier: 'default' });
    expect(v4.tiers?.[0]?.policies[0]?.rules[0]?.mismatch).toBe('source notNets: fd00::/64 is IPv6; the rule is not rendered for IPv4');
    expect(evaluateDirection(state, ep, 'ingress', makePacket('fd01::1/128', 'fd01::2/128', 'TCP', 80)).allowed).toBe(true);
    expect(evaluateDirection(state, ep, 'ingress', makePacket('fd00::1/128', 'fd01::2/128', 'TCP', 80)).allowed).toBe(false);
  });
});

/** An endpoint with no policy and `profiles` (name → inbound rules). */
function profilesOnly(profiles: ReadonlyArray<readonly [string, readonly Rule[]]>): { state: NodeState; ep: ReturnType<typeof endpoint> } {
  const state = new NodeState('node-1');
  state.apply(profiles.map(([name, inboundRules]) => ({ type: 'ActiveProfileUpdate' as const, id: { name }, profile: { inboundRules, outboundRules: [] } })));
  return { state, ep: endpoint({ profileIds: profiles.map(([name]) => name) }) };
}

describe('profile Pass returns from the profile chain (issue 27 item 11)', () => {
  const pkt = makePacket('10.0.0.1/32', '10.0.0.2/32', 'TCP', 80);
  const pass = makeRule({ action: 'next-tier' });
  const allow = makeRule({ action: 'allow' });

  it('rendered: the pass rule RETURNs from the profile chain; the endpoint chain returns only on accept, then drops', () => {
    const [ingress] = renderers[4].profileChains('p', { inboundRules: [pass, allow], outboundRules: [] });
    expect(ingress!.rules.map((r) => ruleBody(r, '').trim())).toEqual(['-j MARK --set-xmark 0x20000/0x20000', '-m mark --mark 0x20000/0x20000 -j RETURN', '-j MARK --set-xmark 0x10000/0x10000']);
    const [tw] = renderers[4].endpointChains('cali0a', endpoint({ profileIds: ['p'] }));
    expect(tw!.rules.slice(-3).map((r) => ruleBody(r, '').trim())).toEqual([
      `-j ${profileChainName('p', 'ingress')}`,
      '-m comment --comment "Return if profile accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-m comment --comment "Drop if no profiles matched" -j DROP',
    ]);
  });

  it('a profile [Pass, Allow] does not allow: the final drop decides', () => {
    const { state, ep } = profilesOnly([['p', [pass, allow]]]);
    const v = evaluateDirection(state, ep, 'ingress', pkt, true);
    expect(v.allowed).toBe(false);
    expect(v.decision).toEqual({ kind: 'no-profile-matched', action: 'deny' });
    expect(v.profiles).toEqual([{ profile: 'p', rules: [{ index: 0, action: 'next-tier' }], outcome: 'pass' }]);
  });

  it('after a profile Pass the next profile is walked', () => {
    const { state, ep } = profilesOnly([['p', [pass, allow]], ['q', [allow]]]);
    expect(evaluateDirection(state, ep, 'ingress', pkt).decision).toEqual({ kind: 'profile', action: 'allow', profile: 'q', ruleIndex: 0 });
  });

  it('a later profile’s Pass rule RETURNs even without matching once the mark is set (Felix renders the same two rules): [Pass udp, Allow] after a profile Pass does not allow', () => {
    const passUdp = makeRule({ action: 'next-tier', protocol: 'udp' });
    const { state, ep } = profilesOnly([['p', [pass]], ['q', [passUdp, allow]]]);
    const v = evaluateDirection(state, ep, 'ingress', pkt, true);
    expect(v.decision).toEqual({ kind: 'no-profile-matched', action: 'deny' });
    expect(v.profiles?.[1]?.rules[0]).toMatchObject({ index: 0, action: 'next-tier', returnedOnPassMark: true });
    // Rendered: q's chain is "-p udp → set pass mark", then "pass mark set → RETURN".
    const [ingress] = renderers[4].profileChains('q', { inboundRules: [passUdp, allow], outboundRules: [] });
    expect(ingress!.rules.map((r) => ruleBody(r, '').trim()).slice(0, 2)).toEqual(['-p udp -j MARK --set-xmark 0x20000/0x20000', '-m mark --mark 0x20000/0x20000 -j RETURN']);
  });

  it('the same after a Pass rule decided the last tier (no rule clears the mark before the profiles); not after a tier whose default action is Pass', () => {
    const passUdp = makeRule({ action: 'next-tier', protocol: 'udp' });
    const state = new NodeState('node-1');
    const id = npId('ns', 'passer');
    state.apply([
      { type: 'ActivePolicyUpdate', id, policy: policy([pass]) },
      { type: 'ActiveProfileUpdate', id: { name: 'q' }, profile: { inboundRules: [passUdp, allow], outboundRules: [] } },
    ]);
    const afterPassRule = endpoint({ tiers: [tier('default', [id])], profileIds: ['q'] });
    expect(evaluateDirection(state, afterPassRule, 'ingress', pkt).decision).toEqual({ kind: 'no-profile-matched', action: 'deny' });
    const quiet = npId('ns', 'quiet');
    state.apply([{ type: 'ActivePolicyUpdate', id: quiet, policy: policy([makeRule({ action: 'deny', protocol: 'udp' })]) }]);
    const afterDefaultPass = endpoint({ tiers: [tier('default', [quiet], [], 'Pass')], profileIds: ['q'] });
    expect(evaluateDirection(state, afterDefaultPass, 'ingress', pkt).decision).toEqual({ kind: 'profile', action: 'allow', profile: 'q', ruleIndex: 1 });
  });

  it('a Pass that does not match is skipped like any rule', () => {
    const { state, ep } = profilesOnly([['p', [makeRule({ action: 'next-tier', protocol: 'udp' }), allow]]]);
    expect(evaluateDirection(state, ep, 'ingress', pkt).decision).toEqual({ kind: 'profile', action: 'allow', profile: 'p', ruleIndex: 1 });
  });
});

describe('source ports are checked as rendered (issue 27 item 11)', () => {
  const named = new NodeState('node-1');
  named.apply([{ type: 'IPSetUpdate', id: 'n:src', ipsetType: 'hash:ip,port', members: ['10.0.0.1,tcp:8080', '10.0.0.9,tcp:40000'] }]);
  const r = (init: Omit<RuleInit, 'action'>): Rule => makeRule({ action: 'allow', protocol: 'tcp', ...init });
  const at = (srcPort?: number): Packet => makePacket('10.0.0.1/32', '10.0.0.2/32', 'TCP', 80, srcPort);
  const matches = (rule: Rule, pkt: Packet, state = named): boolean => ruleMismatch(rule, pkt, state, true) === undefined;

  it('numeric ports with a known source port', () => {
    expect(matches(r({ srcPorts: [port(1000, 2000)] }), at(1500))).toBe(true);
    expect(matches(r({ srcPorts: [port(1000, 2000)] }), at(2001))).toBe(false);
    expect(matches(r({ notSrcPorts: [port(1000, 2000)] }), at(1500))).toBe(false);
    expect(matches(r({ notSrcPorts: [port(1000, 2000)] }), at(2001))).toBe(true);
  });

  it('named ports: the source ip,proto:port in the named-port set; numeric and named are alternatives', () => {
    expect(matches(r({ srcNamedPortIpSetIds: ['n:src'] }), at(8080))).toBe(true);
    expect(matches(r({ srcNamedPortIpSetIds: ['n:src'] }), at(8081))).toBe(false);
    expect(matches(r({ srcPorts: [port(8081)], srcNamedPortIpSetIds: ['n:src'] }), at(8081))).toBe(true);
    expect(matches(r({ notSrcNamedPortIpSetIds: ['n:src'] }), at(8080))).toBe(false);
    expect(matches(r({ notSrcNamedPortIpSetIds: ['n:src'] }), at(8081))).toBe(true);
  });

  it('an ephemeral source port: decided when the criterion holds for all of the range or none of it', () => {
    const eph = at();
    expect(eph.srcPorts).toEqual(EPHEMERAL_PORTS);
    // Before the fix these never matched (ports) or always matched (notPorts).
    expect(matches(r({ srcPorts: [port(1024, 65535)] }), eph)).toBe(true);
    expect(matches(r({ srcPorts: [port(32768, 40000), port(40001, 60999)] }), eph)).toBe(true);
    expect(matches(r({ srcPorts: [port(1, 1023)] }), eph)).toBe(false);
    expect(matches(r({ notSrcPorts: [port(1024, 65535)] }), eph)).toBe(false);
    expect(matches(r({ notSrcPorts: [port(1, 1023)] }), eph)).toBe(true);
    // The named-port set holds no ephemeral port of 10.0.0.1 (8080 only): never a match, never excluded.
    expect(matches(r({ srcNamedPortIpSetIds: ['n:src'] }), eph)).toBe(false);
    expect(matches(r({ notSrcNamedPortIpSetIds: ['n:src'] }), eph)).toBe(true);
  });

  it('an ephemeral source port that only part of the range matches is undecidable: no match, and the trace says why', () => {
    expect(ruleMismatch(r({ srcPorts: [port(40000, 65535)] }), at(), named, true)).toMatch(/depends on the port the kernel picks/);
    expect(ruleMismatch(r({ notSrcPorts: [port(40000)] }), at(), named, true)).toMatch(/depends on the port the kernel picks/);
    const other = makePacket('10.0.0.9/32', '10.0.0.2/32', 'TCP', 80);
    expect(ruleMismatch(r({ srcNamedPortIpSetIds: ['n:src'] }), other, named, true)).toMatch(/depends on the port the kernel picks/);
  });

  it('ICMP has no source port: a source-port rule does not match it, a source-notPorts rule does not exclude it', () => {
    const ping = makePacket('10.0.0.1/32', '10.0.0.2/32', 'ICMP', 0);
    expect(matches(makeRule({ action: 'allow', srcNamedPortIpSetIds: ['n:src'] }), ping)).toBe(false);
    expect(matches(makeRule({ action: 'allow', notSrcNamedPortIpSetIds: ['n:src'] }), ping)).toBe(true);
  });
});
