/**
 * Typha's snapshot cache (typha.md §1, upstream `typha/pkg/snapcache`): consumes the update
 * stream of ONE set of informers and publishes it as a linked list of breadcrumbs that every
 * client of the sync server walks at its own pace.
 *
 * Guarantees:
 * - every update is serialised once (`serializeUpdate`); all crumbs and clients share the
 *   resulting object and its bytes;
 * - an update that would change nothing (`wouldBeNoOp`: equal but for the resourceVersion, or
 *   a delete of an absent key) is dropped and counted in `tessera_typha_updates_skipped`;
 * - each crumb applies at most `maxBatchSize` queued entries (updates or status changes) and
 *   its `deltas` are exactly the updates it applied, in arrival order; its `snapshot` is the
 *   persistent map after them (taking it costs nothing: the map is immutable, see
 *   persistent-map.ts), so an old crumb's snapshot never changes;
 * - a status change ends the batch it arrives in: the crumb that carries a new `syncStatus`
 *   holds every update that arrived before it and none after (so the first `in-sync` crumb's
 *   snapshot is the complete initial list);
 * - a crumb is published at least every `minCrumbIntervalMs` even when nothing arrives, so a
 *   client's lag can be read from crumb timestamps (the server's fall-behind check, §3);
 * - crumbs form one singly linked list (`seq` + 1 each time); waiting for the next crumb costs
 *   no per-client queue: every waiter hangs on ONE promise that the cache resolves once per
 *   published crumb (Typha's single condition variable and `Broadcast()`).
 *
 * Ordering and threading: `onUpdates`/`onStatusUpdated` only enqueue and return at once (the
 * informers' handlers must never wait on clients). The queue is drained on a later macrotask
 * (`setImmediate`), so the one-update-per-call deliveries of the informers within a tick are
 * batched together; a drain publishes at most `MAX_CRUMBS_PER_TURN` crumbs before yielding
 * to the event loop, so an initial list of 100,000 objects does not stall the server's
 * sockets. Nothing is published before `start`.
 */
import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import { Deferred } from '../runtime/deferred.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import type { Breadcrumb, BreadcrumbSource } from './breadcrumb.ts';
import { PersistentMap } from './persistent-map.ts';
import { serializeUpdate, updateKey, wouldBeNoOp, type SerializedUpdate } from './serialized-update.ts';
import { SnapshotCacheMetrics } from './snapshot-cache-metrics.ts';
import type { SyncStatus, SyncerCallbacks, Update } from '../syncer/index.ts';

export interface SnapshotCacheOptions {
  /** Queued entries applied per crumb at most (Typha `SnapshotCacheMaxBatchSize`). @default 100 */
  readonly maxBatchSize?: number;
  /** A crumb is published at least this often, even when idle (Typha's 1 s wake-up). @default 1000 */
  readonly minCrumbIntervalMs?: number;
  /** Timestamps crumbs and times the idle crumb. @default realClock */
  readonly clock?: Clock;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

/** Crumbs published per drain before yielding to the event loop (10 × 100 updates). */
const MAX_CRUMBS_PER_TURN = 10;

/** A queued entry: an update, or a status change (a string). */
type Pending = Update | SyncStatus;

/**
 * The one wake-up every waiter shares: a promise resolved once per published crumb and then
 * replaced.
 */
class Broadcast {
  #next = new Deferred<void>();

  /** Resolves at the next `fire`. */
  get published(): Promise<void> {
    return this.#next.promise;
  }

  fire(): void {
    const fired = this.#next;
    this.#next = new Deferred<void>();
    fired.resolve();
  }
}

class Crumb implements Breadcrumb {
  #next: Crumb | undefined;

  constructor(
    readonly seq: number,
    readonly timestamp: number,
    readonly snapshot: PersistentMap<SerializedUpdate>,
    readonly deltas: readonly SerializedUpdate[],
    readonly syncStatus: SyncStatus,
    private readonly broadcast: Broadcast,
    private readonly clock: Clock,
    private readonly metrics: SnapshotCacheMetrics,
  ) {}

  get nextIfPublished(): Breadcrumb | undefined {
    return this.#next;
  }

  /** Links the following crumb; called once, by the cache, just before it broadcasts. */
  link(next: Crumb): void {
    this.#next = next;
  }

  next(signal?: AbortSignal): Promise<Breadcrumb> {
    const published = this.#next;
    if (published !== undefined) {
      this.metrics.breadcrumbNonBlock.inc();
      this.metrics.nextBreadcrumbLatency.observe(0);
      return Promise.resolve(published);
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.metrics.breadcrumbBlock.inc();
    const start = this.clock.now();
    return new Promise<Breadcrumb>((resolve, reject) => {
      const onAbort = (): void => reject(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      // Only the newest crumb lacks a `next`, and every publish links the newest before it
      // broadcasts: one wake-up is always enough.
      void this.broadcast.published.then(() => {
        signal?.removeEventListener('abort', onAbort);
        this.metrics.nextBreadcrumbLatency.observe((this.clock.now() - start) / 1000);
        resolve(this.#next as Crumb);
      });
    });
  }
}

/** The snapshot key an update is about (the kind, namespace and name `serializeUpdate` keys it by). */
function keyOf(u: Update): string {
  if (u.op === 'delete') return updateKey(u.kind, u.namespace, u.name);
  return updateKey(u.resource.kind, u.resource.metadata.namespace, u.resource.metadata.name);
}

export class SnapshotCache implements BreadcrumbSource, SyncerCallbacks {
  readonly #maxBatchSize: number;
  readonly #minCrumbIntervalMs: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: SnapshotCacheMetrics;
  readonly #broadcast = new Broadcast();

  /** Entries not applied yet; `#queue[#head]` is the oldest. */
  #queue: Pending[] = [];
  #head = 0;
  #latest: Crumb;
  #status: SyncStatus = 'wait-for-datastore';
  #running = false;
  #drainScheduled = false;
  #idleTimer: Timer | undefined;

  constructor(opts: SnapshotCacheOptions = {}) {
    const { maxBatchSize = 100, minCrumbIntervalMs = 1000, clock = realClock, registry = newRegistry(), logger = silentLogger } = opts;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new RangeError(`SnapshotCache: maxBatchSize must be an integer ≥ 1, got ${maxBatchSize}`);
    if (!(minCrumbIntervalMs > 0)) throw new RangeError(`SnapshotCache: minCrumbIntervalMs must be > 0, got ${minCrumbIntervalMs}`);
    this.#maxBatchSize = maxBatchSize;
    this.#minCrumbIntervalMs = minCrumbIntervalMs;
    this.#clock = clock;
    this.#log = logger.child({ component: 'typha-snapshot-cache' });
    this.#metrics = new SnapshotCacheMetrics(registry);
    this.#latest = new Crumb(0, clock.now(), PersistentMap.empty(), [], this.#status, this.#broadcast, clock, this.#metrics);
  }

  /** The newest crumb; before the first publish, crumb 0: empty, `wait-for-datastore`. */
  latest(): Breadcrumb {
    return this.#latest;
  }

  onUpdates(updates: readonly Update[]): void {
    for (const u of updates) this.#queue.push(u);
    this.#scheduleDrain();
  }

  onStatusUpdated(status: SyncStatus): void {
    this.#queue.push(status);
    this.#scheduleDrain();
  }

  /**
   * Publishes crumbs until `signal` aborts, then stops (the returned promise resolves). Crumbs
   * already published stay readable; nothing is published after the abort.
   */
  start(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new TypeError('SnapshotCache.start: already started');
    if (signal.aborted) return Promise.resolve();
    this.#running = true;
    this.#armIdleTimer();
    this.#scheduleDrain();
    return new Promise((resolve) => {
      signal.addEventListener(
        'abort',
        () => {
          this.#running = false;
          this.#idleTimer?.cancel();
          resolve();
        },
        { once: true },
      );
    });
  }

  #scheduleDrain(): void {
    if (!this.#running || this.#drainScheduled || this.#head === this.#queue.length) return;
    this.#drainScheduled = true;
    setImmediate(() => this.#drain());
  }

  #drain(): void {
    this.#drainScheduled = false;
    for (let i = 0; i < MAX_CRUMBS_PER_TURN && this.#running && this.#head < this.#queue.length; i++) this.#publish();
    this.#scheduleDrain();
  }

  #armIdleTimer(): void {
    this.#idleTimer?.cancel();
    this.#idleTimer = this.#clock.setTimer(() => {
      if (!this.#running) return;
      this.#publish();
      this.#scheduleDrain();
    }, this.#minCrumbIntervalMs);
  }

  /** Applies up to one batch from the queue (possibly nothing) and publishes it as the next crumb. */
  #publish(): void {
    const deltas: SerializedUpdate[] = [];
    const statusBefore = this.#status;
    const end = Math.min(this.#queue.length, this.#head + this.#maxBatchSize);
    const snapshot = this.#latest.snapshot.withMutations((m) => {
      while (this.#head < end) {
        const entry = this.#queue[this.#head++] as Pending;
        if (typeof entry === 'string') {
          this.#status = entry;
          if (entry !== statusBefore) break;
          continue;
        }
        this.#metrics.updatesTotal.inc();
        let previous: SerializedUpdate | undefined;
        let s: SerializedUpdate;
        try {
          previous = m.get(keyOf(entry));
          s = serializeUpdate(entry, previous);
        } catch (err) {
          this.#log.error({ err, update: entry.op === 'delete' ? entry : { kind: entry.resource?.kind } }, 'dropping an update that cannot be serialised');
          this.#metrics.updatesSkipped.inc();
          continue;
        }
        if (wouldBeNoOp(previous, s)) {
          this.#metrics.updatesSkipped.inc();
          continue;
        }
        if (s.value === null) m.delete(s.key);
        else m.set(s.key, s);
        deltas.push(s);
      }
    });
    this.#compactQueue();
    const crumb = new Crumb(this.#latest.seq + 1, this.#clock.now(), snapshot, deltas, this.#status, this.#broadcast, this.#clock, this.#metrics);
    this.#latest.link(crumb);
    this.#latest = crumb;
    this.#metrics.breadcrumbSeqNumber.set(crumb.seq);
    this.#metrics.breadcrumbSize.observe(deltas.length);
    this.#metrics.cacheSize.set(snapshot.size);
    if (this.#status !== statusBefore) this.#log.info({ seq: crumb.seq, syncStatus: this.#status, keys: snapshot.size }, `sync status ${this.#status}`);
    this.#armIdleTimer();
    this.#broadcast.fire();
  }

  /** Drops applied entries once they are the larger part of the queue (amortised O(1) per entry). */
  #compactQueue(): void {
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
