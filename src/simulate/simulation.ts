/**
 * `Simulation`: one calc graph per node, fed every resource exactly as the agent's would be,
 * its `proto` output accumulated into a `NodeState`, and verdicts decided on those states.
 *
 * Guarantees:
 * - a connection A → B is allowed iff A's node allows A's egress AND B's node allows B's
 *   ingress (calico-semantics §4.7), each judged by `evaluateDirection`;
 * - `update()` feeds only what changed (upserts and deletes) to the live graphs, so steps
 *   exercise the same incremental path the agent does;
 * - endpoints are listed in a stable order: namespace, then pod name.
 */
import { CalcGraph } from '../calc/index.ts';
import { cidrContains, parseCidr, type WorkloadEndpoint as V3WorkloadEndpoint } from '../api/index.ts';
import { workloadEndpointIdKey, type WorkloadEndpoint } from '../proto/index.ts';
import { NodeState } from './node-state.ts';
import { evaluateDirection, makePacket, type DirectionVerdict, type ProbeProtocol } from './verdict-engine.ts';
import type { AnyUpdate, Update } from '../syncer/index.ts';
import { isEndpointSlice, type SimResource } from './cluster-objects.ts';

/** A pod as the simulation knows it: where it runs and the endpoint its node programmed. */
export interface SimEndpoint {
  /** `<namespace>/<pod>`. */
  readonly id: string;
  readonly namespace: string;
  readonly pod: string;
  readonly node: string;
  /** Host network of the first address (`10.0.0.1/32`). */
  readonly net: string;
  readonly ip: string;
  readonly endpoint: WorkloadEndpoint;
  readonly state: NodeState;
}

/** An address outside the cluster (`tessera explain --to 203.0.113.7`): policed only from the pod's side. */
export interface SimAddress {
  /** The address as given. */
  readonly id: string;
  readonly ip: string;
  /** Host network (`/32`, `/128`). */
  readonly net: string;
}

/** Either end of a flow. */
export type SimPeer = SimEndpoint | SimAddress;

export function isEndpoint(p: SimPeer): p is SimEndpoint {
  return 'endpoint' in p;
}

/**
 * `ep` addressed by its first address of `family` (a scenario probe's `ipVersion`), or
 * undefined when it has none. The endpoint's own `net` is its first address, IPv4 when it has one.
 */
export function endpointInFamily(ep: SimEndpoint, family: 4 | 6): SimEndpoint | undefined {
  const net = family === 4 ? ep.endpoint.ipv4Nets[0] : ep.endpoint.ipv6Nets[0];
  if (net === undefined) return undefined;
  return net === ep.net ? ep : { ...ep, net, ip: net.split('/')[0] ?? net };
}

/** A NetworkSet or GlobalNetworkSet entry holding an address. */
export interface NetworkSetHit {
  readonly kind: 'NetworkSet' | 'GlobalNetworkSet';
  readonly namespace?: string;
  readonly name: string;
  readonly net: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface Verdict {
  readonly allowed: boolean;
  readonly egress: DirectionVerdict;
  readonly ingress: DirectionVerdict;
}

const DEFAULT_NODE = 'node-1';

export class Simulation {
  readonly #graphs = new Map<string, CalcGraph>();
  readonly #states = new Map<string, NodeState>();
  #resources = new Map<string, { readonly json: string; readonly resource: SimResource }>();
  #endpoints: SimEndpoint[] = [];
  #byId = new Map<string, SimEndpoint>();

  /** `resources`: v3 resources and EndpointSlices (cluster-objects.ts `translateCluster`). */
  constructor(resources: ReadonlyMap<string, SimResource>) {
    this.update(resources);
  }

  get endpoints(): readonly SimEndpoint[] {
    return this.#endpoints;
  }

  get nodes(): readonly string[] {
    return [...this.#states.keys()].sort();
  }

  nodeState(node: string): NodeState | undefined {
    return this.#states.get(node);
  }

  endpointFor(id: string): SimEndpoint | undefined {
    return this.#byId.get(id);
  }

  /** Replaces the resource set: the graphs get upserts for new/changed keys, deletes for gone ones. */
  update(resources: ReadonlyMap<string, SimResource>): void {
    const next = new Map<string, { json: string; resource: SimResource }>();
    const updates: (Update | AnyUpdate)[] = [];
    for (const [key, resource] of resources) {
      const json = JSON.stringify(resource);
      next.set(key, { json, resource });
      if (this.#resources.get(key)?.json !== json) updates.push({ op: 'upsert', resource });
    }
    for (const [key, { resource }] of this.#resources) {
      if (next.has(key)) continue;
      updates.push({
        op: 'delete',
        ...(isEndpointSlice(resource) ? { apiVersion: resource.apiVersion } : {}),
        kind: resource.kind,
        name: resource.metadata.name,
        ...(resource.metadata.namespace !== undefined ? { namespace: resource.metadata.namespace } : {}),
      });
    }
    this.#resources = next;

    const nodes = new Set<string>();
    for (const { resource } of next.values()) if (resource.kind === 'WorkloadEndpoint') nodes.add(nodeOf(resource));
    const created = new Set<string>();
    for (const node of [...nodes].sort()) {
      if (this.#graphs.has(node)) continue;
      created.add(node);
      const graph = new CalcGraph({ nodeName: node });
      const state = new NodeState(node);
      // A new node starts from the full current set, as an agent starting now would.
      graph.onUpdates([...next.values()].map(({ resource }) => ({ op: 'upsert', resource }) as const));
      graph.onStatusUpdated('in-sync');
      state.apply(graph.flush());
      this.#graphs.set(node, graph);
      this.#states.set(node, state);
    }
    for (const [node, graph] of this.#graphs) {
      if (updates.length === 0) break;
      if (created.has(node)) continue;
      graph.onUpdates(updates);
      this.#states.get(node)?.apply(graph.flush());
    }
    this.#index();
  }

  #index(): void {
    const list: SimEndpoint[] = [];
    for (const { resource } of this.#resources.values()) {
      if (resource.kind !== 'WorkloadEndpoint') continue;
      const node = nodeOf(resource);
      const state = this.#states.get(node);
      const ns = resource.metadata.namespace ?? '';
      const programmed = state?.endpoints.get(workloadEndpointIdKey({ namespace: ns, name: resource.metadata.name }));
      if (state === undefined || programmed === undefined) continue;
      const net = programmed.endpoint.ipv4Nets[0] ?? programmed.endpoint.ipv6Nets[0];
      if (net === undefined) continue;
      const pod = resource.spec.pod ?? resource.metadata.name;
      list.push({ id: `${ns}/${pod}`, namespace: ns, pod, node, net, ip: net.split('/')[0] ?? net, endpoint: programmed.endpoint, state });
    }
    list.sort((a, b) => (a.namespace !== b.namespace ? (a.namespace < b.namespace ? -1 : 1) : a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
    this.#endpoints = list;
    this.#byId = new Map(list.map((e) => [e.id, e]));
  }

  /**
   * The verdict for `from` → `to` on `protocol/port`, with the full walk when `trace`. An
   * address outside the cluster has no side of its own: only the pod's direction decides.
   */
  verdict(from: SimPeer, to: SimPeer, protocol: ProbeProtocol, port: number, trace = false): Verdict {
    const pkt = makePacket(from.net, to.net, protocol, port);
    const outside = (direction: 'egress' | 'ingress'): DirectionVerdict => ({ direction, allowed: true, decision: { kind: 'outside-cluster', action: 'allow' } });
    const egress = isEndpoint(from) ? evaluateDirection(from.state, from.endpoint, 'egress', pkt, trace) : outside('egress');
    const ingress = isEndpoint(to) ? evaluateDirection(to.state, to.endpoint, 'ingress', pkt, trace) : outside('ingress');
    return { allowed: egress.allowed && ingress.allowed, egress, ingress };
  }

  /** The NetworkSet and GlobalNetworkSet entries (normalised CIDRs) that hold `ip`, sets in key order. */
  networkSetsHolding(ip: string): NetworkSetHit[] {
    const hits: NetworkSetHit[] = [];
    for (const { resource } of this.#resources.values()) {
      if (resource.kind !== 'NetworkSet' && resource.kind !== 'GlobalNetworkSet') continue;
      for (const text of resource.spec?.nets ?? []) {
        const parsed = parseCidr(text);
        if (!parsed.ok || !cidrContains(parsed.value, ip)) continue;
        const { namespace, name, labels = {} } = resource.metadata;
        hits.push({ kind: resource.kind, ...(resource.kind === 'NetworkSet' && namespace !== undefined ? { namespace } : {}), name, net: parsed.value.network, labels });
      }
    }
    return hits;
  }

  /**
   * Every ordered pair of distinct endpoints on one port: `allowed[i][j]` for
   * `endpoints[i]` → `endpoints[j]` (the diagonal is false and never evaluated).
   */
  matrix(protocol: ProbeProtocol, port: number): boolean[][] {
    const eps = this.#endpoints;
    const n = eps.length;
    // Egress and ingress are independent: compute each direction once per pair, skipping
    // the ingress walk when egress already dropped.
    const out: boolean[][] = [];
    for (let i = 0; i < n; i++) {
      const from = eps[i] as SimEndpoint;
      const row: boolean[] = new Array<boolean>(n).fill(false);
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        const to = eps[j] as SimEndpoint;
        const pkt = makePacket(from.net, to.net, protocol, port);
        if (!evaluateDirection(from.state, from.endpoint, 'egress', pkt).allowed) continue;
        row[j] = evaluateDirection(to.state, to.endpoint, 'ingress', pkt).allowed;
      }
      out.push(row);
    }
    return out;
  }
}

function nodeOf(wep: V3WorkloadEndpoint): string {
  return wep.spec.node ?? DEFAULT_NODE;
}
