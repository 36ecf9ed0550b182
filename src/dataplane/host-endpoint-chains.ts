/**
 * A host endpoint's chains (Felix `rules/endpoints.go` `HostEndpointTo*Chains` and
 * `endpointIptablesChain`; host-endpoints-and-services §A.4). Pure: the same endpoint always
 * renders the same chains.
 *
 * | chain            | table  | direction            | tiers            | failsafe            | allow  |
 * |------------------|--------|----------------------|------------------|---------------------|--------|
 * | `cali-th-<if>`   | filter | host → out of `if`   | `tiers`          | `cali-failsafe-out` | ACCEPT |
 * | `cali-fh-<if>`   | filter | in on `if` → host    | `tiers`          | `cali-failsafe-in`  | ACCEPT |
 * | `cali-thfw-<if>` | filter | forwarded, out `if`  | `forwardTiers`   | none                | ACCEPT |
 * | `cali-fhfw-<if>` | filter | forwarded, in on `if`| `forwardTiers`   | none                | ACCEPT |
 * | `cali-th-<if>`   | mangle | DNAT'd host → out    | `tiers`          | `cali-failsafe-out` | RETURN |
 * | `cali-fh-<if>`   | mangle | in on `if`, preDNAT  | `preDnatTiers`   | `cali-failsafe-in`  | ACCEPT |
 * | `cali-th-`/`fh-` | raw    | untracked            | `untrackedTiers` | out / in            | ACCEPT |
 *
 * Rule order by chain type:
 * - normal (filter and mangle `th`/`fh`): conntrack (RELATED,ESTABLISHED → allow, with the
 *   accept mark set first when the allow is RETURN; INVALID → deny), the failsafe jump, clear
 *   the accept and pass marks, the tiers (each: clear pass; per policy, unless passed, jump to
 *   it and return if it accepted; at the end, unless passed, deny — not for a tier whose
 *   default action is Pass), the profiles (jump, return if accepted), a final deny. So a host
 *   endpoint with no policy and no profile denies everything but the failsafes, per direction.
 * - forward (`thfw`/`fhfw`): the same without failsafe, profiles and final deny; with no
 *   forward tiers at all it sets the accept mark and returns: forwarded traffic is allowed
 *   by default. With forward tiers for the other direction only it returns with no verdict.
 * - untracked (raw): no conntrack rules; the failsafe jump; tiers without the end-of-tier deny,
 *   and after each policy jump NOTRACK what it accepted; no profiles, no final deny.
 * - preDNAT (mangle `fh`): conntrack, failsafe, tiers without the end-of-tier deny; no
 *   profiles and no final deny: what no preDNAT rule decided goes on to the normal policy.
 *
 * Differences from Felix, kept on purpose (decisions are the same):
 * - the drop rules of the filter chains are tagged and, with the drop log, NFLOG-logged like a
 *   workload's (drop-log.ts); Felix's flow-log NFLOG rules are not rendered;
 * - the deny in the mangle and raw chains is always DROP: REJECT is a filter-table target
 *   (with `--deny-action REJECT` Felix's mangle chains could not be restored);
 * - staged policies are counted (jumped to, never enforcing) in the filter `th`/`fh` chains,
 *   as in a workload's chains; Felix leaves them out of iptables.
 */
import { isStagedPolicy, type HostEndpoint, type PolicyId, type TierInfo } from '../proto/index.ts';
import { ACCEPT, DROP, NOTRACK, RETURN, clearMark, jump, setMark, type Action } from './action.ts';
import type { Chain, ChainRule } from './chain.ts';
import { CHAIN_FAILSAFE_IN, CHAIN_FAILSAFE_OUT, hostEndpointChainName, policyChainName, profileChainName, type Direction, type HostEndpointChainKind } from './chain-names.ts';
import type { RuleTag } from './drop-log.ts';
import { MARK_ACCEPT, MARK_PASS } from './marks.ts';
import { ANY, type Match } from './match.ts';
import { MatchBuilder } from './match-builder.ts';
import type { RuleRenderer } from './rule-renderer.ts';

type ChainType = 'normal' | 'forward' | 'untracked' | 'pre-dnat';

const ACCEPTED: Match = new MatchBuilder().markSet(MARK_ACCEPT).build();
const PASS_CLEAR: Match = new MatchBuilder().markClear(MARK_PASS).build();
const ESTABLISHED: Match = new MatchBuilder().conntrackState('RELATED', 'ESTABLISHED').build();
const INVALID: Match = new MatchBuilder().conntrackState('INVALID').build();

/** How drops are written: plain, or through a filter renderer (tags, drop log, deny action). */
type Drops = { readonly kind: 'plain' } | { readonly kind: 'filter'; readonly renderer: RuleRenderer };
const PLAIN: Drops = { kind: 'plain' };

interface ChainSpec {
  readonly iface: string;
  readonly kind: HostEndpointChainKind;
  readonly tiers: readonly TierInfo[];
  readonly profiles: readonly string[];
  readonly dir: Direction;
  readonly type: ChainType;
  readonly allow: Action;
  readonly drops: Drops;
  /** Jump to staged policies to count them (filter normal chains). */
  readonly countStaged: boolean;
}

function denyOf(drops: Drops): Action {
  return drops.kind === 'filter' ? drops.renderer.denyTarget : DROP;
}

function pushDrop(out: ChainRule[], spec: ChainSpec, name: string, match: Match, tag: RuleTag, comment: string): void {
  if (spec.drops.kind === 'filter') spec.drops.renderer.pushDrop(out, name, match, spec.drops.renderer.denyTarget, tag, [comment]);
  else out.push({ match, action: DROP, comments: [comment], tag });
}

function hostEndpointChain(spec: ChainSpec): Chain {
  const name = hostEndpointChainName(spec.iface, spec.kind);
  const rules: ChainRule[] = [];
  if (spec.type !== 'untracked') {
    if (spec.allow.type !== 'accept') rules.push({ match: ESTABLISHED, action: setMark(MARK_ACCEPT) });
    rules.push({ match: ESTABLISHED, action: spec.allow });
    rules.push({ match: INVALID, action: denyOf(spec.drops) });
  }
  if (spec.type !== 'forward') rules.push({ match: ANY, action: jump(spec.dir === 'ingress' ? CHAIN_FAILSAFE_IN : CHAIN_FAILSAFE_OUT) });
  rules.push({ match: ANY, action: clearMark(MARK_ACCEPT | MARK_PASS) });
  if (spec.countStaged) {
    for (const tier of spec.tiers) {
      for (const id of (spec.dir === 'ingress' ? tier.stagedIngressPolicies : tier.stagedEgressPolicies) ?? []) rules.push({ match: ANY, action: jump(policyChainName(id, spec.dir)) });
    }
  }
  for (const tier of spec.tiers) {
    const policies: readonly PolicyId[] = (spec.dir === 'ingress' ? tier.ingressPolicies : tier.egressPolicies).filter((id) => !isStagedPolicy(id));
    if (policies.length === 0) continue;
    rules.push({ match: ANY, action: clearMark(MARK_PASS), comments: [`Start of tier ${tier.name}`] });
    for (const id of policies) {
      rules.push({ match: PASS_CLEAR, action: jump(policyChainName(id, spec.dir)) });
      if (spec.type === 'untracked') rules.push({ match: ACCEPTED, action: NOTRACK });
      rules.push({ match: ACCEPTED, action: RETURN, comments: ['Return if policy accepted'] });
    }
    if ((spec.type === 'normal' || spec.type === 'forward') && tier.defaultAction !== 'Pass') {
      pushDrop(rules, spec, name, PASS_CLEAR, { kind: 'end-of-tier', tier: tier.name, policies }, `End of tier ${tier.name}. Drop if no policies passed packet`);
    }
  }
  if (spec.type === 'forward' && spec.tiers.length === 0) {
    rules.push({ match: ANY, action: setMark(MARK_ACCEPT), comments: ['Allow forwarded traffic by default'] });
    rules.push({ match: ANY, action: RETURN, comments: ['Return for accepted forward traffic'] });
  }
  if (spec.type === 'normal') {
    for (const profile of spec.profiles) {
      rules.push({ match: ANY, action: jump(profileChainName(profile, spec.dir)) });
      rules.push({ match: ACCEPTED, action: RETURN, comments: ['Return if profile accepted'] });
    }
    pushDrop(rules, spec, name, ANY, { kind: 'no-profile-matched' }, 'Drop if no profiles matched');
  }
  return { name, rules };
}

/**
 * The filter table's `cali-th-`, `cali-fh-`, `cali-thfw-` and `cali-fhfw-` chains of `ep` on
 * `iface` (`any-interface-at-all` for `*`), with `r`'s deny action and drop log.
 */
export function hostEndpointFilterChains(r: RuleRenderer, iface: string, ep: HostEndpoint): Chain[] {
  const drops: Drops = { kind: 'filter', renderer: r };
  const base = { iface, profiles: ep.profileIds, allow: ACCEPT, drops };
  return [
    hostEndpointChain({ ...base, kind: 'to-host', tiers: ep.tiers, dir: 'egress', type: 'normal', countStaged: true }),
    hostEndpointChain({ ...base, kind: 'from-host', tiers: ep.tiers, dir: 'ingress', type: 'normal', countStaged: true }),
    hostEndpointChain({ ...base, kind: 'to-host-forward', tiers: ep.forwardTiers, dir: 'egress', type: 'forward', countStaged: false }),
    hostEndpointChain({ ...base, kind: 'from-host-forward', tiers: ep.forwardTiers, dir: 'ingress', type: 'forward', countStaged: false }),
  ];
}

/** The mangle table's `cali-th-<iface>`: normal egress policy of DNAT'd host traffic (allow = RETURN). */
export function hostEndpointMangleEgressChain(iface: string, ep: HostEndpoint): Chain {
  return hostEndpointChain({ iface, kind: 'to-host', tiers: ep.tiers, profiles: ep.profileIds, dir: 'egress', type: 'normal', allow: RETURN, drops: PLAIN, countStaged: false });
}

/** The mangle table's `cali-fh-<iface>`: preDNAT policy (only for an endpoint with preDNAT tiers). */
export function hostEndpointMangleIngressChain(iface: string, ep: HostEndpoint): Chain {
  return hostEndpointChain({ iface, kind: 'from-host', tiers: ep.preDnatTiers, profiles: [], dir: 'ingress', type: 'pre-dnat', allow: ACCEPT, drops: PLAIN, countStaged: false });
}

/** The raw table's `cali-th-<iface>` and `cali-fh-<iface>`: untracked policy (only for an endpoint with untracked tiers, never `*`). */
export function hostEndpointRawChains(iface: string, ep: HostEndpoint): Chain[] {
  const base = { iface, tiers: ep.untrackedTiers, profiles: [], type: 'untracked' as const, allow: ACCEPT, drops: PLAIN, countStaged: false };
  return [hostEndpointChain({ ...base, kind: 'to-host', dir: 'egress' }), hostEndpointChain({ ...base, kind: 'from-host', dir: 'ingress' })];
}
