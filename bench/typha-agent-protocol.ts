/**
 * What the Typha fan-out bench (bench/scenarios/typha.ts) and its agent worker processes
 * (bench/typha-agents.ts) share: the stamp label and the shape of a worker's report.
 */

/**
 * What a worker's agents are: `drain` Typha connections (read and frame, no inflate),
 * `light`/`full` Typha clients (wire-level with inflate, or real SyncClients),
 * `direct-light`/`direct-full` clients of the API server itself (a raw list + watch stream, or a
 * real SharedIndexInformer).
 */
export type AgentRole = 'drain' | 'light' | 'full' | 'direct-light' | 'direct-full';

/** The label the bench stamps its updates with: `<update id>_<epoch ms when it called SnapshotCache.onUpdates>`. */
export const STAMP_LABEL = 'bench-stamp';

/** Latency histogram: 1 ms buckets up to this (the last bucket takes the rest). */
export const HISTOGRAM_MS = 120_000;

export interface WorkerReport {
  readonly type: 'report';
  /** Agents that read stamps (0 for drain readers, which never look into a frame). */
  readonly agents: number;
  /** Drain readers: frames and bytes received in all. */
  readonly framesReceived: number;
  readonly bytesReceived: number;
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

/** The stamp of update `id` sent now: `<id>_<epoch ms>` (a valid label value). */
export function stampNow(id: number): string {
  return `${id}_${(performance.timeOrigin + performance.now()).toFixed(3)}`;
}

/**
 * Calls `send(first, end)` every 10 ms with the ids due by then at `rate` per second (rate/100
 * each tick), until `total` ids were handed out; resolves after the last call. `send` may be
 * async (it is awaited, so a slow side shows as a lower achieved rate).
 */
export async function sendStamped(total: number, rate: number, send: (first: number, end: number) => void | Promise<void>): Promise<void> {
  const perTick = Math.max(1, Math.round(rate / 100));
  const t0 = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 10) * perTick) + perTick);
    if (due > sent) await send(sent, due);
    sent = due;
    await new Promise((r) => setTimeout(r, 10));
  }
}
