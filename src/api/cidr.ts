/**
 * IPv4/IPv6 addresses and CIDRs: the one parser in the codebase, reading text exactly as
 * Go's `net.ParseIP` / `net.ParseCIDR` do at the Go version Calico v3.30 is built with
 * (1.24.6, `metadata.mk` `GO_BUILD_VER`; both parse through `net/netip.ParseAddr`), and as
 * Calico then turns the result into text (`net.IPNet.String()`, `cnet.ParseCIDROrIP`).
 *
 * What Go accepts and how it reads it:
 * - IPv4: exactly four decimal fields 0-255, **no leading zeros** (`010.0.0.1` is rejected;
 *   Go ≤ 1.16 read it as decimal, and Kubernetes' legacy `ParseCIDRSloppy` still strips the
 *   zeros and re-parses, so the apiserver accepts it with a warning — Calico does not);
 * - IPv6: RFC 4291 text — 1-4 hex digits per group, one `::`, which must stand for at least
 *   one zero group, an embedded dotted IPv4 (no leading zeros) only as the last 32 bits;
 *   zones (`%eth0`) are never an address here;
 * - prefix length: decimal digits with **any number of leading zeros** (`/08` is 8: Go's
 *   `dtoi`), 0-32 for an IPv4 address, 0-128 for any IPv6 address;
 * - an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) **is an IPv4 address** once parsed
 *   (`IP.To4()`); as a CIDR its 128-bit mask is applied first and, when the network is still
 *   mapped (prefix ≥ 96), it prints and matches as IPv4 with prefix − 96:
 *   `::ffff:10.0.0.0/104` is `10.0.0.0/8`, `::ffff:10.0.0.0/64` is `::/64`.
 *
 * Calico accepts a plain address wherever it accepts a CIDR and takes it as a full-length
 * prefix (`cnet.ParseCIDROrIP`); `parseCidr` does the same and says so in `isAddress`, so a
 * caller that needs Go's `ParseCIDR` (a Kubernetes ipBlock) rejects `isAddress`. Two levels of
 * strictness exist upstream, and `hasHostBits` lets callers choose:
 * - rule `nets`/`notNets`, endpoint `ipNetworks` (validator tag `net`): strictly masked;
 * - `allowSpoofedSourcePrefixes` (`cidr`) and converted Kubernetes ipBlocks: host bits are
 *   allowed and cleared, so `10.1.2.3/16` becomes `10.1.0.0/16`.
 *
 * Output uses Go's `IP.String()` forms: dotted quad for IPv4, RFC 5952 for IPv6 (lower-case,
 * leading zeros dropped, the first longest run of ≥ 2 zero groups compressed).
 */
import { failed, parsed, show } from './parse-result.ts';
import type { ParseResult } from './parse-result.ts';

export type IPVersion = 4 | 6;

export interface ParsedIP {
  readonly version: IPVersion;
  /** 4 bytes (IPv4, IPv4-mapped included) or 16 bytes, network order. */
  readonly bytes: Uint8Array;
}

export interface ParsedCidr {
  /** The network's family: an IPv4-mapped network with prefix ≥ 96 is IPv4. */
  readonly version: IPVersion;
  /** In the network's family: `::ffff:10.0.0.0/104` has prefix length 8. */
  readonly prefixLength: number;
  /** The address as written (canonical form), host bits included. */
  readonly address: string;
  /** The network: address with host bits cleared, e.g. `10.1.0.0/16`. */
  readonly network: string;
  /** The network's address bytes (4 or 16, matching `version`), host bits cleared. */
  readonly networkBytes: Uint8Array;
  /** True when the written address had bits set beyond the prefix. */
  readonly hasHostBits: boolean;
  /** True when no `/len` was written (a single address). */
  readonly isAddress: boolean;
}

/** Go `netip.ParseAddr`: 16 bytes, and whether the text was an IPv4 address (`Is4`). */
interface Addr {
  readonly bytes: Uint8Array;
  readonly is4: boolean;
}

type AddrResult = Addr | string;

const DOT = 46;
const COLON = 58;
const PERCENT = 37;

/** Go `parseIPv4Fields`: writes 4 octets of `s` into `out` at `at`, or returns why not. */
function parseIPv4Fields(s: string, out: Uint8Array, at: number): string | undefined {
  let value = 0;
  let digits = 0;
  let field = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && value === 0) return 'IPv4 field has octet with leading zero';
      value = value * 10 + (c - 48);
      digits++;
      if (value > 255) return 'IPv4 field has value >255';
    } else if (c === DOT) {
      if (i === 0 || i === s.length - 1 || s.charCodeAt(i - 1) === DOT) return 'IPv4 field must have at least one digit';
      if (field === 3) return 'IPv4 address too long';
      out[at + field++] = value;
      value = 0;
      digits = 0;
    } else {
      return 'unexpected character';
    }
  }
  if (field < 3) return 'IPv4 address too short';
  out[at + 3] = value;
  return undefined;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Go `netip.parseIPv6`, zones rejected (neither `ParseIP` nor `ParseCIDR` keeps one). */
function parseIPv6(text: string): AddrResult {
  if (text.includes('%')) return 'an IPv6 zone is not an address';
  const ip = new Uint8Array(16);
  let s = text;
  let ellipsis = -1;
  if (s.length >= 2 && s.charCodeAt(0) === COLON && s.charCodeAt(1) === COLON) {
    ellipsis = 0;
    s = s.slice(2);
    if (s.length === 0) return { bytes: ip, is4: false };
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      const h = hexValue(s.charCodeAt(off));
      if (h < 0) break;
      if (off > 3) return 'each group must have 4 or less digits';
      acc = acc * 16 + h;
    }
    if (off === 0) return 'each colon-separated field must have at least one digit';
    if (off < s.length && s.charCodeAt(off) === DOT) {
      if (ellipsis < 0 && i !== 12) return 'embedded IPv4 address must replace the final 2 fields of the address';
      if (i + 4 > 16) return 'too many hex fields to fit an embedded IPv4 at the end of the address';
      const why = parseIPv4Fields(s, ip, i);
      if (why !== undefined) return why;
      s = '';
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s.length === 0) break;
    if (s.charCodeAt(0) !== COLON) return 'unexpected character, want colon';
    if (s.length === 1) return 'colon must be followed by more characters';
    s = s.slice(1);
    if (s.charCodeAt(0) === COLON) {
      if (ellipsis >= 0) return 'multiple :: in address';
      ellipsis = i;
      s = s.slice(1);
      if (s.length === 0) break;
    }
  }
  if (s.length !== 0) return 'trailing garbage after address';
  if (i < 16) {
    if (ellipsis < 0) return 'address string too short';
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j] ?? 0;
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return 'the :: must expand to at least one field of zeros';
  }
  return { bytes: ip, is4: false };
}

/** Go `netip.ParseAddr` (zones rejected): the first `.`, `:` or `%` decides the family. */
function parseAddr(s: string): AddrResult {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === DOT) {
      const bytes = new Uint8Array(16);
      bytes[10] = 0xff;
      bytes[11] = 0xff;
      const why = parseIPv4Fields(s, bytes, 12);
      return why ?? { bytes, is4: true };
    }
    if (c === COLON) return parseIPv6(s);
    if (c === PERCENT) return 'missing IPv6 address';
  }
  return 'unable to parse IP';
}

/** Go `IP.To4()` on 16 bytes: the IPv4 address of an IPv4-mapped address, else undefined. */
function to4(bytes: Uint8Array): Uint8Array | undefined {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return undefined;
  return bytes[10] === 0xff && bytes[11] === 0xff ? bytes.subarray(12, 16) : undefined;
}

/** Go `IP.String()` for 4 or 16 bytes (IPv4-mapped 16 bytes print as IPv4, as in Go). */
export function formatIP(bytes: Uint8Array): string {
  const v4 = bytes.length === 4 ? bytes : to4(bytes);
  if (v4 !== undefined) return `${v4[0]}.${v4[1]}.${v4[2]}.${v4[3]}`;
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

/** Go `net.ParseIP` then `To4()` where it applies: IPv4 and IPv4-mapped addresses are IPv4. */
export function parseIP(text: unknown): ParseResult<ParsedIP> {
  if (typeof text !== 'string') return failed(`${show(text)} is not an IP address`);
  const addr = parseAddr(text);
  if (typeof addr === 'string') return failed(`${show(text)} is not an IP address (${addr})`);
  const v4 = to4(addr.bytes);
  return parsed(v4 !== undefined ? { version: 4, bytes: Uint8Array.from(v4) } : { version: 6, bytes: addr.bytes });
}

/** Go `dtoi` over the whole string: decimal digits, leading zeros allowed; -1 if not. */
function prefixDigits(text: string): number {
  if (text.length === 0) return -1;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    n = n * 10 + (c - 48);
    if (n >= 0xffffff) return -1; // Go: dtoi's `big`
  }
  return n;
}

function maskBytes(bytes: Uint8Array, prefixLength: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefixLength - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/**
 * Parses `addr/len` as Go's `net.ParseCIDR` does, or a plain address as a full-length prefix
 * (Calico `cnet.ParseCIDROrIP`); the network prints as Go's `IPNet.String()`.
 */
export function parseCidr(text: unknown): ParseResult<ParsedCidr> {
  if (typeof text !== 'string') return failed(`${show(text)} is not a CIDR or IP address`);
  const v4 = parseCanonicalIPv4Cidr(text);
  if (v4 !== undefined) return v4;
  let result = PARSED.get(text);
  if (result === undefined) {
    // Bounded: cleared when full, so a stream of distinct strings costs one parse each.
    if (PARSED.size >= PARSED_MAX) PARSED.clear();
    result = parseCidrUncached(text);
    PARSED.set(text, result);
  }
  return result;
}

/**
 * Parse results by input text, for what the IPv4 fast path does not take (IPv6, and IPv4
 * written unusually). The same strings come back again and again — a network set re-sent whole
 * for a one-CIDR edit is validated and normalised entry by entry, as is every endpoint's address
 * on each update — and a general parse allocates several byte arrays. Results are shared:
 * callers must not modify them. Small: at 100k endpoints a cache of every address held ~45 MB,
 * most of an agent's IPv4 addresses, which the fast path parses without it.
 */
const PARSED = new Map<string, ParseResult<ParsedCidr>>();
const PARSED_MAX = 1 << 14;

/**
 * True for an IPv4 host network in canonical form (`10.0.0.1/32`: decimal octets 0-255 without
 * leading zeros, prefix 32): `parseCidr` accepts it as a /32 network, its own address and
 * network text. Allocates nothing — an endpoint's addresses are checked and normalised with it
 * on every update, where a parse built a result, its bytes and its strings.
 */
export function isCanonicalIPv4HostCidr(text: string): boolean {
  return CANONICAL_V4_HOST.test(text);
}

const CANONICAL_V4_HOST = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\/32$/;

/**
 * `a.b.c.d` or `a.b.c.d/n` in canonical form — decimal octets 0-255 without leading zeros (as Go
 * requires), a prefix 0-32 without leading zeros — parsed in one pass; undefined for anything
 * else, which takes the general path (that one also accepts a prefix with leading zeros, and
 * explains every error). The result equals the general path's for the same text.
 */
function parseCanonicalIPv4Cidr(text: string): ParseResult<ParsedCidr> | undefined {
  const n = text.length;
  if (n < 7 || n > 18) return undefined;
  let addr = 0;
  let i = 0;
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (text.charCodeAt(i) !== DOT) return undefined;
      i++;
    }
    const start = i;
    let v = 0;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c < 48 || c > 57) break;
      v = v * 10 + (c - 48);
      i++;
    }
    const len = i - start;
    if (len === 0 || len > 3 || v > 255 || (len > 1 && text.charCodeAt(start) === 48)) return undefined;
    addr = addr * 256 + v;
  }
  let prefixLength = 32;
  const slash = i;
  if (i < n) {
    if (text.charCodeAt(i) !== 47) return undefined;
    i++;
    const start = i;
    let v = 0;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c < 48 || c > 57) return undefined;
      v = v * 10 + (c - 48);
      i++;
    }
    const len = i - start;
    if (len === 0 || len > 2 || v > 32 || (len > 1 && text.charCodeAt(start) === 48)) return undefined;
    prefixLength = v;
  }
  // Unsigned 32-bit arithmetic: the mask keeps the top prefixLength bits.
  const mask = prefixLength === 0 ? 0 : (0xffffffff << (32 - prefixLength)) >>> 0;
  const net = (addr & mask) >>> 0;
  const networkBytes = new Uint8Array([net >>> 24, (net >>> 16) & 255, (net >>> 8) & 255, net & 255]);
  const isAddress = slash === n;
  const hasHostBits = net !== addr;
  const address = isAddress ? text : text.slice(0, slash);
  return parsed({
    version: 4,
    prefixLength,
    address,
    // Canonical text with no host bits is its own network.
    network: isAddress ? `${text}/32` : hasHostBits ? `${networkBytes[0]}.${networkBytes[1]}.${networkBytes[2]}.${networkBytes[3]}/${prefixLength}` : text,
    networkBytes,
    hasHostBits,
    isAddress,
  });
}

/** The general parse, uncached (exported for the IPv4 fast path's differential test). */
export function parseCidrUncached(text: string): ParseResult<ParsedCidr> {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const addr = parseAddr(addressText);
  if (typeof addr === 'string') return failed(`${show(text)} is not a CIDR or IP address (${addr})`);
  // Go: the prefix counts bits of the address as parsed — 32 for IPv4, 128 for any IPv6
  // address, IPv4-mapped included; the mask is applied to the 16-byte form.
  const bits = addr.is4 ? 32 : 128;
  let written = bits;
  if (slash >= 0) {
    written = prefixDigits(text.slice(slash + 1));
    if (written < 0 || written > bits) {
      return failed(`${show(text)} has an invalid prefix length (IPv${addr.is4 ? 4 : 6} allows 0-${bits})`);
    }
  }
  const masked = maskBytes(addr.bytes, addr.is4 ? written + 96 : written);
  // Go `networkNumberAndMask`: a network that is still IPv4-mapped is IPv4.
  const v4Net = to4(masked);
  const version: IPVersion = v4Net !== undefined ? 4 : 6;
  const networkBytes = v4Net !== undefined ? Uint8Array.from(v4Net) : masked;
  const prefixLength = v4Net !== undefined && !addr.is4 ? written - 96 : written;
  return parsed({
    version,
    prefixLength,
    address: formatIP(addr.bytes),
    network: `${formatIP(networkBytes)}/${prefixLength}`,
    networkBytes,
    hasHostBits: masked.some((b, i) => b !== addr.bytes[i]),
    isAddress: slash < 0,
  });
}

/** True when the address (or every address of a CIDR) `inner` lies inside `outer`. */
export function cidrContains(outer: ParsedCidr, inner: string): boolean {
  const parsedInner = parseCidr(inner);
  if (!parsedInner.ok) return false;
  const x = parsedInner.value;
  if (x.version !== outer.version || x.prefixLength < outer.prefixLength) return false;
  const cut = maskBytes(x.networkBytes, outer.prefixLength);
  for (let i = 0; i < cut.length; i++) if (cut[i] !== outer.networkBytes[i]) return false;
  return true;
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
