/**
 * `PolicyResolver`: per local endpoint, the ordered tiers of policies that apply to it
 * (Felix: `calc/policy_resolver.go`, calico-semantics §4.4, §5.3).
 *
 * Guarantees:
 * - it learns matches from the ARC (`onPolicyMatch` / `onPolicyMatchStopped`), policy and
 *   tier metadata from the dispatcher, and endpoint data from the local-endpoint filter;
 * - any change marks the affected endpoints dirty; sorting happens lazily, once per dirty
 *   endpoint per `flush()` (the lesson of Felix's start-of-day re-sort bug, §5.1);
 * - a tier's change dirties the endpoints of every policy in it; a policy's change dirties
 *   the endpoints it matches;
 * - a host endpoint gets Felix's four tier lists (policy-sorter.ts `sortHostEndpointTiers`), a
 *   workload endpoint the normal list only.
 */
import type { TierInfo } from '../proto/index.ts';
import { SetMap } from '../runtime/set-map.ts';
import type { PolicyMatchListener } from './active-rules-calculator.ts';
import type { ModelEndpoint, ModelPolicy, ModelTier } from './model.ts';
import { sortEndpointTiers, sortHostEndpointTiers, type HostEndpointTiers } from './policy-sorter.ts';

export interface EndpointTiersListener {
  onEndpointTiers(endpoint: ModelEndpoint, tiers: TierInfo[]): void;
  onHostEndpointTiers(endpoint: ModelEndpoint, tiers: HostEndpointTiers): void;
  /** A workload or host endpoint left this node. */
  onEndpointRemove(endpoint: ModelEndpoint): void;
}

export class PolicyResolver implements PolicyMatchListener {
  readonly #out: EndpointTiersListener;
  readonly #endpoints = new Map<string, ModelEndpoint>();
  readonly #endpointPolicies = new SetMap<string, string>();
  readonly #policyEndpoints = new SetMap<string, string>();
  readonly #policies = new Map<string, ModelPolicy>();
  readonly #tiers = new Map<string, ModelTier>();
  readonly #tierPolicies = new SetMap<string, string>();
  readonly #dirty = new Set<string>();

  constructor(out: EndpointTiersListener) {
    this.#out = out;
  }

  onPolicyMatch(policyKey: string, endpointKey: string): void {
    this.#endpointPolicies.add(endpointKey, policyKey);
    this.#policyEndpoints.add(policyKey, endpointKey);
    this.#dirty.add(endpointKey);
  }

  onPolicyMatchStopped(policyKey: string, endpointKey: string): void {
    this.#endpointPolicies.delete(endpointKey, policyKey);
    this.#policyEndpoints.delete(policyKey, endpointKey);
    this.#dirty.add(endpointKey);
  }

  onPolicyUpdate(key: string, policy: ModelPolicy | null): void {
    const old = this.#policies.get(key);
    if (old !== undefined) this.#tierPolicies.delete(old.id.tier, key);
    if (policy === null) this.#policies.delete(key);
    else {
      this.#policies.set(key, policy);
      this.#tierPolicies.add(policy.id.tier, key);
    }
    if (
      old === undefined ||
      policy === null ||
      old.order !== policy.order ||
      old.governsIngress !== policy.governsIngress ||
      old.governsEgress !== policy.governsEgress ||
      old.untracked !== policy.untracked ||
      old.preDnat !== policy.preDnat ||
      old.applyOnForward !== policy.applyOnForward
    ) {
      this.#dirtyPolicy(key);
    }
  }

  onTierUpdate(name: string, tier: ModelTier | null): void {
    if (tier === null) this.#tiers.delete(name);
    else this.#tiers.set(name, tier);
    for (const key of this.#tierPolicies.get(name) ?? []) this.#dirtyPolicy(key);
  }

  onEndpointUpdate(key: string, ep: ModelEndpoint | null): void {
    if (ep === null) {
      const old = this.#endpoints.get(key);
      this.#endpoints.delete(key);
      this.#dirty.delete(key);
      if (old !== undefined) this.#out.onEndpointRemove(old);
      return;
    }
    this.#endpoints.set(key, ep);
    this.#dirty.add(key);
  }

  /** Emits the tiers of every dirty endpoint. */
  flush(): void {
    for (const key of this.#dirty) {
      const ep = this.#endpoints.get(key);
      if (ep === undefined) continue;
      const policies: ModelPolicy[] = [];
      for (const pk of this.#endpointPolicies.get(key) ?? []) {
        const p = this.#policies.get(pk);
        if (p !== undefined) policies.push(p);
      }
      if (ep.endpointType === 'host') this.#out.onHostEndpointTiers(ep, sortHostEndpointTiers(policies, this.#tiers));
      else this.#out.onEndpointTiers(ep, sortEndpointTiers(policies, this.#tiers));
    }
    this.#dirty.clear();
  }

  #dirtyPolicy(key: string): void {
    for (const ep of this.#policyEndpoints.get(key) ?? []) this.#dirty.add(ep);
  }
}
