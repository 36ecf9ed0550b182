/**
 * A ListerWatcher for a resource the API server may serve under an older version only: Kubernetes'
 * ClusterNetworkPolicy is `v1beta1` in network-policy-api v0.3.0, but a cluster that has only
 * Calico 3.32's bundled v0.2.0 CRD serves `v1alpha2` alone — and listing `v1beta1` there is a 404,
 * which an optional kind would read as "no objects": every cluster policy silently dropped, the
 * widest possible mistake. The versions share one schema (no conversion webhook), so an object
 * read under any of them means the same.
 *
 * Invariants:
 * - every list tries the versions in order of preference and reads the first one served (not a
 *   404); so after any re-list (a watch that ends, a 410) it moves to the preferred version as
 *   soon as the server serves it, and back to an older one if the CRD is downgraded;
 * - the watch is of the version the last list read (resource versions are shared by every version
 *   of a resource, so the list's resourceVersion is valid for it);
 * - it logs, at info, the version it reads whenever that changes (the first time included);
 * - when no version is served, the list fails with the preferred version's 404, so an
 *   OptionalListerWatcher around it reads an empty list and re-checks later — only then is the
 *   kind empty;
 * - any other answer, error or not, passes through unchanged.
 */
import type { Logger } from '../runtime/logger.ts';
import { StatusError, type ListerWatcher, type ListOptions, type ListResult, type WatchEvent, type WatchOptions } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';

export interface ServedVersionListerWatcherOptions {
  readonly logger: Logger;
  /** Named in the logs: `clusternetworkpolicies.policy.networking.k8s.io`. */
  readonly what: string;
}

export class ServedVersionListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  readonly #versions: readonly string[];
  readonly #make: (version: string) => ListerWatcher<T>;
  /** Made on first use: a cluster serving the preferred version never makes the others. */
  readonly #made = new Map<string, ListerWatcher<T>>();
  readonly #log: Logger;
  #reading: string;
  #logged: string | undefined;

  /**
   * @param versions in order of preference; at least one.
   * @param make the ListerWatcher of one version.
   */
  constructor(versions: readonly string[], make: (version: string) => ListerWatcher<T>, opts: ServedVersionListerWatcherOptions) {
    const first = versions[0];
    if (first === undefined) throw new RangeError('ServedVersionListerWatcher: no version given');
    this.#versions = versions;
    this.#make = make;
    this.#reading = first;
    this.resource = this.#of(first).resource;
    this.#log = opts.logger.child({ component: 'served-version-lister-watcher', resource: opts.what });
  }

  /** The version the last list read (the preferred one before any list). */
  get version(): string {
    return this.#reading;
  }

  async list(opts: ListOptions): Promise<ListResult<T>> {
    let notServed: StatusError | undefined;
    for (const [i, version] of this.#versions.entries()) {
      try {
        const result = await this.#of(version).list(opts);
        this.#reading = version;
        if (this.#logged !== version) {
          const skipped = this.#versions.slice(0, i);
          this.#log.info({ version, ...(skipped.length === 0 ? {} : { notServed: skipped }) }, `reading ${version}${skipped.length === 0 ? '' : ` (the API server does not serve ${skipped.join(', ')})`}`);
          this.#logged = version;
        }
        return result;
      } catch (e) {
        if (!(e instanceof StatusError) || e.code !== 404) throw e;
        notServed ??= e;
      }
    }
    this.#logged = undefined;
    throw notServed ?? new StatusError(404, 'NotFound', 'no version served');
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    return this.#of(this.#reading).watch(opts);
  }

  #of(version: string): ListerWatcher<T> {
    let lw = this.#made.get(version);
    if (lw === undefined) {
      lw = this.#make(version);
      this.#made.set(version, lw);
    }
    return lw;
  }
}

/**
 * The ListerWatcher of `resource`, reading it at `resource.version` or else at the first of
 * `fallbackVersions` the API server serves; just `base(resource)` when there is no fallback.
 */
export function servedVersionListerWatcher<T extends KubeObject>(
  resource: { readonly group: string; readonly version: string; readonly plural: string },
  fallbackVersions: readonly string[] | undefined,
  base: (resource: { group: string; version: string; plural: string }) => ListerWatcher<T>,
  logger: Logger,
): ListerWatcher<T> {
  const at = (version: string): ListerWatcher<T> => base({ group: resource.group, version, plural: resource.plural });
  if (fallbackVersions === undefined || fallbackVersions.length === 0) return at(resource.version);
  return new ServedVersionListerWatcher([resource.version, ...fallbackVersions], at, { logger, what: `${resource.plural}.${resource.group}` });
}
