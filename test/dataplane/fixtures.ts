/** Hand-built proto fixtures for dataplane tests (unit and netns e2e). */
import { makeRule } from '../../src/proto/index.ts';
import type { HostEndpoint, PolicyId, Policy, Rule, WorkloadEndpoint, TierInfo, DataplaneMessage } from '../../src/proto/index.ts';

/** A rule with every list empty, overridden by `over`. */
export function rule(over: Partial<Rule> = {}): Rule {
  return makeRule({ action: 'allow', ...over });
}

export function policy(inboundRules: readonly Rule[] = [], outboundRules: readonly Rule[] = []): Policy {
  return { inboundRules, outboundRules, untracked: false, preDnat: false, applyOnForward: false };
}

export const port = (first: number, last = first) => ({ first, last });

export function npId(namespace: string, name: string, tier = 'default'): PolicyId {
  return { tier, name, namespace, kind: 'NetworkPolicy' };
}

export function gnpId(name: string, tier = 'default'): PolicyId {
  return { tier, name, kind: 'GlobalNetworkPolicy' };
}

/** A HostEndpoint (proto) with no policy, no profile and no expected IP, overridden by `over`. */
export function hostEndpoint(over: Partial<HostEndpoint> = {}): HostEndpoint {
  return { name: '', expectedIpv4Addrs: [], expectedIpv6Addrs: [], profileIds: [], tiers: [], untrackedTiers: [], preDnatTiers: [], forwardTiers: [], ...over };
}

export function endpoint(over: Partial<WorkloadEndpoint> = {}): WorkloadEndpoint {
  return { interfaceName: '', state: 'active', mac: '', ipv4Nets: [], ipv6Nets: [], profileIds: [], tiers: [], ...over };
}

export function tier(name: string, ingressPolicies: readonly PolicyId[], egressPolicies: readonly PolicyId[] = [], defaultAction: TierInfo['defaultAction'] = 'Deny'): TierInfo {
  return { name, defaultAction, ingressPolicies, egressPolicies };
}

export const allowAllProfile = (name: string): DataplaneMessage => ({
  type: 'ActiveProfileUpdate',
  id: { name },
  profile: { inboundRules: [rule()], outboundRules: [rule()] },
});
