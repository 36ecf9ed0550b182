/**
 * Calc-graph metrics, with Felix's names (calico-semantics §5.5), registered on an injected
 * registry. Tessera-only metrics use the `tessera_` prefix.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { getOrCreate } from '../runtime/metrics.ts';

export interface CalcGraphMetrics {
  readonly updatesProcessed: Counter<'type'>;
  readonly outputEvents: Counter;
  readonly updateTime: Histogram;
  readonly activeLocalEndpoints: Gauge;
  readonly activeLocalPolicies: Gauge;
  readonly activeLocalSelectors: Gauge;
  readonly resyncState: Gauge;
  readonly invalidUpdates: Counter<'kind'>;
  readonly policiesMissingTier: Gauge;
  readonly invalidPolicies: Gauge<'kind'>;
}

export function calcGraphMetrics(registry: Registry): CalcGraphMetrics {
  const registers = [registry];
  return {
    updatesProcessed: getOrCreate(registry, 'felix_calc_graph_updates_processed', () =>
      new Counter({ name: 'felix_calc_graph_updates_processed', help: 'Datastore updates processed by the calculation graph, by type.', labelNames: ['type'], registers })),
    outputEvents: getOrCreate(registry, 'felix_calc_graph_output_events', () =>
      new Counter({ name: 'felix_calc_graph_output_events', help: 'Dataplane messages emitted by the calculation graph.', registers })),
    updateTime: getOrCreate(registry, 'felix_calc_graph_update_time_seconds', () =>
      new Histogram({ name: 'felix_calc_graph_update_time_seconds', help: 'Seconds to process one batch of datastore updates.', registers })),
    activeLocalEndpoints: getOrCreate(registry, 'felix_active_local_endpoints', () =>
      new Gauge({ name: 'felix_active_local_endpoints', help: 'Local workload endpoints.', registers })),
    activeLocalPolicies: getOrCreate(registry, 'felix_active_local_policies', () =>
      new Gauge({ name: 'felix_active_local_policies', help: 'Policies that match at least one local endpoint.', registers })),
    activeLocalSelectors: getOrCreate(registry, 'felix_active_local_selectors', () =>
      new Gauge({ name: 'felix_active_local_selectors', help: 'Active IP sets (selectors and named ports) needed by local policy.', registers })),
    resyncState: getOrCreate(registry, 'felix_resync_state', () =>
      new Gauge({ name: 'felix_resync_state', help: 'Datastore sync state: 1 = wait, 2 = resync, 3 = in-sync.', registers })),
    invalidUpdates: getOrCreate(registry, 'tessera_calc_invalid_updates_total', () =>
      new Counter({ name: 'tessera_calc_invalid_updates_total', help: 'Invalid objects seen by the validation filter (dropped, or for policies and profiles enforced fail-closed), by kind.', labelNames: ['kind'], registers })),
    invalidPolicies: getOrCreate(registry, 'tessera_invalid_policies', () =>
      new Gauge({ name: 'tessera_invalid_policies', help: 'Invalid policies and profiles currently enforced fail-closed (no rules: the endpoints they select are denied in their directions), by kind.', labelNames: ['kind'], registers })),
    policiesMissingTier: getOrCreate(registry, 'tessera_calc_policies_missing_tier', () =>
      new Gauge({ name: 'tessera_calc_policies_missing_tier', help: 'Policies whose tier has no Tier object (enforced in a tier ordered after every existing one).', registers })),
  };
}
