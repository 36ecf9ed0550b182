/**
 * Builds a rule's {@link Match} (Felix `generictables/match_builder.go`), plus the port-list
 * split into multiport-sized chunks (Felix `SplitPortList`).
 *
 * Every value is validated as it is added — a port, a set name, an ICMP type — so a bad value
 * fails the render (`RuleRenderError`, and the policy fails closed) rather than the backend's
 * write, and nothing from a label, name or message can break out of its token in a backend's
 * input.
 */
import { parseCidr as parseIpNetwork } from '../api/cidr.ts';
import type { PortRange } from '../proto/index.ts';
import type { ConntrackState, Match, MatchCriterion, Side } from './match.ts';

/** Felix: a multiport match holds at most 15 slots; a range takes 2. */
export const MULTIPORT_MAX_SLOTS = 15;

export class RuleRenderError extends Error {
  override readonly name = 'RuleRenderError';
}

/** Splits `ports` into chunks that each fit one `ports` criterion. */
export function splitPortList(ports: readonly PortRange[]): PortRange[][] {
  const chunks: PortRange[][] = [];
  let current: PortRange[] = [];
  let slots = 0;
  for (const p of ports) {
    const cost = p.first === p.last ? 1 : 2;
    if (slots + cost > MULTIPORT_MAX_SLOTS) {
      chunks.push(current);
      current = [];
      slots = 0;
    }
    current.push(p);
    slots += cost;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

const isPort = (v: number): boolean => Number.isInteger(v) && v >= 0 && v <= 65535;

function checkPort(p: PortRange): void {
  if (!isPort(p.first)) throw new RuleRenderError(`port ${p.first} is not in 0..65535`);
  if (!isPort(p.last)) throw new RuleRenderError(`port ${p.last} is not in 0..65535`);
  if (p.first > p.last) throw new RuleRenderError(`port range ${p.first}:${p.last} is reversed`);
}

const SET_NAME = /^[A-Za-z0-9:_.-]{1,31}$/;
/** Linux `IFNAMSIZ` 16 incl. NUL, with an optional trailing `+` wildcard. */
const IFACE_PATTERN = /^[A-Za-z0-9_.-]{1,15}\+?$/;

/**
 * The network `addr/len` of a CIDR (or bare address, as a full-length prefix) as Go reads
 * it (api/cidr.ts, the codebase's one parser), or an error naming it. Host bits are cleared,
 * as iptables itself would clear them.
 */
export function parseCidr(cidr: string): { readonly text: string; readonly family: 4 | 6 } {
  const r = parseIpNetwork(cidr);
  if (!r.ok) throw new RuleRenderError(`'${cidr}' is not a CIDR: ${r.message}`);
  return { text: r.value.network, family: r.value.version };
}

const PROTO_NAMES = new Set(['tcp', 'udp', 'icmp', 'icmpv6', 'sctp', 'udplite', 'ipip', 'esp', 'ah', 'gre']);

/** The protocol's IANA keyword (`ipv6-icmp` for ICMPv6), or its number 0–255 as a string. */
export function protocolToken(p: string | number, ipVersion: 4 | 6): string {
  if (typeof p === 'number') {
    if (!Number.isInteger(p) || p < 0 || p > 255) throw new RuleRenderError(`protocol ${p} is not in 0..255`);
    return String(p);
  }
  const lower = p.toLowerCase();
  if (/^\d+$/.test(lower)) return protocolToken(Number(lower), ipVersion);
  if (!PROTO_NAMES.has(lower)) throw new RuleRenderError(`protocol '${p}' is not supported`);
  if (lower === 'icmpv6') return 'ipv6-icmp';
  if (lower === 'ipip') return '4';
  return lower;
}

/** Whether a protocol exists in the given IP family (ICMP is v4-only, ICMPv6 v6-only). */
export function protocolInFamily(p: string | number, ipVersion: 4 | 6): boolean {
  const lower = typeof p === 'number' ? String(p) : p.toLowerCase();
  if (lower === 'icmp' || lower === '1') return ipVersion === 4;
  if (lower === 'icmpv6' || lower === '58') return ipVersion === 6;
  return true;
}

/**
 * Criteria that recur across rules — a protocol, a single port, an IP set — are shared: a
 * programmed ruleset is held for as long as it is programmed, and each object it holds costs
 * memory and garbage-collector time (a 46k-rule program held ~5 MB more without sharing).
 * Criteria are immutable, so sharing changes nothing else. Looked up without building a key
 * (rendering runs per rule); bounded: a table past `MAX_SHARED` entries starts afresh.
 */
const MAX_SHARED = 4096;
class SharedCriteria<K> {
  private readonly byKey = new Map<K, MatchCriterion>();
  get(key: K): MatchCriterion | undefined {
    return this.byKey.get(key);
  }
  add(key: K, c: MatchCriterion): MatchCriterion {
    if (this.byKey.size >= MAX_SHARED) this.byKey.clear();
    this.byKey.set(key, Object.freeze(c));
    return c;
  }
}
/** Index: negate. */
const PROTOCOLS = [new SharedCriteria<string>(), new SharedCriteria<string>()] as const;
/** Single ports; index: side (src 0, dst 1) × 2 + negate. */
const SINGLE_PORTS = [new SharedCriteria<number>(), new SharedCriteria<number>(), new SharedCriteria<number>(), new SharedCriteria<number>()] as const;
/** Index: side × 4 + namedPort × 2 + negate. */
const IP_SETS = Array.from({ length: 8 }, () => new SharedCriteria<string>());
const RPF_FAILED: MatchCriterion = Object.freeze({ kind: 'rpf-failed' });
const bit = (b: boolean): number => (b ? 1 : 0);
const sideBit = (side: Side): number => (side === 'src' ? 0 : 1);

/**
 * Accumulates criteria in order; `build()` returns them. One builder per match: the methods
 * return the builder so a rule reads as a sentence (`new MatchBuilder().protocol('tcp').ports('dst', chunk)`).
 */
export class MatchBuilder {
  private readonly criteria: MatchCriterion[] = [];

  /** Whether nothing was added. */
  get isEmpty(): boolean {
    return this.criteria.length === 0;
  }

  /**
   * Forgets what was added, keeping the storage: a renderer reuses one builder for the many
   * rules of a chain instead of allocating one (and its array) per rule.
   */
  reset(): this {
    this.criteria.length = 0;
    return this;
  }

  /** `token` as `protocolToken` returns it. */
  protocol(token: string, negate = false): this {
    const shared = PROTOCOLS[bit(negate)]!;
    return this.add(shared.get(token) ?? shared.add(token, { kind: 'protocol', protocol: token, negate }));
  }

  inInterface(name: string): this {
    return this.iface('in', name);
  }

  outInterface(name: string): this {
    return this.iface('out', name);
  }

  /** `cidr` as `parseCidr(...).text` returns it. */
  net(side: Side, cidr: string, negate = false): this {
    return this.add({ kind: 'net', side, cidr, negate });
  }

  /** One chunk of `splitPortList`. */
  ports(side: Side, chunk: readonly PortRange[], negate = false): this {
    for (const p of chunk) checkPort(p);
    const p = chunk.length === 1 ? chunk[0]! : undefined;
    if (p !== undefined && p.first === p.last) {
      const shared = SINGLE_PORTS[sideBit(side) * 2 + bit(negate)]!;
      return this.add(shared.get(p.first) ?? shared.add(p.first, { kind: 'ports', side, ports: [p], negate }));
    }
    // A copy of exact length: a chunk built by push() carries spare capacity.
    return this.add({ kind: 'ports', side, ports: chunk.slice(), negate });
  }

  /** Address in set `name` (selector set), or address and port (`namedPort`). */
  ipSet(side: Side, name: string, namedPort: boolean, negate = false): this {
    if (!SET_NAME.test(name)) throw new RuleRenderError(`IP set name '${name}' is not a valid set name`);
    const shared = IP_SETS[sideBit(side) * 4 + bit(namedPort) * 2 + bit(negate)]!;
    return this.add(shared.get(name) ?? shared.add(name, { kind: 'ip-set', side, name, namedPort, negate }));
  }

  icmp(icmp: { readonly type: number; readonly code?: number }, ipVersion: 4 | 6, negate = false): this {
    for (const v of [icmp.type, icmp.code ?? 0]) {
      if (!Number.isInteger(v) || v < 0 || v > 255) throw new RuleRenderError(`ICMP type/code ${v} is not in 0..255`);
    }
    return this.add(icmp.code === undefined ? { kind: 'icmp', ipVersion, type: icmp.type, negate } : { kind: 'icmp', ipVersion, type: icmp.type, code: icmp.code, negate });
  }

  /** All of `bits` set in the packet mark. */
  markSet(bits: number): this {
    return this.add({ kind: 'mark', bits, set: true });
  }

  /** All of `bits` clear in the packet mark. */
  markClear(bits: number): this {
    return this.add({ kind: 'mark', bits, set: false });
  }

  conntrackState(...states: ConntrackState[]): this {
    return this.add({ kind: 'conntrack', states });
  }

  /** In none of `states`. */
  notConntrackState(...states: ConntrackState[]): this {
    return this.add({ kind: 'conntrack', states, negate: true });
  }

  /** Protocol `protocol` to destination port `port`. */
  protocolDestPort(protocol: 'tcp' | 'udp', port: number): this {
    checkPort({ first: port, last: port });
    return this.protocol(protocol).add({ kind: 'dest-port', protocol, port });
  }

  rateLimit(rate: string, burst: number, bucket: string): this {
    return this.add({ kind: 'rate-limit', rate, burst, bucket });
  }

  /** The strict reverse-path check fails (anti-spoofing; see `MatchCriterion`). */
  rpfCheckFailed(): this {
    return this.add(RPF_FAILED);
  }

  /**
   * At most `rate` packets a second, `burst` at once. The kernel's `limit` match scales both
   * by `XT_LIMIT_SCALE` (10000), so Felix accepts rate 0..10000 and burst 1..10000.
   */
  packetRate(rate: number, burst: number): this {
    if (!Number.isInteger(rate) || rate < 0 || rate > MAX_LIMIT) throw new RuleRenderError(`packet rate ${rate} is not in 0..${MAX_LIMIT}`);
    if (!Number.isInteger(burst) || burst < 1 || burst > MAX_LIMIT) throw new RuleRenderError(`packet burst ${burst} is not in 1..${MAX_LIMIT}`);
    return this.add({ kind: 'packet-rate', rate, burst });
  }

  /** The first segment of a TCP connection (SYN without FIN, RST or ACK); matches TCP too. */
  tcpSyn(): this {
    return this.protocol('tcp').add(TCP_SYN);
  }

  /** More than `above` connections through this rule, from all addresses together (a `uint32`). */
  connlimitAbove(above: number): this {
    if (!Number.isInteger(above) || above < 0 || above > MAX_UINT32) throw new RuleRenderError(`connection limit ${above} is not in 0..${MAX_UINT32}`);
    return this.add({ kind: 'connlimit', above });
  }

  /** Appends every criterion of `match`. */
  and(match: Match): this {
    for (const c of match) this.criteria.push(c);
    return this;
  }

  /**
   * The criteria, in an array of exact length (the builder's own grew by push and has spare
   * capacity: ~150 bytes per rule that a programmed ruleset would hold).
   */
  build(): Match {
    return this.criteria.slice();
  }

  private iface(direction: 'in' | 'out', name: string): this {
    if (!IFACE_PATTERN.test(name)) throw new RuleRenderError(`interface '${name}' is not a valid interface name or prefix`);
    return this.add({ kind: 'interface', direction, name });
  }

  private add(c: MatchCriterion): this {
    this.criteria.push(c);
    return this;
  }
}

/** Kernel `XT_LIMIT_SCALE`: the largest rate and burst the `limit` match takes (Felix `LimitPacketRateAction`). */
const MAX_LIMIT = 10000;
/** `xt_connlimit`'s limit is a `u32` (Felix `LimitNumConnectionsAction`). */
const MAX_UINT32 = 0xffffffff;
const TCP_SYN: MatchCriterion = Object.freeze({ kind: 'tcp-syn' });

/** A fresh builder. */
export function match(): MatchBuilder {
  return new MatchBuilder();
}
