/**
 * Staged policies (Calico 3.30's OSS kinds `StagedNetworkPolicy`, `StagedGlobalNetworkPolicy`,
 * `StagedKubernetesNetworkPolicy`): the specs of their enforced counterparts plus
 * `stagedAction: Set | Delete` (Set when absent). Never enforced: the simulator previews what
 * committing them would change (simulate/staged.ts), and the agent counts, per staged policy
 * and rule, the packets they would deny, on chains that never drop (calc update processor,
 * dataplane rule renderer).
 *
 * A staged object with a bad `stagedAction` is an `InputError` naming the object and field,
 * never guessed at.
 */
import type { K8sNetworkPolicy } from './kubernetes.ts';
import type { V3Resource } from './types.ts';
import { InputError } from '../runtime/input-error.ts';

export const STAGED_KINDS = ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'] as const;
export type StagedKind = (typeof STAGED_KINDS)[number];

/** The enforced kind a staged kind previews, and its apiVersion. */
export const COUNTERPART: Readonly<Record<StagedKind, { apiVersion: string; kind: string }>> = {
  StagedNetworkPolicy: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy' },
  StagedGlobalNetworkPolicy: { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy' },
  StagedKubernetesNetworkPolicy: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
};

export type StagedAction = 'Set' | 'Delete';

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
  if (stagedAction !== 'Set' && stagedAction !== 'Delete') {
    throw new InputError([{ type: 'object', object: where, path: 'spec.stagedAction', reason: `must be Set or Delete, not ${JSON.stringify(stagedAction)}` }]);
  }
  const { apiVersion, kind: counterpartKind } = COUNTERPART[kind];
  const metadata = { ...(o?.metadata ?? {}), name, ...(namespace === undefined ? {} : { namespace }) };
  const counterpart = { apiVersion, kind: counterpartKind, metadata, spec } as unknown as V3Resource | K8sNetworkPolicy;
  return { kind, ...(namespace === undefined ? {} : { namespace }), name, action: stagedAction, counterpart };
}
