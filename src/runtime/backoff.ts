/**
 * Exponential backoff with jitter that resets after a quiet period (client-go
 * `wait.NewExponentialBackoffManager` as used by the Reflector: 800 ms initial, 30 s cap,
 * factor 2, jitter 1.0, reset after 2 minutes without errors).
 */
import type { Clock } from './clock.ts';

export interface BackoffOptions {
  /** @default 800 */
  initialMs?: number;
  /** @default 30_000 */
  maxMs?: number;
  /** @default 2 */
  factor?: number;
  /** Adds up to `jitter × delay` at random. @default 1.0 */
  jitter?: number;
  /** A `next()` this long after the previous one starts over at `initialMs`. @default 120_000 */
  resetAfterMs?: number;
  /** @default Math.random */
  random?: () => number;
}

export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly resetAfterMs: number;
  private readonly random: () => number;
  private currentMs = 0;
  private lastAt: number | undefined;

  constructor(
    private readonly clock: Clock,
    opts: BackoffOptions = {},
  ) {
    const { initialMs = 800, maxMs = 30_000, factor = 2, jitter = 1.0, resetAfterMs = 120_000, random = Math.random } = opts;
    if (!(initialMs > 0)) throw new RangeError(`Backoff: initialMs must be > 0, got ${initialMs}`);
    if (!(maxMs >= initialMs)) throw new RangeError(`Backoff: maxMs (${maxMs}) must be >= initialMs (${initialMs})`);
    if (!(factor >= 1)) throw new RangeError(`Backoff: factor must be >= 1, got ${factor}`);
    if (!(jitter >= 0)) throw new RangeError(`Backoff: jitter must be >= 0, got ${jitter}`);
    this.initialMs = initialMs;
    this.maxMs = maxMs;
    this.factor = factor;
    this.jitter = jitter;
    this.resetAfterMs = resetAfterMs;
    this.random = random;
  }

  /** The delay before the next attempt. */
  next(): number {
    const now = this.clock.now();
    if (this.lastAt === undefined || now - this.lastAt >= this.resetAfterMs) {
      this.currentMs = this.initialMs;
    } else {
      this.currentMs = Math.min(this.maxMs, this.currentMs * this.factor);
    }
    this.lastAt = now;
    return this.currentMs + this.random() * this.jitter * this.currentMs;
  }

  /** Starts over at `initialMs` on the next failure. */
  reset(): void {
    this.lastAt = undefined;
  }
}
