/**
 * The static chains and kernel hooks of the filter, mangle and raw tables, in Felix's order
 * (`rules/static.go`; host-endpoints-and-services §A.6). Pure: the same configuration always
 * renders the same chains.
 *
 * Kernel hooks (inserted at the top): filter `INPUT`/`FORWARD`/`OUTPUT` → `cali-INPUT`,
 * `cali-FORWARD`, `cali-OUTPUT`; raw `PREROUTING`/`OUTPUT` → `cali-PREROUTING`, `cali-OUTPUT`;
 * mangle `PREROUTING`/`POSTROUTING` → `cali-PREROUTING`, `cali-POSTROUTING`. Appended to the
 * kernel's FORWARD: ACCEPT what policy accepted, then set the accept mark on everything else
 * that falls through (forwarded traffic: mangle `cali-POSTROUTING` then skips host policy).
 *
 * filter:
 * - `cali-FORWARD`: clear the marks but accept; unless raw/mangle accepted it →
 *   `cali-from-hep-forward`; `-i <wl>+ → cali-from-wl-dispatch`; `-o <wl>+ →
 *   cali-to-wl-dispatch`; `→ cali-to-hep-forward`. (Felix's `cali-cidr-block` is not here:
 *   Tessera programs no service loop prevention.)
 * - `cali-INPUT`: `-i <wl>+ → goto cali-wl-to-host` (workload egress policy, then
 *   DefaultEndpointToHostAction — so host endpoint ingress policy never applies to workload →
 *   host traffic); accept-mark → ACCEPT; clear the marks; `→ cali-from-host-endpoint`;
 *   accept-mark → ACCEPT.
 * - `cali-OUTPUT`: accept-mark → ACCEPT; `-o <wl>+ → RETURN` (host → local workload is never
 *   policed); clear the marks; not DNAT'd → `cali-to-host-endpoint`; accept-mark → ACCEPT.
 *   (DNAT'd packets get their egress host policy in mangle POSTROUTING, where the outgoing
 *   interface is final.)
 * - `cali-wl-to-host`, and `cali-failsafe-in`/`-out` (failsafes.ts).
 * mangle:
 * - `cali-PREROUTING`: established → ACCEPT; raw accepted → ACCEPT;
 *   `→ cali-from-host-endpoint` (preDNAT policy); accept-mark → ACCEPT.
 * - `cali-POSTROUTING`: accept-mark (forwarded) → RETURN; clear the marks; DNAT'd →
 *   `cali-to-host-endpoint`; accept-mark → RETURN.
 * - the failsafe chains.
 * raw:
 * - `cali-PREROUTING` and `cali-rpf-skip` (anti-spoofing.ts, ending with the untracked
 *   `cali-from-host-endpoint`);
 * - `cali-OUTPUT`: clear the marks; `→ cali-to-host-endpoint`; accept-mark → ACCEPT;
 * - the failsafe chains with their reverse entries.
 *
 * No IPIP/VXLAN/WireGuard allow rules: Tessera programs no encapsulation.
 */
import { rawChains, rawKernelHooks as antiSpoofingHooks, type RpfSkip } from './anti-spoofing.ts';
import { ACCEPT, RETURN, clearMark, goTo, jump, setMark, type Action } from './action.ts';
import type { Chain, ChainRule, KernelHooks } from './chain.ts';
import {
  CHAIN_FILTER_FORWARD,
  CHAIN_FILTER_INPUT,
  CHAIN_FILTER_OUTPUT,
  CHAIN_FROM_HEP_FORWARD,
  CHAIN_FROM_HOST_ENDPOINT,
  CHAIN_FROM_WL_DISPATCH,
  CHAIN_MANGLE_POSTROUTING,
  CHAIN_MANGLE_PREROUTING,
  CHAIN_RAW_OUTPUT,
  CHAIN_TO_HEP_FORWARD,
  CHAIN_TO_HOST_ENDPOINT,
  CHAIN_TO_WL_DISPATCH,
  CHAIN_WL_TO_HOST,
} from './chain-names.ts';
import { failsafeChains, type FailsafeConfig } from './failsafes.ts';
import { MARK_ACCEPT, MARK_ALL_CALICO } from './marks.ts';
import { ANY, type Match } from './match.ts';
import { MatchBuilder, protocolToken } from './match-builder.ts';

export interface StaticChainConfig {
  readonly ipVersion: 4 | 6;
  /** Workload interface prefixes (Felix `InterfacePrefix`). */
  readonly prefixes: readonly string[];
  /** The last rule of `cali-wl-to-host` (DefaultEndpointToHostAction). */
  readonly toHostAction: Action;
  readonly failsafes: FailsafeConfig;
}

/**
 * ICMPv6 types a workload may always send to the node, ahead of its egress policy (Felix
 * `filterWorkloadToHostChain`): multicast listener query, report and done (130–132), router
 * solicitation (133), neighbour solicitation and advertisement (135, 136). The node is every
 * pod's IPv6 next hop: without neighbour discovery a pod cannot resolve it (nor answer the
 * node's solicitations), and no IPv6 packet leaves the pod — whatever the policy says.
 */
const ICMPV6_WORKLOAD_TO_HOST_TYPES: readonly number[] = [130, 131, 132, 133, 135, 136];

const ACCEPTED: Match = new MatchBuilder().markSet(MARK_ACCEPT).build();
const NOT_ACCEPTED: Match = new MatchBuilder().markClear(MARK_ACCEPT).build();
const CLEAR_ALL: ChainRule = { match: ANY, action: clearMark(MARK_ALL_CALICO) };
const ACCEPT_IF_ACCEPTED: ChainRule = { match: ACCEPTED, action: ACCEPT };
const HOST_POLICY_ACCEPTED: ChainRule = { match: ACCEPTED, action: ACCEPT, comments: ['Host endpoint policy accepted packet.'] };

const fromWorkload = (p: string): Match => new MatchBuilder().inInterface(`${p}+`).build();
const toWorkload = (p: string): Match => new MatchBuilder().outInterface(`${p}+`).build();

/** The hooks from the kernel's filter chains into ours, and FORWARD's two appended rules. */
export function filterKernelHooks(): KernelHooks[] {
  return [
    { chain: 'INPUT', inserts: [{ match: ANY, action: jump(CHAIN_FILTER_INPUT) }], appends: [] },
    {
      chain: 'FORWARD',
      inserts: [{ match: ANY, action: jump(CHAIN_FILTER_FORWARD) }],
      appends: [
        { match: ACCEPTED, action: ACCEPT, comments: ['Policy explicitly accepted packet.'] },
        // Marks forwarded packets, so mangle POSTROUTING applies no host endpoint policy to them.
        { match: ANY, action: setMark(MARK_ACCEPT) },
      ],
    },
    { chain: 'OUTPUT', inserts: [{ match: ANY, action: jump(CHAIN_FILTER_OUTPUT) }], appends: [] },
  ];
}

/** `cali-FORWARD`, `cali-INPUT`, `cali-OUTPUT`, `cali-wl-to-host` and the failsafe chains. */
export function filterStaticChains(cfg: StaticChainConfig): Chain[] {
  const forward: ChainRule[] = [
    { match: ANY, action: clearMark(MARK_ALL_CALICO & ~MARK_ACCEPT) },
    { match: NOT_ACCEPTED, action: jump(CHAIN_FROM_HEP_FORWARD) },
  ];
  for (const p of cfg.prefixes) {
    forward.push({ match: fromWorkload(p), action: jump(CHAIN_FROM_WL_DISPATCH), comments: ['From workload to anywhere'] });
    forward.push({ match: toWorkload(p), action: jump(CHAIN_TO_WL_DISPATCH), comments: ['From anywhere to workload'] });
  }
  forward.push({ match: ANY, action: jump(CHAIN_TO_HEP_FORWARD) });

  const input: ChainRule[] = cfg.prefixes.map((p) => ({ match: fromWorkload(p), action: goTo(CHAIN_WL_TO_HOST) }));
  input.push(ACCEPT_IF_ACCEPTED, CLEAR_ALL, { match: ANY, action: jump(CHAIN_FROM_HOST_ENDPOINT) }, HOST_POLICY_ACCEPTED);

  const output: ChainRule[] = [ACCEPT_IF_ACCEPTED];
  for (const p of cfg.prefixes) output.push({ match: toWorkload(p), action: RETURN, comments: ['Host to local workload is always allowed'] });
  output.push(CLEAR_ALL, { match: new MatchBuilder().notConntrackState('DNAT').build(), action: jump(CHAIN_TO_HOST_ENDPOINT) }, HOST_POLICY_ACCEPTED);

  const wlToHost: ChainRule[] = [];
  if (cfg.ipVersion === 6) {
    for (const type of ICMPV6_WORKLOAD_TO_HOST_TYPES) wlToHost.push({ match: new MatchBuilder().protocol(protocolToken('icmpv6', 6)).icmp({ type }, 6).build(), action: ACCEPT });
  }
  wlToHost.push({ match: ANY, action: jump(CHAIN_FROM_WL_DISPATCH) });
  wlToHost.push({ match: ANY, action: cfg.toHostAction, comments: ['Configured DefaultEndpointToHostAction'] });
  return [
    { name: CHAIN_FILTER_FORWARD, rules: forward },
    { name: CHAIN_FILTER_INPUT, rules: input },
    { name: CHAIN_FILTER_OUTPUT, rules: output },
    { name: CHAIN_WL_TO_HOST, rules: wlToHost },
    ...failsafeChains('filter', cfg.ipVersion, cfg.failsafes),
  ];
}

/** The hooks from the kernel's mangle chains into ours. */
export function mangleKernelHooks(): KernelHooks[] {
  return [
    { chain: 'PREROUTING', inserts: [{ match: ANY, action: jump(CHAIN_MANGLE_PREROUTING) }], appends: [] },
    { chain: 'POSTROUTING', inserts: [{ match: ANY, action: jump(CHAIN_MANGLE_POSTROUTING) }], appends: [] },
  ];
}

/** Mangle `cali-PREROUTING`, `cali-POSTROUTING` and the failsafe chains (Felix's mangle allow action: ACCEPT). */
export function mangleStaticChains(cfg: StaticChainConfig): Chain[] {
  const prerouting: ChainRule[] = [
    { match: new MatchBuilder().conntrackState('RELATED', 'ESTABLISHED').build(), action: ACCEPT },
    ACCEPT_IF_ACCEPTED,
    { match: ANY, action: jump(CHAIN_FROM_HOST_ENDPOINT) },
    HOST_POLICY_ACCEPTED,
  ];
  const postrouting: ChainRule[] = [
    { match: ACCEPTED, action: RETURN },
    CLEAR_ALL,
    { match: new MatchBuilder().conntrackState('DNAT').build(), action: jump(CHAIN_TO_HOST_ENDPOINT) },
    { match: ACCEPTED, action: RETURN, comments: ['Host endpoint policy accepted packet.'] },
  ];
  return [
    ...failsafeChains('mangle', cfg.ipVersion, cfg.failsafes),
    { name: CHAIN_MANGLE_PREROUTING, rules: prerouting },
    { name: CHAIN_MANGLE_POSTROUTING, rules: postrouting },
  ];
}

/** The hooks from the kernel's raw chains into ours. */
export function rawKernelHooks(): KernelHooks[] {
  return [...antiSpoofingHooks(), { chain: 'OUTPUT', inserts: [{ match: ANY, action: jump(CHAIN_RAW_OUTPUT) }], appends: [] }];
}

/** Raw `cali-PREROUTING`, `cali-rpf-skip` (anti-spoofing.ts), `cali-OUTPUT` and the failsafe chains. */
export function rawStaticChains(cfg: StaticChainConfig, skips: readonly RpfSkip[] = []): Chain[] {
  const output: ChainRule[] = [CLEAR_ALL, { match: ANY, action: jump(CHAIN_TO_HOST_ENDPOINT) }, ACCEPT_IF_ACCEPTED];
  return [...failsafeChains('raw', cfg.ipVersion, cfg.failsafes), ...rawChains(cfg.ipVersion, cfg.prefixes, skips), { name: CHAIN_RAW_OUTPUT, rules: output }];
}
