/**
 * IP set members in the kernel's canonical spelling, so desired members compare equal to what
 * `ipset list -o save` prints (`10.0.0.1/32` is listed as `10.0.0.1`, `fd00:0::1` as
 * `fd00::1`, `10.0.0.7/24` as `10.0.0.0/24`). Anything that does not parse is rejected: a
 * member ends up in `ipset restore` input and must not be able to carry a second command.
 */
import { isIP } from 'node:net';
import type { IpSetType } from '../proto/index.ts';

function v4ToInt(a: string): number {
  return a.split('.').reduce((acc, o) => (acc << 8) + Number(o), 0) >>> 0;
}
function intToV4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}
function v6ToBig(a: string): bigint {
  const canonical = canonicalV6(a);
  const [head, tail] = canonical.includes('::') ? canonical.split('::') : [canonical, undefined];
  const h = head === '' || head === undefined ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g, 16)), 0n);
}
function bigToV6(n: bigint): string {
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((n >> BigInt(i * 16)) & 0xffffn).toString(16));
  return canonicalV6(groups.join(':'));
}
/** RFC 5952 form via the URL parser (lower case, longest zero run compressed). */
function canonicalV6(a: string): string {
  return new URL(`http://[${a}]/`).hostname.slice(1, -1);
}

/** A CIDR or address → `addr` (full-length prefix) or `network/len`; undefined if invalid. */
export function canonicalNet(member: string, ipVersion: 4 | 6): string | undefined {
  const slash = member.indexOf('/');
  const addr = slash < 0 ? member : member.slice(0, slash);
  if (isIP(addr) !== ipVersion) return undefined;
  const max = ipVersion === 4 ? 32 : 128;
  const lenText = slash < 0 ? String(max) : member.slice(slash + 1);
  if (!/^\d{1,3}$/.test(lenText)) return undefined;
  const len = Number(lenText);
  if (len > max || len < 1) return undefined;
  if (ipVersion === 4) {
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    const net = intToV4((v4ToInt(addr) & mask) >>> 0);
    return len === 32 ? net : `${net}/${len}`;
  }
  const mask = len === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - len)) - 1n);
  const net = bigToV6(v6ToBig(addr) & mask);
  return len === 128 ? net : `${net}/${len}`;
}

/** `addr,proto:port` → canonical; undefined if invalid. */
export function canonicalIpPort(member: string, ipVersion: 4 | 6): string | undefined {
  const m = /^(.+),(tcp|udp|sctp|udplite):(\d{1,5})$/i.exec(member);
  if (m === null) return undefined;
  const [, addr, proto, port] = m;
  if (isIP(addr!) !== ipVersion || Number(port) > 65535) return undefined;
  const a = ipVersion === 4 ? addr! : canonicalV6(addr!);
  return `${a},${proto!.toLowerCase()}:${Number(port)}`;
}

export function canonicalMember(member: string, type: IpSetType, ipVersion: 4 | 6): string | undefined {
  return type === 'hash:net' ? canonicalNet(member, ipVersion) : canonicalIpPort(member, ipVersion);
}

/** The IP family a member belongs to (4, 6), or undefined when it is not an address member. */
export function memberFamily(member: string): 4 | 6 | undefined {
  const end = member.search(/[/,]/);
  const f = isIP(end < 0 ? member : member.slice(0, end));
  return f === 4 || f === 6 ? f : undefined;
}
