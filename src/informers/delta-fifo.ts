/**
 * DeltaFIFO: a producer/consumer queue of per-object change lists (client-go
 * `tools/cache/delta_fifo.go`, classic path).
 *
 * It exists for these cases:
 * - you want to process every object change (delta) at most once, in order per object;
 * - when you process an object you want to see everything that happened to it since you
 *   last processed it, not just its latest state;
 * - you want to process deletions of objects, including deletions you missed while the
 *   watch was down (inferred by `replace()` and delivered as `DeletedFinalStateUnknown`);
 * - you want to periodically reprocess objects (`resync()`), without ever re-delivering a
 *   stale object ahead of a real pending change.
 *
 * Invariants:
 * - each key appears in the queue at most once; its deltas accumulate until popped;
 * - consecutive `Deleted` deltas collapse into one, keeping the one that is not a tombstone;
 * - `hasSynced()` is true once the first `replace()` happened and every item it queued
 *   (objects plus inferred deletions) has been popped **and processed**.
 *
 * Threading: JavaScript is single-threaded, so every method but `pop` runs atomically.
 * `pop(process)` waits asynchronously for an item; only one `pop` runs at a time (later
 * callers wait their turn), which stands in for client-go holding the lock while `process`
 * runs. Deltas added for a key while its previous list is being processed start a new list.
 */
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
import { metaNamespaceKey, type KeyFunc, type KubeObject } from './object.ts';
import type { KeyListerGetter } from './store.ts';

export type DeltaType = 'Added' | 'Updated' | 'Deleted' | 'Replaced' | 'Sync';

export interface Delta<T> {
  readonly type: DeltaType;
  readonly object: T | DeletedFinalStateUnknown<T>;
}

/**
 * Processes one key's deltas, oldest first. `isInInitialList` is true for items queued by
 * the first `replace()` (client-go passes the same flag to `OnAdd`).
 */
export type PopProcessFunc<T> = (deltas: readonly Delta<T>[], isInInitialList: boolean) => void | Promise<void>;

/** Thrown by `pop` once the queue is closed and drained (client-go `ErrFIFOClosed`). */
export class FIFOClosedError extends Error {
  override name = 'FIFOClosedError';
  constructor() {
    super('DeltaFIFO: manipulating with closed queue');
  }
}

/**
 * Thrown from a pop process function to put the item back at the end of the queue (unless
 * newer deltas for the key already arrived); `cause`, when set, is rethrown by `pop`
 * (client-go `ErrRequeue`).
 */
export class RequeueError extends Error {
  override name = 'RequeueError';
  constructor(options?: { cause?: unknown }) {
    super('requeue', options);
  }
}

export interface DeltaFIFOOptions<T> {
  /** @default metaNamespaceKey */
  keyFunction?: KeyFunc<T>;
  /**
   * The informer's cache, used to detect deletions in `replace()` and as the source for
   * `resync()`. Without it, deletes of unknown keys are dropped and resync does nothing.
   * @default undefined
   */
  knownObjects?: KeyListerGetter<T>;
  /**
   * Queue `Replaced` instead of `Sync` for objects in `replace()` lists. Shared informers
   * set it so handlers can tell a relist from a resync. @default false
   */
  emitDeltaTypeReplaced?: boolean;
  /** Called once, when `hasSynced()` first becomes true. */
  onSynced?: () => void;
}

export class DeltaFIFO<T extends KubeObject> {
  private readonly keyOf: KeyFunc<T>;
  private readonly knownObjects: KeyListerGetter<T> | undefined;
  private readonly emitDeltaTypeReplaced: boolean;
  private onSynced: (() => void) | undefined;

  private readonly items = new Map<string, Delta<T>[]>();
  /** Keys in FIFO order; `queueHead` avoids O(n) shifts. */
  private queue: string[] = [];
  private queueHead = 0;
  private populated = false;
  private initialPopulationCount = 0;
  /** Initial-list items popped whose process function has not returned yet. */
  private initialInFlight = 0;
  private closed = false;
  private waiters: Array<() => void> = [];
  private popChain: Promise<unknown> = Promise.resolve();

  constructor(opts: DeltaFIFOOptions<T> = {}) {
    const { keyFunction = metaNamespaceKey, knownObjects, emitDeltaTypeReplaced = false, onSynced } = opts;
    this.onSynced = onSynced;
    this.keyOf = keyFunction;
    this.knownObjects = knownObjects;
    this.emitDeltaTypeReplaced = emitDeltaTypeReplaced;
  }

  add(obj: T): void {
    this.populated = true;
    this.queueAction('Added', obj);
    this.notifyIfSynced();
  }

  update(obj: T): void {
    this.populated = true;
    this.queueAction('Updated', obj);
    this.notifyIfSynced();
  }

  /**
   * Queues a `Deleted` delta, unless the object is unknown: neither in `knownObjects` nor
   * pending here (or, without `knownObjects`, not pending here). Then the deletion would be
   * news about something no consumer ever saw, and is dropped.
   */
  delete(obj: T | DeletedFinalStateUnknown<T>): void {
    const key = this.keyOf(obj);
    this.populated = true;
    this.notifyIfSynced();
    const pending = this.items.has(key);
    if (this.knownObjects === undefined) {
      if (!pending) return;
    } else if (!pending && this.knownObjects.getByKey(key) === undefined) {
      return;
    }
    this.queueAction('Deleted', obj);
  }

  /**
   * Replaces the queue's view of the world with `list`, as after a (re)list at
   * `resourceVersion`: queues `Replaced` (or `Sync`) for each listed object and a
   * `Deleted(DeletedFinalStateUnknown)` for every pending or known key not in the list.
   */
  replace(list: readonly T[], _resourceVersion: string): void {
    const action: DeltaType = this.emitDeltaTypeReplaced ? 'Replaced' : 'Sync';
    const keys = new Set<string>();
    for (const obj of list) {
      keys.add(this.keyOf(obj));
      this.queueAction(action, obj);
    }
    let queuedDeletions = 0;
    // Pending keys missing from the list: deleted while we were not watching.
    for (const [key, deltas] of [...this.items]) {
      if (keys.has(key)) continue;
      let last = deltas[deltas.length - 1]?.object;
      if (last instanceof DeletedFinalStateUnknown) last = last.obj;
      queuedDeletions++;
      this.queueAction('Deleted', new DeletedFinalStateUnknown<T>(key, last));
    }
    // Known keys missing from the list and not pending.
    if (this.knownObjects !== undefined) {
      for (const key of this.knownObjects.listKeys()) {
        if (keys.has(key) || this.items.has(key)) continue;
        queuedDeletions++;
        this.queueAction('Deleted', new DeletedFinalStateUnknown<T>(key, this.knownObjects.getByKey(key)));
      }
    }
    if (!this.populated) {
      this.populated = true;
      this.initialPopulationCount = keys.size + queuedDeletions;
    }
    this.notifyIfSynced();
  }

  /**
   * Queues a `Sync` delta for every known object that has nothing pending: a resync never
   * re-delivers a stale object ahead of a real change.
   */
  resync(): void {
    if (this.knownObjects === undefined) return;
    for (const key of this.knownObjects.listKeys()) {
      const obj = this.knownObjects.getByKey(key);
      if (obj === undefined) continue;
      if ((this.items.get(this.keyOf(obj))?.length ?? 0) > 0) continue;
      this.queueAction('Sync', obj);
    }
  }

  /**
   * Waits for the next item, removes it and runs `process` on its deltas. Rejects with
   * `FIFOClosedError` once the queue is closed and empty. If `process` throws
   * `RequeueError`, the deltas go back to the end of the queue (unless newer deltas for the
   * key arrived meanwhile) and the error's `cause`, if any, is rethrown; any other error
   * from `process` is rethrown as is.
   */
  pop(process: PopProcessFunc<T>): Promise<void> {
    const run = this.popChain.then(() => this.popOne(process));
    this.popChain = run.catch(() => undefined);
    return run;
  }

  private async popOne(process: PopProcessFunc<T>): Promise<void> {
    for (;;) {
      while (this.queueLength() === 0) {
        if (this.closed) throw new FIFOClosedError();
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      }
      const key = this.queue[this.queueHead]!;
      this.queueHead++;
      this.compactQueue();
      const deltas = this.items.get(key);
      // A key is only ever queued with deltas; tolerate the impossible like client-go does.
      if (deltas === undefined) continue;
      this.items.delete(key);
      const isInInitialList = !this.hasSynced();
      const initial = this.initialPopulationCount > 0;
      if (initial) {
        this.initialPopulationCount--;
        this.initialInFlight++;
      }
      try {
        await process(deltas, isInInitialList);
      } catch (err) {
        if (err instanceof RequeueError) {
          this.addIfNotPresent(key, deltas);
          if (err.cause !== undefined) throw err.cause;
          return;
        }
        throw err;
      } finally {
        if (initial) this.initialInFlight--;
        this.notifyIfSynced();
      }
      return;
    }
  }

  /** True after the first `replace()` (or add/update/delete) and once its items are processed. */
  hasSynced(): boolean {
    return this.populated && this.initialPopulationCount === 0 && this.initialInFlight === 0;
  }

  private notifyIfSynced(): void {
    if (this.onSynced === undefined || !this.hasSynced()) return;
    const cb = this.onSynced;
    this.onSynced = undefined;
    cb();
  }

  /** Wakes every waiting `pop`; they reject with `FIFOClosedError` once the queue is empty. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  isClosed(): boolean {
    return this.closed;
  }

  /** Keys with pending deltas, in queue order. */
  listKeys(): string[] {
    return this.queue.slice(this.queueHead);
  }

  /** The newest pending object (or tombstone) per key, in queue order. */
  list(): Array<T | DeletedFinalStateUnknown<T>> {
    return this.listKeys().map((k) => {
      const d = this.items.get(k)!;
      return d[d.length - 1]!.object;
    });
  }

  /** A copy of the pending deltas for `obj`'s key, or undefined. */
  get(obj: T | DeletedFinalStateUnknown<T>): Delta<T>[] | undefined {
    return this.getByKey(this.keyOf(obj));
  }

  getByKey(key: string): Delta<T>[] | undefined {
    const d = this.items.get(key);
    return d === undefined ? undefined : [...d];
  }

  /** Number of keys waiting. */
  get length(): number {
    return this.queueLength();
  }

  private queueLength(): number {
    return this.queue.length - this.queueHead;
  }

  private compactQueue(): void {
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
  }

  /**
   * Appends one delta. (Objects are transformed before they get here, by the Reflector; a
   * resync re-queues objects read back from the cache.)
   */
  private queueAction(type: DeltaType, obj: T | DeletedFinalStateUnknown<T>): void {
    const key = this.keyOf(obj);
    let deltas = this.items.get(key);
    if (deltas === undefined) {
      deltas = [];
      this.items.set(key, deltas);
      this.queue.push(key);
    }
    deltas.push({ type, object: obj });
    dedupDeltas(deltas);
    this.wake();
  }

  private addIfNotPresent(key: string, deltas: Delta<T>[]): void {
    this.populated = true;
    if (this.items.has(key)) return;
    this.items.set(key, deltas);
    this.queue.push(key);
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    if (waiters.length === 0) return;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/**
 * Collapses the last two deltas when both are deletions, keeping the one that carries a
 * real final state rather than a tombstone (client-go `dedupDeltas`/`isDeletionDup`).
 */
function dedupDeltas<T>(deltas: Delta<T>[]): void {
  const n = deltas.length;
  if (n < 2) return;
  const newer = deltas[n - 1]!;
  const older = deltas[n - 2]!;
  if (newer.type !== 'Deleted' || older.type !== 'Deleted') return;
  const keep = older.object instanceof DeletedFinalStateUnknown ? newer : older;
  deltas.splice(n - 2, 2, keep);
}
