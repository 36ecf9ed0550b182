/**
 * A ListerWatcher for a resource whose CRD may not be installed (Calico's staged-policy kinds
 * arrived in 3.30; a cluster may run older CRDs or apply ours late).
 *
 * Invariants:
 * - while the API server answers 404 for the resource, a list is an empty, complete list — so
 *   the informer syncs, and one missing optional kind never holds a node's whole policy back
 *   (the agent writes nothing before every informer has synced);
 * - its watch then waits `recheckMs` and fails with 410 Gone, which makes the reflector list
 *   again: a CRD installed later is found within `recheckMs`, and one removed later empties
 *   the cache through the same 404;
 * - every other answer, error or not, passes through unchanged.
 */
import type { Logger } from '../runtime/logger.ts';
import { StatusError, type ListerWatcher, type ListOptions, type ListResult, type WatchEvent, type WatchOptions } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';

export interface OptionalListerWatcherOptions {
  /** How long a watch of an absent resource waits before it is listed again. @default 60_000 */
  readonly recheckMs?: number;
  readonly logger: Logger;
}

export class OptionalListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  readonly #inner: ListerWatcher<T>;
  readonly #recheckMs: number;
  readonly #log: Logger;
  #absent = false;

  constructor(inner: ListerWatcher<T>, opts: OptionalListerWatcherOptions) {
    this.#inner = inner;
    this.resource = inner.resource;
    this.#recheckMs = opts.recheckMs ?? 60_000;
    this.#log = opts.logger.child({ component: 'optional-lister-watcher', resource: inner.resource });
  }

  async list(opts: ListOptions): Promise<ListResult<T>> {
    try {
      const result = await this.#inner.list(opts);
      if (this.#absent) this.#log.info('the resource is served now: watching it');
      this.#absent = false;
      return result;
    } catch (e) {
      if (!(e instanceof StatusError) || e.code !== 404) throw e;
      if (!this.#absent) this.#log.warn({ recheckMs: this.#recheckMs }, 'the API server does not serve this resource (its CRD is not installed): treated as empty until it does');
      this.#absent = true;
      return { items: [], resourceVersion: '' };
    }
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    if (!this.#absent) return this.#inner.watch(opts);
    const recheckMs = this.#recheckMs;
    // A stream with no event: it ends when aborted, or fails with 410 after `recheckMs`.
    const next = async (): Promise<IteratorResult<WatchEvent<T>>> => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, recheckMs);
        opts.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
      if (opts.signal.aborted) return { done: true, value: undefined };
      throw new StatusError(410, 'Expired', 'optional resource not served: list it again');
    };
    return { [Symbol.asyncIterator]: () => ({ next }) };
  }
}
