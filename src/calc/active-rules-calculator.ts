/**
 * `ActiveRulesCalculator` (ARC): which policies and profiles this node needs (Felix:
 * `calc/active_rules_calculator.go`, calico-semantics §5.3).
 *
 * Guarantees:
 * - it holds every policy and profile; policy selectors (already namespace-scoped) are
 *   matched against **local** endpoints only, through a `LabelInheritIndex` whose parents
 *   are the profiles' labels;
 * - a policy is active while it matches at least one local endpoint; a profile is active
 *   while at least one local endpoint lists it, whether or not it exists (a missing one is
 *   passed on as `undefined`, which the rule scanner turns into drop-all rules);
 * - activation and deactivation go to the rule scanner; an update of an active policy or
 *   profile re-sends it; every (policy, endpoint) match start/stop goes to the resolver.
 */
import { parseSelector } from '../selector/index.ts';
import { LabelInheritIndex } from './label-inherit-index.ts';
import type { ModelEndpoint, ModelPolicy, ModelProfile } from './model.ts';
import type { RuleScanner } from './rule-scanner.ts';

export interface PolicyMatchListener {
  onPolicyMatch(policyKey: string, endpointKey: string): void;
  onPolicyMatchStopped(policyKey: string, endpointKey: string): void;
}

export class ActiveRulesCalculator {
  readonly #scanner: RuleScanner;
  readonly #matches: PolicyMatchListener;
  readonly #policies = new Map<string, ModelPolicy>();
  readonly #profiles = new Map<string, ModelProfile>();
  readonly #profileRefs = new Map<string, number>();
  readonly #endpointProfiles = new Map<string, readonly string[]>();
  readonly #policyMatchCount = new Map<string, number>();
  readonly #index: LabelInheritIndex;

  constructor(opts: { scanner: RuleScanner; matchListener: PolicyMatchListener }) {
    this.#scanner = opts.scanner;
    this.#matches = opts.matchListener;
    this.#index = new LabelInheritIndex({
      onMatchStarted: (policyKey, epKey) => {
        const n = (this.#policyMatchCount.get(policyKey) ?? 0) + 1;
        this.#policyMatchCount.set(policyKey, n);
        if (n === 1) {
          const p = this.#policies.get(policyKey);
          if (p !== undefined) this.#scanner.updatePolicy(policyKey, p);
        }
        this.#matches.onPolicyMatch(policyKey, epKey);
      },
      onMatchStopped: (policyKey, epKey) => {
        this.#matches.onPolicyMatchStopped(policyKey, epKey);
        const n = (this.#policyMatchCount.get(policyKey) ?? 0) - 1;
        if (n > 0) {
          this.#policyMatchCount.set(policyKey, n);
          return;
        }
        this.#policyMatchCount.delete(policyKey);
        const p = this.#policies.get(policyKey) ?? this.#removing;
        if (p !== undefined) this.#scanner.removePolicy(policyKey, p);
      },
    });
  }

  /** The policy being deleted, while its matches are being stopped. */
  #removing: ModelPolicy | undefined;

  get activePolicyCount(): number {
    return this.#policyMatchCount.size;
  }

  get activeProfileCount(): number {
    return this.#profileRefs.size;
  }

  get localEndpointCount(): number {
    return this.#endpointProfiles.size;
  }

  onPolicyUpdate(key: string, policy: ModelPolicy | null): void {
    if (policy === null) {
      const old = this.#policies.get(key);
      if (old === undefined) return;
      this.#policies.delete(key);
      this.#removing = old;
      try {
        this.#index.deleteSelector(key);
      } finally {
        this.#removing = undefined;
      }
      return;
    }
    const wasActive = this.#policyMatchCount.has(key);
    this.#policies.set(key, policy);
    this.#index.updateSelector(key, parseSelector(policy.selector));
    // Still active after the selector change (and not just activated by it): re-send.
    if (wasActive && this.#policyMatchCount.has(key)) this.#scanner.updatePolicy(key, policy);
  }

  onProfileUpdate(name: string, profile: ModelProfile | null): void {
    if (profile === null) this.#profiles.delete(name);
    else this.#profiles.set(name, profile);
    this.#index.updateParent(name, profile?.labels);
    if (this.#profileRefs.has(name)) this.#scanner.updateProfile(name, profile ?? undefined);
  }

  onEndpointUpdate(key: string, ep: ModelEndpoint | null): void {
    const newProfiles = ep?.profileIds ?? [];
    for (const p of new Set(newProfiles)) this.#refProfile(p, +1);
    if (ep === null) {
      this.#index.deleteItem(key);
    } else {
      this.#index.updateItem(key, ep.labels, ep.profileIds);
    }
    const old = this.#endpointProfiles.get(key);
    if (ep === null) this.#endpointProfiles.delete(key);
    else this.#endpointProfiles.set(key, ep.profileIds);
    if (old !== undefined) for (const p of new Set(old)) this.#refProfile(p, -1);
  }

  #refProfile(name: string, delta: 1 | -1): void {
    const n = (this.#profileRefs.get(name) ?? 0) + delta;
    if (n > 0) {
      this.#profileRefs.set(name, n);
      if (n === 1 && delta === 1) this.#scanner.updateProfile(name, this.#profiles.get(name));
      return;
    }
    this.#profileRefs.delete(name);
    this.#scanner.removeProfile(name);
  }
}
