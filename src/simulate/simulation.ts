/**
 * `Simulation`: one calc graph per node, fed every resource exactly as the agent's would be,
 * its `proto` output accumulated into a `NodeState`, and verdicts decided on those states.
 *
 * Guarantees:
 * - a connection A → B is allowed iff A's node allows A's egress AND B's node allows B's
 *   ingress (calico-semantics §4.7), each judged by `evaluateDirection`; when a node is an end
 *   (a host) or a node on the way has host endpoints, every stage of the path decides too
 *   (host-flow.ts `decideFlow`), and the verdict lists them;
 * - a node has a graph when a pod runs on it, a HostEndpoint names it, or it is a host given
 *   to the constructor (a scenario's `nodes`);
 * - `update()` feeds only what changed (upserts and deletes) to the live graphs, so steps
 *   exercise the same incremental path the agent does;
 * - endpoints are listed in a stable order: namespace, then pod name.
 */
import { CalcGraph } from '../calc/index.ts';
import { cidrContains, parseCidr, type WorkloadEndpoint as V3WorkloadEndpoint } from '../api/index.ts';
import { workloadEndpointIdKey, type WorkloadEndpoint } from '../proto/index.ts';
import { NodeState } from './node-state.ts';
import { evaluateDirection, makePacket, type Decision, type DirectionVerdict, type EndpointToHostAction, type ProbeProtocol } from './verdict-engine.ts';
import { decideFlow, type FlowPeer, type FlowStage } from './host-flow.ts';
import type { HostInterface } from './host-endpoints.ts';
import type { FailsafeConfig } from '../dataplane/index.ts';
import type { AnyUpdate, Update } from '../syncer/index.ts';
import { isOtherGroup, type SimResource } from './cluster-objects.ts';

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

/**
 * A node as an end of a flow: a connection made in (or to) its host network namespace, from
 * (to) its address. Its interface holds `addresses` (host-endpoints.ts `HostInterface`).
 */
export interface SimHost {
  /** The node's name. */
  readonly id: string;
  readonly node: string;
  readonly host: true;
  /** The address the flow uses (the first of the probe's family). */
  readonly ip: string;
  readonly net: string;
  readonly addresses: readonly string[];
  readonly state: NodeState;
}

/** Either end of a flow. */
export type SimPeer = SimEndpoint | SimHost | SimAddress;

export function isEndpoint(p: SimPeer): p is SimEndpoint {
  return 'endpoint' in p;
}

export function isHost(p: SimPeer): p is SimHost {
  return 'host' in p;
}

/** A node with an address of its own (a scenario's `nodes` entry): `addresses` are its interface's. */
export interface SimHostSpec {
  readonly name: string;
  readonly addresses: readonly string[];
}

export interface SimulationOptions {
  /** Nodes that are probe ends, with their addresses. */
  readonly hosts?: readonly SimHostSpec[];
  /** Felix `DefaultEndpointToHostAction`. @default 'DROP' (Felix's default, and the agent's) */
  readonly endpointToHostAction?: EndpointToHostAction;
  /** @default Felix's default failsafe ports */
  readonly failsafes?: FailsafeConfig;
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
  /** The source's side: a pod's egress walk, or the host endpoint chain that decided on the source node. */
  readonly egress: DirectionVerdict;
  /** The destination's side, likewise. */
  readonly ingress: DirectionVerdict;
  /** When host endpoints take part: every stage of the path, in order (host-flow.ts). */
  readonly stages?: readonly FlowStage[];
}

const DEFAULT_NODE = 'node-1';

export class Simulation {
  readonly #graphs = new Map<string, CalcGraph>();
  readonly #states = new Map<string, NodeState>();
  #resources = new Map<string, { readonly json: string; readonly resource: SimResource }>();
  #endpoints: SimEndpoint[] = [];
  #byId = new Map<string, SimEndpoint>();

  readonly #options: SimulationOptions;
  readonly #hostSpecs: ReadonlyMap<string, SimHostSpec>;

  /** `resources`: v3 resources and EndpointSlices (cluster-objects.ts `translateCluster`). */
  constructor(resources: ReadonlyMap<string, SimResource>, options: SimulationOptions = {}) {
    this.#options = options;
    this.#hostSpecs = new Map((options.hosts ?? []).map((h) => [h.name, h]));
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
        ...(isOtherGroup(resource) ? { apiVersion: resource.apiVersion } : {}),
        kind: resource.kind,
        name: resource.metadata.name,
        ...(resource.metadata.namespace !== undefined ? { namespace: resource.metadata.namespace } : {}),
      });
    }
    this.#resources = next;
    this.#interfaces = new Map();

    const nodes = new Set<string>();
    for (const { resource } of next.values()) {
      if (resource.kind === 'WorkloadEndpoint') nodes.add(nodeOf(resource));
      const hepNode = hostEndpointNode(resource);
      if (hepNode !== undefined) nodes.add(hepNode);
    }
    for (const name of this.#hostSpecs.keys()) nodes.add(name);
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
   * Node `name` as a flow end, addressed in `family`: a host given to the constructor, else a
   * node whose HostEndpoints have expectedIPs (its interface is taken to hold them all, the
   * first of the smallest-named endpoint being its address). Undefined otherwise.
   */
  hostFor(name: string, family: 4 | 6 = 4): SimHost | undefined {
    const state = this.#states.get(name);
    if (state === undefined) return undefined;
    const addresses = this.#hostSpecs.get(name)?.addresses ?? [...state.hostEndpoints.keys()].sort().flatMap((k) => {
      const ep = state.hostEndpoints.get(k)!.endpoint;
      return [...ep.expectedIpv4Addrs, ...ep.expectedIpv6Addrs];
    });
    const ip = addresses.find((a) => a.includes(':') === (family === 6));
    if (ip === undefined) return undefined;
    return { id: name, node: name, host: true, ip, net: `${ip}/${family === 4 ? 32 : 128}`, addresses, state };
  }

  /** The node whose interface holds `ip` (see `hostFor`), as a flow end. */
  hostByAddress(ip: string): SimHost | undefined {
    for (const node of this.nodes) {
      const h = this.hostFor(node, ip.includes(':') ? 6 : 4);
      if (h?.addresses.includes(ip)) return { ...h, ip, net: `${ip}/${ip.includes(':') ? 128 : 32}` };
    }
    return undefined;
  }

  /** Node → its host interface, computed once per update (`#interfaceOf`). */
  #interfaces = new Map<string, HostInterface | undefined>();

  /** A node's host interface: its host's addresses (see `hostFor`); undefined when it has none known. */
  #interfaceOf(node: string): HostInterface | undefined {
    if (this.#interfaces.has(node)) return this.#interfaces.get(node);
    const h = this.hostFor(node, 4) ?? this.hostFor(node, 6);
    const iface = h === undefined ? undefined : { addresses: h.addresses };
    this.#interfaces.set(node, iface);
    return iface;
  }

  /** Whether the flow must go through `decideFlow`: a host end, or a node on the way with host endpoints. */
  #hostPath(from: SimPeer, to: SimPeer): boolean {
    if (isHost(from) || isHost(to)) return true;
    return (isEndpoint(from) && from.state.hostEndpoints.size > 0) || (isEndpoint(to) && to.state.hostEndpoints.size > 0);
  }

  /**
   * The verdict for `from` → `to` on `protocol/port`, with the full walk when `trace`. An
   * address outside the cluster has no side of its own: only the other end's side decides.
   */
  verdict(from: SimPeer, to: SimPeer, protocol: ProbeProtocol, port: number, trace = false): Verdict {
    const pkt = makePacket(from.net, to.net, protocol, port);
    const fixed = (direction: 'egress' | 'ingress', decision: Decision): DirectionVerdict => ({ direction, allowed: decision.action === 'allow', decision });
    const outside = (direction: 'egress' | 'ingress'): DirectionVerdict => fixed(direction, { kind: 'outside-cluster', action: 'allow' });
    const podEgress = isEndpoint(from) ? evaluateDirection(from.state, from.endpoint, 'egress', pkt, trace) : undefined;
    const podIngress = isEndpoint(to) ? evaluateDirection(to.state, to.endpoint, 'ingress', pkt, trace) : undefined;
    if (!this.#hostPath(from, to)) {
      const egress = podEgress ?? outside('egress');
      const ingress = podIngress ?? outside('ingress');
      return { allowed: egress.allowed && ingress.allowed, egress, ingress };
    }
    const flow = decideFlow(flowPeer(from), flowPeer(to), pkt, {
      interfaceOf: (node) => this.#interfaceOf(node),
      ...(this.#options.failsafes === undefined ? {} : { failsafes: this.#options.failsafes }),
      ...(this.#options.endpointToHostAction === undefined ? {} : { endpointToHostAction: this.#options.endpointToHostAction }),
    }, trace);
    const request = flow.stages.filter((st) => st.packet === 'request');
    const sideOf = (peer: SimPeer, direction: 'egress' | 'ingress'): DirectionVerdict => {
      if (!isHost(peer)) return outside(direction);
      const own = request.filter((st) => st.node === peer.node && st.hostEndpoint !== undefined);
      const mine = own.filter((st) => st.verdict.direction === direction);
      return (mine.at(-1) ?? own.at(-1))?.verdict ?? fixed(direction, { kind: 'no-host-endpoint', action: 'allow' });
    };
    let egress = podEgress ?? sideOf(from, 'egress');
    let ingress = podIngress ?? sideOf(to, 'ingress');
    for (const st of request) {
      const d = st.verdict.decision;
      // Host → its own pod: neither side is policed. Pod → its own host: the ingress side is cali-wl-to-host's last rule.
      if (d.kind === 'host-to-local-workload') [egress, ingress] = [fixed('egress', d), fixed('ingress', d)];
      if (d.kind === 'endpoint-to-host-action') ingress = st.verdict;
    }
    return { allowed: flow.allowed, egress, ingress, stages: flow.stages };
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
    if ([...this.#states.values()].some((st) => st.hostEndpoints.size > 0)) {
      // Host endpoints police forwarded pod traffic: every pair through the full path.
      return eps.map((from, i) => eps.map((to, j) => i !== j && this.verdict(from, to, protocol, port).allowed));
    }
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

/** The `spec.node` of a HostEndpoint resource (its agent programs it), else undefined. */
function hostEndpointNode(r: SimResource): string | undefined {
  if ((r.kind as string) !== 'HostEndpoint') return undefined;
  const node = (r as { spec?: { node?: unknown } }).spec?.node;
  return typeof node === 'string' && node !== '' ? node : undefined;
}

function flowPeer(p: SimPeer): FlowPeer {
  if (isEndpoint(p)) return { kind: 'workload', id: p.id, node: p.node, state: p.state, endpoint: p.endpoint, net: p.net };
  if (isHost(p)) return { kind: 'host', node: p.node, state: p.state, net: p.net };
  return { kind: 'outside', net: p.net };
}
