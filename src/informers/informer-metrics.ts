/**
 * Metrics of the informer stack, one family per figure, labelled by `resource`. Registered
 * once per registry (`getOrCreate`), so every informer in a process shares the families.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { getOrCreate } from '../runtime/metrics.ts';

export type WatchRestartReason = 'closed' | 'expired' | 'stalled' | 'error' | 'very_short';

/** Read at scrape time: the live figures of one informer. */
export interface InformerGaugeSource {
  items(): number;
  queueDepth(): number;
  resourceVersionAgeSeconds(): number;
}

/** Sources per registry, shared by every InformerMetrics built on that registry. */
const sourcesByRegistry = new WeakMap<Registry, Map<string, InformerGaugeSource>>();

export class InformerMetrics {
  readonly lists: Counter<'resource'>;
  readonly watches: Counter<'resource'>;
  readonly relists: Counter<'resource'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly watchEvents: Counter<'resource' | 'type'>;
  readonly items: Gauge<'resource'>;
  readonly queueDepth: Gauge<'resource'>;
  readonly lastResourceVersionAge: Gauge<'resource'>;
  readonly handlerErrors: Counter<'resource'>;

  private readonly sources: Map<string, InformerGaugeSource>;

  constructor(registry: Registry) {
    const registers = [registry];
    let sources = sourcesByRegistry.get(registry);
    if (sources === undefined) {
      sources = new Map();
      sourcesByRegistry.set(registry, sources);
    }
    this.sources = sources;
    const fromSources = (read: (s: InformerGaugeSource) => number) =>
      function collect(this: Gauge<'resource'>): void {
        this.reset();
        for (const [resource, source] of sources) this.set({ resource }, read(source));
      };
    this.lists = getOrCreate(
      registry,
      'tessera_informer_lists_total',
      () => new Counter({ name: 'tessera_informer_lists_total', help: 'List calls (pages) made by reflectors.', labelNames: ['resource'], registers }),
    );
    this.watches = getOrCreate(
      registry,
      'tessera_informer_watches_total',
      () => new Counter({ name: 'tessera_informer_watches_total', help: 'Watch streams opened by reflectors.', labelNames: ['resource'], registers }),
    );
    this.relists = getOrCreate(
      registry,
      'tessera_informer_relists_total',
      () =>
        new Counter({
          name: 'tessera_informer_relists_total',
          help: 'Full relists after the first list (410 Gone, expired or too-large resourceVersion).',
          labelNames: ['resource'],
          registers,
        }),
    );
    this.watchRestarts = getOrCreate(
      registry,
      'tessera_informer_watch_restarts_total',
      () =>
        new Counter({
          name: 'tessera_informer_watch_restarts_total',
          help: 'Watch streams that ended, by reason (closed, expired, stalled, error, very_short).',
          labelNames: ['resource', 'reason'],
          registers,
        }),
    );
    this.watchEvents = getOrCreate(
      registry,
      'tessera_informer_watch_events_total',
      () =>
        new Counter({
          name: 'tessera_informer_watch_events_total',
          help: 'Watch events received, by type.',
          labelNames: ['resource', 'type'],
          registers,
        }),
    );
    this.items = getOrCreate(
      registry,
      'tessera_informer_items',
      () =>
        new Gauge({
          name: 'tessera_informer_items',
          help: 'Objects in the informer cache.',
          labelNames: ['resource'],
          registers,
          collect: fromSources((s) => s.items()),
        }),
    );
    this.queueDepth = getOrCreate(
      registry,
      'tessera_informer_queue_depth',
      () =>
        new Gauge({
          name: 'tessera_informer_queue_depth',
          help: 'Keys waiting in the DeltaFIFO.',
          labelNames: ['resource'],
          registers,
          collect: fromSources((s) => s.queueDepth()),
        }),
    );
    this.lastResourceVersionAge = getOrCreate(
      registry,
      'tessera_informer_last_resource_version_age_seconds',
      () =>
        new Gauge({
          name: 'tessera_informer_last_resource_version_age_seconds',
          help: 'Seconds since the reflector last advanced its resourceVersion (event, bookmark or list).',
          labelNames: ['resource'],
          registers,
          collect: fromSources((s) => s.resourceVersionAgeSeconds()),
        }),
    );
    this.handlerErrors = getOrCreate(
      registry,
      'tessera_informer_handler_errors_total',
      () =>
        new Counter({
          name: 'tessera_informer_handler_errors_total',
          help: 'Exceptions thrown by event handlers (caught and logged).',
          labelNames: ['resource'],
          registers,
        }),
    );
  }

  /** Reports `source`'s gauges under `resource` until the returned function is called. */
  track(resource: string, source: InformerGaugeSource): () => void {
    this.sources.set(resource, source);
    return () => {
      if (this.sources.get(resource) === source) this.sources.delete(resource);
    };
  }
}
