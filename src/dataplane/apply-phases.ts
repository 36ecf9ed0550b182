/**
 * Where the time of one dataplane apply goes, phase by phase (issue 18: the full program is
 * measured against a raw `iptables-restore` of the same input, so every millisecond beyond the
 * restore has to be named).
 *
 * - Wall-clock milliseconds from `performance.now()`, not the injected clock: these are costs
 *   of this process and its children, not schedule.
 * - Phases in one apply run one after another, except `generateMs` (and the `hashMs` and most
 *   of the `policyRenderMs` within it), which overlap `restoreMs`: the input is built while
 *   iptables-restore reads it.
 * - `drainMs` is spent before the apply, when messages become desired state, and is not part of
 *   `ApplyStats.ms` (nor of `felix_int_dataplane_apply_time_seconds`).
 */
import { performance } from 'node:perf_hooks';

export interface ApplyPhases {
  /** Message handling since the previous apply: desired state updated (and policy or profile chains replacing rendered ones rendered). */
  readonly drainMs: number;
  /**
   * The rule renderer producing policy and profile chains, wherever it ran: rendering is lazy
   * (`policy-manager.ts`), so a chain written now is rendered within `generateMs`, one compared
   * with a read-back within `saveMs`.
   */
  readonly policyRenderMs: number;
  /** Resolving endpoint interfaces from routes (`ip route`). */
  readonly resolveMs: number;
  /** Endpoint and dispatch chains rendered into desired state. */
  readonly endpointRenderMs: number;
  /** Awaiting and parsing `iptables-save` read-backs (started early, overlapping the drain). */
  readonly saveMs: number;
  /** IP set creates and updates (`ipset list` read-back and `ipset restore`). */
  readonly ipsetMs: number;
  /** `iptables-restore` runs, spawn to exit (the input streams in meanwhile). */
  readonly restoreMs: number;
  /** Building the restore input in this process — lazy chains rendered, hash diff, lines — overlapping `restoreMs`. */
  readonly generateMs: number;
  /** Of `generateMs`: rule hashes computed (each desired chain's once). */
  readonly hashMs: number;
  /** IP set deletions after the tables. */
  readonly ipsetDeleteMs: number;
}

/** Per-phase sums, mutable while an apply runs. */
export type PhaseTotals = { -readonly [K in keyof ApplyPhases]: number };

export function emptyPhases(): PhaseTotals {
  return { drainMs: 0, policyRenderMs: 0, resolveMs: 0, endpointRenderMs: 0, saveMs: 0, ipsetMs: 0, restoreMs: 0, generateMs: 0, hashMs: 0, ipsetDeleteMs: 0 };
}

/** Runs `fn`, adding its duration to `totals[phase]`. */
export function timed<T>(totals: PhaseTotals, phase: keyof ApplyPhases, fn: () => T): T {
  const t0 = performance.now();
  try {
    return fn();
  } finally {
    totals[phase] += performance.now() - t0;
  }
}

/** Awaits `fn()`, adding its duration to `totals[phase]`. */
export async function timedAsync<T>(totals: PhaseTotals, phase: keyof ApplyPhases, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    totals[phase] += performance.now() - t0;
  }
}

/** `chunks`, adding the time spent producing each to `totals[phase]` (the consumer's time is not counted). */
export function* timedChunks<T>(totals: PhaseTotals, phase: keyof ApplyPhases, chunks: Iterator<T>): Generator<T> {
  for (;;) {
    const t0 = performance.now();
    const next = chunks.next();
    totals[phase] += performance.now() - t0;
    if (next.done === true) return;
    yield next.value;
  }
}
