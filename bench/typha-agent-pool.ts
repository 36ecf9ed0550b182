/**
 * The simulated agents of the Typha benches (bench/scenarios/typha.ts `fanout`, bench/typha-direct.ts
 * `direct`): worker processes (bench/typha-agents.ts) that each host many agents, their progress,
 * and the delivery figures gathered from their reports.
 *
 * Every figure is the same for both benches, so Typha and the API server are compared on one
 * measure: an update is stamped (`STAMP_LABEL`) when the bench hands it to its side of the
 * system, and each agent records when it received it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { HISTOGRAM_MS, type AgentRole, type WorkerReport } from './typha-agent-protocol.ts';

const AGENTS_SCRIPT = fileURLToPath(new URL('./typha-agents.ts', import.meta.url));

/** Polls `cond`; every 10 s writes `progress()` to stderr; throws naming `what` after `timeoutMs`. */
export async function until(cond: () => boolean, what: string, timeoutMs: number, progress?: () => string): Promise<void> {
  const start = performance.now();
  let reported = start;
  while (!cond()) {
    const now = performance.now();
    if (now - start > timeoutMs) throw new Error(`typha bench: timed out after ${timeoutMs} ms waiting for ${what}${progress === undefined ? '' : `: ${progress()}`}`);
    if (progress !== undefined && now - reported > 10_000) {
      reported = now;
      process.stderr.write(`typha bench: ${Math.round((now - start) / 1000)} s waiting for ${what}: ${progress()}\n`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface Worker {
  readonly role: AgentRole;
  readonly child: ChildProcess;
  inSync: number;
  closed: number;
  failures: number;
  report?: WorkerReport;
}

/** What the pool measured of the updates (see bench/scenarios/typha.ts for each figure). */
export interface DeliveryFigures {
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  deliveryMaxMs: number;
  perAgentP50Ms: number;
  perAgentP99Ms: number;
  agentsCpuPercent: number;
  agentCpuUsPerDelivery: number;
  updatesDeliveredToAll: number;
  undelivered: number;
  /** Drain readers (no stamps read): their workers' CPU (% of one core), and what they received since the mark. */
  drainCpuPercent: number;
  drainFrames: number;
  drainBytes: number;
}

export class AgentPool {
  readonly #workers: Worker[] = [];
  readonly #objects: number;
  readonly #totalUpdates: number;
  #markedAt = 0;

  /** Agents expect `objects` in their initial sync and updates stamped 0 … totalUpdates-1. */
  constructor(objects: number, totalUpdates: number) {
    this.#objects = objects;
    this.#totalUpdates = totalUpdates;
  }

  /**
   * A worker with `count` agents of `role`, numbered from `first`, connecting to `target` (a
   * Typha port, or for the direct roles the path of a kubeconfig). `TYPHA_BENCH_WORKER_PROF=<dir>`
   * writes its CPU profile there.
   */
  start(role: AgentRole, target: string, count: number, first: number): void {
    const prof = process.env['TYPHA_BENCH_WORKER_PROF'];
    const child = fork(AGENTS_SCRIPT, [role, target, String(count), String(first), String(this.#objects), String(this.#totalUpdates)], {
      execArgv: ['--import', 'tsx', ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [])],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const w: Worker = { role, child, inSync: 0, closed: 0, failures: 0 };
    child.on('message', (m: { type: string; inSync?: number; closed?: number; failures?: number }) => {
      if (m.type === 'state') {
        w.inSync = m.inSync as number;
        w.closed = m.closed as number;
        w.failures = m.failures ?? 0;
      } else if (m.type === 'report') w.report = m as WorkerReport;
    });
    this.#workers.push(w);
  }

  /** `total` agents: `full` of `fullRole` in one worker, the rest of `lightRole` over `lightWorkers` workers. */
  startAll(total: number, full: number, lightWorkers: number, roles: { full: AgentRole; light: AgentRole }, target: string): void {
    if (full > 0) this.start(roles.full, target, full, 0);
    const light = total - full;
    const per = Math.ceil(light / lightWorkers);
    for (let first = 0; first < light; first += per) this.start(roles.light, target, Math.min(per, light - first), full + first);
  }

  get inSync(): number {
    return this.#workers.reduce((n, w) => n + w.inSync, 0);
  }

  get closed(): number {
    return this.#workers.reduce((n, w) => n + w.closed, 0);
  }

  /** Failed requests of direct agents so far (each retried). */
  get failures(): number {
    return this.#workers.reduce((n, w) => n + w.failures, 0);
  }

  /** Starts the workers' CPU count (call as the first update is sent). */
  mark(): void {
    this.#markedAt = performance.now();
    for (const w of this.#workers) w.child.send({ type: 'mark' });
  }

  /** Drain readers stop acking (every snapshot was sent; see bench/typha-agents.ts). */
  stopAcks(): void {
    for (const w of this.#workers) w.child.send({ type: 'stop-acks' });
  }

  /** Frames and bytes the drain readers received so far. */
  async drainCounts(): Promise<{ frames: number; bytes: number }> {
    const drains = this.#workers.filter((w) => w.role === 'drain');
    for (const w of drains) {
      w.report = undefined;
      w.child.send({ type: 'report' });
    }
    await until(() => drains.every((w) => w.report !== undefined || w.child.exitCode !== null), 'drain reports', 120_000);
    return { frames: drains.reduce((n, w) => n + (w.report?.framesReceived ?? 0), 0), bytes: drains.reduce((n, w) => n + (w.report?.bytesReceived ?? 0), 0) };
  }

  /** Collects reports until every update reached every agent or `graceMs` passed, and sums them up. */
  async collect(graceMs: number): Promise<DeliveryFigures> {
    const deadline = performance.now() + graceMs;
    let reports: WorkerReport[] = [];
    let all: WorkerReport[] = [];
    for (;;) {
      for (const w of this.#workers) {
        w.report = undefined;
        w.child.send({ type: 'report' });
      }
      await until(() => this.#workers.every((w) => w.report !== undefined || w.child.exitCode !== null), 'worker reports', 120_000);
      all = this.#workers.flatMap((w) => (w.report === undefined ? [] : [w.report]));
      reports = all.filter((r) => r.agents > 0);
      const missing = reports.reduce((n, r) => n + r.counts.reduce((m, c) => m + (c < r.agents ? r.agents - c : 0), 0), 0);
      if (missing === 0 || performance.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const markToReportMs = performance.now() - this.#markedAt;
    const allAgents: number[] = [];
    let undelivered = 0;
    for (let id = 0; id < this.#totalUpdates; id++) {
      let max = 0;
      let ok = true;
      for (const r of reports) {
        if ((r.counts[id] as number) < r.agents) {
          ok = false;
          undelivered += r.agents - (r.counts[id] as number);
        }
        max = Math.max(max, r.maxLatencyMs[id] as number);
      }
      if (ok) allAgents.push(max);
    }
    allAgents.sort((a, b) => a - b);
    const hist = new Float64Array(HISTOGRAM_MS + 1);
    let deliveries = 0;
    for (const r of reports) {
      for (const [b, n] of r.histogram) {
        hist[b] = (hist[b] as number) + n;
        deliveries += n;
      }
    }
    const histPercentile = (p: number): number => {
      let acc = 0;
      for (let b = 0; b <= HISTOGRAM_MS; b++) if ((acc += hist[b] as number) >= (p / 100) * deliveries) return b;
      return NaN;
    };
    const agentsCpuMs = reports.reduce((n, r) => n + r.cpuMsSinceMark, 0);
    const drains = all.filter((r) => r.agents === 0);
    const drainCpuMs = drains.reduce((n, r) => n + r.cpuMsSinceMark, 0);
    const agentDeliveries = reports.reduce((n, r) => n + r.deliveriesSinceMark, 0);
    return {
      deliveryP50Ms: Math.round(percentile(allAgents, 50)),
      deliveryP99Ms: Math.round(percentile(allAgents, 99)),
      deliveryMaxMs: Math.round(allAgents.at(-1) ?? NaN),
      perAgentP50Ms: histPercentile(50),
      perAgentP99Ms: histPercentile(99),
      agentsCpuPercent: Math.round((agentsCpuMs / markToReportMs) * 100),
      agentCpuUsPerDelivery: Number(((agentsCpuMs * 1000) / Math.max(1, agentDeliveries)).toFixed(2)),
      updatesDeliveredToAll: allAgents.length,
      undelivered,
      drainCpuPercent: Math.round((drainCpuMs / markToReportMs) * 100),
      drainFrames: drains.reduce((n, r) => n + r.framesReceived, 0),
      drainBytes: drains.reduce((n, r) => n + r.bytesReceived, 0),
    };
  }

  /** Tells every worker to exit and waits until they have. */
  async exit(): Promise<void> {
    for (const w of this.#workers) if (w.child.connected) w.child.send({ type: 'exit' });
    await Promise.all(this.#workers.map((w) => (w.child.exitCode !== null ? undefined : new Promise((r) => w.child.once('exit', r)))));
  }
}
