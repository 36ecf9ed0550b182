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
 *
 * Neither answers from partial input: what could not be read is an `InputError`
 * (runtime/input-error.ts), never an empty list. The one exception is a kind the API server
 * does not serve (404), which is a note.
 */
import type { KubeConfig } from '@kubernetes/client-node';

import { apiVersionOf, kindsWatchedBy, resourceOf } from '../api/kinds.ts';
import { UNENFORCED_RESOURCES, unreadKind } from '../api/unenforced-kinds.ts';
import { FileListerWatcher } from '../informers/file-lister-watcher.ts';
import { KubeListerWatcher, type KubeResource } from '../informers/kube-lister-watcher.ts';
import { StatusError, type ListerWatcher } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { servedVersionListerWatcher } from '../informers/served-version-lister-watcher.ts';
import { silentLogger } from '../runtime/logger.ts';
import { formatInputProblem, InputError, isObjectProblem, type ClusterProblem, type InputProblem } from '../runtime/input-error.ts';
import { classifyObjects, type ClusterObjects } from './cluster-objects.ts';
import { withServiceEndpoints } from './endpoint-slices.ts';

export interface KindSource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: KubeResource;
  /** Older versions to read where `resource.version` is not served (the kind table's `fallbackVersions`). */
  readonly fallbackVersions?: readonly string[];
  /** The kind-table row's `optional`: a CRD a cluster may not have (404 is no note). */
  readonly optional?: boolean;
}

/** The kinds a simulation reads (the kind table's `simulate` rows), in the order they are listed. */
export const SIMULATED_KINDS: readonly KindSource[] = kindsWatchedBy('simulate').map((row) => ({
  apiVersion: apiVersionOf(row),
  kind: row.kind,
  resource: resourceOf(row),
  ...(row.fallbackVersions === undefined ? {} : { fallbackVersions: row.fallbackVersions }),
  ...(row.optional === true ? { optional: true } : {}),
}));

/** `List`, `PodList`…: expanded by the reader, never an object of its own. */
function isListKind(kind: string): boolean {
  return kind === 'List' || kind.endsWith('List');
}

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

export interface LoadOptions {
  /** Objects that cannot be keyed (no name) become notes instead of failing the load. @default false */
  readonly skipInvalid?: boolean;
}

/**
 * Reads `paths`. Every unreadable path and syntax error, and (unless `skipInvalid`) every
 * object without a name, is collected; if there is any, nothing is returned.
 * @throws InputError listing them all, each once.
 */
export async function loadFromFiles(paths: readonly string[], notes: string[], opts: LoadOptions = {}): Promise<ClusterObjects> {
  const { skipInvalid = false } = opts;
  const values: unknown[] = [];
  // Every kind's reader meets the same file problems: keep each once, in the order met.
  const problems = new Map<string, InputProblem>();
  for (const k of SIMULATED_KINDS) {
    const lw = new FileListerWatcher<KubeObject>({
      paths,
      resource: `${k.apiVersion}/${k.kind}`,
      select: (o): o is KubeObject => {
        const v = o as { apiVersion?: unknown; kind?: unknown };
        return v.apiVersion === k.apiVersion && v.kind === k.kind;
      },
      onError: (err) => {
        for (const p of err.problems) problems.set(formatInputProblem(p), p);
      },
    });
    values.push(...typed(await listAll(lw), k));
  }
  // Every other document too, so that none is dropped without a word: a policy kind Tessera
  // does not enforce is reported as such, anything else as ignored (classifyObjects).
  const others = new FileListerWatcher<KubeObject>({
    paths,
    resource: 'other kinds',
    select: (o): o is KubeObject => {
      const v = o as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
      if (typeof v.kind !== 'string' || isListKind(v.kind) || SIMULATED_KINDS.some((k) => v.apiVersion === k.apiVersion && v.kind === k.kind)) return false;
      // An unnamed document of a kind that is not policy (a kustomization.yaml) is no input error.
      return (typeof v.metadata?.name === 'string' && v.metadata.name !== '') || unreadKind(String(v.apiVersion), v.kind).status === 'not-enforced';
    },
    onError: (err) => {
      for (const p of err.problems) problems.set(formatInputProblem(p), p);
    },
  });
  values.push(...(await listAll(others)));
  const fatal: InputProblem[] = [];
  for (const [line, p] of problems) {
    if (skipInvalid && isObjectProblem(p)) notes.push(`${line}; skipped`);
    else fatal.push(p);
  }
  if (fatal.length > 0) throw new InputError(fatal);
  return withServiceEndpoints(classifyObjects(values, notes));
}

/** Lists every simulated kind from the cluster `kubeConfig` points at (see `loadFromListers`). */
export function loadFromCluster(kubeConfig: KubeConfig, notes: string[]): Promise<ClusterObjects> {
  const server = kubeConfig.getCurrentCluster()?.server;
  return loadFromListers((k) => new KubeListerWatcher<KubeObject>({ kubeConfig, resource: k.resource }), notes, server);
}

/** A Node system error (ECONNREFUSED, ENOTFOUND, a TLS failure…) or a timeout: no answer came. */
function isNoAnswer(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return typeof (err as NodeJS.ErrnoException).code === 'string' || err.name === 'AbortError' || err.name === 'TimeoutError';
}

/**
 * Lists every simulated kind from the ListerWatcher `listerFor` gives for it.
 *
 * Only a kind the server does not serve (404: e.g. Calico's CRDs not installed) is a note —
 * a cluster without them still has pods and Kubernetes policies. A list the server forbids
 * (403) fails the load after the other kinds were tried, so every forbidden kind is named;
 * any other failure (401, 5xx, no answer) fails it at once, as every later list would fail
 * the same way.
 * @throws InputError with a `ClusterProblem` per kind that could not be listed.
 */
export async function loadFromListers(listerFor: (kind: KindSource) => ListerWatcher<KubeObject>, notes: string[], server?: string): Promise<ClusterObjects> {
  const values: unknown[] = [];
  const forbidden: ClusterProblem[] = [];
  for (const k of SIMULATED_KINDS) {
    // At the version the server serves (ClusterNetworkPolicy: v1beta1, else v1alpha2); objects typed as the row's.
    const lw = servedVersionListerWatcher(k.resource, k.fallbackVersions, (resource) => listerFor({ ...k, resource }), silentLogger);
    const resource = `${k.apiVersion} ${k.kind}`;
    try {
      values.push(...typed(await listAll(lw), k));
    } catch (err) {
      if (err instanceof StatusError) {
        if (err.code === 404) {
          // An optional kind's CRD (staged policies, ClusterNetworkPolicy) is often absent: none, silently, as the agent reads it.
          if (k.optional !== true) notes.push(`${resource}: not served by the API server (is its CRD installed?); none listed`);
          continue;
        }
        // KubeListerWatcher prefixes what it was doing; the problem names the kind instead.
        const prefix = `list ${lw.resource}: `;
        const reason = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
        const problem: ClusterProblem = { type: 'cluster', resource, status: err.code, reason, ...(server === undefined ? {} : { server }) };
        if (err.code === 403) {
          forbidden.push(problem);
          continue;
        }
        throw new InputError([...forbidden, problem]);
      }
      const reason = isNoAnswer(err) ? `API server unreachable: ${(err as Error).message}` : (err as Error).message;
      throw new InputError([...forbidden, { type: 'cluster', resource, reason, ...(server === undefined ? {} : { server }) }], { cause: err });
    }
  }
  if (forbidden.length > 0) throw new InputError(forbidden);
  values.push(...(await listUnenforced(listerFor, notes)));
  return withServiceEndpoints(classifyObjects(values, notes));
}

/**
 * The cluster's objects of the policy kinds Tessera does not enforce (api/unenforced-kinds.ts),
 * so that they are reported, not missed. A kind the server does not serve (404) has none; any
 * other failure is a note saying that such objects, if any, are not reported — never a reason to
 * refuse the simulation of what Tessera does enforce.
 */
async function listUnenforced(listerFor: (kind: KindSource) => ListerWatcher<KubeObject>, notes: string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const u of UNENFORCED_RESOURCES) {
    const k: KindSource = { apiVersion: u.apiVersion, kind: u.kind, resource: u.resource };
    try {
      out.push(...typed(await listAll(listerFor(k)), k));
    } catch (err) {
      if (err instanceof StatusError && err.code === 404) continue;
      notes.push(`${u.apiVersion} ${u.kind}: could not be listed (${(err as Error).message}); objects of this kind, which Tessera does not enforce, are not reported`);
    }
  }
  return out;
}
