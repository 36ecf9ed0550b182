/**
 * Rate limiters for the work queue (client-go `util/workqueue/default_rate_limiters.go`).
 *
 * A limiter answers "how long should this key wait before its next attempt?" and keeps
 * per-key failure history until `forget(key)`. `when(key)` is called once per retry and
 * counts as one failure.
 */
import type { Clock } from '../runtime/clock.ts';

export interface RateLimiter<K> {
  /** The delay (ms) before `key` may be processed again; records one more failure. */
  when(key: K): number;
  /** Clears `key`'s failure history (call after a success). */
  forget(key: K): void;
  /** How many times `when(key)` has been called since the last `forget(key)`. */
  numRequeues(key: K): number;
}

/** `base × 2^failures`, capped at `max` (client-go `ItemExponentialFailureRateLimiter`). */
export class ItemExponentialFailureRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {
    if (!(baseMs > 0)) throw new RangeError(`ItemExponentialFailureRateLimiter: baseMs must be > 0, got ${baseMs}`);
    if (!(maxMs >= baseMs)) throw new RangeError(`ItemExponentialFailureRateLimiter: maxMs must be ≥ baseMs, got ${maxMs}`);
  }

  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2^n overflows to Infinity long after the cap; Math.min keeps the result finite.
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }
}

/**
 * One token bucket shared by every key (client-go `BucketRateLimiter`, x/time/rate): the
 * bucket refills at `qps` tokens/s up to `burst`; `when` reserves a token and returns how
 * long until it is available. `forget` does nothing: the bucket is not per key.
 */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly clock: Clock,
  ) {
    if (!(qps > 0)) throw new RangeError(`BucketRateLimiter: qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new RangeError(`BucketRateLimiter: burst must be ≥ 1, got ${burst}`);
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_key: K): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    // A negative balance is a reservation in the future, as x/time/rate's Reserve().
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_key: K): void {}

  numRequeues(_key: K): number {
    return 0;
  }
}

/** The maximum delay of its children; failure counts come from the largest child count. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  private readonly limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }

  when(key: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(key));
    return max;
  }

  forget(key: K): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(key));
    return max;
  }
}

/**
 * client-go `DefaultControllerRateLimiter`: per-item exponential 5 ms → 1000 s, and an
 * overall token bucket of 10 qps with a burst of 100.
 */
export function defaultControllerRateLimiter<K>(clock: Clock): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialFailureRateLimiter<K>(5, 1_000_000),
    new BucketRateLimiter<K>(10, 100, clock),
  );
}
