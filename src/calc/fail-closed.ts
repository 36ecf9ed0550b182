/**
 * The fail-closed stand-ins of invalid policies and profiles.
 *
 * An object that reaches the agent but fails validation (or conversion) must not widen
 * access: deleting it would lift whatever it denied and whatever its end-of-tier drop denied.
 * So an invalid NetworkPolicy or GlobalNetworkPolicy is replaced by a policy with the same id
 * (tier, name, namespace), order, selector and directions, and no rules: it still selects its
 * endpoints, so traffic that no earlier policy of the tier allowed or passed reaches the end
 * of the tier and is dropped (Felix's end-of-tier DROP, calico-semantics §4.6). An invalid
 * Profile keeps its valid labels (they feed selectors) and loses its rules: endpoints that
 * reach their profiles are dropped unless another of their profiles allows.
 *
 * Where a part of the object cannot be read, the stand-in is the stricter reading:
 * - `spec.tier` missing, empty or not a name Calico accepts → `default` (a garbled tier name
 *   would otherwise sort after every tier, past allows of later tiers);
 * - `spec.order` not a finite number → none (last in the tier, after every ordered policy);
 * - `spec.types` malformed → both directions; absent or empty → Calico's default (Ingress,
 *   and Egress when there are egress rules);
 * - a selector (`selector`, `namespaceSelector`, `serviceAccountSelector`) that cannot be
 *   parsed → a NetworkPolicy selects every endpoint of its namespace, a GlobalNetworkPolicy
 *   every endpoint (`all()`): what the policy meant to select is unknown, so all it could have
 *   selected is denied in its directions;
 * - `doNotTrack`, `preDNAT` and `applyOnForward` are dropped: an untracked or pre-DNAT policy
 *   with no rules would not drop (those chains fall through), the filter table's does.
 */
import { isDns1123Subdomain, isValidLabelValue, qualifiedNameProblems } from '../api/index.ts';
import { policyIdKey, type PolicyId } from '../proto/index.ts';
import type { ModelPolicy, ModelProfile } from './model.ts';

/** The label Felix gives every namespaced endpoint (update-processor.ts, §3.8). */
const NAMESPACE_LABEL = 'projectcalico.org/namespace';

/** The selector fields of a policy spec, as given (each only when a string). */
export interface PolicySelectorFields {
  readonly selector?: string;
  readonly namespaceSelector?: string;
  readonly serviceAccountSelector?: string;
}

/** How the stand-in for an invalid policy was built. */
export interface FailClosedPolicy {
  readonly policy: ModelPolicy;
  /** Set when the policy's own selector could not be read: what the stand-in selects instead. */
  readonly selectorFallback?: string;
}

/**
 * Every endpoint of `namespace`. A namespace read from an object that never passed the API
 * server may hold a quote, which a selector literal cannot escape: a name with both quotes
 * names no real namespace, so it selects nothing.
 */
function namespaceSelector(namespace: string): string {
  if (!namespace.includes("'")) return `${NAMESPACE_LABEL} == '${namespace}'`;
  if (!namespace.includes('"')) return `${NAMESPACE_LABEL} == "${namespace}"`;
  return '!all()';
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function directions(spec: Record<string, unknown>): { ingress: boolean; egress: boolean } {
  const types = spec['types'];
  const egressRules = spec['egress'];
  if (types === undefined || types === null || (Array.isArray(types) && types.length === 0)) {
    // Calico's default: Egress when there are egress rules. An `egress` that is present but
    // not a list cannot be read, so it counts as rules (the stricter reading).
    const noEgressRules = egressRules === undefined || egressRules === null || (Array.isArray(egressRules) && egressRules.length === 0);
    return { ingress: true, egress: !noEgressRules };
  }
  if (!Array.isArray(types) || !types.every((t) => t === 'Ingress' || t === 'Egress')) return { ingress: true, egress: true };
  return { ingress: types.includes('Ingress'), egress: types.includes('Egress') };
}

/**
 * The stand-in for an invalid policy. `selectorOf` is the processor's own selector conversion
 * (so a readable selector selects exactly what the valid policy would); it throws when a
 * selector cannot be parsed.
 */
export function failClosedPolicy(
  kind: 'NetworkPolicy' | 'GlobalNetworkPolicy',
  name: string,
  namespace: string | undefined,
  raw: unknown,
  selectorOf: (fields: PolicySelectorFields) => string,
): FailClosedPolicy {
  const spec = record(record(raw)['spec']);
  const tierValue = spec['tier'];
  const tier = typeof tierValue === 'string' && tierValue !== '' && isDns1123Subdomain(tierValue) ? tierValue : 'default';
  const orderValue = spec['order'];
  const order = typeof orderValue === 'number' && Number.isFinite(orderValue) ? orderValue : undefined;
  const id: PolicyId = { tier, name, ...(namespace === undefined ? {} : { namespace }), kind };

  const text = (field: keyof PolicySelectorFields): string | undefined | null => {
    const v = spec[field];
    if (v === undefined || v === null) return undefined;
    return typeof v === 'string' ? v : null;
  };
  const fields = {
    selector: text('selector'),
    namespaceSelector: kind === 'GlobalNetworkPolicy' ? text('namespaceSelector') : undefined,
    serviceAccountSelector: text('serviceAccountSelector'),
  };
  let selector: string | undefined;
  if (fields.selector !== null && fields.namespaceSelector !== null && fields.serviceAccountSelector !== null) {
    try {
      selector = selectorOf({
        ...(fields.selector === undefined ? {} : { selector: fields.selector }),
        ...(fields.namespaceSelector === undefined ? {} : { namespaceSelector: fields.namespaceSelector }),
        ...(fields.serviceAccountSelector === undefined ? {} : { serviceAccountSelector: fields.serviceAccountSelector }),
      });
    } catch {
      selector = undefined;
    }
  }
  const fallback = namespace === undefined ? 'all()' : namespaceSelector(namespace);
  const { ingress, egress } = directions(spec);
  const policy: ModelPolicy = {
    id,
    key: policyIdKey(id),
    order,
    selector: selector ?? fallback,
    inboundRules: [],
    outboundRules: [],
    governsIngress: ingress,
    governsEgress: egress,
    untracked: false,
    preDnat: false,
    applyOnForward: false,
  };
  return selector === undefined ? { policy, selectorFallback: fallback } : { policy };
}

/** The stand-in for an invalid profile: its valid labels, no rules. */
export function failClosedProfile(name: string, raw: unknown): ModelProfile {
  const given = record(record(record(raw)['spec'])['labelsToApply']);
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(given)) {
    if (typeof v === 'string' && qualifiedNameProblems(k).length === 0 && isValidLabelValue(v)) labels[k] = v;
  }
  return { name, labels, inboundRules: [], outboundRules: [] };
}
