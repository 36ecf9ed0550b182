import { setTimeout as delay } from 'node:timers/promises';

/** Options for {@link pollUntil}. */
export interface PollOptions {
  /** What is being waited for, used in the timeout error ("etcd /health on :2379"). */
  readonly description: string;
  /** Give up after this long. @default 60_000 */
  readonly timeoutMs?: number;
  /** Pause between attempts. @default 100 */
  readonly intervalMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * Calls `probe` until it returns a value other than `undefined`, and returns that value.
 *
 * A probe that throws counts as "not yet"; the last error is quoted in the timeout error so a
 * failure says why, not only that it timed out. A probe may throw {@link PollAbort} to stop
 * polling at once (for example when the process being waited for has exited).
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  options: PollOptions,
): Promise<T> {
  const { description, timeoutMs = 60_000, intervalMs = 100, signal } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const value = await probe();
      if (value !== undefined) return value;
      lastError = undefined;
    } catch (err) {
      if (err instanceof PollAbort) throw err.cause;
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError === undefined ? '' : `; last error: ${errorMessage(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${why}`);
    }
    try {
      await delay(intervalMs, undefined, signal === undefined ? undefined : { signal });
    } catch (err) {
      // timers/promises rejects with a generic AbortError; surface the signal's own reason.
      signal?.throwIfAborted();
      throw err;
    }
  }
}

/** Thrown by a probe to end {@link pollUntil} immediately with `cause`. */
export class PollAbort extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
    this.name = 'PollAbort';
  }
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
    return `${code === undefined ? '' : `${code}: `}${err.message}${cause}`;
  }
  return String(err);
}
