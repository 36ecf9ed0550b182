/**
 * Rule protocols, with Calico's `numorstring.Protocol` semantics.
 *
 * A protocol is one of the names `TCP UDP ICMP ICMPv6 SCTP UDPLite` (case-sensitive in the
 * v3 validator's `protocolRegex`) or an IP protocol number 1–255, written as a number or a
 * string of digits. Every name stands for a number, so code that compares protocols uses
 * `number` (`protocol: 6` and `protocol: TCP` are the same match).
 */
import { failed, parsed, show } from './parse-result.ts';
import type { ParseResult } from './parse-result.ts';

export const PROTOCOL_NAMES = ['TCP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 'UDPLite'] as const;
export type ProtocolName = (typeof PROTOCOL_NAMES)[number];

/** IANA protocol numbers of the named protocols. */
export const PROTOCOL_NUMBERS: Readonly<Record<ProtocolName, number>> = {
  TCP: 6,
  UDP: 17,
  ICMP: 1,
  ICMPv6: 58,
  SCTP: 132,
  UDPLite: 136,
};

/** A parsed protocol: its number, and its name when it was written as one. */
export interface Protocol {
  readonly number: number;
  readonly name?: ProtocolName;
}

/**
 * The result for each name, shared and frozen: every endpoint port and most rules name their
 * protocol, and a sync parsed (and allocated) one per port.
 */
const NAMED: ReadonlyMap<string, ParseResult<Protocol>> = new Map(
  PROTOCOL_NAMES.map((name) => [name, Object.freeze(parsed(Object.freeze({ number: PROTOCOL_NUMBERS[name], name })))]),
);

const validForms = `use ${PROTOCOL_NAMES.join(', ')} or a number 1-255`;

/** Parses a protocol as written in a rule (`protocol`, `notProtocol`) or an endpoint port. */
export function parseProtocol(value: unknown): ParseResult<Protocol> {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 1 || value > 255) {
      return failed(`protocol ${value} is out of range (1-255)`);
    }
    return parsed({ number: value });
  }
  if (typeof value !== 'string') return failed(`${show(value)} is not a protocol (${validForms})`);
  const named = NAMED.get(value);
  if (named !== undefined) return named;
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < 1 || n > 255) return failed(`protocol ${value} is out of range (1-255)`);
    return parsed({ number: n });
  }
  const folded = PROTOCOL_NAMES.find((n) => n.toLowerCase() === value.toLowerCase());
  if (folded !== undefined) {
    return failed(`protocol ${show(value)} is not valid: names are case-sensitive (use "${folded}")`);
  }
  return failed(`${show(value)} is not a protocol (${validForms})`);
}

/** The YAML form: the name if it was given as one, else the number. */
export function formatProtocol(protocol: Protocol): string | number {
  return protocol.name ?? protocol.number;
}

/** TCP (6), UDP (17) and SCTP (132) have ports (`Protocol.SupportsPorts`). */
export function supportsPorts(protocol: Protocol): boolean {
  return protocol.number === 6 || protocol.number === 17 || protocol.number === 132;
}

export function isICMPv4(protocol: Protocol): boolean {
  return protocol.number === PROTOCOL_NUMBERS.ICMP;
}

export function isICMPv6(protocol: Protocol): boolean {
  return protocol.number === PROTOCOL_NUMBERS.ICMPv6;
}
