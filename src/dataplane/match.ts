/**
 * What a rule matches, as data (Felix `generictables.MatchCriteria`): a list of criteria a
 * packet must all meet. Built through `MatchBuilder` (match-builder.ts), which validates every
 * value as it is added, so a backend renders criteria without checking them again and nothing
 * from a label, name or message can break out of its token in a backend's input.
 *
 * Order is kept: a backend writes the criteria in the order they were added, so the same rule
 * always renders the same text (and hash).
 */
import type { PortRange } from '../proto/index.ts';

/** Source or destination side of a packet. */
export type Side = 'src' | 'dst';

/** Connection-tracking states a rule can match. */
export type ConntrackState = 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'DNAT';

export type MatchCriterion =
  /** IP protocol: an IANA keyword (`tcp`, `ipv6-icmp`) or a number 0–255 as a string (`protocolToken`). */
  | { readonly kind: 'protocol'; readonly protocol: string; readonly negate: boolean }
  /** Arriving on / leaving by interface `name`; a trailing `+` matches every name with that prefix. */
  | { readonly kind: 'interface'; readonly direction: 'in' | 'out'; readonly name: string }
  /** Source or destination address in `cidr` (canonical `network/len`). */
  | { readonly kind: 'net'; readonly side: Side; readonly cidr: string; readonly negate: boolean }
  /** Source or destination port in any of `ports` (at most `MULTIPORT_MAX_SLOTS` slots). */
  | { readonly kind: 'ports'; readonly side: Side; readonly ports: readonly PortRange[]; readonly negate: boolean }
  /** Address (or, `namedPort`, address and port) in IP set `name`. */
  | { readonly kind: 'ip-set'; readonly side: Side; readonly name: string; readonly namedPort: boolean; readonly negate: boolean }
  /** ICMP (v4) or ICMPv6 type, and code when given. */
  | { readonly kind: 'icmp'; readonly ipVersion: 4 | 6; readonly type: number; readonly code?: number; readonly negate: boolean }
  /** Every bit of `bits` set (`set`) or clear in the packet mark. */
  | { readonly kind: 'mark'; readonly bits: number; readonly set: boolean }
  /** In any of `states`; with `negate`, in none of them (`! --ctstate DNAT`: not destination-NATed). */
  | { readonly kind: 'conntrack'; readonly states: readonly ConntrackState[]; readonly negate?: boolean }
  /** One destination port of `protocol` (the protocol must be matched too). */
  | { readonly kind: 'dest-port'; readonly protocol: 'tcp' | 'udp'; readonly port: number }
  /**
   * At most `rate` (`N/second|minute|hour|day`) packets, `burst` at once, counted in the
   * shared bucket `bucket`.
   */
  | { readonly kind: 'rate-limit'; readonly rate: string; readonly burst: number; readonly bucket: string }
  /**
   * The strict reverse-path check fails: the route back to the source address, looked up with
   * the packet's mark, does not leave by the interface the packet came in on (iptables
   * `-m rpfilter --invert --validmark`; Felix `RPFCheckFailed`).
   */
  | { readonly kind: 'rpf-failed' }
  /**
   * At most `rate` packets a second, `burst` at once, in a bucket of this rule's own (the
   * `limit` match: Felix's packet-rate QoS control).
   */
  | { readonly kind: 'packet-rate'; readonly rate: number; readonly burst: number }
  /** A TCP segment with SYN set and FIN, RST and ACK clear: the first of a connection (the protocol must be matched too). */
  | { readonly kind: 'tcp-syn' }
  /**
   * More than `above` connections tracked by this rule, counted together for every address
   * (`connlimit` with mask 0: Felix's max-connections QoS control).
   */
  | { readonly kind: 'connlimit'; readonly above: number };

/** Criteria, all of which a packet meets; in the order a backend writes them. */
export type Match = readonly MatchCriterion[];

/** Every packet. */
export const ANY: Match = Object.freeze([]);
