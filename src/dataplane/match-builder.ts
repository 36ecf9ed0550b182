/**
 * Match fragments for one iptables rule (Felix `generictables/match_builder.go`), plus the
 * port-list split into multiport-sized chunks (Felix `SplitPortList`).
 *
 * Every value that reaches a fragment is validated here, so nothing from a label, name or
 * message can break out of its token in `iptables-restore` input.
 */
import { parseCidr as parseIpNetwork } from '../api/cidr.ts';
import type { PortRange } from '../proto/index.ts';

/** Felix: a multiport match holds at most 15 slots; a range takes 2. */
export const MULTIPORT_MAX_SLOTS = 15;

export class RuleRenderError extends Error {
  override readonly name = 'RuleRenderError';
}

/** Splits `ports` into chunks that each fit one `-m multiport` match. */
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

function portText(p: PortRange): string {
  for (const v of [p.first, p.last]) {
    if (!Number.isInteger(v) || v < 0 || v > 65535) throw new RuleRenderError(`port ${v} is not in 0..65535`);
  }
  if (p.first > p.last) throw new RuleRenderError(`port range ${p.first}:${p.last} is reversed`);
  return p.first === p.last ? String(p.first) : `${p.first}:${p.last}`;
}

/** `-m multiport [!] --source-ports|--destination-ports a,b:c`. */
export function multiportMatch(side: 'src' | 'dst', chunk: readonly PortRange[], negate = false): string {
  const opt = side === 'src' ? '--source-ports' : '--destination-ports';
  return `-m multiport ${negate ? '! ' : ''}${opt} ${chunk.map(portText).join(',')}`;
}

const SET_NAME = /^[A-Za-z0-9:_.-]{1,31}$/;

/** `-m set [!] --match-set <name> src|dst` (selector set) or `src,src|dst,dst` (named port). */
export function setMatch(name: string, side: 'src' | 'dst', namedPort: boolean, negate = false): string {
  if (!SET_NAME.test(name)) throw new RuleRenderError(`IP set name '${name}' is not a valid set name`);
  const dir = namedPort ? `${side},${side}` : side;
  return `-m set ${negate ? '! ' : ''}--match-set ${name} ${dir}`;
}

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

/** `[!] --source|--destination <cidr>`. */
export function netMatch(side: 'src' | 'dst', cidr: string, negate = false): string {
  return `${negate ? '! ' : ''}${side === 'src' ? '--source' : '--destination'} ${cidr}`;
}

const PROTO_NAMES = new Set(['tcp', 'udp', 'icmp', 'icmpv6', 'sctp', 'udplite', 'ipip', 'esp', 'ah', 'gre']);

/** The protocol token for `-p`: a known name, or a number 0–255. */
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

/** `-m icmp [!] --icmp-type T[/C]` or the ICMPv6 form. */
export function icmpMatch(icmp: { readonly type: number; readonly code?: number }, ipVersion: 4 | 6, negate = false): string {
  for (const v of [icmp.type, icmp.code ?? 0]) {
    if (!Number.isInteger(v) || v < 0 || v > 255) throw new RuleRenderError(`ICMP type/code ${v} is not in 0..255`);
  }
  const value = icmp.code === undefined ? String(icmp.type) : `${icmp.type}/${icmp.code}`;
  const not = negate ? '! ' : '';
  return ipVersion === 4 ? `-m icmp ${not}--icmp-type ${value}` : `-m icmp6 ${not}--icmpv6-type ${value}`;
}
