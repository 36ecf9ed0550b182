/**
 * The dataplane's Prometheus metrics, with Felix's names (dataplane.md §9) where Felix has one
 * and `tessera_` otherwise, registered on an injected registry. Gauges are set from counts the
 * components keep incrementally, never by walking the whole ruleset.
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
  /** Chains iptables-restore rejected, now programmed as their fail-closed stand-ins (or kept, for a deletion). */
  readonly rejectedChains: Gauge<'ip_version' | 'table'>;
  /** Rejections, once per chain and desired version. */
  readonly chainRejections: Counter<'ip_version' | 'table'>;
  /** Applies that failed (an outage: nothing to narrow to); Felix's name. */
  readonly applyFailures: Counter;
  /** Applies that failed in a row; 0 once one succeeds. */
  readonly consecutiveApplyFailures: Gauge;
  /** This node's endpoints withheld because another endpoint claims their interface or address, by kind of claim. */
  readonly conflictingEndpoints: Gauge<'kind'>;
  /** This node's endpoints not programmed because no `--interface-prefix` covers their interface. */
  readonly foreignInterfaceEndpoints: Gauge;
  /** This node's endpoints that set a QoS limit Tessera does not enforce (bandwidth: needs tc), by field. */
  readonly qosUnenforcedEndpoints: Gauge<'field'>;
  readonly hostEndpointInterfaces: Gauge;
  readonly unmatchedHostEndpoints: Gauge;
  readonly hostInterfaceListErrors: Counter;

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
    this.rejectedChains = getOrCreate(registry, 'tessera_dataplane_rejected_chains', () =>
      new Gauge({
        name: 'tessera_dataplane_rejected_chains',
        help: 'Chains iptables-restore rejected, programmed as a DROP (fail closed) until a retry is accepted.',
        labelNames,
        registers: [registry],
      }),
    );
    this.chainRejections = getOrCreate(registry, 'tessera_dataplane_chain_rejections', () =>
      new Counter({ name: 'tessera_dataplane_chain_rejections', help: 'Chains iptables-restore rejected, counted once per chain and desired version.', labelNames, registers: [registry] }),
    );
    this.applyFailures = getOrCreate(registry, 'felix_int_dataplane_failures', () =>
      new Counter({ name: 'felix_int_dataplane_failures', help: 'Number of times dataplane updates failed and will be retried.', registers: [registry] }),
    );
    this.consecutiveApplyFailures = getOrCreate(registry, 'tessera_dataplane_consecutive_apply_failures', () =>
      new Gauge({ name: 'tessera_dataplane_consecutive_apply_failures', help: 'Dataplane applies that failed in a row (0 after a success).', registers: [registry] }),
    );
    this.conflictingEndpoints = getOrCreate(registry, 'tessera_dataplane_conflicting_endpoints', () =>
      new Gauge({
        name: 'tessera_dataplane_conflicting_endpoints',
        help: "This node's WorkloadEndpoints in a conflict (an interface or address another endpoint also claims): not programmed, their interfaces drop all traffic.",
        labelNames: ['kind'] as const,
        registers: [registry],
      }),
    );
    this.foreignInterfaceEndpoints = getOrCreate(registry, 'tessera_dataplane_foreign_interface_endpoints', () =>
      new Gauge({
        name: 'tessera_dataplane_foreign_interface_endpoints',
        help: "This node's WorkloadEndpoints whose interface no configured interface prefix covers: not programmed (their traffic never reaches the dispatch chains).",
        registers: [registry],
      }),
    );
    this.qosUnenforcedEndpoints = getOrCreate(registry, 'tessera_dataplane_qos_unenforced_endpoints', () =>
      new Gauge({
        name: 'tessera_dataplane_qos_unenforced_endpoints',
        help: "This node's WorkloadEndpoints whose qosControls set a limit Tessera does not enforce (bandwidth, burst, peak rate, minimum burst: Felix programs them with tc; dscp: the mangle table), by field.",
        labelNames: ['field'] as const,
        registers: [registry],
      }),
    );
    this.hostEndpointInterfaces = getOrCreate(registry, 'tessera_dataplane_host_endpoint_interfaces', () =>
      new Gauge({
        name: 'tessera_dataplane_host_endpoint_interfaces',
        help: "This node's interfaces a HostEndpoint polices (the `*` HostEndpoint's default counts as one).",
        registers: [registry],
      }),
    );
    this.unmatchedHostEndpoints = getOrCreate(registry, 'tessera_dataplane_unmatched_host_endpoints', () =>
      new Gauge({
        name: 'tessera_dataplane_unmatched_host_endpoints',
        help: "This node's HostEndpoints that police no interface (no interface with their name or expected IPs, or another HostEndpoint with a smaller name won it).",
        registers: [registry],
      }),
    );
    this.hostInterfaceListErrors = getOrCreate(registry, 'tessera_dataplane_host_interface_list_errors', () =>
      new Counter({ name: 'tessera_dataplane_host_interface_list_errors', help: 'Failed listings of the host interfaces and addresses (`ip -j addr show`); the last good listing stays in force.', registers: [registry] }),
    );
  }
}
