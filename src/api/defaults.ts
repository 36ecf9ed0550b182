/**
 * Calico's defaulting for v3 resources: what the API server fills in on create, so that
 * objects loaded from files behave like objects read back from a cluster.
 *
 * - NetworkPolicy / GlobalNetworkPolicy `spec.types`, when absent or empty, from the rule
 *   lists present (`api/pkg/defaults/networkpolicy.go`, calico-semantics §4.3):
 *   no egress rules → `[Ingress]` (even with no ingress rules either); egress rules only →
 *   `[Egress]`; both → `[Ingress, Egress]`.
 * - NetworkPolicy / GlobalNetworkPolicy `spec.tier`, when absent or empty: `default`
 *   (CRD default).
 * - Tier `spec.defaultAction`, when absent: `Deny` (CRD default).
 * - NetworkPolicy / WorkloadEndpoint `metadata.namespace`, when absent: `default` — not
 *   API-server defaulting but what `kubectl apply` and `calicoctl` do for a manifest
 *   without a namespace, which is how such files are meant to be read.
 *
 * Not applied: Calico also stamps the `projectcalico.org/tier` label on policies; nothing in
 * Tessera reads it.
 *
 * `applyDefaults` never mutates its argument and is idempotent. It tolerates malformed
 * input (a `spec` that is missing or not an object is left alone) so it can run before
 * validation.
 */
import { DEFAULT_TIER_NAME } from './tiers.ts';
import { NAMESPACED_KINDS } from './types.ts';
import type { PolicyType, V3Kind, V3Resource } from './types.ts';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasRules(list: unknown): boolean {
  return Array.isArray(list) && list.length > 0;
}

/** The `types` Calico derives for a policy that does not state them. */
export function defaultPolicyTypes(spec: { ingress?: unknown; egress?: unknown }): PolicyType[] {
  if (!hasRules(spec.egress)) return ['Ingress'];
  if (!hasRules(spec.ingress)) return ['Egress'];
  return ['Ingress', 'Egress'];
}

/** Returns a defaulted copy of `resource` (see the module comment for the rules). */
export function applyDefaults<T extends V3Resource>(resource: T): T {
  const copy = structuredClone(resource) as T & Record<string, unknown>;
  const kind = copy.kind as V3Kind;

  if (NAMESPACED_KINDS.has(kind) && isRecord(copy.metadata)) {
    const meta = copy.metadata as Record<string, unknown>;
    if (meta['namespace'] === undefined || meta['namespace'] === '') meta['namespace'] = 'default';
  }

  if (kind === 'NetworkPolicy' || kind === 'GlobalNetworkPolicy' || kind === 'Tier') {
    // A missing spec stays missing: the CRD requires one, and validation says so.
    if (!isRecord(copy.spec)) return copy;
    const spec = copy.spec as Record<string, unknown>;
    if (kind === 'Tier') {
      if (spec['defaultAction'] === undefined) spec['defaultAction'] = 'Deny';
    } else {
      if (spec['tier'] === undefined || spec['tier'] === '') spec['tier'] = DEFAULT_TIER_NAME;
      const types = spec['types'];
      if (types === undefined || types === null || (Array.isArray(types) && types.length === 0)) {
        spec['types'] = defaultPolicyTypes(spec);
      }
    }
  }
  return copy;
}
