/**
 * The dataplane's Prometheus metrics, with Felix's names (dataplane.md §9), registered on an
 * injected registry. Gauges are set from counts the components keep incrementally, never by
 * walking the whole ruleset.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { getOrCreate } from '../runtime/metrics.ts';

export class DataplaneMetrics {
  readonly restoreCalls: Counter<'ip_version' | 'table'>;
  readonly restoreErrors: Counter<'ip_version' | 'table'>;
  readonly saveCalls: Counter<'ip_version' | 'table'>;
  readonly chains: Gauge<'ip_version' | 'table'>;
  readonly rules: Gauge<'ip_version' | 'table'>;
  readonly ipsetCalls: Counter;
  readonly ipsetErrors: Counter;
  readonly applyTime: Histogram;

  constructor(registry: Registry) {
    const labelNames = ['ip_version', 'table'] as const;
    this.restoreCalls = getOrCreate(registry, 'felix_iptables_restore_calls', () =>
      new Counter({ name: 'felix_iptables_restore_calls', help: 'Number of iptables-restore calls.', labelNames, registers: [registry] }),
    );
    this.restoreErrors = getOrCreate(registry, 'felix_iptables_restore_errors', () =>
      new Counter({ name: 'felix_iptables_restore_errors', help: 'Number of failed iptables-restore calls.', labelNames, registers: [registry] }),
    );
    this.saveCalls = getOrCreate(registry, 'felix_iptables_save_calls', () =>
      new Counter({ name: 'felix_iptables_save_calls', help: 'Number of iptables-save calls.', labelNames, registers: [registry] }),
    );
    this.chains = getOrCreate(registry, 'felix_iptables_chains', () =>
      new Gauge({ name: 'felix_iptables_chains', help: 'Number of active iptables chains.', labelNames, registers: [registry] }),
    );
    this.rules = getOrCreate(registry, 'felix_iptables_rules', () =>
      new Gauge({ name: 'felix_iptables_rules', help: 'Number of iptables rules managed by Tessera.', labelNames, registers: [registry] }),
    );
    this.ipsetCalls = getOrCreate(registry, 'felix_ipset_calls', () =>
      new Counter({ name: 'felix_ipset_calls', help: 'Number of ipset commands executed.', registers: [registry] }),
    );
    this.ipsetErrors = getOrCreate(registry, 'felix_ipset_errors', () =>
      new Counter({ name: 'felix_ipset_errors', help: 'Number of ipset command failures.', registers: [registry] }),
    );
    this.applyTime = getOrCreate(registry, 'felix_int_dataplane_apply_time_seconds', () =>
      new Histogram({
        name: 'felix_int_dataplane_apply_time_seconds',
        help: 'Time in seconds that it took to apply a dataplane update.',
        buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [registry],
      }),
    );
  }
}
