/**
 * A mock dataplane for calc-graph tests: applies `proto` messages to maps and **throws**
 * on anything that breaks the sequencer contract (calico-semantics §5.3, §6.7):
 * - any output before the graph has been told the datastore is in sync;
 * - a delta to an unknown set, or a delta adding a present / removing an absent member;
 * - a policy or profile referencing an IP set that is not present;
 * - an endpoint referencing an unknown policy or profile;
 * - removing something never added, or something still referenced.
 */
import {
  policyIdKey,
  workloadEndpointIdKey,
  type DataplaneMessage,
  type HostEndpoint,
  type IpSetType,
  type Policy,
  type PolicyId,
  type Profile,
  type Rule,
  type TierInfo,
  type WorkloadEndpoint,
} from '../../src/proto/index.ts';

export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

function ruleSetIds(r: Rule): string[] {
  return [
    ...r.srcIpSetIds,
    ...r.notSrcIpSetIds,
    ...r.dstIpSetIds,
    ...r.notDstIpSetIds,
    ...r.srcNamedPortIpSetIds,
    ...r.notSrcNamedPortIpSetIds,
    ...r.dstNamedPortIpSetIds,
    ...r.notDstNamedPortIpSetIds,
    ...r.dstIpPortSetIds,
  ];
}

/** Every policy a tier list names, enforced or staged. */
function tierPolicies(tiers: readonly TierInfo[]): PolicyId[] {
  return tiers.flatMap((t) => [...t.ingressPolicies, ...t.egressPolicies, ...(t.stagedIngressPolicies ?? []), ...(t.stagedEgressPolicies ?? [])]);
}

/** Every tier list of a workload or host endpoint. */
function endpointTierLists(ep: WorkloadEndpoint | HostEndpoint): readonly TierInfo[] {
  return 'untrackedTiers' in ep ? [...ep.tiers, ...ep.untrackedTiers, ...ep.preDnatTiers, ...ep.forwardTiers] : ep.tiers;
}

function rulesSetIds(p: { inboundRules: readonly Rule[]; outboundRules: readonly Rule[] }): Set<string> {
  return new Set([...p.inboundRules, ...p.outboundRules].flatMap(ruleSetIds));
}

export class MockDataplane {
  readonly ipSets = new Map<string, { type: IpSetType; members: Set<string> }>();
  readonly policies = new Map<string, { id: PolicyId; policy: Policy }>();
  readonly profiles = new Map<string, Profile>();
  readonly endpoints = new Map<string, WorkloadEndpoint>();
  /** Host endpoints by name. */
  readonly hostEndpoints = new Map<string, HostEndpoint>();
  /** Set by the harness when it tells the graph `in-sync`. */
  graphInSync = false;
  receivedInSync = false;
  messageCount = 0;

  apply(messages: readonly DataplaneMessage[]): void {
    if (messages.length > 0 && !this.graphInSync) {
      throw new ContractViolation(`output before in-sync: ${messages.map((m) => m.type).join(', ')}`);
    }
    for (const m of messages) this.#apply(m);
  }

  #apply(m: DataplaneMessage): void {
    this.messageCount++;
    switch (m.type) {
      case 'IPSetUpdate':
        this.ipSets.set(m.id, { type: m.ipsetType, members: new Set(m.members) });
        return;
      case 'IPSetDeltaUpdate': {
        const s = this.ipSets.get(m.id);
        if (s === undefined) throw new ContractViolation(`delta to unknown IP set ${m.id}`);
        for (const r of m.removed) {
          if (!s.members.delete(r)) throw new ContractViolation(`delta removes absent member ${r} from ${m.id}`);
        }
        for (const a of m.added) {
          if (s.members.has(a)) throw new ContractViolation(`delta adds present member ${a} to ${m.id}`);
          s.members.add(a);
        }
        return;
      }
      case 'IPSetRemove': {
        if (!this.ipSets.delete(m.id)) throw new ContractViolation(`remove of unknown IP set ${m.id}`);
        for (const [k, { policy }] of this.policies) {
          if (rulesSetIds(policy).has(m.id)) throw new ContractViolation(`IP set ${m.id} removed while policy ${k} uses it`);
        }
        for (const [k, p] of this.profiles) {
          if (rulesSetIds(p).has(m.id)) throw new ContractViolation(`IP set ${m.id} removed while profile ${k} uses it`);
        }
        return;
      }
      case 'ActivePolicyUpdate':
        for (const id of rulesSetIds(m.policy)) {
          if (!this.ipSets.has(id)) throw new ContractViolation(`policy ${policyIdKey(m.id)} references missing IP set ${id}`);
        }
        this.policies.set(policyIdKey(m.id), { id: m.id, policy: m.policy });
        return;
      case 'ActivePolicyRemove': {
        const key = policyIdKey(m.id);
        if (!this.policies.delete(key)) throw new ContractViolation(`remove of unknown policy ${key}`);
        for (const [ek, ep] of [...this.endpoints, ...this.hostEndpoints]) {
          if (tierPolicies(endpointTierLists(ep)).some((p) => policyIdKey(p) === key)) throw new ContractViolation(`policy ${key} removed while endpoint ${ek} uses it`);
        }
        return;
      }
      case 'ActiveProfileUpdate':
        for (const id of rulesSetIds(m.profile)) {
          if (!this.ipSets.has(id)) throw new ContractViolation(`profile ${m.id.name} references missing IP set ${id}`);
        }
        this.profiles.set(m.id.name, m.profile);
        return;
      case 'ActiveProfileRemove':
        if (!this.profiles.delete(m.id.name)) throw new ContractViolation(`remove of unknown profile ${m.id.name}`);
        for (const [ek, ep] of [...this.endpoints, ...this.hostEndpoints]) {
          if (ep.profileIds.includes(m.id.name)) throw new ContractViolation(`profile ${m.id.name} removed while endpoint ${ek} uses it`);
        }
        return;
      case 'WorkloadEndpointUpdate': {
        const key = workloadEndpointIdKey(m.id);
        for (const t of m.endpoint.tiers) {
          for (const p of [...t.ingressPolicies, ...t.egressPolicies]) {
            if (!this.policies.has(policyIdKey(p))) throw new ContractViolation(`endpoint ${key} references unknown policy ${policyIdKey(p)}`);
          }
        }
        for (const p of m.endpoint.profileIds) {
          if (!this.profiles.has(p)) throw new ContractViolation(`endpoint ${key} references unknown profile ${p}`);
        }
        this.endpoints.set(key, m.endpoint);
        return;
      }
      case 'WorkloadEndpointRemove': {
        const key = workloadEndpointIdKey(m.id);
        if (!this.endpoints.delete(key)) throw new ContractViolation(`remove of unknown endpoint ${key}`);
        return;
      }
      case 'HostEndpointUpdate': {
        const key = m.id.name;
        for (const p of tierPolicies(endpointTierLists(m.endpoint))) {
          if (!this.policies.has(policyIdKey(p))) throw new ContractViolation(`host endpoint ${key} references unknown policy ${policyIdKey(p)}`);
        }
        for (const p of m.endpoint.profileIds) {
          if (!this.profiles.has(p)) throw new ContractViolation(`host endpoint ${key} references unknown profile ${p}`);
        }
        this.hostEndpoints.set(key, m.endpoint);
        return;
      }
      case 'HostEndpointRemove':
        if (!this.hostEndpoints.delete(m.id.name)) throw new ContractViolation(`remove of unknown host endpoint ${m.id.name}`);
        return;
      case 'InSync':
        if (!this.graphInSync) throw new ContractViolation('InSync before the graph was in sync');
        this.receivedInSync = true;
        return;
    }
  }

  /** A comparable summary of the whole state (what state tables assert on). */
  snapshot(): DataplaneSnapshot {
    const ipSets: Record<string, string[]> = {};
    for (const [id, s] of [...this.ipSets].sort(([a], [b]) => (a < b ? -1 : 1))) ipSets[id] = [...s.members].sort();
    const endpointTiers: Record<string, EndpointTierSummary[]> = {};
    for (const [k, ep] of [...this.endpoints].sort(([a], [b]) => (a < b ? -1 : 1))) {
      endpointTiers[k] = ep.tiers.map((t) => ({
        name: t.name,
        ingress: t.ingressPolicies.map((p) => p.name),
        egress: t.egressPolicies.map((p) => p.name),
      }));
    }
    return {
      ipSets,
      activePolicies: [...this.policies.keys()].sort(),
      activeProfiles: [...this.profiles.keys()].sort(),
      endpointTiers,
    };
  }
}

export interface EndpointTierSummary {
  readonly name: string;
  readonly ingress: readonly string[];
  readonly egress: readonly string[];
}

export interface DataplaneSnapshot {
  readonly ipSets: Readonly<Record<string, readonly string[]>>;
  readonly activePolicies: readonly string[];
  readonly activeProfiles: readonly string[];
  readonly endpointTiers: Readonly<Record<string, readonly EndpointTierSummary[]>>;
}
