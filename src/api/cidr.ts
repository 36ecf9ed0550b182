/**
 * IPv4/IPv6 addresses and CIDRs, parsed without dependencies.
 *
 * Calico accepts a plain address wherever it accepts a CIDR and treats it as a full-length
 * prefix (`cnet.ParseCIDROrIP`). Two levels of strictness exist upstream:
 * - rule `nets`/`notNets`, endpoint `ipNetworks` (validator tag `net`): the CIDR must be
 *   strictly masked — `10.1.2.3/16` is rejected;
 * - `allowSpoofedSourcePrefixes` (`cidr`) and converted Kubernetes ipBlocks: host bits are
 *   allowed and cleared, so `10.1.2.3/16` becomes `10.1.0.0/16`.
 * `parseCidr` reports both the network and whether host bits were set; callers choose.
 *
 * Output uses Go's `net.IPNet.String()` forms: dotted quad for IPv4, RFC 5952 for IPv6
 * (lower-case, leading zeros dropped, the longest run of ≥ 2 zero groups compressed).
 * Zone suffixes (`fe80::1%eth0`) are not addresses here, as in Go's `ParseCIDR`.
 */
import { isIP } from 'node:net';
import { failed, parsed, show } from './parse-result.ts';
import type { ParseResult } from './parse-result.ts';

export type IPVersion = 4 | 6;

export interface ParsedIP {
  readonly version: IPVersion;
  /** 4 or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

export interface ParsedCidr {
  readonly version: IPVersion;
  readonly prefixLength: number;
  /** The address as written (canonical form), host bits included. */
  readonly address: string;
  /** The network: address with host bits cleared, e.g. `10.1.0.0/16`. */
  readonly network: string;
  /** True when the written address had bits set beyond the prefix. */
  readonly hasHostBits: boolean;
  /** True when no `/len` was written (a single address). */
  readonly isAddress: boolean;
}

function parseV4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

function parseV6Bytes(text: string): Uint8Array {
  let head = text;
  let tailV4: Uint8Array | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tailV4 = parseV4Bytes(text.slice(lastColon + 1));
    head = text.slice(0, lastColon + 1);
    // "::1.2.3.4" leaves "::"; "a:b::1.2.3.4" leaves "a:b::"; "a::b:1.2.3.4" leaves "a::b:".
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsWanted = tailV4 === undefined ? 8 : 6;
  const toGroups = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  let groups: number[];
  const gap = head.indexOf('::');
  if (gap >= 0) {
    const left = toGroups(head.slice(0, gap));
    const right = toGroups(head.slice(gap + 2));
    groups = [...left, ...new Array<number>(groupsWanted - left.length - right.length).fill(0), ...right];
  } else {
    groups = toGroups(head);
  }
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  if (tailV4 !== undefined) bytes.set(tailV4, 12);
  return bytes;
}

/** Parses a plain IPv4 or IPv6 address. */
export function parseIP(text: unknown): ParseResult<ParsedIP> {
  if (typeof text !== 'string') return failed(`${show(text)} is not an IP address`);
  if (text.includes('%')) return failed(`${show(text)} is not an IP address (zones are not allowed)`);
  const version = isIP(text);
  if (version === 4) return parsed({ version, bytes: parseV4Bytes(text) });
  if (version === 6) return parsed({ version, bytes: parseV6Bytes(text) });
  return failed(`${show(text)} is not an IP address`);
}

function isV4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/** Formats 4 or 16 address bytes in Go's canonical text form. */
export function formatIP(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.');
  if (isV4Mapped(bytes)) return `::ffff:${Array.from(bytes.subarray(12)).join('.')}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  // Longest run of zero groups (length ≥ 2, first on ties) is compressed to "::".
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

function maskBytes(bytes: Uint8Array, prefixLength: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefixLength - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/** Parses `addr/len` or a plain address (taken as `/32` or `/128`). */
export function parseCidr(text: unknown): ParseResult<ParsedCidr> {
  if (typeof text !== 'string') return failed(`${show(text)} is not a CIDR or IP address`);
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const ip = parseIP(addressText);
  if (!ip.ok) return failed(`${show(text)} is not a CIDR or IP address`);
  const { version, bytes } = ip.value;
  const bits = version === 4 ? 32 : 128;
  let prefixLength = bits;
  if (slash >= 0) {
    const lenText = text.slice(slash + 1);
    // Go's ParseCIDR: decimal digits, no sign, no leading zeros.
    if (!/^(?:0|[1-9]\d{0,2})$/.test(lenText) || Number(lenText) > bits) {
      return failed(`${show(text)} has an invalid prefix length (IPv${version} allows 0-${bits})`);
    }
    prefixLength = Number(lenText);
  }
  const network = maskBytes(bytes, prefixLength);
  const hasHostBits = network.some((b, i) => b !== bytes[i]);
  return parsed({
    version,
    prefixLength,
    address: formatIP(bytes),
    network: `${formatIP(network)}/${prefixLength}`,
    hasHostBits,
    isAddress: slash < 0,
  });
}

/** True when the address (or every address of a CIDR) `inner` lies inside `outer`. */
export function cidrContains(outer: ParsedCidr, inner: string): boolean {
  const parsedInner = parseCidr(inner);
  if (!parsedInner.ok || parsedInner.value.version !== outer.version) return false;
  if (parsedInner.value.prefixLength < outer.prefixLength) return false;
  const masked = parseCidr(`${parsedInner.value.address}/${outer.prefixLength}`);
  return masked.ok && masked.value.network === outer.network;
}

/** Thrown by `normaliseCidr` for text that is neither a CIDR nor an address. */
export class CidrParseError extends RangeError {
  constructor(
    message: string,
    readonly input: unknown,
  ) {
    super(message);
    this.name = 'CidrParseError';
  }
}

/**
 * The canonical network for a CIDR or address, host bits cleared the way Calico's
 * Kubernetes conversion does: `10.1.2.3/16` → `10.1.0.0/16`, `10.0.0.1` → `10.0.0.1/32`,
 * `2001:DB8::1/32` → `2001:db8::/32`. Throws `CidrParseError` on anything else.
 */
export function normaliseCidr(text: string): string {
  const result = parseCidr(text);
  if (!result.ok) throw new CidrParseError(result.message, text);
  return result.value.network;
}
