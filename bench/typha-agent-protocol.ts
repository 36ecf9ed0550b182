/**
 * What the Typha fan-out bench (bench/scenarios/typha.ts) and its agent worker processes
 * (bench/typha-agents.ts) share: the stamp label and the shape of a worker's report.
 */

/** The label the bench stamps its updates with: `<update id>_<epoch ms when it called SnapshotCache.onUpdates>`. */
export const STAMP_LABEL = 'bench-stamp';

/** Latency histogram: 1 ms buckets up to this (the last bucket takes the rest). */
export const HISTOGRAM_MS = 120_000;

export interface WorkerReport {
  readonly type: 'report';
  readonly agents: number;
  /** Per update id: agents of this worker that received it. */
  readonly counts: number[];
  /** Per update id: the largest latency (ms) among them. */
  readonly maxLatencyMs: number[];
  /** Sparse 1 ms histogram of every delivery: [bucket, count] pairs. */
  readonly histogram: Array<[number, number]>;
  readonly kvsFrames: number;
  /** CPU time (user + system) of the worker process since the parent's `mark`. */
  readonly cpuMsSinceMark: number;
  /** Stamped updates its agents received since the mark. */
  readonly deliveriesSinceMark: number;
}
