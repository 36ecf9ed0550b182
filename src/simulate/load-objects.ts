/**
 * Where a simulation's objects come from: files or a live cluster, both through the
 * informers' `ListerWatcher`s (one per kind — a Pod and a ServiceAccount may share a
 * namespace/name key), listed once to completion.
 *
 * - files: `FileListerWatcher` over `-f` paths (directories recursively, multi-document
 *   YAML, JSON, lists expanded);
 * - cluster: `KubeListerWatcher` on a kubeconfig; the objects the controllers generate
 *   (profiles, workload endpoints, knp.default.* policies) come back under the same keys as
 *   the ones generated here and replace them, so what is simulated is what the agents see.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { FileListerWatcher } from '../informers/file-lister-watcher.ts';
import { KubeListerWatcher, type KubeResource } from '../informers/kube-lister-watcher.ts';
import type { ListerWatcher } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { classifyObjects, type ClusterObjects } from './cluster-objects.ts';

export interface KindSource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: KubeResource;
}

/** The kinds a simulation reads, in the order they are listed. */
export const SIMULATED_KINDS: readonly KindSource[] = [
  { apiVersion: 'v1', kind: 'Namespace', resource: { group: '', version: 'v1', plural: 'namespaces' } },
  { apiVersion: 'v1', kind: 'ServiceAccount', resource: { group: '', version: 'v1', plural: 'serviceaccounts' } },
  { apiVersion: 'v1', kind: 'Pod', resource: { group: '', version: 'v1', plural: 'pods' } },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', resource: { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' } },
  { apiVersion: 'projectcalico.org/v3', kind: 'Tier', resource: { group: 'projectcalico.org', version: 'v3', plural: 'tiers' } },
  { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'globalnetworkpolicies' } },
  { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies' } },
  { apiVersion: 'projectcalico.org/v3', kind: 'Profile', resource: { group: 'projectcalico.org', version: 'v3', plural: 'profiles' } },
  { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', resource: { group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' } },
];

async function listAll(lw: ListerWatcher<KubeObject>): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  let cont: string | undefined;
  do {
    const page = await lw.list({ resourceVersion: '', limit: 500, ...(cont !== undefined ? { continue: cont } : {}) });
    out.push(...page.items);
    cont = page.continue || undefined;
  } while (cont !== undefined);
  return out;
}

/** Objects with the list's apiVersion/kind filled in (a list's items may omit them). */
function typed(items: readonly KubeObject[], k: KindSource): unknown[] {
  return items.map((o) => ({ ...o, apiVersion: k.apiVersion, kind: k.kind }));
}

/** Reads `paths`; unreadable files are added to `notes`. */
export async function loadFromFiles(paths: readonly string[], notes: string[]): Promise<ClusterObjects> {
  const values: unknown[] = [];
  const bad = new Set<string>();
  for (const k of SIMULATED_KINDS) {
    const lw = new FileListerWatcher<KubeObject>({
      paths,
      resource: `${k.apiVersion}/${k.kind}`,
      select: (o): o is KubeObject => {
        const v = o as { apiVersion?: unknown; kind?: unknown };
        return v.apiVersion === k.apiVersion && v.kind === k.kind;
      },
      onError: (file, err) => bad.add(`${file}: ${err.message}`),
    });
    values.push(...typed(await listAll(lw), k));
  }
  notes.push(...[...bad].sort());
  return classifyObjects(values, notes);
}

/** Lists every simulated kind from the cluster `kubeConfig` points at. */
export function loadFromCluster(kubeConfig: KubeConfig, notes: string[]): Promise<ClusterObjects> {
  return loadFromListers((k) => new KubeListerWatcher<KubeObject>({ kubeConfig, resource: k.resource }), notes);
}

/**
 * Lists every simulated kind from the ListerWatcher `listerFor` gives for it; a kind that
 * cannot be listed (e.g. no Calico CRDs) is a note, not a failure.
 */
export async function loadFromListers(listerFor: (kind: KindSource) => ListerWatcher<KubeObject>, notes: string[]): Promise<ClusterObjects> {
  const values: unknown[] = [];
  for (const k of SIMULATED_KINDS) {
    const lw = listerFor(k);
    try {
      values.push(...typed(await listAll(lw), k));
    } catch (err) {
      // A cluster without Calico's CRDs still has pods and Kubernetes policies.
      notes.push(`${k.apiVersion} ${k.kind}: not listed: ${(err as Error).message}`);
    }
  }
  return classifyObjects(values, notes);
}
