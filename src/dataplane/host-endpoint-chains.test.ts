import { describe, expect, it } from 'vitest';
import { gnpId, hostEndpoint, tier } from '../../test/dataplane/fixtures.ts';
import type { Chain } from './chain.ts';
import { hostEndpointChainName } from './chain-names.ts';
import { hostEndpointFilterChains, hostEndpointMangleEgressChain, hostEndpointMangleIngressChain, hostEndpointRawChains } from './host-endpoint-chains.ts';
import { ruleTail } from './iptables/rule-text.ts';
import { RuleRenderer } from './rule-renderer.ts';

const text = (c: Chain): string[] => c.rules.map(ruleTail);
const byName = (chains: readonly Chain[]): Record<string, string[]> => Object.fromEntries(chains.map((c) => [c.name, text(c)]));

const ESTABLISHED_ACCEPT = '-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT';
const INVALID_DROP = '-m conntrack --ctstate INVALID -j DROP';
const CLEAR = '-j MARK --set-xmark 0x0/0x30000';
const START = '-m comment --comment "Start of tier default" -j MARK --set-xmark 0x0/0x20000';
const jumpTo = (chain: string): string => `-m mark --mark 0x0/0x20000 -j ${chain}`;
const RETURN_POLICY = '-m comment --comment "Return if policy accepted" -m mark --mark 0x10000/0x10000 -j RETURN';
const END_OF_TIER = '-m comment --comment "End of tier default. Drop if no policies passed packet" -m mark --mark 0x0/0x20000 -j DROP';
const RETURN_PROFILE = '-m comment --comment "Return if profile accepted" -m mark --mark 0x10000/0x10000 -j RETURN';
const NO_PROFILE = '-m comment --comment "Drop if no profiles matched" -j DROP';
const NOTRACK = '-m mark --mark 0x10000/0x10000 -j NOTRACK';

// Felix rules/endpoints_test.go "should render a host endpoint": one tier, two ingress and two
// egress policies, two forward policies each way, profiles prof1 and prof2.
const felixHep = hostEndpoint({
  name: 'eth0',
  profileIds: ['prof1', 'prof2'],
  tiers: [tier('default', [gnpId('ai'), gnpId('bi')], [gnpId('ae'), gnpId('be')])],
  forwardTiers: [tier('default', [gnpId('afi'), gnpId('bfi')], [gnpId('afe'), gnpId('bfe')])],
});

describe('host endpoint chains (Felix endpoints.go)', () => {
  it('should render a host endpoint: th/fh with conntrack, failsafe, tiers, profiles and a final drop; thfw/fhfw without failsafe and profiles', () => {
    const chains = hostEndpointFilterChains(new RuleRenderer({ ipVersion: 4 }), 'eth0', felixHep);
    expect(chains.map((c) => c.name)).toEqual(['cali-th-eth0', 'cali-fh-eth0', 'cali-thfw-eth0', 'cali-fhfw-eth0']);
    expect(byName(chains)).toEqual({
      'cali-th-eth0': [
        ESTABLISHED_ACCEPT,
        INVALID_DROP,
        '-j cali-failsafe-out',
        CLEAR,
        START,
        jumpTo('cali-po-gnp/ae'),
        RETURN_POLICY,
        jumpTo('cali-po-gnp/be'),
        RETURN_POLICY,
        END_OF_TIER,
        '-j cali-pro-prof1',
        RETURN_PROFILE,
        '-j cali-pro-prof2',
        RETURN_PROFILE,
        NO_PROFILE,
      ],
      'cali-fh-eth0': [
        ESTABLISHED_ACCEPT,
        INVALID_DROP,
        '-j cali-failsafe-in',
        CLEAR,
        START,
        jumpTo('cali-pi-gnp/ai'),
        RETURN_POLICY,
        jumpTo('cali-pi-gnp/bi'),
        RETURN_POLICY,
        END_OF_TIER,
        '-j cali-pri-prof1',
        RETURN_PROFILE,
        '-j cali-pri-prof2',
        RETURN_PROFILE,
        NO_PROFILE,
      ],
      'cali-thfw-eth0': [ESTABLISHED_ACCEPT, INVALID_DROP, CLEAR, START, jumpTo('cali-po-gnp/afe'), RETURN_POLICY, jumpTo('cali-po-gnp/bfe'), RETURN_POLICY, END_OF_TIER],
      'cali-fhfw-eth0': [ESTABLISHED_ACCEPT, INVALID_DROP, CLEAR, START, jumpTo('cali-pi-gnp/afi'), RETURN_POLICY, jumpTo('cali-pi-gnp/bfi'), RETURN_POLICY, END_OF_TIER],
    });
  });

  it('a host endpoint with no policy and no profile denies everything but the failsafes, both ways; forwarded traffic is allowed by default', () => {
    const chains = byName(hostEndpointFilterChains(new RuleRenderer({ ipVersion: 4 }), 'eth0', hostEndpoint({ name: 'eth0' })));
    expect(chains['cali-th-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, '-j cali-failsafe-out', CLEAR, NO_PROFILE]);
    expect(chains['cali-fh-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, '-j cali-failsafe-in', CLEAR, NO_PROFILE]);
    const allowForward = [
      ESTABLISHED_ACCEPT,
      INVALID_DROP,
      CLEAR,
      '-m comment --comment "Allow forwarded traffic by default" -j MARK --set-xmark 0x10000/0x10000',
      '-m comment --comment "Return for accepted forward traffic" -j RETURN',
    ];
    expect(chains['cali-thfw-eth0']).toEqual(allowForward);
    expect(chains['cali-fhfw-eth0']).toEqual(allowForward);
  });

  it('per-direction default deny: an ingress-only policy leaves egress with the final drop; forward tiers of the other direction only return without a verdict', () => {
    const ep = hostEndpoint({ tiers: [tier('default', [gnpId('in')])], forwardTiers: [tier('default', [gnpId('in')])] });
    const chains = byName(hostEndpointFilterChains(new RuleRenderer({ ipVersion: 4 }), 'eth0', ep));
    expect(chains['cali-th-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, '-j cali-failsafe-out', CLEAR, NO_PROFILE]);
    expect(chains['cali-thfw-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, CLEAR]);
  });

  it('a tier whose default action is Pass has no end-of-tier drop', () => {
    const ep = hostEndpoint({ profileIds: ['projectcalico-default-allow'], tiers: [tier('default', [gnpId('a')], [], 'Pass')] });
    expect(text(hostEndpointFilterChains(new RuleRenderer({ ipVersion: 4 }), 'eth0', ep)[1]!)).toEqual([
      ESTABLISHED_ACCEPT,
      INVALID_DROP,
      '-j cali-failsafe-in',
      CLEAR,
      START,
      jumpTo('cali-pi-gnp/a'),
      RETURN_POLICY,
      '-j cali-pri-_TI1Jm4dJqQzYb0Rx3u',
      RETURN_PROFILE,
      NO_PROFILE,
    ]);
  });

  it('should render host endpoint raw chains with untracked policies: no conntrack, NOTRACK what a policy accepted, no drops', () => {
    const ep = hostEndpoint({ untrackedTiers: [tier('default', [gnpId('c')], [gnpId('c')], 'Pass')] });
    expect(byName(hostEndpointRawChains('eth0', ep))).toEqual({
      'cali-th-eth0': ['-j cali-failsafe-out', CLEAR, START, jumpTo('cali-po-gnp/c'), NOTRACK, RETURN_POLICY],
      'cali-fh-eth0': ['-j cali-failsafe-in', CLEAR, START, jumpTo('cali-pi-gnp/c'), NOTRACK, RETURN_POLICY],
    });
  });

  it('should render host endpoint mangle chains with pre-DNAT policies: conntrack, failsafe, tiers, nothing after', () => {
    const ep = hostEndpoint({ preDnatTiers: [tier('default', [gnpId('c')], [], 'Pass')] });
    const c = hostEndpointMangleIngressChain('eth0', ep);
    expect(c.name).toBe('cali-fh-eth0');
    expect(text(c)).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, '-j cali-failsafe-in', CLEAR, START, jumpTo('cali-pi-gnp/c'), RETURN_POLICY]);
  });

  it('the mangle egress chain allows by RETURN, setting the accept mark first for established traffic; its drops are DROP even with REJECT', () => {
    const c = hostEndpointMangleEgressChain('eth0', hostEndpoint({ tiers: [tier('default', [], [gnpId('ae')])], profileIds: ['p'] }));
    expect(c.name).toBe('cali-th-eth0');
    expect(text(c)).toEqual([
      '-m conntrack --ctstate RELATED,ESTABLISHED -j MARK --set-xmark 0x10000/0x10000',
      '-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN',
      INVALID_DROP,
      '-j cali-failsafe-out',
      CLEAR,
      START,
      jumpTo('cali-po-gnp/ae'),
      RETURN_POLICY,
      END_OF_TIER,
      '-j cali-pro-p',
      RETURN_PROFILE,
      NO_PROFILE,
    ]);
  });

  it("the filter chains deny with the renderer's deny action and log drops with its drop log", () => {
    const r = new RuleRenderer({ ipVersion: 4, denyAction: 'REJECT', dropLog: {} });
    const [th] = hostEndpointFilterChains(r, 'eth0', hostEndpoint({ tiers: [tier('default', [], [gnpId('ae')])] }));
    const rules = th!.rules;
    expect(rules.filter((x) => x.action.type === 'reject').map((x) => x.tag?.kind)).toEqual([undefined, 'end-of-tier', 'no-profile-matched']);
    expect(rules.filter((x) => x.action.type === 'nflog')).toHaveLength(2);
  });

  it('the * host endpoint: cali-th-any-interface-at-all (28 characters, not hashed); the forward chains are hashed as Felix hashes them', () => {
    expect(hostEndpointChainName('any-interface-at-all', 'to-host')).toBe('cali-th-any-interface-at-all');
    expect(hostEndpointChainName('any-interface-at-all', 'from-host')).toBe('cali-fh-any-interface-at-all');
    expect(hostEndpointChainName('any-interface-at-all', 'to-host-forward')).toBe('cali-thfw-_Nqh4HyA73udmyanQI');
    expect(hostEndpointChainName('any-interface-at-all', 'from-host-forward')).toBe('cali-fhfw-_Nqh4HyA73udmyanQI');
  });

  it('counts staged policies in the filter th/fh chains only, never enforcing them', () => {
    const staged = { tier: 'default', name: 's', kind: 'StagedGlobalNetworkPolicy' as const };
    const ep = hostEndpoint({ tiers: [{ ...tier('default', []), stagedIngressPolicies: [staged] }], forwardTiers: [{ ...tier('default', []), stagedIngressPolicies: [staged] }] });
    const chains = byName(hostEndpointFilterChains(new RuleRenderer({ ipVersion: 4 }), 'eth0', ep));
    expect(chains['cali-fh-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, '-j cali-failsafe-in', CLEAR, '-j cali-pi-sgnp/s', NO_PROFILE]);
    expect(chains['cali-fhfw-eth0']).toEqual([ESTABLISHED_ACCEPT, INVALID_DROP, CLEAR]);
  });
});
