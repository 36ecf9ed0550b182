/**
 * Metrics conventions. Components register their metrics on an injected prom-client
 * `Registry` (never the global one), so tests get isolated registries and a process can
 * serve every component's metrics from one `/metrics`.
 *
 * `getOrCreate` makes registration idempotent per registry: two informers for different
 * resources share one `tessera_informer_*` family distinguished by labels.
 */
import { Registry, type Metric } from 'prom-client';

export { Registry } from 'prom-client';

/** Returns the metric named `name` on `registry`, creating it with `create` when absent. */
export function getOrCreate<M extends Metric>(registry: Registry, name: string, create: () => M): M {
  const existing = registry.getSingleMetric(name);
  return (existing as M | undefined) ?? create();
}

/** A fresh registry, for tests and for components constructed without one. */
export function newRegistry(): Registry {
  return new Registry();
}
