/**
 * The client-go work-queue metrics (`util/workqueue/metrics.go`), one family each, labelled
 * by queue `name`, registered on an injected registry. Names are the upstream ones so
 * existing dashboards work unchanged.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import { getOrCreate } from '../runtime/metrics.ts';

// client-go: prometheus.ExponentialBuckets(10e-9, 10, 12) — 10 ns to 1000 s.
const DURATION_BUCKETS = Array.from({ length: 12 }, (_, i) => 10e-9 * 10 ** i);

/** What the queue reports; the gauges are read at scrape time through these callbacks. */
export interface WorkQueueMetricsSource {
  depth(): number;
  /** Seconds of in-flight work not yet observed, and the longest single one. */
  unfinished(): { totalSeconds: number; longestSeconds: number };
}

export class WorkQueueMetrics {
  private readonly adds: Counter<'name'>;
  private readonly retries: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  private readonly workDuration: Histogram<'name'>;

  constructor(registry: Registry, name: string, source: WorkQueueMetricsSource) {
    const sources = queueSources(registry);
    sources.set(name, source);
    getOrCreate(
      registry,
      'workqueue_depth',
      () =>
        new Gauge({
          name: 'workqueue_depth',
          help: 'Current depth of workqueue',
          labelNames: ['name'] as const,
          registers: [registry],
          collect() {
            for (const [n, s] of sources) this.set({ name: n }, s.depth());
          },
        }),
    );
    getOrCreate(
      registry,
      'workqueue_unfinished_work_seconds',
      () =>
        new Gauge({
          name: 'workqueue_unfinished_work_seconds',
          help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration. Large values indicate stuck threads.',
          labelNames: ['name'] as const,
          registers: [registry],
          collect() {
            for (const [n, s] of sources) this.set({ name: n }, s.unfinished().totalSeconds);
          },
        }),
    );
    getOrCreate(
      registry,
      'workqueue_longest_running_processor_seconds',
      () =>
        new Gauge({
          name: 'workqueue_longest_running_processor_seconds',
          help: 'How many seconds has the longest running processor for workqueue been running.',
          labelNames: ['name'] as const,
          registers: [registry],
          collect() {
            for (const [n, s] of sources) this.set({ name: n }, s.unfinished().longestSeconds);
          },
        }),
    );
    this.adds = getOrCreate(
      registry,
      'workqueue_adds_total',
      () =>
        new Counter({
          name: 'workqueue_adds_total',
          help: 'Total number of adds handled by workqueue',
          labelNames: ['name'] as const,
          registers: [registry],
        }),
    );
    this.retries = getOrCreate(
      registry,
      'workqueue_retries_total',
      () =>
        new Counter({
          name: 'workqueue_retries_total',
          help: 'Total number of retries handled by workqueue',
          labelNames: ['name'] as const,
          registers: [registry],
        }),
    );
    this.queueDuration = getOrCreate(
      registry,
      'workqueue_queue_duration_seconds',
      () =>
        new Histogram({
          name: 'workqueue_queue_duration_seconds',
          help: 'How long in seconds an item stays in workqueue before being requested.',
          labelNames: ['name'] as const,
          buckets: DURATION_BUCKETS,
          registers: [registry],
        }),
    );
    this.workDuration = getOrCreate(
      registry,
      'workqueue_work_duration_seconds',
      () =>
        new Histogram({
          name: 'workqueue_work_duration_seconds',
          help: 'How long in seconds processing an item from workqueue takes.',
          labelNames: ['name'] as const,
          buckets: DURATION_BUCKETS,
          registers: [registry],
        }),
    );
    this.name = name;
  }

  private readonly name: string;

  add(): void {
    this.adds.inc({ name: this.name });
  }

  retry(): void {
    this.retries.inc({ name: this.name });
  }

  got(waitedSeconds: number): void {
    this.queueDuration.observe({ name: this.name }, waitedSeconds);
  }

  done(workedSeconds: number): void {
    this.workDuration.observe({ name: this.name }, workedSeconds);
  }
}

// The scrape-time gauges are shared per registry; each queue registers its source by name.
const sourcesByRegistry = new WeakMap<Registry, Map<string, WorkQueueMetricsSource>>();

function queueSources(registry: Registry): Map<string, WorkQueueMetricsSource> {
  let m = sourcesByRegistry.get(registry);
  if (m === undefined) {
    m = new Map();
    sourcesByRegistry.set(registry, m);
  }
  return m;
}
