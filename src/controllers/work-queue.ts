/**
 * A rate-limited, delaying, de-duplicating work queue of keys, with client-go
 * `util/workqueue` semantics (kubernetes-and-node §8):
 *
 * - **De-duplicating**: a key added N times before a worker takes it is processed once.
 * - **Stingy**: a key is held by at most one worker. A key added while it is processing is
 *   marked dirty and queued again only when that worker calls `done(key)`.
 * - **Fair**: keys are handed out in FIFO order of their (first) add.
 * - **Delaying**: `addAfter(key, ms)` adds after a delay; a key already waiting only ever
 *   moves earlier. One timer (on the injected clock) covers the earliest deadline.
 * - **Rate-limited**: `addRateLimited(key)` = `addAfter(key, limiter.when(key))`;
 *   `forget(key)` clears the key's failure history.
 * - **Shutdown**: `shutDown()` refuses new adds and makes `get()` resolve `undefined` once
 *   the queue is empty; `shutDownWithDrain()` also waits for in-flight keys to be `done`.
 *
 * Single-threaded JavaScript makes the locking of client-go unnecessary; "blocking" `get()`
 * is a promise resolved by the next add.
 */
import type { Registry } from 'prom-client';

import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.ts';
import { WorkQueueMetrics } from './workqueue-metrics.ts';

export interface WorkQueueOptions<K extends string> {
  /** The queue's name: the `name` label of its metrics. */
  name: string;
  /** @default realClock */
  clock?: Clock;
  /** @default defaultControllerRateLimiter (5 ms → 1000 s per key, 10 qps / burst 100 overall) */
  rateLimiter?: RateLimiter<K>;
  /** Registers workqueue_* metrics here when given. @default none */
  registry?: Registry;
}

interface Waiting<K> {
  key: K;
  at: number;
}

export class WorkQueue<K extends string> {
  readonly name: string;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter<K>;
  private readonly metrics: WorkQueueMetrics | undefined;

  private queue: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Map<K, number>();
  private readonly addedAt = new Map<K, number>();
  private getters: Array<(k: K | undefined) => void> = [];
  private drainWaiters: Array<() => void> = [];
  private shuttingDown = false;

  // Delay heap: min-heap on `at`; `waitingAt` holds the live deadline of each key, so stale
  // heap entries (a key moved earlier) are skipped when popped.
  private heap: Waiting<K>[] = [];
  private readonly waitingAt = new Map<K, number>();
  private timer: Timer | undefined;
  private timerAt = Infinity;

  constructor(opts: WorkQueueOptions<K>) {
    const { name, clock = realClock, registry } = opts;
    if (name === '') throw new TypeError('WorkQueue: name must not be empty');
    this.name = name;
    this.clock = clock;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(clock);
    this.metrics =
      registry === undefined
        ? undefined
        : new WorkQueueMetrics(registry, name, {
            depth: () => this.len(),
            unfinished: () => {
              const now = this.clock.now();
              let total = 0;
              let longest = 0;
              for (const start of this.processing.values()) {
                const s = (now - start) / 1000;
                total += s;
                longest = Math.max(longest, s);
              }
              return { totalSeconds: total, longestSeconds: longest };
            },
          });
  }

  /** Keys queued and not yet taken by a worker. */
  len(): number {
    return this.queue.length - this.head;
  }

  /** Keys waiting on a delay (addAfter / addRateLimited). */
  waitingLen(): number {
    return this.waitingAt.size;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.metrics?.add();
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Resolves with the next key, or `undefined` once shut down and empty. */
  get(): Promise<K | undefined> {
    const key = this.take();
    if (key !== undefined || this.shuttingDown) return Promise.resolve(key);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks `key` finished; if it was added meanwhile it is queued again. */
  done(key: K): void {
    const start = this.processing.get(key);
    if (start === undefined) return;
    this.processing.delete(key);
    this.metrics?.done((this.clock.now() - start) / 1000);
    if (this.dirty.has(key)) this.push(key);
    else if (this.processing.size === 0) this.releaseDrainWaiters();
  }

  addAfter(key: K, delayMs: number): void {
    if (this.shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + delayMs;
    const current = this.waitingAt.get(key);
    if (current !== undefined && current <= at) return;
    this.waitingAt.set(key, at);
    this.heapPush({ key, at });
    this.armTimer();
  }

  addRateLimited(key: K): void {
    if (this.shuttingDown) return;
    this.metrics?.retry();
    this.addAfter(key, this.limiter.when(key));
  }

  forget(key: K): void {
    this.limiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.limiter.numRequeues(key);
  }

  /** Stops accepting keys; pending `get()`s resolve `undefined` once the queue is empty. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.heap = [];
    this.waitingAt.clear();
    // Queued keys are still handed out (workers drain them); idle getters learn of shutdown.
    if (this.len() === 0) this.releaseGetters();
  }

  /** `shutDown()`, then resolves once no key is processing. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0 && this.len() === 0) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  private push(key: K): void {
    if (!this.addedAt.has(key)) this.addedAt.set(key, this.clock.now());
    const getter = this.getters.shift();
    if (getter !== undefined) {
      this.startProcessing(key);
      getter(key);
      return;
    }
    this.queue.push(key);
  }

  private take(): K | undefined {
    if (this.head >= this.queue.length) return undefined;
    const key = this.queue[this.head++] as K;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.startProcessing(key);
    if (this.shuttingDown && this.len() === 0) this.releaseGetters();
    return key;
  }

  private startProcessing(key: K): void {
    const now = this.clock.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.metrics?.got((now - added) / 1000);
    this.processing.set(key, now);
    this.dirty.delete(key);
  }

  private releaseGetters(): void {
    const getters = this.getters;
    this.getters = [];
    for (const g of getters) g(undefined);
    if (this.processing.size === 0) this.releaseDrainWaiters();
  }

  private releaseDrainWaiters(): void {
    if (!this.shuttingDown || this.len() > 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  private armTimer(): void {
    const first = this.heap[0];
    if (first === undefined) return;
    if (first.at >= this.timerAt && this.timer !== undefined) return;
    this.timer?.cancel();
    this.timerAt = first.at;
    this.timer = this.clock.setTimer(() => this.fireDue(), Math.max(0, first.at - this.clock.now()));
  }

  private fireDue(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    for (;;) {
      const first = this.heap[0];
      if (first === undefined || first.at > now) break;
      this.heapPop();
      if (this.waitingAt.get(first.key) !== first.at) continue; // superseded by an earlier deadline
      this.waitingAt.delete(first.key);
      this.add(first.key);
    }
    this.armTimer();
  }

  private heapPush(item: Waiting<K>): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((h[p] as Waiting<K>).at <= item.at) break;
      h[i] = h[p] as Waiting<K>;
      i = p;
    }
    h[i] = item;
  }

  private heapPop(): void {
    const h = this.heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      const at = (j: number): number => (j === i ? last.at : (h[j] as Waiting<K>).at);
      if (l < h.length && at(l) < at(m)) m = l;
      if (r < h.length && at(r) < at(m)) m = r;
      if (m === i) break;
      h[i] = h[m] as Waiting<K>;
      i = m;
    }
    h[i] = last;
  }
}
