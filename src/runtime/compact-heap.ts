/**
 * `compactHeap()`: one full, compacting garbage collection, for a process that has just built
 * its long-lived state and goes quiet (the agent after its first in-sync apply).
 *
 * Why: the initial sync of a large cluster promotes ~100 MB of short-lived objects (decoded
 * updates, model objects, rendered rules) to V8's old generation while they are still in
 * flight. V8 collects the old generation only when it reaches a limit set from the live size,
 * so after the sync an idle agent holds that garbage, and the pages under it, for as long as it
 * allocates little — measured at 100k endpoints: ~100 MB of RSS, 410 → 310 MB. One collection
 * at the end of the sync returns them (a pause of a few hundred ms, once).
 *
 * Node exposes `gc` only under `--expose-gc`; the flag is set at runtime and the function taken
 * from a fresh context (as jest's leak detector does), so the image needs no node flags. Any
 * failure to get it is ignored: this is an optimisation, never a requirement.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

/** Runs a full GC; false if the runtime offers none. */
export function compactHeap(): boolean {
  if (gc === undefined) gc = findGc();
  if (gc === null) return false;
  gc();
  return true;
}

function findGc(): (() => void) | null {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as () => void;
  try {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    return typeof fn === 'function' ? (fn as () => void) : null;
  } catch {
    return null;
  }
}
