/**
 * `AsyncCalcGraph`: the calc graph as the agent runs it — inputs batched, flushes paced by
 * a leaky bucket (Felix: `calc/async_calc_graph.go`, calico-semantics §5.3).
 *
 * Guarantees:
 * - inputs (`onUpdates`, `onStatusUpdated`) are queued and applied together, in arrival
 *   order, in one batch per microtask turn, so a burst of informer events costs one pass;
 * - flushes are paced by a token bucket: `bucketSize` tokens (Felix `leakyBucketSize` = 10),
 *   one token added every `tickIntervalMs` (Felix `tickInterval` = 10 ms); a flush takes a
 *   token, so at most ~100 flushes/s are sustained with bursts of 10, and updates that
 *   arrive while the bucket is empty coalesce in the event sequencer until the next tick;
 * - nothing is emitted before in-sync; the first batch that contains in-sync is flushed at
 *   once (a token or not), and its messages end with `InSync`;
 * - `onMessages` is called only with non-empty batches, synchronously from the flush; an
 *   exception it throws is not caught (like a Felix panic: the dataplane contract can no
 *   longer be trusted, so the process should die and resync);
 * - `dispose()` cancels the ticker and drops queued input; no timer is left behind, and no
 *   timer runs while the bucket is full and nothing is pending;
 * - `pendingSince()` (liveness, runtime/liveness.ts): the clock time the oldest input not yet
 *   flushed arrived, undefined when everything received has been flushed. A healthy graph
 *   flushes within a tick or two of an input, so a large value means a batch is stuck (Felix
 *   reports its calc graph as `CalculationGraph`, 30 s timeout).
 */
import type { Registry } from 'prom-client';
import type { DataplaneMessage } from '../proto/index.ts';
import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { CalcGraph } from './calc-graph.ts';
import type { AnyUpdate, SyncStatus, Update } from '../syncer/index.ts';

export interface AsyncCalcGraphOptions {
  readonly nodeName: string;
  /** Receives each non-empty batch of dataplane messages. */
  readonly onMessages: (messages: DataplaneMessage[]) => void;
  /** @default realClock */
  readonly clock?: Clock;
  /** Felix: tickInterval. @default 10 */
  readonly tickIntervalMs?: number;
  /** Felix: leakyBucketSize. @default 10 */
  readonly bucketSize?: number;
  readonly registry?: Registry;
  readonly logger?: Logger;
}

type Input = { readonly updates: readonly (Update | AnyUpdate)[] } | { readonly status: SyncStatus };

export class AsyncCalcGraph implements Disposable {
  readonly #graph: CalcGraph;
  readonly #onMessages: (messages: DataplaneMessage[]) => void;
  readonly #clock: Clock;
  readonly #tickMs: number;
  readonly #bucketSize: number;
  #queue: Input[] = [];
  #scheduled = false;
  #tokens: number;
  #ticker: Timer | undefined;
  #dirty = false;
  #forceFlush = false;
  #disposed = false;
  #pendingSince: number | undefined;
  /** Flushes performed (for tests and metrics). */
  flushCount = 0;

  constructor(opts: AsyncCalcGraphOptions) {
    const { nodeName, onMessages, clock = realClock, tickIntervalMs = 10, bucketSize = 10, registry, logger } = opts;
    if (!(tickIntervalMs > 0)) throw new RangeError(`AsyncCalcGraph: tickIntervalMs must be > 0, got ${tickIntervalMs}`);
    if (!Number.isInteger(bucketSize) || bucketSize < 1) {
      throw new RangeError(`AsyncCalcGraph: bucketSize must be a positive integer, got ${bucketSize}`);
    }
    if (typeof onMessages !== 'function') throw new TypeError('AsyncCalcGraph: onMessages must be a function');
    this.#graph = new CalcGraph({ nodeName, ...(registry === undefined ? {} : { registry }), ...(logger === undefined ? {} : { logger }) });
    this.#onMessages = onMessages;
    this.#clock = clock;
    this.#tickMs = tickIntervalMs;
    this.#bucketSize = bucketSize;
    this.#tokens = bucketSize;
  }

  onUpdates(updates: readonly (Update | AnyUpdate)[]): void {
    this.#enqueue({ updates });
  }

  onStatusUpdated(status: SyncStatus): void {
    this.#enqueue({ status });
  }

  /** Clock time the oldest input not yet flushed arrived; undefined when all are flushed. */
  pendingSince(): number | undefined {
    return this.#pendingSince;
  }

  dispose(): void {
    this.#disposed = true;
    this.#pendingSince = undefined;
    this.#queue = [];
    this.#ticker?.cancel();
    this.#ticker = undefined;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #enqueue(input: Input): void {
    if (this.#disposed) return;
    this.#pendingSince ??= this.#clock.now();
    this.#queue.push(input);
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => this.#processBatch());
  }

  #processBatch(): void {
    this.#scheduled = false;
    if (this.#disposed) return;
    const batch = this.#queue;
    this.#queue = [];
    for (const input of batch) {
      if ('status' in input) {
        this.#graph.onStatusUpdated(input.status);
        if (input.status === 'in-sync') this.#forceFlush = true;
      } else {
        this.#graph.onUpdates(input.updates);
      }
    }
    this.#dirty = true;
    this.#maybeFlush();
  }

  #maybeFlush(): void {
    if (!this.#dirty) return;
    if (this.#tokens === 0 && !this.#forceFlush) {
      this.#armTicker();
      return;
    }
    if (this.#tokens > 0) this.#tokens--;
    this.#forceFlush = false;
    this.#dirty = false;
    // Input that arrives from here on (even from inside onMessages) starts a new wait.
    if (this.#queue.length === 0) this.#pendingSince = undefined;
    this.flushCount++;
    const out = this.#graph.flush();
    this.#armTicker();
    if (out.length > 0) this.#onMessages(out);
  }

  #armTicker(): void {
    if (this.#ticker !== undefined || this.#disposed) return;
    if (this.#tokens >= this.#bucketSize && !this.#dirty) return;
    this.#ticker = this.#clock.setTimer(() => this.#tick(), this.#tickMs);
  }

  #tick(): void {
    this.#ticker = undefined;
    if (this.#disposed) return;
    if (this.#tokens < this.#bucketSize) this.#tokens++;
    this.#maybeFlush();
    this.#armTicker();
  }
}
