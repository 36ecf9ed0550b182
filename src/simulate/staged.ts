/**
 * Staged policies (Calico 3.30's OSS kinds `StagedNetworkPolicy`, `StagedGlobalNetworkPolicy`,
 * `StagedKubernetesNetworkPolicy`): the specs of their enforced counterparts plus
 * `stagedAction` (Set when absent). They are never enforced; they preview what the cluster would
 * decide if each were committed: Set creates or replaces the counterpart of the same namespace
 * and name, Delete removes it. `Learn` and `Ignore` (Calico Enterprise's policy-recommendation
 * actions, which Calico OSS accepts) are accepted, never enforced and never previewed: reading
 * one leaves a note saying so (cluster-objects.ts `classifyObjects`), and `commitStaged`
 * passes over it.
 *
 * Guarantees:
 * - staged objects are kept apart from everything the calc graph reads (`splitStaged`), so no
 *   code path can enforce one;
 * - `commitStaged` returns the cluster as if every staged object were committed, in document
 *   order (a later staged object for the same counterpart wins), leaving the input untouched;
 * - reading them (src/api/staged.ts): a bad `stagedAction` is an `InputError` naming the
 *   object and field, never guessed at.
 */
import type { ClusterObjects } from './cluster-objects.ts';
import type { V3Resource } from '../api/index.ts';
import { COUNTERPART, isPreviewedAction, type StagedPolicy } from '../api/staged.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';

/** `<namespace>/<name>`, the identity a staged object shares with its counterpart. */
function identity(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** The cluster as if every staged policy were committed (Set: create or replace; Delete: remove). */
export function commitStaged(objs: ClusterObjects, staged: readonly StagedPolicy[]): ClusterObjects {
  const k8s = new Map(objs.networkPolicies.map((p) => [identity(p.metadata?.namespace ?? 'default', String(p.metadata?.name)), p]));
  // A namespaced object written without a namespace is in `default`, as its staged twin's id says.
  const calico = new Map(objs.calico.map((r) => [`${r.kind}|${identity(r.kind === 'NetworkPolicy' ? r.metadata.namespace || 'default' : r.metadata.namespace, r.metadata.name)}`, r]));
  for (const s of staged) {
    if (!isPreviewedAction(s.action)) continue;
    const id = identity(s.namespace, s.name);
    if (s.kind === 'StagedKubernetesNetworkPolicy') {
      if (s.action === 'Delete') k8s.delete(id);
      else k8s.set(id, s.counterpart as K8sNetworkPolicy);
      continue;
    }
    const key = `${COUNTERPART[s.kind].kind}|${id}`;
    if (s.action === 'Delete') calico.delete(key);
    else calico.set(key, s.counterpart as V3Resource);
  }
  return { ...objs, networkPolicies: [...k8s.values()], calico: [...calico.values()] };
}

/** The staged objects a commit preview applies (Set and Delete); Learn and Ignore are only noted. */
export function previewedStaged(staged: readonly StagedPolicy[]): StagedPolicy[] {
  return staged.filter((s) => isPreviewedAction(s.action));
}

/** One pair whose verdict the staged policies would change. */
export interface StagedChange {
  readonly from: string;
  readonly to: string;
  /** The verdict if the staged policies were committed (the enforced one is the opposite). */
  readonly staged: 'allowed' | 'denied';
}

export interface StagedDiff {
  /** Staged objects read. */
  readonly policies: number;
  readonly pairs: number;
  readonly becomeDenied: number;
  readonly becomeAllowed: number;
  readonly changes: readonly StagedChange[];
}

/**
 * Compares an enforced pod × pod matrix with the staged one, over the same pods in the same
 * order (staged policies change policies only, never endpoints).
 */
export function stagedDiff(pods: readonly string[], enforced: readonly (readonly boolean[])[], staged: readonly (readonly boolean[])[], policies: number): StagedDiff {
  const changes: StagedChange[] = [];
  for (let i = 0; i < pods.length; i++) {
    for (let j = 0; j < pods.length; j++) {
      if (i === j) continue;
      const now = enforced[i]?.[j] ?? false;
      const then = staged[i]?.[j] ?? false;
      if (now !== then) changes.push({ from: pods[i] as string, to: pods[j] as string, staged: then ? 'allowed' : 'denied' });
    }
  }
  const becomeDenied = changes.filter((c) => c.staged === 'denied').length;
  return { policies, pairs: pods.length * (pods.length - 1), becomeDenied, becomeAllowed: changes.length - becomeDenied, changes };
}

/** `staged: 2 policies; 3 of 20 pairs would change — 3 would become denied, 0 allowed`, then one line per change. */
export function describeStagedDiff(d: StagedDiff, max = 50): string[] {
  const lines = [
    `staged: ${d.policies} ${d.policies === 1 ? 'policy' : 'policies'}; ${d.changes.length} of ${d.pairs} pairs would change — ${d.becomeDenied} would become denied, ${d.becomeAllowed} allowed`,
  ];
  for (const c of d.changes.slice(0, max)) lines.push(`  ${c.from} → ${c.to}: would be ${c.staged}`);
  if (d.changes.length > max) lines.push(`  … and ${d.changes.length - max} more`);
  return lines;
}
