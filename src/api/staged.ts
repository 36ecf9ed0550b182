/**
 * Staged policies (Calico 3.30's OSS kinds `StagedNetworkPolicy`, `StagedGlobalNetworkPolicy`,
 * `StagedKubernetesNetworkPolicy`): the specs of their enforced counterparts plus
 * `stagedAction` (Set when absent). Never enforced: the simulator previews what committing them
 * would change (simulate/staged.ts), and the agent counts, per staged policy and rule, the
 * packets they would deny, on chains that never drop (calc update processor, dataplane rule
 * renderer).
 *
 * `stagedAction` takes Calico's enum (`api/pkg/apis/projectcalico/v3/policy_common.go`):
 * - `Set` (the default) and `Delete`: committing creates or replaces, or deletes, the
 *   counterpart of the same name;
 * - `Learn` and `Ignore`: Calico Enterprise's policy-recommendation actions. Calico OSS
 *   accepts them and Felix handles such a policy as any staged one (it reads no
 *   `stagedAction` but Delete's), so the agent counts it like Set. Neither is ever enforced,
 *   and the simulator does not preview them as a commit: it says so (`isPreviewedAction`).
 *
 * Calico's validator (`validateStagedNetworkPolicy` and its siblings, v3.32) rejects a
 * `Delete` whose spec sets anything but `stagedAction` (and `tier`, for the Calico kinds):
 * `DELETE_WITH_SPEC` holds its messages, and a field counts as set as Go's `reflect.DeepEqual`
 * against the zero value sees it — a non-empty string, `true`, any number (`order` is a
 * pointer), any list (even `[]`), a `podSelector` with `matchLabels` or `matchExpressions`.
 * Only the fields of Calico's Go spec types count: Go's decoder drops any other key.
 *
 * A staged object with a bad `stagedAction`, or a Delete that carries a spec, is an
 * `InputError` naming the object and field, never guessed at.
 */
import type { K8sNetworkPolicy } from './kubernetes.ts';
import type { V3Resource } from './types.ts';
import { InputError } from '../runtime/input-error.ts';
import { GLOBAL_NETWORK_POLICY_SPEC, NETWORK_POLICY_SPEC } from './schema.ts';

export const STAGED_KINDS = ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'] as const;
export type StagedKind = (typeof STAGED_KINDS)[number];

/** The enforced kind a staged kind previews, and its apiVersion. */
export const COUNTERPART: Readonly<Record<StagedKind, { apiVersion: string; kind: string }>> = {
  StagedNetworkPolicy: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy' },
  StagedGlobalNetworkPolicy: { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy' },
  StagedKubernetesNetworkPolicy: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
};

export const STAGED_ACTIONS = ['Set', 'Delete', 'Learn', 'Ignore'] as const;
export type StagedAction = (typeof STAGED_ACTIONS)[number];

/** Whether committing a staged object of this action is previewed: Set and Delete only. */
export function isPreviewedAction(action: StagedAction): boolean {
  return action === 'Set' || action === 'Delete';
}

/** The note for a staged object that is read but neither enforced nor previewed. */
export function unpreviewedStagedNote(s: StagedPolicy): string {
  return (
    `${s.kind} ${s.namespace === undefined ? '' : `${s.namespace}/`}${s.name}: stagedAction ${s.action} is accepted, as Calico accepts it, ` +
    `but NOT enforced and NOT previewed: it is a Calico Enterprise policy-recommendation action with no commit to preview ` +
    `(the agent counts the policy on its staged chains, as Felix does)`
  );
}

/** Calico's reasons for a Delete that carries a spec (validator.go, v3.32), by kind. */
export const DELETE_WITH_SPEC: Readonly<Record<StagedKind, string>> = {
  StagedNetworkPolicy: 'Spec fields, except Tier, should all be zero-value if stagedAction is Delete',
  StagedGlobalNetworkPolicy: 'Spec fields, except Tier, should all be zero-value if stagedAction is Delete',
  StagedKubernetesNetworkPolicy: 'Spec fields should all be zero-value if stagedAction is Delete',
};

/** A spec field as Go sees it against its zero value (see the module comment). */
function isSet(field: string, value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'string') return value !== '';
  if (typeof value === 'boolean') return value;
  if (field === 'podSelector' && typeof value === 'object' && !Array.isArray(value)) {
    return Object.values(value).some((v) => v !== undefined && v !== null);
  }
  return true;
}

/**
 * The spec fields Calico's Go types have besides `stagedAction`, less the ones a Delete may set
 * (`tier`). Go's decoder drops any other key, so Calico never sees it: neither do we.
 */
const DELETE_CHECKED: Readonly<Record<StagedKind, ReadonlySet<string>>> = {
  StagedNetworkPolicy: new Set(Object.keys(NETWORK_POLICY_SPEC.properties).filter((k) => k !== 'tier')),
  StagedGlobalNetworkPolicy: new Set(Object.keys(GLOBAL_NETWORK_POLICY_SPEC.properties).filter((k) => k !== 'tier')),
  StagedKubernetesNetworkPolicy: new Set(['podSelector', 'policyTypes', 'ingress', 'egress']),
};

/** The fields of a staged Delete's spec that Calico wants zero-valued but are set, in spec order. */
export function fieldsSetOnDelete(kind: StagedKind, spec: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(spec).filter((k) => DELETE_CHECKED[kind].has(k) && isSet(k, spec[k]));
}

export interface StagedPolicy {
  readonly kind: StagedKind;
  readonly namespace?: string;
  readonly name: string;
  readonly action: StagedAction;
  /** The counterpart this staged object sets (its spec without `stagedAction`). */
  readonly counterpart: V3Resource | K8sNetworkPolicy;
}

export function isStagedKind(kind: unknown): kind is StagedKind {
  return (STAGED_KINDS as readonly unknown[]).includes(kind);
}

/** Reads one staged document (apiVersion projectcalico.org/v3, a staged kind). */
export function readStaged(doc: unknown): StagedPolicy {
  const o = doc as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown }; spec?: Record<string, unknown> } | null;
  const kind = o?.kind;
  if (!isStagedKind(kind)) throw new TypeError(`readStaged: not a staged policy kind: ${JSON.stringify(kind)}`);
  const name = o?.metadata?.name;
  if (typeof name !== 'string' || name === '') throw new InputError([{ type: 'object', object: kind, path: 'metadata.name', reason: 'name is required' }]);
  const global = kind === 'StagedGlobalNetworkPolicy';
  const rawNs = o?.metadata?.namespace;
  const namespace = global ? undefined : typeof rawNs === 'string' && rawNs !== '' ? rawNs : 'default';
  const where = `${kind} ${namespace === undefined ? '' : `${namespace}/`}${name}`;
  const { stagedAction = 'Set', ...spec } = o?.spec ?? {};
  if (!(STAGED_ACTIONS as readonly unknown[]).includes(stagedAction)) {
    throw new InputError([{ type: 'object', object: where, path: 'spec.stagedAction', reason: `must be Set, Delete, Learn or Ignore, not ${JSON.stringify(stagedAction)}` }]);
  }
  if (stagedAction === 'Delete') {
    const set = fieldsSetOnDelete(kind, spec);
    if (set.length > 0) throw new InputError([{ type: 'object', object: where, path: 'spec', reason: `${DELETE_WITH_SPEC[kind]} (set: ${set.join(', ')})` }]);
  }
  const { apiVersion, kind: counterpartKind } = COUNTERPART[kind];
  const metadata = { ...(o?.metadata ?? {}), name, ...(namespace === undefined ? {} : { namespace }) };
  const counterpart = { apiVersion, kind: counterpartKind, metadata, spec } as unknown as V3Resource | K8sNetworkPolicy;
  return { kind, ...(namespace === undefined ? {} : { namespace }), name, action: stagedAction as StagedAction, counterpart };
}
