/**
 * Time as a dependency. Components that wait, time out or back off take a `Clock`, so tests
 * drive time with `FakeClock` instead of sleeping (Felix's `NowOverride`/`SleepOverride`).
 */

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since an arbitrary epoch; monotonic for `realClock`. */
  now(): number;
  /** Calls `fn` after `ms`. Real timers are `unref()`'d: a pending timer never keeps a process alive. */
  setTimer(fn: () => void, ms: number): Timer;
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      timer.cancel();
      reject(signal!.reason);
    };
    const timer = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Calls `fn` every `ms` on `clock` (first after `ms`) until the returned timer is cancelled.
 * The next call is scheduled after `fn` returns, so a slow `fn` delays the series rather than
 * overlapping itself.
 */
export function every(clock: Clock, ms: number, fn: () => void): Timer {
  let cancelled = false;
  let timer: Timer;
  const tick = (): void => {
    fn();
    if (!cancelled) timer = clock.setTimer(tick, ms);
  };
  timer = clock.setTimer(tick, ms);
  return {
    cancel: () => {
      cancelled = true;
      timer.cancel();
    },
  };
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/**
 * A manually advanced clock. `advance(ms)` fires due timers in deadline order (ties in
 * creation order) and lets promise callbacks scheduled by each timer run before the next.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Array<{ at: number; seq: number; fn: () => void; cancelled: boolean }> = [];

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const t = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(t);
    return { cancel: () => void (t.cancelled = true) };
  }

  /** Number of timers not yet fired or cancelled. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await flushMicrotasks();
      this.timers = this.timers.filter((t) => !t.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (next === undefined || next.at > target) break;
      this.timers.shift();
      this.current = next.at;
      next.fn();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

/** Lets every already-queued promise callback (and the ones they queue) run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
