/** One benchmark scenario, run by `npm run bench -- <name>`. */
export interface BenchScenario {
  /** What it measures, one sentence. */
  readonly description: string;
  /**
   * Whether `npm run bench` with no scenario name runs it. Long-running scenarios (fuzzing,
   * 100k-object scale runs) set this to false.
   * @default true
   */
  readonly includeInDefaultRun?: boolean;
  run(args: readonly string[]): Promise<void>;
}

/** Prints one JSON result line: `{"bench": scenario, "case": name, ...figures}`. */
/** A scenario's non-negative integer argument, or `fallback` when absent. @throws RangeError naming the scenario and argument */
export function intArg(scenario: string, value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${scenario}: ${name} must be a non-negative integer, not ${JSON.stringify(value)}`);
  return n;
}

export function report(scenario: string, caseName: string, figures: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: scenario, case: caseName, ...figures })}\n`);
}

/**
 * Runs `fn` repeatedly for at least `minMs` milliseconds (after a warm-up) and returns
 * operations per second. `fn` returns how many operations it performed, so a tight loop
 * inside `fn` amortises the timer cost.
 */
export function measureOpsPerSecond(fn: () => number, minMs = 1000): { opsPerSecond: number; ops: number; ms: number } {
  const warmupEnd = performance.now() + Math.min(200, minMs / 4);
  while (performance.now() < warmupEnd) fn();
  let ops = 0;
  const start = performance.now();
  let now = start;
  while (now - start < minMs) {
    ops += fn();
    now = performance.now();
  }
  const ms = now - start;
  return { opsPerSecond: Math.round((ops * 1000) / ms), ops, ms: Math.round(ms) };
}
