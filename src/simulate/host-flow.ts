/**
 * A connection's path through every node it crosses, when host endpoints take part: the
 * stages Felix's iptables hooks put a packet through, in their order (reference
 * host-endpoints-and-services §A.4–A.8, "Summary of which traffic each kind of HEP policy
 * applies to"). Each stage is one chain walk (`evaluateDirection` with the chain's kind) or a
 * fixed rule; the connection is allowed iff no stage drops it.
 *
 * The request (first packet), on the source's node:
 * - a pod: mangle PREROUTING preDNAT of the `*` endpoint (it catches pod interfaces too);
 *   to its own node: the pod's egress then `DefaultEndpointToHostAction` (`cali-wl-to-host`;
 *   no host endpoint ingress policy); otherwise filter FORWARD: `*` `fhfw` (unless preDNAT
 *   accepted), the pod's egress, then to a pod on the same node its ingress and the `*`
 *   `thfw`, else the `thfw` of the endpoint on the way out;
 * - a host: to its own pods nothing (`cali-OUTPUT` returns for `-o cali+`); otherwise raw
 *   OUTPUT untracked `th` (failsafe-out with the raw reverse entries first), then, unless an
 *   untracked allow accepted it, filter OUTPUT `th` (failsafe-out, tiers, profiles, DROP).
 * On the destination's node (another node, or from outside the cluster), arriving on its
 * interface: raw PREROUTING untracked `fh`; mangle PREROUTING preDNAT `fh` (unless untracked
 * accepted); then a host: filter INPUT `fh` (unless accepted already); a pod: filter FORWARD
 * `fhfw` (unless accepted already), the pod's ingress, the `*` `thfw`.
 *
 * Accept marks: an untracked or preDNAT allow sets MarkAccept, which later stages read — the
 * mangle and filter INPUT/OUTPUT stages accept at once, `cali-from-hep-forward` is skipped —
 * but never the workload chains or `cali-to-hep-forward`. A failsafe accept ends only its own
 * stage. A forward chain of an endpoint with no forward tiers allows by default.
 *
 * The reply: it crosses the raw chains too (raw runs before conntrack), on the destination's
 * node if it leaves a host through an untracked endpoint, and on the source's node if it
 * arrives there from another node; an untracked deny there drops it. On each node the request
 * and the reply must both be tracked or both untracked (NOTRACK). A request untracked there
 * needs an untracked allow of its reply, else conntrack meets the reply as the first packet of
 * an unknown connection — INVALID for TCP — and the next policy chain's `ctstate INVALID` rule
 * drops it (Calico's documentation: "return traffic must also be allowed by untracked
 * policy"). A request tracked there (a pod's, a failsafe port's, one no untracked policy
 * allowed) whose reply an untracked policy allows leaves conntrack without the reply, so the
 * client's next packet (its ACK) is INVALID and dropped — what the raw failsafe chains' source
 * port entries prevent for failsafe connections. SCTP is treated as TCP. An ICMP echo is
 * treated as TCP when its request was untracked (conntrack finds the echo reply INVALID), and
 * a reply left untracked ends it (no later packet). UDP has no state: a reply left untracked
 * ends the exchange, and a reply to an untracked request is the first packet of a new flow,
 * which the normal chains it meets on that node decide (differential findings F1–F3: Felix and
 * Tessera's dataplane agree on each). The reply's destination
 * port is the client's ephemeral port; the engine uses the first of that range
 * ({@link EPHEMERAL_PORTS}), so an untracked rule matching only part of the range is decided
 * for that port.
 */
import type { FailsafeConfig } from '../dataplane/index.ts';
import type { WorkloadEndpoint } from '../proto/index.ts';
import type { NodeState } from './node-state.ts';
import {
  failsafeEntry,
  FELIX_DEFAULT_FAILSAFES,
  hostChainName,
  hostEndpointFor,
  type DispatchTable,
  type FailsafeChain,
  type HostChainPrefix,
  type HostInterface,
} from './host-endpoints.ts';
import { EPHEMERAL_PORTS, evaluateDirection, makePacket, type ChainKind, type Decision, type Direction, type DirectionVerdict, type EndpointToHostAction, type Packet } from './verdict-engine.ts';

/** One end of a flow. */
export type FlowPeer =
  | { readonly kind: 'workload'; readonly id: string; readonly node: string; readonly state: NodeState; readonly endpoint: WorkloadEndpoint; readonly net: string }
  | { readonly kind: 'host'; readonly node: string; readonly state: NodeState; readonly net: string }
  | { readonly kind: 'outside'; readonly net: string };

export type FlowTable = 'raw' | 'mangle' | 'filter';

/** One chain walk (or fixed rule) on the path. */
export interface FlowStage {
  readonly node: string;
  readonly table: FlowTable;
  /** The chain that decided: `cali-fh-any-interface-at-all`, `cali-failsafe-in`, `cali-wl-to-host`, `cali-fw-…`. */
  readonly chain: string;
  /** The HostEndpoint whose chain this is. */
  readonly hostEndpoint?: string;
  /** The pod (`ns/pod`) whose chain this is. */
  readonly workload?: string;
  readonly kind?: ChainKind;
  readonly packet: 'request' | 'reply';
  readonly verdict: DirectionVerdict;
}

export interface FlowOptions {
  /** A node's host interface (its addresses); undefined when unknown (then only `*` endpoints match it). */
  readonly interfaceOf: (node: string) => HostInterface | undefined;
  /** @default FELIX_DEFAULT_FAILSAFES */
  readonly failsafes?: FailsafeConfig;
  /** @default 'DROP' (Felix's and the agent's default) */
  readonly endpointToHostAction?: EndpointToHostAction;
}

export interface FlowResult {
  readonly allowed: boolean;
  /** Every stage walked, in order; the last one dropped the packet when not allowed. */
  readonly stages: readonly FlowStage[];
}

const fixed = (direction: Direction, decision: Decision): DirectionVerdict => ({ direction, allowed: decision.action === 'allow', decision });

/** Whether a stage's verdict sets MarkAccept (later stages read it). */
function accepts(v: DirectionVerdict): boolean {
  const k = v.decision.kind;
  return v.allowed && (k === 'rule' || k === 'profile' || k === 'forward-default');
}

class Path {
  readonly stages: FlowStage[] = [];
  dropped = false;
  constructor(
    readonly opts: FlowOptions,
    readonly trace: boolean,
  ) {}

  push(stage: FlowStage): DirectionVerdict {
    this.stages.push(stage);
    if (!stage.verdict.allowed) this.dropped = true;
    return stage.verdict;
  }

  /**
   * A host endpoint chain on `node` for `iface` (undefined: a pod's interface): the failsafe
   * jump first where the chain has one, then the tiers of `kind`. Undefined when the dispatch
   * returns (no endpoint).
   */
  hostChain(
    node: string,
    state: NodeState,
    iface: HostInterface | undefined,
    table: FlowTable,
    prefix: HostChainPrefix,
    kind: ChainKind,
    pkt: Packet,
    packet: 'request' | 'reply',
  ): DirectionVerdict | undefined {
    const dispatch: DispatchTable = table === 'raw' ? 'raw' : table === 'mangle' ? 'mangle-prednat' : 'filter';
    const hep = hostEndpointFor(state, iface, dispatch);
    if (hep === undefined) return undefined;
    const direction: Direction = prefix === 'cali-fh-' || prefix === 'cali-fhfw-' ? 'ingress' : 'egress';
    const chain = hostChainName(prefix, hep.chainInterface);
    if (kind !== 'forward') {
      const failsafe: FailsafeChain = direction === 'ingress' ? 'cali-failsafe-in' : 'cali-failsafe-out';
      const entry = failsafeEntry(this.opts.failsafes ?? FELIX_DEFAULT_FAILSAFES, failsafe, table, pkt);
      if (entry !== undefined) {
        return this.push({ node, table, chain: failsafe, hostEndpoint: hep.name, kind, packet, verdict: fixed(direction, { kind: 'failsafe', action: 'allow', chain: failsafe, entry }) });
      }
    }
    const ep = hep.endpoint;
    const tiers = kind === 'untracked' ? ep.untrackedTiers : kind === 'pre-dnat' ? ep.preDnatTiers : kind === 'forward' ? ep.forwardTiers : ep.tiers;
    const verdict = evaluateDirection(state, { tiers, profileIds: ep.profileIds }, direction, pkt, this.trace, kind);
    return this.push({ node, table, chain, hostEndpoint: hep.name, kind, packet, verdict });
  }

  workload(peer: Extract<FlowPeer, { kind: 'workload' }>, direction: Direction, pkt: Packet, packet: 'request' | 'reply' = 'request'): DirectionVerdict {
    const verdict = evaluateDirection(peer.state, peer.endpoint, direction, pkt, this.trace);
    const chain = `${direction === 'egress' ? 'cali-fw-' : 'cali-tw-'}${peer.endpoint.interfaceName || peer.id}`;
    return this.push({ node: peer.node, table: 'filter', chain, workload: peer.id, kind: 'normal', packet, verdict });
  }

  fixedStage(node: string, table: FlowTable, chain: string, direction: Direction, decision: Decision, packet: 'request' | 'reply' = 'request'): DirectionVerdict {
    return this.push({ node, table, chain, kind: 'normal', packet, verdict: fixed(direction, decision) });
  }
}

/**
 * Decides `from` → `to` for `pkt` through every stage (module doc). `trace` keeps each chain's
 * tier/policy/rule walk.
 */
export function decideFlow(from: FlowPeer, to: FlowPeer, pkt: Packet, opts: FlowOptions, trace = false): FlowResult {
  const path = new Path(opts, trace);
  const done = (): FlowResult => ({ allowed: !path.dropped, stages: path.stages });
  const sameNode = from.kind !== 'outside' && to.kind !== 'outside' && from.node === to.node;
  /** Nodes where the request was untracked (NOTRACK). */
  const untracked = new Set<string>();

  // ---- the source's node
  let sourceMark = false;
  if (from.kind === 'workload') {
    const pre = path.hostChain(from.node, from.state, undefined, 'mangle', 'cali-fh-', 'pre-dnat', pkt, 'request');
    if (path.dropped) return done();
    sourceMark = pre !== undefined && accepts(pre);
    if (to.kind === 'host' && sameNode) {
      if (!path.workload(from, 'egress', pkt).allowed) return done();
      const setting = opts.endpointToHostAction ?? 'DROP';
      path.fixedStage(from.node, 'filter', 'cali-wl-to-host', 'ingress', { kind: 'endpoint-to-host-action', action: setting === 'DROP' ? 'deny' : 'allow', setting });
      return done();
    }
    if (!sourceMark) path.hostChain(from.node, from.state, undefined, 'filter', 'cali-fhfw-', 'forward', pkt, 'request');
    if (path.dropped || !path.workload(from, 'egress', pkt).allowed) return done();
    if (to.kind === 'workload' && sameNode) {
      if (!path.workload(to, 'ingress', pkt).allowed) return done();
      path.hostChain(from.node, from.state, undefined, 'filter', 'cali-thfw-', 'forward', pkt, 'request');
      return done();
    }
    path.hostChain(from.node, from.state, opts.interfaceOf(from.node), 'filter', 'cali-thfw-', 'forward', pkt, 'request');
    if (path.dropped) return done();
  } else if (from.kind === 'host') {
    if (to.kind === 'workload' && sameNode) {
      path.fixedStage(from.node, 'filter', 'cali-OUTPUT', 'egress', { kind: 'host-to-local-workload', action: 'allow' });
      return done();
    }
    const iface = opts.interfaceOf(from.node);
    const raw = path.hostChain(from.node, from.state, iface, 'raw', 'cali-th-', 'untracked', pkt, 'request');
    if (path.dropped) return done();
    if (raw !== undefined && accepts(raw)) untracked.add(from.node);
    else {
      const th = path.hostChain(from.node, from.state, iface, 'filter', 'cali-th-', 'normal', pkt, 'request');
      if (th === undefined) path.fixedStage(from.node, 'filter', 'cali-to-host-endpoint', 'egress', { kind: 'no-host-endpoint', action: 'allow' });
      if (path.dropped) return done();
    }
  }

  // ---- the destination's node, arriving on its interface
  if (to.kind !== 'outside' && !sameNode) {
    const iface = opts.interfaceOf(to.node);
    const raw = path.hostChain(to.node, to.state, iface, 'raw', 'cali-fh-', 'untracked', pkt, 'request');
    if (path.dropped) return done();
    let mark = raw !== undefined && accepts(raw);
    if (mark) untracked.add(to.node);
    else {
      const pre = path.hostChain(to.node, to.state, iface, 'mangle', 'cali-fh-', 'pre-dnat', pkt, 'request');
      if (path.dropped) return done();
      mark = pre !== undefined && accepts(pre);
    }
    if (to.kind === 'host') {
      if (!mark) {
        const fh = path.hostChain(to.node, to.state, iface, 'filter', 'cali-fh-', 'normal', pkt, 'request');
        if (fh === undefined) path.fixedStage(to.node, 'filter', 'cali-from-host-endpoint', 'ingress', { kind: 'no-host-endpoint', action: 'allow' });
        if (path.dropped) return done();
      }
    } else {
      if (!mark) path.hostChain(to.node, to.state, iface, 'filter', 'cali-fhfw-', 'forward', pkt, 'request');
      if (path.dropped || !path.workload(to, 'ingress', pkt).allowed) return done();
      path.hostChain(to.node, to.state, undefined, 'filter', 'cali-thfw-', 'forward', pkt, 'request');
      if (path.dropped) return done();
    }
  }

  // ---- the reply, through the raw chains (and conntrack where the request was untracked)
  if (sameNode) return done();
  const reply = replyPacket(pkt, to.net, from.net);
  const replyUntracked = new Set<string>();
  if (to.kind === 'host') {
    const v = path.hostChain(to.node, to.state, opts.interfaceOf(to.node), 'raw', 'cali-th-', 'untracked', reply, 'reply');
    if (path.dropped) return done();
    if (v !== undefined && accepts(v)) replyUntracked.add(to.node);
  }
  if (from.kind !== 'outside') {
    const back = path.hostChain(from.node, from.state, opts.interfaceOf(from.node), 'raw', 'cali-fh-', 'untracked', reply, 'reply');
    if (path.dropped) return done();
    if (back !== undefined && accepts(back)) replyUntracked.add(from.node);
  }
  for (const peer of [to, from]) {
    if (peer.kind === 'outside' || untracked.has(peer.node) === replyUntracked.has(peer.node)) continue;
    const requestUntracked = untracked.has(peer.node);
    if (!requestUntracked && (pkt.protocol === 'UDP' || pkt.protocol === 'ICMP')) {
      // The reply passes untracked, and no later packet of the exchange follows it.
      continue;
    }
    if (requestUntracked && pkt.protocol === 'UDP') {
      // Conntrack has no entry and UDP has no state: the reply is the first packet of a new
      // flow, which that node's normal policy decides.
      replyAsNewFlow(path, peer, peer === to, reply, opts);
      if (path.dropped) return done();
      continue;
    }
    // TCP and SCTP either way, and an ICMP echo whose request was untracked: conntrack finds
    // the reply (request untracked) or the client's next packet (reply untracked) INVALID —
    // on its way out of the server, or into the client.
    const leaving = requestUntracked === (peer === to);
    const { table, chain, hostEndpoint } = invalidDropChain(peer, leaving, opts);
    const decision: Decision = { kind: 'untracked-mismatch', action: 'deny', untracked: requestUntracked ? 'request' : 'reply' };
    path.push({ node: peer.node, table, chain, ...(hostEndpoint === undefined ? {} : { hostEndpoint }), packet: 'reply', verdict: fixed(leaving ? 'egress' : 'ingress', decision) });
    return done();
  }
  return done();
}

/**
 * The reply of `pkt` from `replySrc` to `replyDst`: ports swapped (its destination port the
 * first ephemeral port, see the module doc); an ICMP echo request's reply is an echo reply.
 */
function replyPacket(pkt: Packet, replySrc: string, replyDst: string): Packet {
  const reply = makePacket(replySrc, replyDst, pkt.protocol, EPHEMERAL_PORTS.first, pkt.dstPort);
  if (reply.icmp === undefined) return reply;
  const v6 = reply.ipVersion === 6;
  const icmp = { type: v6 ? 129 : 0, code: 0 };
  const dstIp = replyDst.split('/')[0] ?? replyDst;
  return { ...reply, icmp, dstIpPort: `${dstIp},${v6 ? 'icmpv6' : 'icmp'}:${icmp.type}/${icmp.code}` };
}

/**
 * A UDP reply conntrack did not expect (its request was untracked on `peer`'s node), decided as
 * a new flow by the normal chains it meets there: leaving the server (`atServer`), a host's
 * filter `th`, or a pod's `*` preDNAT and `fhfw`, its egress policy and the outgoing `thfw`;
 * arriving at the client, a host's preDNAT then filter `fh`, or a pod's preDNAT and `fhfw` of
 * the incoming interface, its ingress policy and the `*` `thfw`.
 */
function replyAsNewFlow(path: Path, peer: Exclude<FlowPeer, { kind: 'outside' }>, atServer: boolean, reply: Packet, opts: FlowOptions): void {
  const iface = opts.interfaceOf(peer.node);
  if (peer.kind === 'host') {
    if (atServer) {
      path.hostChain(peer.node, peer.state, iface, 'filter', 'cali-th-', 'normal', reply, 'reply');
      return;
    }
    const pre = path.hostChain(peer.node, peer.state, iface, 'mangle', 'cali-fh-', 'pre-dnat', reply, 'reply');
    if (path.dropped || (pre !== undefined && accepts(pre))) return;
    path.hostChain(peer.node, peer.state, iface, 'filter', 'cali-fh-', 'normal', reply, 'reply');
    return;
  }
  // A pod: leaving it, packets come in on its own interface (only `*` endpoints see it).
  const inIface = atServer ? undefined : iface;
  const outIface = atServer ? iface : undefined;
  const pre = path.hostChain(peer.node, peer.state, inIface, 'mangle', 'cali-fh-', 'pre-dnat', reply, 'reply');
  if (path.dropped) return;
  if (pre === undefined || !accepts(pre)) path.hostChain(peer.node, peer.state, inIface, 'filter', 'cali-fhfw-', 'forward', reply, 'reply');
  if (path.dropped || !path.workload(peer, atServer ? 'egress' : 'ingress', reply, 'reply').allowed) return;
  path.hostChain(peer.node, peer.state, outIface, 'filter', 'cali-thfw-', 'forward', reply, 'reply');
}

/**
 * The first chain with conntrack rules (`ctstate INVALID` → DROP) that an INVALID packet meets
 * on `peer`'s node: leaving a host, its filter `th`; leaving a pod, the `*` preDNAT chain, else
 * the `*` `fhfw`, else the pod's egress chain; arriving at a host, its preDNAT chain, else its
 * filter `fh`.
 */
function invalidDropChain(peer: Exclude<FlowPeer, { kind: 'outside' }>, leaving: boolean, opts: FlowOptions): { table: FlowTable; chain: string; hostEndpoint?: string } {
  const iface = peer.kind === 'workload' && leaving ? undefined : opts.interfaceOf(peer.node);
  const named = (table: FlowTable, prefix: HostChainPrefix, dispatch: DispatchTable): { table: FlowTable; chain: string; hostEndpoint?: string } | undefined => {
    const hep = hostEndpointFor(peer.state, iface, dispatch);
    return hep === undefined ? undefined : { table, chain: hostChainName(prefix, hep.chainInterface), hostEndpoint: hep.name };
  };
  if (peer.kind === 'workload' && leaving) {
    // A forward chain starts with the conntrack rules whether or not it has forward tiers.
    return named('mangle', 'cali-fh-', 'mangle-prednat') ?? named('filter', 'cali-fhfw-', 'filter') ?? { table: 'filter', chain: `cali-fw-${peer.endpoint.interfaceName || peer.id}` };
  }
  if (leaving) return named('filter', 'cali-th-', 'filter') ?? { table: 'filter', chain: 'cali-OUTPUT' };
  return named('mangle', 'cali-fh-', 'mangle-prednat') ?? named('filter', 'cali-fh-', 'filter') ?? { table: 'filter', chain: 'cali-INPUT' };
}
