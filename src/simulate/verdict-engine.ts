/**
 * The verdict engine: decides one direction of a packet on one endpoint by walking what the
 * dataplane was given (a `NodeState`), with exactly the semantics of the chains Felix
 * renders (calico-semantics §4.5–4.6):
 *
 * - tiers in the endpoint's order; a tier with no policy for this direction is skipped;
 * - within a tier, policies in order; within a policy, rules in order. A matching rule's
 *   action decides: `allow` accepts, `deny` drops, `next-tier` (Pass) leaves the tier,
 *   `log` continues with the next rule. A policy where no rule matched falls through;
 * - the end of a tier applies its defaultAction (`Deny` drops, `Pass` goes on);
 * - then the profiles in order: within a profile, rules in order; `allow` accepts, `deny`
 *   drops, `next-tier` (Pass) leaves the profile (its chain RETURNs with the pass mark, which
 *   the endpoint chain does not read: the next profile is walked, and after the last one
 *   "no profile matched" drops), `log` continues; a profile where no rule matched goes on to
 *   the next profile; finally "no profile matched" drops.
 *
 * A rule matches when every criterion does (protocol, IP version, nets, selector IP sets,
 * ports, named-port IP sets and `services` sets); the trace records, for each rule that did
 * not match, the first criterion that failed, so `explain` can say why, and for a rule that
 * matched through a `services` set, the set and the member the packet was found as. Which
 * rules exist for the packet's family, and with which CIDRs, is decided by
 * `ruleOmittedFromFamily` (proto/rule-ip-version.ts), the function the renderer uses: a rule
 * whose `notNets` are all of the other family is not in the family's chain, so it matches
 * nothing.
 *
 * A `services` destination (`dstIpPortSetIds`, rendered `--match-set <name> dst,dst`) holds
 * the packet when `<dst ip>,<proto>:<port>` is a member: an ICMP packet (no port) never is.
 * A `services` source is a `svcnoport:` selector-like set on the source address.
 *
 * Source ports are checked as rendered (numeric ranges OR named-port sets holding
 * `<source ip>,<proto>:<port>`; `notPorts` exclude both). A packet made with a source port is
 * decided exactly. A probe without one gets an ephemeral port from the kernel
 * ({@link EPHEMERAL_PORTS}, Linux's default `ip_local_port_range`): a source-port criterion
 * that holds for every port of that range, or for none, is decided as such; one that holds for
 * only some of them cannot be decided without the port, and the rule is taken as not matching
 * (the trace says so).
 * An `ICMP` probe is one echo request of the packet's family (ICMP type 8 code 0, ICMPv6 type
 * 128 code 0, what `ping` sends); it has no ports, so it matches no numeric or named port.
 */
import { cidrContains, parseCidr } from '../api/index.ts';
import { policyIdKey, ruleOmittedFromFamily, type PolicyId, type PortRange, type Rule, type RuleAction, type TierInfo } from '../proto/index.ts';
import type { NodeState } from './node-state.ts';

export type Direction = 'ingress' | 'egress';
/** What a scenario probe or `explain` names: a connection on a port. */
export type ProbeProtocol = 'TCP' | 'UDP' | 'SCTP';
/** A packet's protocol; `ICMP` is an echo request, ICMP or ICMPv6 by the packet's IP version. */
export type PacketProtocol = ProbeProtocol | 'ICMP';

/** An ICMP packet's type and code. */
export interface IcmpHeader {
  readonly type: number;
  readonly code: number;
}

/** Echo request (RFC 792 type 8, RFC 4443 type 128), code 0: what `ping` sends. */
const ECHO_REQUEST: Readonly<Record<4 | 6, IcmpHeader>> = { 4: { type: 8, code: 0 }, 6: { type: 128, code: 0 } };

/** The ports Linux picks a connection's source port from (`net.ipv4.ip_local_port_range` default). */
export const EPHEMERAL_PORTS: PortRange = { first: 32768, last: 60999 };

/** One probe packet (the first packet of a connection). */
export interface Packet {
  /** Source and destination as host networks (`10.0.0.1/32`), the form IP sets hold. */
  readonly srcNet: string;
  readonly dstNet: string;
  readonly protocol: PacketProtocol;
  readonly dstPort: number;
  readonly ipVersion: 4 | 6;
  /** `<dst ip>,<proto>:<port>`: the destination's key in a named-port IP set. */
  readonly dstIpPort: string;
  /** IP protocol number: 6, 17, 132, or 1 / 58 for ICMP by IP version. */
  readonly protocolNumber: number;
  /** Present for ICMP packets only. */
  readonly icmp?: IcmpHeader;
  /** The source ports the packet may have: one port, or {@link EPHEMERAL_PORTS}. Absent for ICMP. */
  readonly srcPorts?: PortRange;
  /** `<src ip>,<proto>:`: the source's key in a named-port IP set, without the port. */
  readonly srcIpProto: string;
}

/**
 * A probe packet; `dstPort` and `srcPort` are ignored for `ICMP` (an echo request has no
 * ports). Without `srcPort` the source port is the kernel's ephemeral pick.
 */
export function makePacket(srcNet: string, dstNet: string, protocol: PacketProtocol, dstPort: number, srcPort?: number): Packet {
  const dstIp = dstNet.split('/')[0] ?? dstNet;
  const srcIp = srcNet.split('/')[0] ?? srcNet;
  const ipVersion = dstIp.includes(':') ? 6 : 4;
  if (protocol === 'ICMP') {
    const name = ipVersion === 4 ? 'icmp' : 'icmpv6';
    const icmp = ECHO_REQUEST[ipVersion];
    // No named-port set holds an ICMP member (WorkloadEndpoint ports are TCP, UDP or SCTP).
    return { srcNet, dstNet, protocol, dstPort: 0, ipVersion, dstIpPort: `${dstIp},${name}:${icmp.type}/${icmp.code}`, protocolNumber: ipVersion === 4 ? 1 : 58, icmp, srcIpProto: `${srcIp},${name}:` };
  }
  const proto = protocol.toLowerCase();
  return {
    srcNet,
    dstNet,
    protocol,
    dstPort,
    ipVersion,
    dstIpPort: `${dstIp},${proto}:${dstPort}`,
    protocolNumber: PROBE_PROTOCOL_NUMBER[protocol],
    srcPorts: srcPort === undefined ? EPHEMERAL_PORTS : { first: srcPort, last: srcPort },
    srcIpProto: `${srcIp},${proto}:`,
  };
}

export interface RuleTrace {
  readonly index: number;
  readonly action: RuleAction;
  /** Undefined when the rule matched; else the first criterion that failed. */
  readonly mismatch?: string;
  /** When the rule matched through `services` sets: which member of which set, one per set. */
  readonly matchedBy?: readonly string[];
  /**
   * A Pass rule in a profile that did not match, but whose RETURN fired anyway: the pass mark
   * was already set (by a Pass in the last tier, or an earlier profile's Pass) — the rendered
   * rule is "match → set pass mark" then "pass mark set → RETURN", and no rule clears the mark
   * between the tiers and the profiles, in Felix as here.
   */
  readonly returnedOnPassMark?: true;
}

/** Felix's id prefixes of `services` sets (calc/ipset-data.ts): ports (destination) and no-ports (source). */
const SERVICE_PORTS_PREFIX = 'svc:';
const SERVICE_NOPORTS_PREFIX = 'svcnoport:';

export type PolicyOutcome = 'allow' | 'deny' | 'pass' | 'no-match' | 'missing';

export interface PolicyTrace {
  readonly policy: PolicyId;
  readonly rules: readonly RuleTrace[];
  readonly outcome: PolicyOutcome;
}

export interface TierTrace {
  readonly tier: string;
  readonly defaultAction: 'Deny' | 'Pass';
  readonly policies: readonly PolicyTrace[];
  /** `end-of-tier` when no policy decided and the defaultAction applied. */
  readonly outcome: 'allow' | 'deny' | 'pass' | 'end-of-tier';
}

export interface ProfileTrace {
  readonly profile: string;
  readonly rules: readonly RuleTrace[];
  readonly outcome: PolicyOutcome;
}

/** What decided a direction. */
export type Decision =
  | { readonly kind: 'rule'; readonly action: 'allow' | 'deny'; readonly tier: string; readonly policy: PolicyId; readonly ruleIndex: number }
  | { readonly kind: 'end-of-tier'; readonly action: 'deny'; readonly tier: string }
  | { readonly kind: 'profile'; readonly action: 'allow' | 'deny'; readonly profile: string; readonly ruleIndex: number }
  | { readonly kind: 'no-profile-matched'; readonly action: 'deny' }
  /** The peer of this side is an address outside the cluster: no endpoint of its own, no policy. */
  | { readonly kind: 'outside-cluster'; readonly action: 'allow' }
  /** A forward chain (`cali-thfw-`/`cali-fhfw-`) of a host endpoint with no forward tiers at all: "Allow forwarded traffic by default". */
  | { readonly kind: 'forward-default'; readonly action: 'allow' }
  /**
   * A chain that ends without a verdict (a preDNAT or untracked chain, or a forward chain whose
   * tiers have no policy for this direction or passed): the packet goes on to the next stage.
   */
  | { readonly kind: 'no-verdict'; readonly action: 'allow' }
  /** A host endpoint chain's failsafe jump accepted the packet (host-endpoints.ts `FAILSAFE_*`). */
  | { readonly kind: 'failsafe'; readonly action: 'allow'; readonly chain: 'cali-failsafe-in' | 'cali-failsafe-out'; readonly entry: string }
  /** No host endpoint matches the interface (and there is no `*` one): the dispatch chain returns, nothing polices it. */
  | { readonly kind: 'no-host-endpoint'; readonly action: 'allow' }
  /** `cali-OUTPUT` returns for `-o cali+`: traffic from a host to its own pods is never policed. */
  | { readonly kind: 'host-to-local-workload'; readonly action: 'allow' }
  /** The last rule of `cali-wl-to-host`, after the workload's egress policy allowed the packet. */
  | { readonly kind: 'endpoint-to-host-action'; readonly action: 'allow' | 'deny'; readonly setting: EndpointToHostAction }
  /**
   * On this node the request and its reply were not both tracked or both untracked (NOTRACK):
   * - `untracked: 'request'`: conntrack meets the reply as the first packet of an unknown
   *   connection (INVALID for TCP) and the next policy chain's `ctstate INVALID` rule drops it;
   * - `untracked: 'reply'`: conntrack saw the request but never its reply, so the client's next
   *   packet (its ACK) is INVALID, and the next policy chain's `ctstate INVALID` rule drops it.
   */
  | { readonly kind: 'untracked-mismatch'; readonly action: 'deny'; readonly untracked: 'request' | 'reply' };

/** Felix `DefaultEndpointToHostAction` (the last rule of `cali-wl-to-host`). */
export type EndpointToHostAction = 'DROP' | 'ACCEPT' | 'RETURN';

/**
 * Which of Felix's endpoint chain types is walked (rules/endpoints.go `endpointIptablesChain`):
 * - `normal` (a workload's chains, a host endpoint's filter `th`/`fh`): tiers with their
 *   end-of-tier DROP, then profiles, then "no profile matched" DROP;
 * - `forward` (`thfw`/`fhfw`, a host endpoint's forward tiers): tiers with their end-of-tier
 *   DROP, no profiles, no final DROP; no forward tiers at all is "allow by default";
 * - `pre-dnat` (mangle `fh`) and `untracked` (raw `th`/`fh`): tiers without end-of-tier DROP
 *   (their defaultAction is Pass anyway), no profiles, no final DROP.
 */
export type ChainKind = 'normal' | 'forward' | 'pre-dnat' | 'untracked';

/** What a chain walks: a workload endpoint, or one tier list of a host endpoint with its profiles. */
export interface PolicedEndpoint {
  readonly tiers: readonly TierInfo[];
  readonly profileIds: readonly string[];
}

export interface DirectionVerdict {
  readonly direction: Direction;
  readonly allowed: boolean;
  readonly decision: Decision;
  /** Present when tracing was asked for. */
  readonly tiers?: readonly TierTrace[];
  readonly profiles?: readonly ProfileTrace[];
}

const PROTOCOL_NUMBERS: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132, icmp: 1, icmpv6: 58, udplite: 136 };
const PROBE_PROTOCOL_NUMBER: Readonly<Record<ProbeProtocol, number>> = { TCP: 6, UDP: 17, SCTP: 132 };

function protocolNumber(p: string | number): number {
  if (typeof p === 'number') return p;
  const n = PROTOCOL_NUMBERS[p.toLowerCase()];
  return n ?? Number(p);
}

/** `parseCidr` memoises by text (api/cidr.ts), so no cache of its own here. */
function netContains(net: string, hostNet: string): boolean {
  const r = parseCidr(net);
  return r.ok && cidrContains(r.value, hostNet);
}

function inRanges(port: number, ranges: readonly PortRange[]): boolean {
  for (const r of ranges) if (port >= r.first && port <= r.last) return true;
  return false;
}

function fmtRanges(ranges: readonly PortRange[]): string {
  return ranges.map((r) => (r.first === r.last ? String(r.first) : `${r.first}:${r.last}`)).join(',');
}

const host = (net: string): string => net.split('/')[0] ?? net;

const protocolName = (pkt: Packet): string => (pkt.protocol !== 'ICMP' ? pkt.protocol : pkt.ipVersion === 4 ? 'ICMP' : 'ICMPv6');

/**
 * Whether an ICMP header is matched by a rule's `{type, code?}` (iptables `--icmp-type T[/C]`:
 * without a code any code of the type). A packet that is not ICMP never reaches this (the rule
 * then has protocol ICMP or ICMPv6, which the packet failed already).
 */
function icmpMatches(m: { readonly type?: number; readonly code?: number }, h: IcmpHeader | undefined): boolean {
  if (h === undefined) return false;
  if (m.type !== undefined && m.type !== h.type) return false;
  return m.code === undefined || m.code === h.code;
}

const fmtIcmp = (m: { readonly type?: number; readonly code?: number }): string => `type ${m.type ?? 'any'}${m.code === undefined ? '' : ` code ${m.code}`}`;

/**
 * Undefined when `rule` matches `pkt`; otherwise the first failed criterion, described
 * when `describe` is set (else a constant, to keep the matrix path allocation-free).
 */
export function ruleMismatch(rule: Rule, pkt: Packet, state: NodeState, describe: boolean): string | undefined {
  const d = (f: () => string): string => (describe ? f() : 'x');
  const proto = pkt.protocolNumber;
  if (rule.protocol !== undefined && protocolNumber(rule.protocol) !== proto) {
    return d(() => `protocol: rule wants ${String(rule.protocol).toUpperCase()}, packet is ${protocolName(pkt)}`);
  }
  if (rule.notProtocol !== undefined && protocolNumber(rule.notProtocol) === proto) {
    return d(() => `notProtocol: rule excludes ${protocolName(pkt)}`);
  }
  if (rule.ipVersion !== undefined || rule.srcNets.length + rule.notSrcNets.length + rule.dstNets.length + rule.notDstNets.length > 0) {
    const omitted = ruleOmittedFromFamily(rule, pkt.ipVersion);
    if (omitted !== undefined) return d(() => omitted);
  }
  if (rule.icmp !== undefined && !icmpMatches(rule.icmp, pkt.icmp)) {
    return d(() => `icmp: rule matches ICMP ${fmtIcmp(rule.icmp!)}, packet is ${pkt.icmp === undefined ? pkt.protocol : `ICMP ${fmtIcmp(pkt.icmp)}`}`);
  }
  if (rule.notIcmp !== undefined && icmpMatches(rule.notIcmp, pkt.icmp)) {
    return d(() => `notICMP: rule excludes ICMP ${fmtIcmp(rule.notIcmp!)}`);
  }

  if (rule.srcNets.length > 0 && !rule.srcNets.some((n) => netContains(n, pkt.srcNet))) {
    return d(() => `source nets: ${host(pkt.srcNet)} is not in ${rule.srcNets.join(', ')}`);
  }
  for (const n of rule.notSrcNets) if (netContains(n, pkt.srcNet)) return d(() => `source notNets: ${host(pkt.srcNet)} is in ${n}`);
  for (const id of rule.srcIpSetIds) {
    if (state.hasNet(id, pkt.srcNet) !== true) {
      return d(() => `${id.startsWith(SERVICE_NOPORTS_PREFIX) ? 'source service' : 'source selector'}: ${host(pkt.srcNet)} is not in IP set ${id}`);
    }
  }
  for (const id of rule.notSrcIpSetIds) {
    if (state.hasNet(id, pkt.srcNet) === true) return d(() => `source notSelector: ${host(pkt.srcNet)} is in IP set ${id}`);
  }
  if (rule.srcPorts.length + rule.srcNamedPortIpSetIds.length + rule.notSrcPorts.length + rule.notSrcNamedPortIpSetIds.length > 0) {
    const srcMismatch = sourcePortMismatch(rule, pkt, state, describe);
    if (srcMismatch !== undefined) return srcMismatch;
  }

  if (rule.dstNets.length > 0 && !rule.dstNets.some((n) => netContains(n, pkt.dstNet))) {
    return d(() => `destination nets: ${host(pkt.dstNet)} is not in ${rule.dstNets.join(', ')}`);
  }
  for (const n of rule.notDstNets) if (netContains(n, pkt.dstNet)) return d(() => `destination notNets: ${host(pkt.dstNet)} is in ${n}`);
  for (const id of rule.dstIpSetIds) {
    if (state.hasNet(id, pkt.dstNet) !== true) return d(() => `destination selector: ${host(pkt.dstNet)} is not in IP set ${id}`);
  }
  for (const id of rule.notDstIpSetIds) {
    if (state.hasNet(id, pkt.dstNet) === true) return d(() => `destination notSelector: ${host(pkt.dstNet)} is in IP set ${id}`);
  }
  if (rule.dstPorts.length > 0 || rule.dstNamedPortIpSetIds.length > 0) {
    const numeric = inRanges(pkt.dstPort, rule.dstPorts);
    const named = !numeric && rule.dstNamedPortIpSetIds.some((id) => state.hasIpPort(id, pkt.dstIpPort) === true);
    if (!numeric && !named) {
      return d(() => {
        const parts = [];
        if (rule.dstPorts.length > 0) parts.push(`not in ${fmtRanges(rule.dstPorts)}`);
        if (rule.dstNamedPortIpSetIds.length > 0) parts.push(`${pkt.dstIpPort} not in named-port set ${rule.dstNamedPortIpSetIds.join(', ')}`);
        return `destination ports: ${pkt.protocol}/${pkt.dstPort} ${parts.join(' and ')}`;
      });
    }
  }
  if (inRanges(pkt.dstPort, rule.notDstPorts)) return d(() => `destination notPorts: ${pkt.dstPort} is in ${fmtRanges(rule.notDstPorts)}`);
  for (const id of rule.notDstNamedPortIpSetIds) {
    if (state.hasIpPort(id, pkt.dstIpPort) === true) return d(() => `destination notPorts: ${pkt.dstIpPort} is in named-port set ${id}`);
  }
  for (const id of rule.dstIpPortSetIds) {
    if (state.hasIpPort(id, pkt.dstIpPort) !== true) return d(() => `destination service: ${pkt.dstIpPort} is not in IP set ${id}`);
  }
  return undefined;
}

type Coverage = 'all' | 'some' | 'none';

/** How much of `range` the port ranges cover. */
function coverage(range: PortRange, ranges: readonly PortRange[]): Coverage {
  let covered = 0;
  // Ranges may overlap: count each port of `range` once by walking the merged, clipped list.
  const clipped = ranges
    .map((r) => ({ first: Math.max(r.first, range.first), last: Math.min(r.last, range.last) }))
    .filter((r) => r.first <= r.last)
    .sort((a, b) => a.first - b.first);
  let next = range.first;
  for (const r of clipped) {
    const from = Math.max(r.first, next);
    if (r.last >= from) {
      covered += r.last - from + 1;
      next = r.last + 1;
    }
  }
  return covered === 0 ? 'none' : covered === range.last - range.first + 1 ? 'all' : 'some';
}

/** How much of the packet's possible source ports the named-port sets hold for its source. */
function namedCoverage(ids: readonly string[], pkt: Packet, range: PortRange, state: NodeState): Coverage {
  if (ids.length === 0) return 'none';
  if (range.first === range.last) return ids.some((id) => state.hasIpPort(id, `${pkt.srcIpProto}${range.first}`) === true) ? 'all' : 'none';
  const ports: PortRange[] = [];
  for (const id of ids) for (const p of state.portsOf(id, pkt.srcIpProto) ?? []) ports.push({ first: p, last: p });
  return coverage(range, ports);
}

const fmtPorts = (r: PortRange): string => (r.first === r.last ? String(r.first) : `${r.first}–${r.last} (ephemeral)`);

/**
 * The source-port criteria as rendered: `ports` (numeric OR named) must hold the source port,
 * `notPorts` (numeric and named) must not. With an ephemeral source port a criterion that holds
 * for only part of the range is undecidable and counts as a mismatch.
 */
function sourcePortMismatch(rule: Rule, pkt: Packet, state: NodeState, describe: boolean): string | undefined {
  const d = (f: () => string): string => (describe ? f() : 'x');
  const range = pkt.srcPorts;
  if (range === undefined) {
    // ICMP: no ports. Rendered port matches need TCP/UDP/SCTP, which the protocol check failed
    // already; a named source port on its own still cannot hold an ICMP member.
    if (rule.srcPorts.length + rule.srcNamedPortIpSetIds.length > 0) return d(() => `source ports: ${protocolName(pkt)} has no ports`);
    return undefined;
  }
  if (rule.srcPorts.length + rule.srcNamedPortIpSetIds.length > 0) {
    const numeric = coverage(range, rule.srcPorts);
    const named = numeric === 'all' ? 'all' : namedCoverage(rule.srcNamedPortIpSetIds, pkt, range, state);
    const both: Coverage = numeric === 'all' || named === 'all' ? 'all' : numeric === 'none' && named === 'none' ? 'none' : 'some';
    if (both === 'none') return d(() => `source ports: ${fmtPorts(range)} not in ${[fmtRanges(rule.srcPorts), ...rule.srcNamedPortIpSetIds.map((id) => `named-port set ${id}`)].filter((x) => x !== '').join(' or ')}`);
    if (both === 'some') return d(() => `source ports: only some ephemeral source ports (${fmtPorts(range)}) match; the verdict depends on the port the kernel picks`);
  }
  if (rule.notSrcPorts.length + rule.notSrcNamedPortIpSetIds.length > 0) {
    const numeric = coverage(range, rule.notSrcPorts);
    const named = namedCoverage(rule.notSrcNamedPortIpSetIds, pkt, range, state);
    if (numeric === 'all' || named === 'all') return d(() => `source notPorts: ${fmtPorts(range)} ${numeric === 'all' ? `in ${fmtRanges(rule.notSrcPorts)}` : `in named-port set ${rule.notSrcNamedPortIpSetIds.join(', ')}`}`);
    if (numeric === 'some' || named === 'some') return d(() => `source notPorts: only some ephemeral source ports (${fmtPorts(range)}) are excluded; the verdict depends on the port the kernel picks`);
  }
  return undefined;
}

/**
 * For a rule that matched `pkt`: the `services` sets it matched through, each with the member
 * the packet was found as (`destination 10.0.0.1,tcp:80 is in IP set svc:…`); undefined when
 * it has none.
 */
export function serviceMatches(rule: Rule, pkt: Packet): string[] | undefined {
  let out: string[] | undefined;
  for (const id of rule.srcIpSetIds) if (id.startsWith(SERVICE_NOPORTS_PREFIX)) (out ??= []).push(`source ${pkt.srcNet} is in IP set ${id}`);
  for (const id of rule.dstIpPortSetIds) if (id.startsWith(SERVICE_PORTS_PREFIX)) (out ??= []).push(`destination ${pkt.dstIpPort} is in IP set ${id}`);
  return out;
}

/** The trace entry of rule `i`. */
function traceOf(i: number, rule: Rule, mismatch: string | undefined, pkt: Packet): RuleTrace {
  if (mismatch !== undefined) return { index: i, action: rule.action, mismatch };
  const by = serviceMatches(rule, pkt);
  return by === undefined ? { index: i, action: rule.action } : { index: i, action: rule.action, matchedBy: by };
}

/**
 * Walks a rule list; returns the index of the first deciding rule (allow/deny/next-tier) or -1.
 * With `passMarkSet`, the first Pass rule decides whether it matches or not (its RETURN reads
 * the mark, which is already set; see `RuleTrace.returnedOnPassMark`).
 */
function walkRules(rules: readonly Rule[], pkt: Packet, state: NodeState, trace: RuleTrace[] | undefined, passMarkSet = false): number {
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as Rule;
    const mismatch = ruleMismatch(rule, pkt, state, trace !== undefined);
    const stalePass = mismatch !== undefined && passMarkSet && rule.action === 'next-tier';
    if (trace !== undefined) trace.push(stalePass ? { ...traceOf(i, rule, mismatch, pkt), returnedOnPassMark: true } : traceOf(i, rule, mismatch, pkt));
    if ((mismatch === undefined && rule.action !== 'log') || stalePass) return i;
  }
  return -1;
}

function outcomeOf(action: RuleAction): 'allow' | 'deny' | 'pass' {
  return action === 'allow' ? 'allow' : action === 'deny' ? 'deny' : 'pass';
}

/**
 * Decides `direction` for `endpoint` (programmed on `state`'s node) on a chain of `kind`
 * (a workload's chains are `normal`). `trace` adds the per-tier, per-policy, per-rule walk to
 * the result.
 */
export function evaluateDirection(
  state: NodeState,
  endpoint: PolicedEndpoint,
  direction: Direction,
  pkt: Packet,
  trace = false,
  kind: ChainKind = 'normal',
): DirectionVerdict {
  const tierTraces: TierTrace[] | undefined = trace ? [] : undefined;
  const profileTraces: ProfileTrace[] | undefined = trace ? [] : undefined;
  const done = (decision: Decision): DirectionVerdict => ({
    direction,
    allowed: decision.action === 'allow',
    decision,
    ...(tierTraces !== undefined ? { tiers: tierTraces, profiles: profileTraces ?? [] } : {}),
  });

  // The pass mark as the profiles see it: each tier with policies clears it at its start, so it
  // is set only when a Pass rule decided the last such tier.
  let passMark = false;
  for (const tier of endpoint.tiers) {
    const ids = direction === 'ingress' ? tier.ingressPolicies : tier.egressPolicies;
    if (ids.length === 0) continue;
    const policyTraces: PolicyTrace[] | undefined = trace ? [] : undefined;
    let tierOutcome: TierTrace['outcome'] | undefined;
    let decision: Decision | undefined;
    for (const id of ids) {
      const active = state.policies.get(policyIdKey(id));
      if (active === undefined) {
        policyTraces?.push({ policy: id, rules: [], outcome: 'missing' });
        continue;
      }
      const rules = direction === 'ingress' ? active.policy.inboundRules : active.policy.outboundRules;
      const ruleTraces: RuleTrace[] | undefined = trace ? [] : undefined;
      const i = walkRules(rules, pkt, state, ruleTraces);
      if (i < 0) {
        policyTraces?.push({ policy: id, rules: ruleTraces ?? [], outcome: 'no-match' });
        continue;
      }
      const outcome = outcomeOf((rules[i] as Rule).action);
      policyTraces?.push({ policy: id, rules: ruleTraces ?? [], outcome });
      tierOutcome = outcome;
      if (outcome !== 'pass') decision = { kind: 'rule', action: outcome, tier: tier.name, policy: id, ruleIndex: i };
      break;
    }
    if (tierOutcome === undefined) {
      tierOutcome = 'end-of-tier';
      // Only the normal and forward chains render the end-of-tier DROP.
      if (tier.defaultAction === 'Deny' && (kind === 'normal' || kind === 'forward')) decision = { kind: 'end-of-tier', action: 'deny', tier: tier.name };
    }
    tierTraces?.push({ tier: tier.name, defaultAction: tier.defaultAction, policies: policyTraces ?? [], outcome: tierOutcome });
    if (decision !== undefined) return done(decision);
    passMark = tierOutcome === 'pass';
  }

  if (kind === 'forward' && endpoint.tiers.length === 0) return done({ kind: 'forward-default', action: 'allow' });
  if (kind !== 'normal') return done({ kind: 'no-verdict', action: 'allow' });
  for (const name of endpoint.profileIds) {
    const profile = state.profiles.get(name);
    if (profile === undefined) {
      profileTraces?.push({ profile: name, rules: [], outcome: 'missing' });
      continue;
    }
    const rules = direction === 'ingress' ? profile.inboundRules : profile.outboundRules;
    const ruleTraces: RuleTrace[] | undefined = trace ? [] : undefined;
    // The profile chain RETURNs on the first allow or pass rule that matches (a deny drops);
    // the endpoint chain returns only on the accept mark, so a Pass goes on to the next profile,
    // with the pass mark set.
    const i = walkRules(rules, pkt, state, ruleTraces, passMark);
    if (i < 0) {
      profileTraces?.push({ profile: name, rules: ruleTraces ?? [], outcome: 'no-match' });
      continue;
    }
    const outcome = outcomeOf((rules[i] as Rule).action);
    profileTraces?.push({ profile: name, rules: ruleTraces ?? [], outcome });
    if (outcome === 'pass') {
      passMark = true;
      continue;
    }
    return done({ kind: 'profile', action: outcome, profile: name, ruleIndex: i });
  }
  return done({ kind: 'no-profile-matched', action: 'deny' });
}
