/**
 * The objects a simulation starts from, and their translation into what the calc graph
 * reads — through the controllers' own builders, never a re-implementation:
 *
 * - Namespace → `kns.<ns>` (`namespaceToProfile`), ServiceAccount → `ksa.<ns>.<sa>`
 *   (`serviceAccountToProfile`); every namespace gets the `default` ServiceAccount the
 *   apiserver would create, and the `kubernetes.io/metadata.name` label it sets;
 * - Pod → WorkloadEndpoint (`podToWorkloadEndpoint`); pods without one (no node, no IP,
 *   host network…) are kept as notes;
 * - networking.k8s.io/v1 NetworkPolicy → `knp.default.<name>` (`convertNetworkPolicy`),
 *   after the apiserver's `SetDefaults_NetworkPolicy` (calico-semantics §3.2);
 * - the default tiers as the controllers create them (`defaultTiers`);
 * - projectcalico.org/v3 objects as given; a Calico object with the same key as a generated
 *   one (e.g. an explicit WorkloadEndpoint or Profile) replaces it.
 */
import { isError, validateResource, type V3Resource } from '../api/index.ts';
import {
  convertNetworkPolicy,
  defaultTiers,
  namespaceToProfile,
  podToWorkloadEndpoint,
  serviceAccountToProfile,
  type K8sNetworkPolicy,
} from '../controllers/index.ts';
import type { K8sPod } from '../controllers/workload-endpoint-builder.ts';

export interface K8sNamespace {
  metadata?: { name?: string; labels?: Record<string, string> };
}

export interface K8sServiceAccount {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
}

/** Everything a simulation reads, by kind. */
export interface ClusterObjects {
  readonly namespaces: readonly K8sNamespace[];
  readonly serviceAccounts: readonly K8sServiceAccount[];
  readonly pods: readonly K8sPod[];
  readonly networkPolicies: readonly K8sNetworkPolicy[];
  /** Tier, NetworkPolicy, GlobalNetworkPolicy, Profile, WorkloadEndpoint (projectcalico.org/v3). */
  readonly calico: readonly V3Resource[];
}

export interface TranslatedCluster {
  /** Keyed `<kind>/<namespace>/<name>`, in a stable order. */
  readonly resources: ReadonlyMap<string, V3Resource>;
  /** Dropped rules, invalid objects and pods without an endpoint, one line each. */
  readonly notes: readonly string[];
}

export function resourceKey(r: V3Resource): string {
  return `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`;
}

/** The apiserver's `SetDefaults_NetworkPolicy`, for objects that never went through it. */
export function defaultNetworkPolicyTypes(np: K8sNetworkPolicy): K8sNetworkPolicy {
  const spec = np.spec ?? {};
  if ((spec.policyTypes ?? []).length > 0) return np;
  const policyTypes = ['Ingress', ...((spec.egress ?? []).length > 0 ? ['Egress'] : [])];
  return { ...np, spec: { ...spec, policyTypes } };
}

export function translateCluster(objs: ClusterObjects): TranslatedCluster {
  const resources = new Map<string, V3Resource>();
  const notes: string[] = [];
  const put = (r: V3Resource): void => {
    resources.set(resourceKey(r), r);
  };
  for (const t of defaultTiers()) put(t);

  const saSeen = new Set<string>();
  for (const ns of objs.namespaces) {
    const name = ns.metadata?.name;
    if (!name) continue;
    const labels = { 'kubernetes.io/metadata.name': name, ...(ns.metadata?.labels ?? {}) };
    put(namespaceToProfile({ metadata: { name, labels } }));
  }
  for (const sa of objs.serviceAccounts) {
    saSeen.add(`${sa.metadata?.namespace ?? ''}/${sa.metadata?.name ?? ''}`);
    put(serviceAccountToProfile(sa));
  }
  // The apiserver's ServiceAccount controller gives every namespace a `default` account,
  // and a pod's account must exist for it to be admitted.
  const implied = new Set<string>();
  for (const ns of objs.namespaces) if (ns.metadata?.name) implied.add(`${ns.metadata.name}/default`);
  for (const pod of objs.pods) implied.add(`${pod.metadata?.namespace ?? ''}/${pod.spec?.serviceAccountName ?? 'default'}`);
  for (const key of [...implied].sort()) {
    if (saSeen.has(key)) continue;
    const [namespace = '', name = ''] = key.split('/');
    put(serviceAccountToProfile({ metadata: { name, namespace } }));
  }

  for (const pod of objs.pods) {
    const withSa: K8sPod = pod.spec?.serviceAccountName ? pod : { ...pod, spec: { ...pod.spec, serviceAccountName: 'default' } };
    const wep = podToWorkloadEndpoint(withSa);
    if (wep === undefined) notes.push(`Pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}: no workload endpoint (no node, no IP, host network or finished); skipped`);
    else put(wep);
  }

  for (const np of objs.networkPolicies) {
    const { policy, errors } = convertNetworkPolicy(defaultNetworkPolicyTypes(np));
    const id = `NetworkPolicy ${np.metadata?.namespace ?? ''}/${np.metadata?.name ?? ''}`;
    for (const e of errors) notes.push(`${id}: spec.${e.direction}[${e.index}]: ${e.reason} (rule dropped)`);
    put(policy);
  }

  for (const r of objs.calico) {
    const problems = validateResource(r).filter(isError);
    if (problems.length > 0) {
      notes.push(`${r.kind} ${r.metadata.namespace ? `${r.metadata.namespace}/` : ''}${r.metadata.name}: invalid, ignored as the calc graph would: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    }
    put(r);
  }
  return { resources, notes };
}

/** Sorts documents into a `ClusterObjects` by apiVersion/kind; anything else is a note. */
export function classifyObjects(values: readonly unknown[], notes: string[]): ClusterObjects {
  const out = { namespaces: [] as K8sNamespace[], serviceAccounts: [] as K8sServiceAccount[], pods: [] as K8sPod[], networkPolicies: [] as K8sNetworkPolicy[], calico: [] as V3Resource[] };
  for (const v of values) {
    const o = v as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } } | null;
    const kind = typeof o?.kind === 'string' ? o.kind : '';
    const api = typeof o?.apiVersion === 'string' ? o.apiVersion : '';
    if (api === 'v1' && kind === 'Namespace') out.namespaces.push(v as K8sNamespace);
    else if (api === 'v1' && kind === 'ServiceAccount') out.serviceAccounts.push(v as K8sServiceAccount);
    else if (api === 'v1' && kind === 'Pod') out.pods.push(v as K8sPod);
    else if (api === 'networking.k8s.io/v1' && kind === 'NetworkPolicy') out.networkPolicies.push(v as K8sNetworkPolicy);
    else if (api === 'projectcalico.org/v3' && ['Tier', 'NetworkPolicy', 'GlobalNetworkPolicy', 'Profile', 'WorkloadEndpoint'].includes(kind)) out.calico.push(v as V3Resource);
    else notes.push(`${api || '?'} ${kind || '?'} ${String(o?.metadata?.name ?? '')}: not a kind the simulator reads; skipped`);
  }
  return out;
}
