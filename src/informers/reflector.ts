/**
 * Reflector: keeps a store in step with a ListerWatcher (client-go `reflector.go`, with
 * kube-rs's reconnect rules).
 *
 * States and transitions (every I/O source — list, watch, clock, randomness — is injected, so
 * tests drive each path):
 *
 * ```
 *   LIST ──replace(items, rv)──▶ WATCH(rv) ──clean close──▶ WATCH(rv)          (resume, no relist)
 *    ▲                              │ ──stalled (no data for watchInactivityTimeoutMs)──▶ WATCH(rv)
 *    │                              │ ──410 Gone / Expired──▶ LIST from ""       (relist, immediately)
 *    └──────── error: backoff ──────┴ ──other error──▶ backoff ▶ WATCH(rv)
 * ```
 *
 * Guarantees:
 * - the first list asks for resourceVersion "0" (served by the API server's watch cache);
 *   later relists ask for the last synced RV, or "" (a consistent read) after a 410 or a
 *   too-large-RV error;
 * - lists are paginated (`pageSize`), and `store.replace` sees the complete list at once;
 * - every watch event, and every BOOKMARK, advances the resourceVersion; bookmarks produce no
 *   store change;
 * - a watch uses a random server timeout in [minWatchTimeoutSeconds, 2×) like client-go, and
 *   a client-side inactivity watchdog (the server timeout + 30 s unless configured), because
 *   @kubernetes/client-node 1.x has none: a half-open connection would otherwise stall forever;
 * - errors back off exponentially (800 ms → 30 s, jitter, reset after 2 quiet minutes); a
 *   410 relists at once, since it is expected rather than a fault;
 * - `run(signal)` returns only when `signal` aborts;
 * - liveness (`loopProgressAt`, `livenessTimeoutMs`): while running, the loop shows it is
 *   turning — a list page received, a watch (re)started, a watch event or bookmark — at least once per
 *   `livenessTimeoutMs`, except while it sleeps in a backoff it armed itself. Longer means the
 *   loop is dead (a list that never answers, a stream that ignores its abort), which no
 *   reconnect here can repair.
 */
import type { Logger } from '../runtime/logger.ts';
import { silentLogger } from '../runtime/logger.ts';
import { Backoff, type BackoffOptions } from '../runtime/backoff.ts';
import { realClock, sleep, type Clock, type Timer } from '../runtime/clock.ts';
import type { InformerMetrics, WatchRestartReason } from './informer-metrics.ts';
import {
  isExpiredError,
  isTooLargeResourceVersionError,
  StatusError,
  type ListerWatcher,
  type WatchEvent,
} from './lister-watcher.ts';
import type { KubeObject } from './object.ts';

/** What the Reflector writes to: a DeltaFIFO in an informer, an Indexer in simple uses. */
export interface ReflectorStore<T> {
  add(obj: T): void;
  update(obj: T): void;
  delete(obj: T): void;
  replace(list: readonly T[], resourceVersion: string): void;
  resync(): void;
}

/** Rewrites each object as it enters the process (e.g. drop `metadata.managedFields`). */
export type TransformFunc<T> = (obj: T) => T;

/** Drops `metadata.managedFields`, which is often larger than the rest of the object. */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

export interface ReflectorOptions<T extends KubeObject> {
  listerWatcher: ListerWatcher<T>;
  store: ReflectorStore<T>;
  /** @default realClock */
  clock?: Clock;
  /** @default Math.random */
  random?: () => number;
  /** List page size. @default 500 */
  pageSize?: number;
  /** Server watch timeout lower bound; the actual value is random in [min, 2×min). @default 300 */
  minWatchTimeoutSeconds?: number;
  /**
   * Abort and re-open a watch that delivered nothing, not even a bookmark, for this long.
   * By default the watch's own server timeout plus 30 s: the server promised to close the
   * stream by then, so a stream still silent is dead (a half-open connection). A shorter
   * value detects dead streams sooner, but note that kube-apiserver 1.32 sends nothing at
   * all on an idle watch — no periodic bookmarks were seen in 150 s — so anything shorter
   * than the server timeout re-opens healthy idle watches too.
   * @default timeoutSeconds × 1000 + 30_000
   */
  watchInactivityTimeoutMs?: number;
  /** Call `store.resync()` this often; 0 disables. @default 0 */
  resyncPeriodMs?: number;
  /** @default stripManagedFields */
  transform?: TransformFunc<T>;
  /** @default client-go's reflector backoff */
  backoff?: BackoffOptions;
  /** @default silentLogger */
  logger?: Logger;
  metrics?: InformerMetrics;
}

/** A watch that closed within 1 s with no events: treated as an error, so it backs off. */
export class VeryShortWatchError extends Error {
  override name = 'VeryShortWatchError';
}

type WatchOutcome = 'closed' | 'expired' | 'stalled' | 'aborted';

export class Reflector<T extends KubeObject> {
  private readonly lw: ListerWatcher<T>;
  private readonly store: ReflectorStore<T>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly pageSize: number;
  private readonly minWatchTimeoutSeconds: number;
  private readonly watchInactivityTimeoutMs: number | undefined;
  private readonly resyncPeriodMs: number;
  private readonly transform: TransformFunc<T>;
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private readonly metrics: InformerMetrics | undefined;

  private lastSyncResourceVersion = '';
  private lastSyncResourceVersionUnavailable = false;
  private lastProgressAt: number;
  private listedOnce = false;
  private loopTurnedAt: number | undefined;
  /**
   * The longest a running loop goes without turning: the watch inactivity bound (the largest
   * random server timeout + 30 s, or `watchInactivityTimeoutMs`), after which the watchdog
   * aborts and the loop re-opens the watch, plus a minute for the abort to land and a list or
   * the next watch to start on a loaded node.
   */
  readonly livenessTimeoutMs: number;

  constructor(opts: ReflectorOptions<T>) {
    const {
      listerWatcher,
      store,
      clock = realClock,
      random = Math.random,
      pageSize = 500,
      minWatchTimeoutSeconds = 300,
      watchInactivityTimeoutMs,
      resyncPeriodMs = 0,
      transform = stripManagedFields,
      backoff,
      logger = silentLogger,
      metrics,
    } = opts;
    if (!(pageSize > 0)) throw new RangeError(`Reflector: pageSize must be > 0, got ${pageSize}`);
    if (!(minWatchTimeoutSeconds > 0)) throw new RangeError(`Reflector: minWatchTimeoutSeconds must be > 0, got ${minWatchTimeoutSeconds}`);
    if (watchInactivityTimeoutMs !== undefined && !(watchInactivityTimeoutMs > 0)) throw new RangeError(`Reflector: watchInactivityTimeoutMs must be > 0, got ${watchInactivityTimeoutMs}`);
    if (!(resyncPeriodMs >= 0)) throw new RangeError(`Reflector: resyncPeriodMs must be >= 0, got ${resyncPeriodMs}`);
    this.lw = listerWatcher;
    this.store = store;
    this.clock = clock;
    this.random = random;
    this.pageSize = pageSize;
    this.minWatchTimeoutSeconds = minWatchTimeoutSeconds;
    this.watchInactivityTimeoutMs = watchInactivityTimeoutMs;
    this.resyncPeriodMs = resyncPeriodMs;
    this.transform = transform;
    this.backoff = new Backoff(clock, { random, ...backoff });
    this.log = logger.child({ component: 'reflector', resource: listerWatcher.resource });
    this.metrics = metrics;
    this.lastProgressAt = clock.now();
    this.livenessTimeoutMs = (watchInactivityTimeoutMs ?? 2 * minWatchTimeoutSeconds * 1000 + 30_000) + 60_000;
  }

  /** The resourceVersion of the last list, event or bookmark applied ("" before the first list). */
  get lastResourceVersion(): string {
    return this.lastSyncResourceVersion;
  }

  /** Milliseconds since the resourceVersion last advanced. */
  resourceVersionAgeMs(): number {
    return this.clock.now() - this.lastProgressAt;
  }

  /**
   * Clock time the list/watch loop last turned (see the liveness guarantee); undefined while
   * it is not running or sleeps in a backoff.
   */
  get loopProgressAt(): number | undefined {
    return this.loopTurnedAt;
  }

  /** Lists and watches until `signal` aborts. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    const stopResync = this.startResync(signal);
    let needList = true;
    try {
      while (!signal.aborted) {
        this.loopTurnedAt = this.clock.now();
        try {
          if (needList) {
            await this.listAndReplace(signal);
            needList = false;
          }
          const outcome = await this.watchOnce(signal);
          if (outcome === 'expired') {
            // The RV fell out of the server's window: relist with a consistent read.
            this.lastSyncResourceVersionUnavailable = true;
            needList = true;
          }
        } catch (err) {
          if (signal.aborted) break;
          if (isExpiredError(err) || isTooLargeResourceVersionError(err)) {
            this.lastSyncResourceVersionUnavailable = true;
            needList = true;
            continue;
          }
          const delay = this.backoff.next();
          this.log.warn({ err, delayMs: Math.round(delay), phase: needList ? 'list' : 'watch' }, 'reflector error, backing off');
          this.loopTurnedAt = undefined;
          await sleep(this.clock, delay, signal).catch(() => undefined);
        }
      }
    } finally {
      this.loopTurnedAt = undefined;
      stopResync();
    }
  }

  private startResync(signal: AbortSignal): () => void {
    if (this.resyncPeriodMs === 0) return () => undefined;
    let timer: Timer | undefined;
    const schedule = (): void => {
      timer = this.clock.setTimer(() => {
        if (signal.aborted) return;
        this.store.resync();
        schedule();
      }, this.resyncPeriodMs);
    };
    schedule();
    return () => timer?.cancel();
  }

  private relistResourceVersion(): string {
    if (this.lastSyncResourceVersionUnavailable) return '';
    return this.lastSyncResourceVersion === '' ? '0' : this.lastSyncResourceVersion;
  }

  private async listAndReplace(signal: AbortSignal): Promise<void> {
    const resourceVersion = this.relistResourceVersion();
    const items: T[] = [];
    let cont: string | undefined;
    let listRv = '';
    do {
      // A continue token carries its own snapshot; the server rejects an RV beside it.
      const page = await this.lw.list(
        cont === undefined ? { resourceVersion, limit: this.pageSize, signal } : { continue: cont, limit: this.pageSize, signal },
      );
      this.metrics?.lists.inc({ resource: this.lw.resource });
      this.loopTurnedAt = this.clock.now();
      for (const item of page.items) items.push(this.transform(item));
      listRv = page.resourceVersion;
      cont = page.continue === '' ? undefined : page.continue;
    } while (cont !== undefined && !signal.aborted);
    if (signal.aborted) return;
    this.store.replace(items, listRv);
    if (this.listedOnce) this.metrics?.relists.inc({ resource: this.lw.resource });
    this.listedOnce = true;
    this.lastSyncResourceVersionUnavailable = false;
    this.advance(listRv);
    this.log.debug({ items: items.length, resourceVersion: listRv }, 'listed');
  }

  private advance(resourceVersion: string | undefined): void {
    if (resourceVersion === undefined || resourceVersion === '') return;
    this.lastSyncResourceVersion = resourceVersion;
    this.lastProgressAt = this.clock.now();
  }

  private async watchOnce(signal: AbortSignal): Promise<WatchOutcome> {
    const ctrl = new AbortController();
    const onAbort = (): void => ctrl.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let stalled = false;
    let watchdog: Timer | undefined;
    // One timer per watch, not one per event: on expiry it re-arms for the time left since
    // the last event, and aborts only when a full timeout passed with nothing received.
    let lastDataAt = this.clock.now();
    const armWatchdog = (delayMs: number): void => {
      watchdog = this.clock.setTimer(() => {
        const idle = this.clock.now() - lastDataAt;
        if (idle < inactivityMs) {
          armWatchdog(inactivityMs - idle);
          return;
        }
        stalled = true;
        ctrl.abort(new Error('watch inactivity timeout'));
      }, delayMs);
    };
    const timeoutSeconds = Math.floor(this.minWatchTimeoutSeconds * (1 + this.random()));
    const inactivityMs = this.watchInactivityTimeoutMs ?? timeoutSeconds * 1000 + 30_000;
    const startedAt = this.clock.now();
    let events = 0;
    const resource = this.lw.resource;
    this.metrics?.watches.inc({ resource });
    armWatchdog(inactivityMs);
    try {
      const stream = this.lw.watch({
        resourceVersion: this.lastSyncResourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        signal: ctrl.signal,
      });
      for await (const event of stream) {
        lastDataAt = this.clock.now();
        this.loopTurnedAt = lastDataAt;
        events++;
        this.metrics?.watchEvents.inc({ resource, type: event.type });
        this.handleEvent(event);
      }
    } catch (err) {
      if (signal.aborted) return 'aborted';
      if (stalled) return this.restarted('stalled');
      if (isExpiredError(err)) return this.restarted('expired');
      this.metrics?.watchRestarts.inc({ resource, reason: 'error' });
      throw err;
    } finally {
      watchdog?.cancel();
      signal.removeEventListener('abort', onAbort);
      ctrl.abort();
    }
    if (signal.aborted) return 'aborted';
    if (stalled) return this.restarted('stalled');
    if (events === 0 && this.clock.now() - startedAt < 1000) {
      this.metrics?.watchRestarts.inc({ resource, reason: 'very_short' });
      throw new VeryShortWatchError(`very short watch: ${resource}: closed with no events within 1 s`);
    }
    return this.restarted('closed');
  }

  private restarted(reason: WatchRestartReason & WatchOutcome): WatchOutcome {
    this.metrics?.watchRestarts.inc({ resource: this.lw.resource, reason });
    if (reason !== 'closed') this.log.info({ reason, resourceVersion: this.lastSyncResourceVersion }, 'watch restarted');
    return reason;
  }

  private handleEvent(event: WatchEvent<T>): void {
    switch (event.type) {
      case 'ADDED':
        this.store.add(this.transform(event.object));
        break;
      case 'MODIFIED':
        this.store.update(this.transform(event.object));
        break;
      case 'DELETED':
        this.store.delete(this.transform(event.object));
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR':
        throw StatusError.fromStatus(event.object);
    }
    this.advance(event.object.metadata?.resourceVersion);
  }
}
