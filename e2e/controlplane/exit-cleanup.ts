/**
 * Last-resort cleanup for child processes and temp dirs when the Node process ends without
 * calling `stop()`: a normal `exit`, or SIGINT/SIGTERM/SIGHUP (Ctrl-C on a test run).
 *
 * - Callbacks run synchronously (an `exit` listener cannot await), at most once each.
 * - On a signal, after cleaning up, the default action is restored and the signal re-raised
 *   when nobody else listens for it, so the process still dies the way the sender meant.
 *   When another listener exists (e.g. a test runner's own handler), it decides instead.
 * - SIGKILL cannot be caught; `reapOrphans()` in control-plane-record.ts covers that case
 *   on the next start.
 */

export type SyncCleanup = () => void;

const cleanups = new Set<SyncCleanup>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

/** Registers `cleanup`; returns a function that unregisters it (call it after a normal stop). */
export function registerExitCleanup(cleanup: SyncCleanup): () => void {
  install();
  cleanups.add(cleanup);
  return () => {
    cleanups.delete(cleanup);
  };
}

function runAll(): void {
  for (const cleanup of [...cleanups]) {
    cleanups.delete(cleanup);
    try {
      cleanup();
    } catch {
      // Best effort: one failing cleanup must not stop the others.
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  runAll();
  uninstall();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runAll);
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.off('exit', runAll);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}
