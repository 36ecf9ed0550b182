/**
 * Host endpoints as the verdict engine sees them (reference host-endpoints-and-services §A.2,
 * §A.4, §A.5, §A.7): which host endpoint polices a node's interface in each table, the
 * failsafe chains (the agent's configuration, dataplane/failsafes.ts), and the names of the
 * chains that decide.
 *
 * Interface matching, as Felix's `resolveHostEndpoints`:
 * - a host endpoint with a non-`*` `interfaceName` matches only the interface of that name (it
 *   never falls back to its expectedIPs); one with an empty name matches the interface holding
 *   one of its expectedIPs; among several, the smallest HostEndpoint name wins;
 * - the `*` endpoint with the smallest name is the default, reached for every interface no
 *   specific endpoint matched (pod interfaces included), under the pseudo-interface name
 *   `any-interface-at-all`;
 * - per table: filter uses every match plus the `*` default; the mangle preDNAT dispatch only
 *   the endpoints with preDNAT tiers (an interface whose specific endpoint has none falls to a
 *   `*` default that has some); the raw dispatch only specific endpoints with untracked tiers,
 *   never `*` (Felix ignores doNotTrack on `*` with a warning).
 *
 * A node's interface is given by its addresses; its name is optional. A scenario names no
 * interface (its node's single interface carries the node's `ip`), so there a named host
 * endpoint never matches, and one matches by expectedIPs or as `*`.
 */
import { cidrContains, parseCidr } from '../api/index.ts';
import { chainName, DEFAULT_FAILSAFES, type FailsafeConfig, type ProtoPort } from '../dataplane/index.ts';
import { ALL_INTERFACES, type HostEndpoint } from '../proto/index.ts';
import type { NodeState } from './node-state.ts';
import type { Packet } from './verdict-engine.ts';

/** Felix's name for the `*` endpoint's chains (longer than IFNAMSIZ on purpose: no interface has it). */
export const ANY_INTERFACE = 'any-interface-at-all';

/** One of a node's host interfaces. */
export interface HostInterface {
  /** The Linux name; undefined when unknown (a scenario's node). */
  readonly name?: string;
  /** Its addresses, without prefix length. */
  readonly addresses: readonly string[];
}

/** Which dispatch chain resolves the endpoint (§A.5). */
export type DispatchTable = 'filter' | 'mangle-prednat' | 'raw';

/** The host endpoint that polices an interface in a table, and the interface its chains are named for. */
export interface ResolvedHostEndpoint {
  readonly name: string;
  readonly endpoint: HostEndpoint;
  /** The chains' interface part: the interface's name, or {@link ANY_INTERFACE} for `*`. */
  readonly chainInterface: string;
}

/** The specific (non-`*`) host endpoint matching `iface` on this node, smallest name first. */
function specificMatch(state: NodeState, iface: HostInterface): ResolvedHostEndpoint | undefined {
  let best: ResolvedHostEndpoint | undefined;
  for (const [name, { endpoint }] of state.hostEndpoints) {
    if (endpoint.name === ALL_INTERFACES) continue;
    const matches =
      endpoint.name !== ''
        ? iface.name !== undefined && endpoint.name === iface.name
        : [...endpoint.expectedIpv4Addrs, ...endpoint.expectedIpv6Addrs].some((ip) => iface.addresses.includes(ip));
    if (!matches || (best !== undefined && best.name < name)) continue;
    best = { name, endpoint, chainInterface: iface.name ?? interfaceLabel(iface) };
  }
  return best;
}

/** The `*` endpoint with the smallest name, if any. */
function defaultEndpoint(state: NodeState): ResolvedHostEndpoint | undefined {
  let best: ResolvedHostEndpoint | undefined;
  for (const [name, { endpoint }] of state.hostEndpoints) {
    if (endpoint.name !== ALL_INTERFACES || (best !== undefined && best.name < name)) continue;
    best = { name, endpoint, chainInterface: ANY_INTERFACE };
  }
  return best;
}

/**
 * The host endpoint whose chains `table`'s dispatch sends a packet on `iface` to, or undefined
 * when the dispatch returns (nothing polices it there). `iface` undefined is a pod's interface
 * (`cali…`): no specific endpoint can match it.
 */
export function hostEndpointFor(state: NodeState, iface: HostInterface | undefined, table: DispatchTable): ResolvedHostEndpoint | undefined {
  if (state.hostEndpoints.size === 0) return undefined;
  const specific = iface === undefined ? undefined : specificMatch(state, iface);
  switch (table) {
    case 'filter':
      return specific ?? defaultEndpoint(state);
    case 'mangle-prednat': {
      if (specific !== undefined && specific.endpoint.preDnatTiers.length > 0) return specific;
      const any = defaultEndpoint(state);
      return any !== undefined && any.endpoint.preDnatTiers.length > 0 ? any : undefined;
    }
    case 'raw':
      return specific !== undefined && specific.endpoint.untrackedTiers.length > 0 ? specific : undefined;
  }
}

/** How an interface without a name is shown: `<interface of 10.65.0.1>`. */
export function interfaceLabel(iface: HostInterface): string {
  return `<interface of ${iface.addresses.join(', ') || 'no address'}>`;
}

/** Felix's per-endpoint chain prefixes (rules/endpoints.go). */
export type HostChainPrefix = 'cali-th-' | 'cali-fh-' | 'cali-thfw-' | 'cali-fhfw-';

/**
 * A host endpoint chain's name, as Felix's `EndpointChainName` makes it (hashed past 28
 * characters): `cali-fh-any-interface-at-all`, `cali-fhfw-_Nqh4HyA73udmyanQI`. An interface
 * without a name is shown by its addresses, never hashed.
 */
export function hostChainName(prefix: HostChainPrefix, chainInterface: string): string {
  return chainInterface.startsWith('<') ? `${prefix}${chainInterface}` : chainName(prefix, chainInterface);
}

/**
 * Felix's defaults (the agent's: dataplane/failsafes.ts, one source): individual ports, not
 * ranges; udp:68 inbound only, udp:53 and udp:67 outbound only.
 */
export const FELIX_DEFAULT_FAILSAFES: FailsafeConfig = DEFAULT_FAILSAFES;

export type FailsafeChain = 'cali-failsafe-in' | 'cali-failsafe-out';

function inNet(net: string | undefined, hostNet: string): boolean {
  if (net === undefined) return true;
  const parsed = parseCidr(net);
  return parsed.ok && cidrContains(parsed.value, hostNet);
}

const sameFamily = (net: string | undefined, pkt: Packet): boolean => net === undefined || net.includes(':') === (pkt.ipVersion === 6);

const fmt = (e: ProtoPort, port: 'dport' | 'sport'): string => `${e.protocol}:${e.net === undefined ? '' : `${e.net}:`}${e.port}${port === 'sport' ? ' (source port)' : ''}`;

/**
 * The entry of `chain` that accepts `pkt`, or undefined (static.go `failsafeInChain` /
 * `failsafeOutChain`): in, `--dport` of an inbound entry (`-s net`); out, `--dport` of an
 * outbound entry (`-d net`). In the raw table each chain also holds the other direction's
 * entries as `--sport`, so that replies of failsafe connections pass untracked policy. A
 * packet with an ephemeral source port never matches a `--sport` entry.
 */
export function failsafeEntry(config: FailsafeConfig, chain: FailsafeChain, table: 'raw' | 'mangle' | 'filter', pkt: Packet): string | undefined {
  if (pkt.protocol === 'ICMP') return undefined;
  const proto = pkt.protocol.toLowerCase();
  const peer = chain === 'cali-failsafe-in' ? pkt.srcNet : pkt.dstNet;
  const forward = chain === 'cali-failsafe-in' ? config.inbound : config.outbound;
  for (const e of forward) {
    if (e.protocol === proto && e.port === pkt.dstPort && sameFamily(e.net, pkt) && inNet(e.net, peer)) return fmt(e, 'dport');
  }
  if (table !== 'raw' || pkt.srcPorts === undefined || pkt.srcPorts.first !== pkt.srcPorts.last) return undefined;
  const reverse = chain === 'cali-failsafe-in' ? config.outbound : config.inbound;
  for (const e of reverse) {
    if (e.protocol === proto && e.port === pkt.srcPorts.first && sameFamily(e.net, pkt) && inNet(e.net, peer)) return fmt(e, 'sport');
  }
  return undefined;
}
