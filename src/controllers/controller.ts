/**
 * A controller: a work queue of keys and N workers that reconcile them, with
 * controller-runtime's result handling (kubernetes-and-node §8.3) and its
 * controller_runtime_reconcile_* metrics.
 *
 * | reconcile outcome      | queue action                          | `result` label  |
 * |------------------------|---------------------------------------|-----------------|
 * | `{}` / `done`          | `forget(key)`                         | `success`       |
 * | `{requeue: true}`      | `addRateLimited(key)`                 | `requeue`       |
 * | `{requeueAfterMs: d}`  | `forget(key)`, `addAfter(key, d)`     | `requeue_after` |
 * | throws                 | `addRateLimited(key)` (logged)        | `error`         |
 * | throws TerminalError   | `forget(key)` (logged, no retry)      | `error`         |
 *
 * A key is reconciled by at most one worker at a time (the queue is stingy), so a
 * reconciler may assume exclusive ownership of its key.
 */
import { randomUUID } from 'node:crypto';

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import { every, realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate } from '../runtime/metrics.ts';
import type { RateLimiter } from './rate-limiter.ts';
import { WorkQueue } from './work-queue.ts';

/** What a reconcile asks for next. An empty object (or undefined) means done. */
export interface ReconcileResult {
  requeue?: boolean;
  requeueAfterMs?: number;
}

/** An error that retrying cannot fix: logged, counted, not requeued. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export type Reconciler = (key: string, log: Logger) => Promise<ReconcileResult | void>;

export interface ControllerOptions {
  /** Names the controller in logs, the queue and metrics. */
  name: string;
  reconcile: Reconciler;
  /** @default 1 */
  workers?: number;
  clock?: Clock;
  registry?: Registry;
  logger?: Logger;
  rateLimiter?: RateLimiter<string>;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue<string>;
  private readonly reconcile: Reconciler;
  private readonly workers: number;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics: ReconcileMetrics | undefined;
  private running: Promise<void>[] = [];

  constructor(opts: ControllerOptions) {
    const { name, reconcile, workers = 1, clock = realClock, registry, logger = silentLogger } = opts;
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`Controller ${name}: workers must be a positive integer, got ${workers}`);
    this.name = name;
    this.reconcile = reconcile;
    this.workers = workers;
    this.clock = clock;
    this.log = logger.child({ controller: name });
    this.queue = new WorkQueue<string>({
      name,
      clock,
      ...(registry ? { registry } : {}),
      ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
    });
    this.metrics = registry === undefined ? undefined : new ReconcileMetrics(registry, name, workers);
  }

  /**
   * Starts the workers; resolves once `signal` aborts and in-flight reconciles finish.
   * Keys still queued at that point are dropped.
   */
  async run(signal: AbortSignal): Promise<void> {
    const stop = (): void => void this.queue.shutDown();
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    this.running = Array.from({ length: this.workers }, () => this.worker(signal));
    await Promise.all(this.running);
    await this.queue.shutDownWithDrain();
  }

  /**
   * `run`, with `sweep` called every `intervalMs` on the controller's clock (the periodic
   * resync that re-enqueues what a missed or coalesced event left behind) and `handlers`
   * (the informer registrations that feed the queue) disposed once the workers have stopped —
   * sweep first, so nothing is enqueued into a queue that is shutting down.
   */
  async runWithSweeps(
    signal: AbortSignal,
    opts: { readonly intervalMs: number; readonly sweep: () => void; readonly handlers: readonly { dispose(): void }[] },
  ): Promise<void> {
    const sweeps = every(this.clock, opts.intervalMs, opts.sweep);
    try {
      await this.run(signal);
    } finally {
      sweeps.cancel();
      for (const h of opts.handlers) h.dispose();
    }
  }

  private async worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      // Once stopped (shutdown, or leadership lost) queued keys are dropped, not reconciled:
      // a replica that is no longer the leader must not write.
      if (signal.aborted) {
        this.queue.done(key);
        continue;
      }
      await this.processOne(key);
    }
  }

  private async processOne(key: string): Promise<void> {
    const log = this.log.child({ key, reconcileID: randomUUID() });
    const start = this.clock.now();
    this.metrics?.active(1);
    try {
      const result = (await this.reconcile(key, log)) ?? {};
      if (result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, result.requeueAfterMs);
        this.metrics?.result('requeue_after');
      } else if (result.requeue === true) {
        this.queue.addRateLimited(key);
        this.metrics?.result('requeue');
      } else {
        this.queue.forget(key);
        this.metrics?.result('success');
      }
    } catch (err) {
      this.metrics?.result('error');
      if (err instanceof TerminalError) {
        log.error({ err }, 'reconcile failed terminally; not retrying');
        this.queue.forget(key);
      } else {
        log.warn({ err, retries: this.queue.numRequeues(key) }, 'reconcile failed; retrying with backoff');
        this.queue.addRateLimited(key);
      }
    } finally {
      this.metrics?.active(-1);
      this.metrics?.time((this.clock.now() - start) / 1000);
      this.queue.done(key);
    }
  }
}

class ReconcileMetrics {
  private readonly total: Counter<'controller' | 'result'>;
  private readonly errors: Counter<'controller'>;
  private readonly seconds: Histogram<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;

  constructor(
    registry: Registry,
    private readonly controller: string,
    workers: number,
  ) {
    this.total = getOrCreate(
      registry,
      'controller_runtime_reconcile_total',
      () =>
        new Counter({
          name: 'controller_runtime_reconcile_total',
          help: 'Total number of reconciliations per controller',
          labelNames: ['controller', 'result'] as const,
          registers: [registry],
        }),
    );
    this.errors = getOrCreate(
      registry,
      'controller_runtime_reconcile_errors_total',
      () =>
        new Counter({
          name: 'controller_runtime_reconcile_errors_total',
          help: 'Total number of reconciliation errors per controller',
          labelNames: ['controller'] as const,
          registers: [registry],
        }),
    );
    this.seconds = getOrCreate(
      registry,
      'controller_runtime_reconcile_time_seconds',
      () =>
        new Histogram({
          name: 'controller_runtime_reconcile_time_seconds',
          help: 'Length of time per reconciliation per controller',
          labelNames: ['controller'] as const,
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
          registers: [registry],
        }),
    );
    this.activeWorkers = getOrCreate(
      registry,
      'controller_runtime_active_workers',
      () =>
        new Gauge({
          name: 'controller_runtime_active_workers',
          help: 'Number of currently used workers per controller',
          labelNames: ['controller'] as const,
          registers: [registry],
        }),
    );
    const max = getOrCreate(
      registry,
      'controller_runtime_max_concurrent_reconciles',
      () =>
        new Gauge({
          name: 'controller_runtime_max_concurrent_reconciles',
          help: 'Maximum number of concurrent reconciles per controller',
          labelNames: ['controller'] as const,
          registers: [registry],
        }),
    ) as Gauge<'controller'>;
    max.set({ controller }, workers);
    this.activeWorkers.set({ controller }, 0);
  }

  result(result: 'success' | 'error' | 'requeue' | 'requeue_after'): void {
    this.total.inc({ controller: this.controller, result });
    if (result === 'error') this.errors.inc({ controller: this.controller });
  }

  active(delta: number): void {
    this.activeWorkers.inc({ controller: this.controller }, delta);
  }

  time(seconds: number): void {
    this.seconds.observe({ controller: this.controller }, seconds);
  }
}
