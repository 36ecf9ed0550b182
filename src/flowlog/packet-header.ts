/**
 * The flow of a logged packet from its network and transport headers: addresses, protocol,
 * ports (TCP, UDP, SCTP, UDP-Lite) or ICMP type. Reads only bytes that are there: a header
 * cut short by the copy size gives what it holds, never a made-up port. Addresses are written
 * as `formatIP` writes them (RFC 5952), as the endpoint lookup keys them.
 */
import { formatIP } from '../api/index.ts';

export interface PacketFlow {
  readonly ipVersion: 4 | 6;
  /** `tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, `udplite`, or the protocol number. */
  readonly protocol: string;
  readonly srcIp: string;
  readonly dstIp: string;
  readonly srcPort?: number;
  readonly dstPort?: number;
  readonly icmpType?: number;
  readonly icmpCode?: number;
}

const NAMES: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp', 136: 'udplite' };
const PORTS = new Set([6, 17, 132, 136]);
/** IPv6 extension headers walked to reach the transport header (hop-by-hop, routing, destination options). */
const V6_EXTENSIONS = new Set([0, 43, 60]);

export function parsePacket(p: Buffer): PacketFlow | undefined {
  if (p.length < 1) return undefined;
  const version = p[0]! >> 4;
  let proto: number;
  let l4: number;
  let srcIp: string;
  let dstIp: string;
  if (version === 4) {
    if (p.length < 20) return undefined;
    const ihl = (p[0]! & 0x0f) * 4;
    proto = p[9]!;
    srcIp = `${p[12]}.${p[13]}.${p[14]}.${p[15]}`;
    dstIp = `${p[16]}.${p[17]}.${p[18]}.${p[19]}`;
    // A non-first fragment has no transport header.
    l4 = (p.readUInt16BE(6) & 0x1fff) === 0 ? ihl : p.length;
  } else if (version === 6) {
    if (p.length < 40) return undefined;
    proto = p[6]!;
    srcIp = formatIP(p.subarray(8, 24));
    dstIp = formatIP(p.subarray(24, 40));
    l4 = 40;
    while (V6_EXTENSIONS.has(proto) && l4 + 2 <= p.length) {
      proto = p[l4]!;
      l4 += (p[l4 + 1]! + 1) * 8;
    }
  } else return undefined;
  const protocol = NAMES[proto] ?? String(proto);
  const base = { ipVersion: version as 4 | 6, protocol, srcIp, dstIp };
  if (PORTS.has(proto) && l4 + 4 <= p.length) return { ...base, srcPort: p.readUInt16BE(l4), dstPort: p.readUInt16BE(l4 + 2) };
  if ((proto === 1 || proto === 58) && l4 + 2 <= p.length) return { ...base, icmpType: p[l4]!, icmpCode: p[l4 + 1]! };
  return base;
}
