/**
 * Says so when an endpoint on this node has addresses in an IP family the agent does not
 * program. Without ip6tables rules, IPv6 to and from such a pod is not filtered at all — the
 * policy the user wrote does not hold for it — so the gap must never be silent:
 *
 * - the first such endpoint of each family is logged (warn) with the fix (`--ip-versions`),
 *   once per family for the life of the process: one line says the node is misconfigured,
 *   a line per endpoint update would bury it;
 * - `tessera_agent_unenforced_endpoints{ip_version}` is the number of this node's endpoints
 *   that currently have addresses in that family (0 for every programmed family), so the gap
 *   stays visible on a dashboard while it lasts.
 *
 * It reads the calc graph's endpoint messages (the endpoints of this node only) and holds one
 * set of endpoint keys per unprogrammed family.
 */
import { Gauge } from 'prom-client';

import type { DataplaneMessage } from '../proto/index.ts';
import { workloadEndpointIdKey } from '../proto/index.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate, newRegistry, type Registry } from '../runtime/metrics.ts';
import type { IpVersion } from './ip-versions.ts';

export interface UnenforcedFamilyReporterOptions {
  /** The families the dataplane programs. */
  readonly ipVersions: readonly IpVersion[];
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

const FAMILIES: readonly IpVersion[] = [4, 6];

export class UnenforcedFamilyReporter {
  private readonly log: Logger;
  private readonly gauge: Gauge<'ip_version'>;
  /** Unprogrammed family → keys of endpoints with addresses in it. */
  private readonly endpoints = new Map<IpVersion, Set<string>>();
  private readonly warned = new Set<IpVersion>();
  private readonly programmed: readonly IpVersion[];

  constructor(opts: UnenforcedFamilyReporterOptions) {
    const { ipVersions, registry = newRegistry(), logger = silentLogger } = opts;
    this.programmed = ipVersions;
    this.log = logger.child({ component: 'unenforced-family-reporter' });
    this.gauge = getOrCreate(
      registry,
      'tessera_agent_unenforced_endpoints',
      () =>
        new Gauge({
          name: 'tessera_agent_unenforced_endpoints',
          help: "This node's endpoints with addresses in an IP family the agent does not program (their traffic in that family is not filtered).",
          labelNames: ['ip_version'],
          registers: [registry],
        }),
    );
    for (const v of FAMILIES) {
      this.gauge.set({ ip_version: String(v) }, 0);
      if (!ipVersions.includes(v)) this.endpoints.set(v, new Set());
    }
  }

  /** Feeds one batch of calc-graph messages. */
  observe(messages: readonly DataplaneMessage[]): void {
    for (const m of messages) {
      if (m.type !== 'WorkloadEndpointUpdate' && m.type !== 'WorkloadEndpointRemove') continue;
      const key = workloadEndpointIdKey(m.id);
      for (const [v, keys] of this.endpoints) {
        const nets = m.type === 'WorkloadEndpointUpdate' ? (v === 4 ? m.endpoint.ipv4Nets : m.endpoint.ipv6Nets) : [];
        if (nets.length === 0) {
          keys.delete(key);
        } else {
          keys.add(key);
          if (!this.warned.has(v)) {
            this.warned.add(v);
            this.log.warn(
              { ipVersion: v, programmed: this.programmed, namespace: m.id.namespace, name: m.id.name, addresses: nets },
              `endpoint has IPv${v} addresses but this node programs IPv${this.programmed.join(' and IPv')} only: its IPv${v} traffic is NOT filtered (start the agent with --ip-versions ${[...this.programmed, v].sort().join(',')}; logged once)`,
            );
          }
        }
        this.gauge.set({ ip_version: String(v) }, keys.size);
      }
    }
  }
}
