/**
 * `MissingTierIndex`: which policies name a tier that has no Tier object, reported once per
 * change (the Tier CRD says a policy's tier must exist; nothing in a CRD-only datastore
 * enforces it).
 *
 * What such a policy does is decided by the sorter (policy-sorter.ts, as Felix orders a tier
 * it has no metadata for): its tier is ordered after every tier that exists — `kube-baseline`
 * included — with defaultAction Deny. A Deny meant to run first therefore runs last, after
 * the allows it was meant to override: that is worth a warning, not silence.
 *
 * Guarantees:
 * - the index holds every policy (local or not), so the report does not depend on which
 *   endpoints this node has;
 * - `flush()` reports only changes since the last flush: a policy that starts naming a
 *   missing tier (or moves to another missing tier) is reported once; one whose tier
 *   appears, or that moves to an existing tier, is reported resolved once; a deleted policy
 *   is forgotten silently. Nothing is re-reported on unrelated updates;
 * - the caller flushes only after the datastore is in sync, so a policy listed before its
 *   tier during the initial sync is never reported.
 */
import { isStagedPolicy } from '../proto/index.ts';
import { SetMap } from '../runtime/set-map.ts';
import type { ModelPolicy, ModelTier } from './model.ts';

/** A policy whose tier has no Tier object. */
export interface MissingTierPolicy {
  readonly kind: 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'KubernetesClusterNetworkPolicy';
  readonly namespace?: string;
  readonly name: string;
  readonly tier: string;
}

/** One change in the report, as `flush()` returns it. */
export type MissingTierChange =
  | { readonly type: 'missing'; readonly policy: MissingTierPolicy }
  | { readonly type: 'resolved'; readonly policy: MissingTierPolicy };

/**
 * The one wording the agent's log, `tessera validate` and `tessera explain` use for a
 * policy in a tier that does not exist.
 */
export function missingTierMessage(tier: string): string {
  return `tier ${JSON.stringify(tier)} does not exist: the policy is enforced in a tier ordered after every existing tier (kube-baseline included), with defaultAction Deny, until that Tier is created`;
}

/** A policy's display name, as in logs and the CLI: `NetworkPolicy ns/name`, `GlobalNetworkPolicy name`, `ClusterNetworkPolicy name`. */
export function describeMissingTierPolicy(p: MissingTierPolicy): string {
  const kind = p.kind === 'KubernetesClusterNetworkPolicy' ? 'ClusterNetworkPolicy' : p.kind;
  return p.namespace === undefined ? `${kind} ${p.name}` : `${kind} ${p.namespace}/${p.name}`;
}

/** A resource as `policiesInMissingTiers` reads it (v3 objects after defaulting). */
interface ResourceLike {
  readonly kind?: unknown;
  readonly metadata?: { readonly name?: unknown; readonly namespace?: unknown };
  readonly spec?: unknown;
}

/**
 * The policies among `resources` whose tier is not a Tier among `resources` (nor in
 * `alsoExisting`), in input order. Used offline (`validate`, `explain`), where the whole
 * set is at hand; the agent uses the incremental index.
 */
export function policiesInMissingTiers(resources: Iterable<ResourceLike>, alsoExisting: Iterable<string> = []): MissingTierPolicy[] {
  const list = [...resources];
  const tiers = new Set<string>(alsoExisting);
  for (const r of list) if (r.kind === 'Tier' && typeof r.metadata?.name === 'string') tiers.add(r.metadata.name);
  const out: MissingTierPolicy[] = [];
  for (const r of list) {
    if (r.kind !== 'NetworkPolicy' && r.kind !== 'GlobalNetworkPolicy') continue;
    const name = r.metadata?.name;
    if (typeof name !== 'string') continue;
    const raw = (r.spec as { tier?: unknown } | null | undefined)?.tier;
    const tier = typeof raw === 'string' && raw !== '' ? raw : 'default';
    if (tiers.has(tier)) continue;
    const ns = r.metadata?.namespace;
    out.push({
      kind: r.kind,
      name,
      ...(r.kind === 'NetworkPolicy' ? { namespace: typeof ns === 'string' && ns !== '' ? ns : 'default' } : {}),
      tier,
    });
  }
  return out;
}

export class MissingTierIndex {
  readonly #tiers = new Set<string>();
  readonly #policies = new Map<string, MissingTierPolicy>();
  /** tier name → keys of the policies that name it. */
  readonly #byTier = new SetMap<string, string>();
  /** policy key → the missing tier it was last reported in. */
  readonly #reported = new Map<string, MissingTierPolicy>();
  readonly #dirty = new Set<string>();

  onTierUpdate(name: string, tier: ModelTier | null): void {
    const existed = this.#tiers.has(name);
    if (tier === null) this.#tiers.delete(name);
    else this.#tiers.add(name);
    if (existed === (tier !== null)) return;
    for (const key of this.#byTier.get(name) ?? []) this.#dirty.add(key);
  }

  onPolicyUpdate(key: string, policy: ModelPolicy | null): void {
    const old = this.#policies.get(key);
    if (old !== undefined) this.#byTier.delete(old.tier, key);
    // A staged policy enforces nothing, so a missing tier of one changes no verdict.
    if (policy === null || isStagedPolicy(policy.id)) {
      this.#policies.delete(key);
    } else {
      const { id } = policy;
      this.#policies.set(key, { kind: id.kind as MissingTierPolicy['kind'], name: id.name, ...(id.namespace === undefined ? {} : { namespace: id.namespace }), tier: id.tier });
      this.#byTier.add(id.tier, key);
    }
    this.#dirty.add(key);
  }

  /** Policies currently in a tier that does not exist. */
  get missingCount(): number {
    let n = 0;
    for (const [tier, keys] of this.#byTier) if (!this.#tiers.has(tier)) n += keys.size;
    return n;
  }

  /** The changes since the last flush (see the class comment). */
  flush(): MissingTierChange[] {
    const out: MissingTierChange[] = [];
    for (const key of this.#dirty) {
      const policy = this.#policies.get(key);
      const reported = this.#reported.get(key);
      if (policy === undefined) {
        this.#reported.delete(key);
        continue;
      }
      if (!this.#tiers.has(policy.tier)) {
        if (reported?.tier === policy.tier) continue;
        this.#reported.set(key, policy);
        out.push({ type: 'missing', policy });
      } else if (reported !== undefined) {
        this.#reported.delete(key);
        out.push({ type: 'resolved', policy });
      }
    }
    this.#dirty.clear();
    return out;
  }
}
