/**
 * Which host endpoint polices which interface (Felix `endpoint_mgr.go` `resolveHostEndpoints`;
 * host-endpoints-and-services §A.2), from the interfaces of this network namespace.
 *
 * - Candidates: every interface `ip -j addr show` lists, with its addresses (none is fine:
 *   Felix keeps an interface with an empty address set), except workload interfaces (the
 *   workload prefixes, Felix `InterfacePrefix`) and the excluded ones (Felix
 *   `InterfaceExclude`, default `kube-ipvs0`). Whether the interface is up does not matter:
 *   host endpoints are always admin up. `lo` is a candidate, as in Felix.
 * - Per candidate, among the host endpoints other than `*`: one named as the interface matches;
 *   one with another name never matches (no fallback to its IPs); one with no name matches
 *   when one of its expected IPs is on the interface. Of several matches the smallest host
 *   endpoint name wins; one host endpoint may win several interfaces.
 * - The `*` host endpoint with the smallest name is the default, under the pseudo-interface
 *   `any-interface-at-all`: the dispatch chains send every interface without a match to it.
 */
import { ALL_INTERFACES, type HostEndpoint } from '../proto/index.ts';
import { ALL_INTERFACES_IFACE } from './chain-names.ts';
import { parseCidr } from './match-builder.ts';

/** `ip -j addr show` failed or printed something else than its JSON. */
export class HostInterfacesError extends Error {
  override readonly name = 'HostInterfacesError';
}

/** Interface name → canonical addresses (`10.0.0.1/32`, `fd00::1/128`). */
export type HostInterfaces = ReadonlyMap<string, ReadonlySet<string>>;

/** An address as the maps hold it (the same text for every way of writing it); undefined if not an address. */
export function canonicalAddress(addr: string): string | undefined {
  try {
    return parseCidr(addr.includes('/') ? addr.slice(0, addr.indexOf('/')) : addr).text;
  } catch {
    return undefined;
  }
}

/** Parses `ip -j addr show` output. Throws {@link HostInterfacesError}. */
export function parseIpAddrJson(stdout: string): Map<string, Set<string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout === '' ? '[]' : stdout);
  } catch (e) {
    throw new HostInterfacesError(`ip -j addr show: not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new HostInterfacesError('ip -j addr show: not a JSON array');
  const out = new Map<string, Set<string>>();
  for (const link of parsed as unknown[]) {
    const l = link as { ifname?: unknown; addr_info?: unknown };
    if (typeof l.ifname !== 'string') continue;
    const addrs = out.get(l.ifname) ?? new Set<string>();
    if (Array.isArray(l.addr_info)) {
      for (const a of l.addr_info as Array<{ local?: unknown }>) {
        const c = typeof a.local === 'string' ? canonicalAddress(a.local) : undefined;
        if (c !== undefined) addrs.add(c);
      }
    }
    out.set(l.ifname, addrs);
  }
  return out;
}

export interface ResolveOptions {
  /** Workload interface prefixes: never host endpoints. */
  readonly workloadPrefixes: readonly string[];
  /** Interfaces never policed. @default ['kube-ipvs0'] */
  readonly exclude?: readonly string[];
}

/**
 * Interface (or `any-interface-at-all`) → name of the host endpoint that polices it (see the
 * module comment). `heps` is keyed by host endpoint name.
 */
export function resolveHostEndpoints(ifaces: HostInterfaces, heps: ReadonlyMap<string, HostEndpoint>, opts: ResolveOptions): Map<string, string> {
  const exclude = new Set(opts.exclude ?? ['kube-ipvs0']);
  const expected = new Map<string, readonly string[]>();
  for (const [name, ep] of heps) {
    if (ep.name !== '') continue;
    expected.set(name, [...ep.expectedIpv4Addrs, ...ep.expectedIpv6Addrs].map(canonicalAddress).filter((a): a is string => a !== undefined));
  }
  const sortedNames = [...heps.keys()].sort();
  const out = new Map<string, string>();
  for (const [iface, addrs] of ifaces) {
    if (exclude.has(iface) || opts.workloadPrefixes.some((p) => iface.startsWith(p))) continue;
    for (const name of sortedNames) {
      const ep = heps.get(name)!;
      if (ep.name === ALL_INTERFACES) continue;
      const match = ep.name === iface || (ep.name === '' && expected.get(name)!.some((a) => addrs.has(a)));
      if (match) {
        out.set(iface, name);
        break;
      }
    }
  }
  const wildcard = sortedNames.find((n) => heps.get(n)!.name === ALL_INTERFACES);
  if (wildcard !== undefined) out.set(ALL_INTERFACES_IFACE, wildcard);
  return out;
}
