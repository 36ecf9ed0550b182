/**
 * Objects of kinds Tessera does not read, and what that means for a verdict. Every tool that
 * takes input (`simulate`, `explain`, `render`, `validate`) reports each such object by name,
 * and the agent those it watches for that purpose, instead of dropping them without a word:
 *
 * - a policy kind Tessera does not enforce (the Kubernetes network-policy-api's v1alpha1
 *   AdminNetworkPolicy and BaselineAdminNetworkPolicy, which its v0.2.0 replaced with
 *   ClusterNetworkPolicy — enforced, in kube-admin/kube-baseline — and Calico 3.32 removed) is
 *   NOT ENFORCED. Its presence alone can change a verdict — an admin network policy sits in
 *   front of every namespaced one — so the tools count it as verdict-changing and exit non-zero
 *   (cli/exit-status.ts `EXIT_UNENFORCED`);
 * - any other kind (IPPool, BGPPeer, FelixConfiguration, a Service…) is not policy: it is
 *   reported as ignored, and changes nothing.
 *
 * One table, so the issue that enforces a kind removes its row and nothing else.
 */

import type { KindResource } from './kinds.ts';

/** What Tessera does with an object of a kind it does not read. */
export type UnreadKind =
  | { readonly status: 'not-enforced'; readonly reason: string }
  | { readonly status: 'not-policy' };

interface UnenforcedRow {
  /** API group, without version: every served version is the same kind. */
  readonly group: string;
  readonly kind: string;
  readonly reason: string;
}

const NETWORK_POLICY_API = 'policy.networking.k8s.io';

/**
 * The REST resources a cluster is listed for, to report its objects of these kinds (the agent's
 * `UnenforcedObjectsReporter`, `tessera simulate --kubeconfig`): AdminNetworkPolicy and
 * BaselineAdminNetworkPolicy at policy.networking.k8s.io/v1alpha1, the only version they had
 * (network-policy-api v0.1.x CRDs, as Calico 3.29–3.31 installed them).
 */
export const UNENFORCED_RESOURCES: ReadonlyArray<{ readonly resource: KindResource; readonly apiVersion: string; readonly kind: string }> = [
  {
    resource: { group: NETWORK_POLICY_API, version: 'v1alpha1', plural: 'adminnetworkpolicies' },
    apiVersion: `${NETWORK_POLICY_API}/v1alpha1`,
    kind: 'AdminNetworkPolicy',
  },
  {
    resource: { group: NETWORK_POLICY_API, version: 'v1alpha1', plural: 'baselineadminnetworkpolicies' },
    apiVersion: `${NETWORK_POLICY_API}/v1alpha1`,
    kind: 'BaselineAdminNetworkPolicy',
  },
];

/** Policy kinds Tessera does not enforce. */
export const UNENFORCED_POLICY_KINDS: readonly UnenforcedRow[] = [
  {
    group: NETWORK_POLICY_API,
    kind: 'AdminNetworkPolicy',
    reason:
      'AdminNetworkPolicy (v1alpha1) is not enforced by Tessera: its rules, which sit before every namespaced policy, are not applied. ' +
      'network-policy-api v0.2.0 replaced it with ClusterNetworkPolicy (tier Admin), which Tessera enforces; Calico 3.32 removed it too',
  },
  {
    group: NETWORK_POLICY_API,
    kind: 'BaselineAdminNetworkPolicy',
    reason:
      'BaselineAdminNetworkPolicy (v1alpha1) is not enforced by Tessera: its rules, which apply after every namespaced policy, are not applied. ' +
      'network-policy-api v0.2.0 replaced it with ClusterNetworkPolicy (tier Baseline), which Tessera enforces; Calico 3.32 removed it too',
  },
];

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** What Tessera does with an object of (apiVersion, kind) that it does not read. */
export function unreadKind(apiVersion: string, kind: string): UnreadKind {
  const group = groupOf(apiVersion);
  const row = UNENFORCED_POLICY_KINDS.find((r) => r.kind === kind && r.group === group);
  return row === undefined ? { status: 'not-policy' } : { status: 'not-enforced', reason: row.reason };
}

/** An object of a policy kind Tessera does not enforce, as every tool names it. */
export interface UnenforcedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly reason: string;
}

/** The one line every tool prints for it: `NOT ENFORCED: <apiVersion> <Kind> [<ns>/]<name>: <reason>`. */
export function describeUnenforced(o: UnenforcedObject): string {
  return `NOT ENFORCED: ${o.apiVersion} ${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}: ${o.reason}`;
}

/** The `UnenforcedObject` of `value`, when it is an object of a policy kind Tessera does not enforce. */
export function unenforcedObject(value: unknown): UnenforcedObject | undefined {
  const v = value as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | null;
  if (typeof v?.apiVersion !== 'string' || typeof v.kind !== 'string') return undefined;
  const what = unreadKind(v.apiVersion, v.kind);
  if (what.status !== 'not-enforced') return undefined;
  const name = typeof v.metadata?.name === 'string' && v.metadata.name !== '' ? v.metadata.name : '<unnamed>';
  const namespace = typeof v.metadata?.namespace === 'string' && v.metadata.namespace !== '' ? v.metadata.namespace : undefined;
  return { apiVersion: v.apiVersion, kind: v.kind, ...(namespace === undefined ? {} : { namespace }), name, reason: what.reason };
}
