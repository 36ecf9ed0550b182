/**
 * A node with pods, the calc graph and the dataplane driver, wired the way the agent wires
 * them: v3 resources → `CalcGraph` → proto messages → `DataplaneDriver` programming the node
 * namespace through `NetnsCommandRunner`. Test code only (the calc graph and the dataplane
 * never import each other).
 */
import type { NetworkPolicy, GlobalNetworkPolicy, Profile, Tier, WorkloadEndpoint, V3Resource } from '../../src/api/index.ts';
import { CalcGraph, type CalcGraphOptions } from '../../src/calc/index.ts';
import { DataplaneDriver, NetnsCommandRunner, type DataplaneDriverOptions } from '../../src/dataplane/index.ts';
import { Topology, type PodSpec } from './netns.ts';
import { ProbeAgent, checkConnectivity, type Expectation, type IpFamily } from './probes.ts';
import type { AnyUpdate, Update } from '../../src/syncer/index.ts';

export const NODE = 'node-1';
/** `TESSERA_E2E_IPTABLES_BACKEND=legacy` runs the suite against iptables-legacy. @default 'nft' */
export const BACKEND: 'nft' | 'legacy' = process.env['TESSERA_E2E_IPTABLES_BACKEND'] === 'legacy' ? 'legacy' : 'nft';
export const NAMESPACE = 'shop';

export function defaultTier(): Tier {
  return { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'default' }, spec: { order: 1_000_000, defaultAction: 'Deny' } };
}

export function nsProfile(ns: string): Profile {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: { name: `kns.${ns}` },
    spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
  };
}

/** A WorkloadEndpoint on {@link NODE}; with `ip6` it is dual-stack (a /128 next to the /32). */
export function workload(name: string, ip: string, iface: string, labels: Record<string, string>, ip6?: string): WorkloadEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace: NAMESPACE, labels },
    spec: {
      node: NODE,
      orchestrator: 'k8s',
      endpoint: 'eth0',
      pod: name,
      interfaceName: iface,
      ipNetworks: ip6 === undefined ? [`${ip}/32`] : [`${ip}/32`, `${ip6}/128`],
      profiles: [`kns.${NAMESPACE}`],
      ports: [{ name: 'dns', protocol: 'UDP', port: 5353 }],
    },
  };
}

export function networkPolicy(name: string, spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name, namespace: NAMESPACE }, spec: { tier: 'default', ...spec } };
}

export function globalNetworkPolicy(name: string, spec: GlobalNetworkPolicy['spec']): GlobalNetworkPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name }, spec: { tier: 'default', ...spec } };
}

export type HarnessPod = PodSpec & { labels: Record<string, string> };

export const PODS: readonly HarnessPod[] = [
  { name: 'web', ip: '10.65.0.2', labels: { app: 'web' } },
  { name: 'client', ip: '10.65.0.3', labels: { app: 'client' } },
  { name: 'other', ip: '10.65.0.4', labels: { app: 'other' } },
];

/** {@link PODS} with an IPv6 ULA each (fd00:65::/64, the same host part as the IPv4 address). */
export const DUAL_STACK_PODS: readonly HarnessPod[] = PODS.map((p) => ({ ...p, ip6: `fd00:65::${p.ip.split('.')[3]}` }));

export class Harness {
  readonly graph: CalcGraph;
  driver!: DataplaneDriver;
  private stop = new AbortController();
  private running: Promise<void> | undefined;
  readonly agents = new Map<string, ProbeAgent>();

  private constructor(
    readonly topo: Topology,
    readonly podSpecs: readonly HarnessPod[],
    graphOpts: Omit<CalcGraphOptions, 'nodeName'>,
  ) {
    this.graph = new CalcGraph({ ...graphOpts, nodeName: NODE });
  }

  /**
   * Starts the topology of `pods` (@default {@link PODS}), a probe agent per pod and the driver;
   * `graphOpts` give the calc graph a registry and logger (@default its own, silent).
   */
  static async create(driverOpts: Partial<DataplaneDriverOptions> = {}, pods: readonly HarnessPod[] = PODS, graphOpts: Omit<CalcGraphOptions, 'nodeName'> = {}): Promise<Harness> {
    const topo = Topology.create(pods);
    const h = new Harness(topo, pods, graphOpts);
    try {
      for (const p of topo.pods) h.agents.set(p.name, await ProbeAgent.start(p));
      h.startDriver(driverOpts);
    } catch (e) {
      await h.dispose();
      throw e;
    }
    return h;
  }

  /** The base resources: default tier, namespace profile, one WorkloadEndpoint per pod. */
  baseResources(): V3Resource[] {
    return [
      defaultTier(),
      nsProfile(NAMESPACE),
      ...this.podSpecs.map((p) => workload(p.name, p.ip, this.topo.pod(p.name).iface, p.labels, p.ip6)),
    ];
  }

  startDriver(opts: Partial<DataplaneDriverOptions> = {}): DataplaneDriver {
    this.stop = new AbortController();
    this.driver = new DataplaneDriver({ runner: new NetnsCommandRunner(this.topo.nodeNs), backend: BACKEND, ...opts });
    this.running = this.driver.run(this.stop.signal);
    return this.driver;
  }

  async stopDriver(): Promise<void> {
    this.stop.abort();
    await this.running;
    this.running = undefined;
  }

  /** Feeds resource updates (v3, and EndpointSlices) through the calc graph and applies its output. */
  async update(updates: readonly (Update | AnyUpdate)[]): Promise<void> {
    this.graph.onUpdates(updates);
    this.graph.onStatusUpdated('in-sync');
    this.driver.send(this.graph.flush());
    await this.driver.flushed();
  }

  check(expectations: readonly Expectation[]): Promise<string[]> {
    return checkConnectivity(this.agents, expectations);
  }

  /** The node's filter table in `family` (@default 4), comment lines dropped. */
  saveNode(family: IpFamily = 4): string {
    return this.topo
      .exec(this.topo.nodeNs, [`${family === 4 ? 'iptables' : 'ip6tables'}-${BACKEND}-save`, '-t', 'filter'])
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .join('\n');
  }

  async dispose(): Promise<void> {
    try {
      if (this.running !== undefined) await this.stopDriver();
    } finally {
      for (const a of this.agents.values()) a.stop();
      this.topo.destroy();
    }
  }
}

/**
 * Every pair of interest in both protocols over `family` (@default 4), expected allowed unless
 * listed in `blocked` (`from->to/tcp|udp`).
 */
export function matrix(blocked: readonly string[], family: IpFamily = 4): Expectation[] {
  const pairs: Array<[string, string]> = [
    ['client', 'web'],
    ['other', 'web'],
    ['web', 'client'],
    ['other', 'client'],
  ];
  const out: Expectation[] = [];
  for (const [from, to] of pairs) {
    for (const kind of ['tcp', 'udp'] as const) out.push({ from, to, kind, family, allowed: !blocked.includes(`${from}->${to}/${kind}`) });
  }
  return out;
}
