/**
 * The snapshot cache's metrics: Typha's `typha_*` snapcache figures (typha.md §7) exported as
 * `tessera_typha_*`. Registered once per registry (`getOrCreate`). The sync server's
 * figures (connections, snapshots sent, client latency) are the server's own module.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import { getOrCreate } from '../runtime/metrics.ts';

/** Crumb sizes: the cache batches at most 100 updates per crumb (Typha SnapshotCacheMaxBatchSize). */
const BREADCRUMB_SIZE_BUCKETS = [0, 1, 5, 10, 25, 50, 100];
/** How long `next()` waited: 0 when the crumb was there; up to the 1 s idle crumb otherwise. */
const NEXT_LATENCY_BUCKETS = [0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class SnapshotCacheMetrics {
  readonly updatesTotal: Counter;
  readonly updatesSkipped: Counter;
  readonly breadcrumbSeqNumber: Gauge;
  readonly breadcrumbSize: Histogram;
  readonly cacheSize: Gauge;
  readonly breadcrumbBlock: Counter;
  readonly breadcrumbNonBlock: Counter;
  readonly nextBreadcrumbLatency: Histogram;

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = (name: string, help: string): Counter => getOrCreate(registry, name, () => new Counter({ name, help, registers }));
    const gauge = (name: string, help: string): Gauge => getOrCreate(registry, name, () => new Gauge({ name, help, registers }));
    const histogram = (name: string, help: string, buckets: number[]): Histogram =>
      getOrCreate(registry, name, () => new Histogram({ name, help, buckets, registers }));
    this.updatesTotal = counter('tessera_typha_updates_total', 'Updates received from the syncer (informers), no-ops included.');
    this.updatesSkipped = counter('tessera_typha_updates_skipped', 'Updates dropped because they would change nothing (equal but for resourceVersion, or a delete of an absent key).');
    this.breadcrumbSeqNumber = gauge('tessera_typha_breadcrumb_seq_number', 'Sequence number of the newest breadcrumb.');
    this.breadcrumbSize = histogram('tessera_typha_breadcrumb_size', 'Updates (deltas) per published breadcrumb.', BREADCRUMB_SIZE_BUCKETS);
    this.cacheSize = gauge('tessera_typha_cache_size', 'Keys in the newest snapshot.');
    this.breadcrumbBlock = counter('tessera_typha_breadcrumb_block', 'Breadcrumb.next() calls that had to wait for the next crumb.');
    this.breadcrumbNonBlock = counter('tessera_typha_breadcrumb_non_block', 'Breadcrumb.next() calls answered at once (the crumb was already published).');
    this.nextBreadcrumbLatency = histogram('tessera_typha_next_breadcrumb_latency_secs', 'Seconds a Breadcrumb.next() call took.', NEXT_LATENCY_BUCKETS);
  }
}
