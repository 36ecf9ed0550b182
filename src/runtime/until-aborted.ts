/**
 * `untilAborted(signal)`: a promise that resolves when `signal` aborts — at once if it
 * already has — for a long-running `run(signal)` whose work happens in callbacks and that
 * only has to stay pending until it is told to stop.
 *
 * - It never rejects: stopping is the expected end, not an error (compare `sleep`, which
 *   rejects because its caller wanted the time to pass).
 * - Its listener is registered `once`, so the signal holds nothing after it fires.
 *   It stays registered while the signal has not aborted: pass a signal that outlives the
 *   wait, not a process-wide one that may never abort, when calling this in a loop.
 */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
