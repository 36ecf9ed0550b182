/**
 * Anti-spoofing: packets a workload sends with a source address that is not its own are
 * dropped before anything else sees them (Felix `rules/static.go` `StaticRawPreroutingChain`
 * and `RPFilter`; host-endpoints-and-services.md §A.6). Without it a pod could send with
 * another pod's address and be judged — by the other pods' ingress policy, by IP-set
 * membership — as that pod.
 *
 * Layout (raw table, one per IP family):
 * - kernel hook: `PREROUTING → cali-PREROUTING`, inserted at the top;
 * - `cali-PREROUTING`:
 *   1. clear every Calico mark bit (another program's rules may have left one set);
 *   2. `-i <prefix>+` for each workload interface prefix (`--interface-prefix`, Felix
 *      `InterfacePrefix`) → set the "from workload" mark (scratch0, as Felix). The same
 *      prefixes send traffic to policy in the filter table, and an endpoint on an interface
 *      outside them is never programmed (endpoint-manager.ts), so every interface whose
 *      traffic is judged by policy has its source checked;
 *   3. from a workload → `cali-rpf-skip` (source prefixes exempt from the check; ACCEPT ends
 *      the raw table for them);
 *   4. from a workload and the strict reverse-path check fails → DROP: the route back to the
 *      source address, looked up with the packet's mark, must leave by the interface the
 *      packet arrived on. The CNI plugin routes each pod address (`/32`, `/128`) to its
 *      host-side veth, so only the pod owning an address passes with it. Link-local IPv6
 *      sources (neighbour discovery) pass by the interface's own `fe80::/64` route; the
 *      kernel's `rpfilter` itself passes the unspecified IPv6 source (`::`, duplicate address
 *      detection) and `0.0.0.0` to a broadcast or local multicast address.
 *   5. not from a workload → `cali-from-host-endpoint` (untracked host endpoint policy), and
 *      ACCEPT what it accepted (Felix's order, `StaticRawPreroutingChain`).
 * - `cali-rpf-skip`: `-i <iface> -s <cidr> -j ACCEPT` per exempt prefix of the family (Felix:
 *   a WorkloadEndpoint's `allowSpoofedSourcePrefixes`, honoured only with FelixConfiguration
 *   `workloadSourceSpoofing: Any`); empty by default.
 *
 * Differences from Felix, on purpose:
 * - the drop is always DROP: Felix uses `IptablesFilterDenyAction`, but REJECT is not a valid
 *   target in raw PREROUTING (the kernel accepts it only in INPUT, FORWARD and OUTPUT), so
 *   with `--deny-action REJECT` its restore would fail; and a forged packet has no sender to
 *   tell;
 * - no WireGuard or VXLAN rules: Tessera has neither.
 *
 * The check is the `rpfilter` match for both families (Felix too, in its current form); the
 * per-interface `rp_filter` sysctl is left as it is: Felix only writes the host's default
 * (`net.ipv4.conf.default.rp_filter`) to each workload interface, or 0 for one with exempt
 * prefixes, so the strict check never depends on it.
 */
import { ACCEPT, DROP, clearMark, jump, setMark } from './action.ts';
import type { Chain, ChainRule, KernelHooks } from './chain.ts';
import { CHAIN_FROM_HOST_ENDPOINT, CHAIN_RAW_PREROUTING, CHAIN_RPF_SKIP } from './chain-names.ts';
import { MARK_ACCEPT, MARK_ALL_CALICO, MARK_SCRATCH0 } from './marks.ts';
import { ANY } from './match.ts';
import { MatchBuilder, parseCidr } from './match-builder.ts';

/** Set in raw PREROUTING on packets from a workload interface (Felix: scratch0). */
export const MARK_FROM_WORKLOAD = MARK_SCRATCH0;

const ALL_MARK_BITS = MARK_ALL_CALICO;

/** Source prefixes one workload interface may send from, bypassing the check. */
export interface RpfSkip {
  readonly iface: string;
  /** CIDRs of either family; those of the other family are left out. */
  readonly prefixes: readonly string[];
}

/** The hook from the kernel's raw `PREROUTING` into `cali-PREROUTING`. */
export function rawKernelHooks(): KernelHooks[] {
  return [{ chain: 'PREROUTING', inserts: [{ match: ANY, action: jump(CHAIN_RAW_PREROUTING) }], appends: [] }];
}

/**
 * `cali-PREROUTING` and `cali-rpf-skip` of the raw table of family `ipVersion`, for workload
 * interfaces named `<prefix>…` (see the module comment). Throws `RuleRenderError` for an
 * invalid interface name or CIDR in `skips`.
 */
export function rawChains(ipVersion: 4 | 6, interfacePrefixes: readonly string[], skips: readonly RpfSkip[] = []): Chain[] {
  const fromWorkload = new MatchBuilder().markSet(MARK_FROM_WORKLOAD).build();
  const prerouting: ChainRule[] = [{ match: ANY, action: clearMark(ALL_MARK_BITS) }];
  for (const p of interfacePrefixes) prerouting.push({ match: new MatchBuilder().inInterface(`${p}+`).build(), action: setMark(MARK_FROM_WORKLOAD) });
  prerouting.push({ match: fromWorkload, action: jump(CHAIN_RPF_SKIP) });
  prerouting.push({
    match: new MatchBuilder().and(fromWorkload).rpfCheckFailed().build(),
    action: DROP,
    comments: ['Drop packets from workloads whose source address is not routed back to them'],
  });
  // Host endpoints' untracked policy (host-endpoint-chains.ts): packets from anything but a
  // workload, then ACCEPT (ends the raw table; conntrack is skipped if a policy NOTRACKed it).
  prerouting.push({ match: new MatchBuilder().markClear(MARK_FROM_WORKLOAD).build(), action: jump(CHAIN_FROM_HOST_ENDPOINT) });
  prerouting.push({ match: new MatchBuilder().markSet(MARK_ACCEPT).build(), action: ACCEPT });
  const skip: ChainRule[] = [];
  for (const { iface, prefixes } of skips) {
    for (const prefix of prefixes) {
      const cidr = parseCidr(prefix);
      if (cidr.family !== ipVersion) continue;
      skip.push({ match: new MatchBuilder().inInterface(iface).net('src', cidr.text).build(), action: ACCEPT });
    }
  }
  return [
    { name: CHAIN_RPF_SKIP, rules: skip },
    { name: CHAIN_RAW_PREROUTING, rules: prerouting },
  ];
}
