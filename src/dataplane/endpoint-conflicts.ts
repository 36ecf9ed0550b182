/**
 * Conflicting claims between this node's workload endpoints, and what the dataplane does about
 * them: fail closed.
 *
 * Two WorkloadEndpoints can claim one host interface (the same `interfaceName`, or the same
 * interface resolved from a route) or one address (overlapping `ipNetworks`). Any rule that
 * picks a winner lets whoever can write a WorkloadEndpoint replace another pod's policy: a
 * second endpoint naming pod b's interface, with an allow-all profile, would decide b's
 * traffic. Felix picks the endpoint whose ID sorts first ("shadowing", `endpoint_mgr.go`, meant
 * for make-before-break) and, for IPsec, stops binding an address that more than one workload
 * claims ("Workload IP address not unique", `ipsec_binding_calc.go`). Tessera does neither
 * trust: every endpoint in a conflict is withheld — its interface's `cali-tw-`/`cali-fw-`
 * chains are a single DROP — until the conflict is gone, then the survivor is programmed again.
 *
 * - Withholding is transitive per endpoint, not per claim: an endpoint in any conflict is
 *   withheld whole, so b's interface drops even when the other endpoint claims only b's address
 *   (and names some other, perhaps nonexistent, interface).
 * - Claims count whether or not the endpoint could be programmed: an endpoint with an invalid or
 *   foreign interface name that claims b's address still puts b in conflict.
 * - Addresses conflict when their networks overlap (`10.65.0.0/24` claims `10.65.0.7/32`).
 * - Only this node's endpoints are seen here. An endpoint on another node claiming a local
 *   pod's address is not detected by the dataplane; see the README ("Conflicting claims") for
 *   what that means for IP sets, and the WorkloadEndpoint admission policy that keeps others
 *   from writing endpoints at all.
 *
 * A legitimate conflict is short: an address reused while the old pod's endpoint still exists.
 * The new pod's traffic drops until the old endpoint is deleted, which is the safe direction.
 */
import { cidrContains, parseCidr, type ParsedCidr } from '../api/cidr.ts';
import type { Logger } from '../runtime/logger.ts';
import { sameList } from '../runtime/same-list.ts';
import { DROP } from './action.ts';
import type { Chain } from './chain.ts';
import { ANY } from './match.ts';
import { endpointChainName } from './chain-names.ts';
import type { DataplaneMetrics } from './dataplane-metrics.ts';

/** What one endpoint claims: its interface (once known) and its networks. */
export interface EndpointClaim {
  /** `namespace/name`, unique per endpoint. */
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  /** The host interface, explicit or resolved from a route; undefined while unknown. */
  readonly iface: string | undefined;
  /** `ipv4Nets` and `ipv6Nets` as sent. */
  readonly nets: readonly string[];
}

export type ConflictKind = 'interface' | 'address';

/** One contested interface or address and every endpoint claiming it. */
export interface ClaimConflict {
  readonly kind: ConflictKind;
  /** The interface name, or the claimed network as one of the endpoints wrote it. */
  readonly claim: string;
  /** Keys of the claiming endpoints, sorted. */
  readonly endpoints: readonly string[];
}

/** The comment on a withheld interface's DROP, as `iptables-save` shows it. */
export const CONTESTED_COMMENT = 'Interface or address claimed by more than one endpoint';

/**
 * The conflicts among `claims`, sorted by kind and claim. Interfaces compare by name; networks
 * by overlap (exact networks through a map, wider networks against every other claim, so the
 * usual all-`/32` node costs one pass).
 */
export function findClaimConflicts(claims: Iterable<EndpointClaim>): ClaimConflict[] {
  const byIface = new Map<string, Set<string>>();
  const byNetwork = new Map<string, { written: string; keys: Set<string> }>();
  const wide: Array<{ key: string; written: string; cidr: ParsedCidr }> = [];
  const all: Array<{ key: string; written: string; cidr: ParsedCidr }> = [];
  for (const c of claims) {
    if (c.iface !== undefined) addTo(byIface, c.iface, c.key);
    for (const written of c.nets) {
      const r = parseCidr(written);
      // Unparseable nets were already refused upstream; they claim nothing here.
      if (!r.ok) continue;
      const cidr = r.value;
      const entry = byNetwork.get(cidr.network) ?? { written, keys: new Set<string>() };
      entry.keys.add(c.key);
      byNetwork.set(cidr.network, entry);
      all.push({ key: c.key, written, cidr });
      if (cidr.prefixLength < (cidr.version === 4 ? 32 : 128)) wide.push({ key: c.key, written, cidr });
    }
  }
  for (const w of wide) {
    for (const o of all) {
      if (o.key === w.key || !cidrContains(w.cidr, o.cidr.network)) continue;
      byNetwork.get(w.cidr.network)!.keys.add(o.key);
    }
  }
  const out: ClaimConflict[] = [];
  for (const [iface, keys] of byIface) if (keys.size > 1) out.push({ kind: 'interface', claim: iface, endpoints: [...keys].sort() });
  for (const { written, keys } of byNetwork.values()) if (keys.size > 1) out.push({ kind: 'address', claim: written, endpoints: [...keys].sort() });
  return out.sort((a, b) => (a.kind === b.kind ? cmp(a.claim, b.claim) : cmp(a.kind, b.kind)));
}

/** The fail-closed `cali-tw-`/`cali-fw-` chains for an interface whose endpoints conflict. */
export function contestedInterfaceChains(iface: string): Chain[] {
  return (['ingress', 'egress'] as const).map((dir) => ({
    name: endpointChainName(iface, dir),
    rules: [{ match: ANY, action: DROP, comments: [CONTESTED_COMMENT] }],
  }));
}

/**
 * Says so when the set of conflicts changes: each new or changed conflict is logged (error)
 * once with every endpoint it names, each resolved one once (info), and the
 * `tessera_dataplane_conflicting_endpoints{kind}` gauge holds how many endpoints are in a
 * conflict of each kind now. Nothing is logged while the conflicts stay the same.
 */
export class ConflictReporter {
  private readonly log: Logger;
  /** `kind claim` → the endpoints last reported for it. */
  private reported = new Map<string, ClaimConflict>();

  constructor(
    logger: Logger,
    private readonly metrics: DataplaneMetrics | undefined,
  ) {
    this.log = logger.child({ component: 'endpoint-conflicts' });
  }

  /** Records the current conflicts; returns the keys of every endpoint to withhold. */
  update(conflicts: readonly ClaimConflict[], endpoints: ReadonlyMap<string, { readonly namespace: string; readonly name: string }>): Set<string> {
    const now = new Map(conflicts.map((c) => [`${c.kind} ${c.claim}`, c]));
    const objects = (keys: readonly string[]) =>
      keys.map((k) => {
        const ep = endpoints.get(k);
        return { kind: 'WorkloadEndpoint', namespace: ep?.namespace, name: ep?.name ?? k };
      });
    for (const [id, c] of now) {
      const before = this.reported.get(id);
      if (before !== undefined && sameList(before.endpoints, c.endpoints)) continue;
      this.log.error(
        { conflict: c.kind, [c.kind]: c.claim, endpoints: objects(c.endpoints) },
        `${c.kind} claimed by more than one WorkloadEndpoint: none of them is programmed and the interfaces involved drop all traffic until the conflict is gone`,
      );
    }
    for (const [id, c] of this.reported) {
      if (now.has(id)) continue;
      this.log.info({ conflict: c.kind, [c.kind]: c.claim, endpoints: objects(c.endpoints) }, `${c.kind} conflict resolved`);
    }
    this.reported = now;
    const withheld = new Set<string>();
    const byKind: Record<ConflictKind, Set<string>> = { interface: new Set(), address: new Set() };
    for (const c of conflicts) {
      for (const k of c.endpoints) {
        withheld.add(k);
        byKind[c.kind].add(k);
      }
    }
    for (const kind of ['interface', 'address'] as const) this.metrics?.conflictingEndpoints.set({ kind }, byKind[kind].size);
    return withheld;
  }
}

function addTo(map: Map<string, Set<string>>, k: string, v: string): void {
  const s = map.get(k);
  if (s === undefined) map.set(k, new Set([v]));
  else s.add(v);
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
