/**
 * IP set members in the kernel's canonical spelling, so desired members compare equal to what
 * `ipset list -o save` prints (`10.0.0.1/32` is listed as `10.0.0.1`, `fd00:0::1` as
 * `fd00::1`, `10.0.0.7/24` as `10.0.0.0/24`). Anything that does not parse is rejected: a
 * member ends up in `ipset restore` input and must not be able to carry a second command.
 */
import { formatIP, parseCidr, parseIP } from '../../api/cidr.ts';
import type { IpSetType } from '../../proto/index.ts';

/**
 * A CIDR or address → `addr` (full-length prefix) or `network/len`; undefined if invalid.
 * Parsed as Go reads it (api/cidr.ts, the codebase's one parser); `/0` is no hash:net member.
 */
export function canonicalNet(member: string, ipVersion: 4 | 6): string | undefined {
  const r = parseCidr(member);
  if (!r.ok || r.value.version !== ipVersion || r.value.prefixLength < 1) return undefined;
  const full = ipVersion === 4 ? 32 : 128;
  return r.value.prefixLength === full ? formatIP(r.value.networkBytes) : r.value.network;
}

/** `addr,proto:port` → canonical; undefined if invalid. */
export function canonicalIpPort(member: string, ipVersion: 4 | 6): string | undefined {
  const m = /^(.+),(tcp|udp|sctp|udplite):(\d{1,5})$/i.exec(member);
  if (m === null) return undefined;
  const [, addr, proto, port] = m;
  const ip = parseIP(addr);
  if (!ip.ok || ip.value.version !== ipVersion || Number(port) > 65535) return undefined;
  return `${formatIP(ip.value.bytes)},${proto!.toLowerCase()}:${Number(port)}`;
}

export function canonicalMember(member: string, type: IpSetType, ipVersion: 4 | 6): string | undefined {
  return type === 'hash:net' ? canonicalNet(member, ipVersion) : canonicalIpPort(member, ipVersion);
}

/** The IP family a member belongs to (4, 6), or undefined when it is not an address member. */
export function memberFamily(member: string): 4 | 6 | undefined {
  const comma = member.indexOf(',');
  const r = comma < 0 ? parseCidr(member) : parseIP(member.slice(0, comma));
  return r.ok ? r.value.version : undefined;
}
