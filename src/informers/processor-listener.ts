/**
 * One registered event handler of a SharedIndexInformer, with its own unbounded buffer
 * (client-go `processorListener`).
 *
 * Why a buffer per handler: the informer hands each notification to every listener and
 * moves on; a handler that awaits slow work (an API write, a dataplane apply) delays only
 * its own notifications, never another handler's or the informer's cache.
 *
 * Invariants:
 * - notifications reach the handler in the order they were added, one at a time (the next
 *   starts after the previous one's promise settles);
 * - a handler's exception is caught, logged and counted, and the next notification is still
 *   delivered — nothing is lost and nothing is swallowed silently;
 * - `hasSynced()` is true once the informer is synced and every notification of the initial
 *   list (or the replay of the cache for a late handler) has been handled.
 */
import type { Logger } from '../runtime/logger.ts';
import type { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';

export interface ResourceEventHandler<T> {
  onAdd?(obj: T, isInInitialList: boolean): void | Promise<void>;
  onUpdate?(oldObj: T, newObj: T): void | Promise<void>;
  /** Receives the last known object, or a tombstone when the deletion was inferred by a relist. */
  onDelete?(obj: T | DeletedFinalStateUnknown<T>): void | Promise<void>;
}

export type Notification<T> =
  | { type: 'add'; obj: T; isInInitialList: boolean }
  | { type: 'update'; oldObj: T; newObj: T }
  | { type: 'delete'; obj: T | DeletedFinalStateUnknown<T> };

export class ProcessorListener<T> {
  private buffer: Notification<T>[] = [];
  private head = 0;
  private draining = false;
  private initialPending = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly handler: ResourceEventHandler<T>,
    /** Whether this handler wants resync (no-change) updates. */
    readonly wantsResync: boolean,
    private readonly log: Logger,
    private readonly onHandlerError: () => void,
    private readonly informerSynced: () => boolean,
  ) {}

  add(n: Notification<T>): void {
    if (this.stopped) return;
    if (n.type === 'add' && n.isInInitialList) this.initialPending++;
    this.buffer.push(n);
    if (!this.draining) void this.drain();
  }

  hasSynced(): boolean {
    return this.informerSynced() && this.initialPending === 0;
  }

  /** Notifications not yet handled. */
  get pending(): number {
    return this.buffer.length - this.head + (this.draining ? 1 : 0);
  }

  /** Resolves when the buffer is empty and no notification is being handled. */
  whenIdle(): Promise<void> {
    if (!this.draining) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops buffered notifications; the handler is called no more. */
  stop(): void {
    this.stopped = true;
    this.buffer = [];
    this.head = 0;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.head < this.buffer.length && !this.stopped) {
        const n = this.buffer[this.head]!;
        this.buffer[this.head] = undefined as unknown as Notification<T>;
        this.head++;
        if (this.head > 1024 && this.head * 2 > this.buffer.length) {
          this.buffer = this.buffer.slice(this.head);
          this.head = 0;
        }
        try {
          const r = this.deliver(n);
          if (r !== undefined) await r;
        } catch (err) {
          this.onHandlerError();
          this.log.error({ err, notification: n.type }, 'event handler threw; continuing with the next notification');
        } finally {
          if (n.type === 'add' && n.isInInitialList) this.initialPending--;
        }
      }
    } finally {
      this.draining = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private deliver(n: Notification<T>): void | Promise<void> {
    switch (n.type) {
      case 'add':
        return this.handler.onAdd?.(n.obj, n.isInInitialList);
      case 'update':
        return this.handler.onUpdate?.(n.oldObj, n.newObj);
      case 'delete':
        return this.handler.onDelete?.(n.obj);
    }
  }
}
