/**
 * Host endpoint dispatch chains (Felix `rules/dispatch.go` `hostDispatchChains`, as
 * `endpoint_mgr.go` `updateHostEndpoints` calls it; host-endpoints-and-services §A.5): each
 * interface with a host endpoint `--goto`s its chain (dispatch-tree.ts builds the tree); with a
 * `*` host endpoint the chains end in a `--goto` to its `any-interface-at-all` chain, otherwise
 * a packet of an interface no host endpoint claims returns unpoliced.
 *
 * | table  | chains                                            | interfaces                 | `*` default |
 * |--------|---------------------------------------------------|----------------------------|-------------|
 * | filter | `cali-from-host-endpoint`, `cali-to-host-endpoint`, `cali-from-hep-forward`, `cali-to-hep-forward` | every active one | yes |
 * | mangle | `cali-from-host-endpoint` (preDNAT)               | those with preDNAT tiers   | if `*` has preDNAT tiers |
 * | mangle | `cali-to-host-endpoint` (DNAT'd host egress)      | every active one           | yes, after "skip local workloads" |
 * | raw    | `cali-from-host-endpoint`, `cali-to-host-endpoint` | those with untracked tiers | never |
 *
 * The filter `cali-to-host-endpoint` needs no workload skip (Felix renders it with
 * `applyOnForward`, which drops it): `cali-OUTPUT` returns for `-o <wl>+` before it.
 */
import { RETURN, goTo } from './action.ts';
import type { Chain, ChainRule } from './chain.ts';
import {
  CHAIN_FROM_HEP_FORWARD,
  CHAIN_FROM_HOST_ENDPOINT,
  CHAIN_TO_HEP_FORWARD,
  CHAIN_TO_HOST_ENDPOINT,
  hostEndpointChainName,
  type HostEndpointChainKind,
} from './chain-names.ts';
import { dispatchTree } from './dispatch-tree.ts';
import { ANY } from './match.ts';
import { MatchBuilder } from './match-builder.ts';

/** Interfaces with a host endpoint chain, and the `*` one's pseudo-interface when it applies. */
export interface DispatchSet {
  readonly ifaces: readonly string[];
  /** `any-interface-at-all` when the `*` host endpoint is the default; undefined for none. */
  readonly defaultIface?: string | undefined;
}

const NO_SET: DispatchSet = { ifaces: [] };

function dispatch(root: string, ifaceDir: 'in' | 'out', kind: HostEndpointChainKind, set: DispatchSet, before: readonly ChainRule[] = []): Chain[] {
  const endRules: ChainRule[] = set.defaultIface === undefined ? [] : [...before, { match: ANY, action: goTo(hostEndpointChainName(set.defaultIface, kind)) }];
  return dispatchTree(set.ifaces, { root, ifaceDir, target: (i) => goTo(hostEndpointChainName(i, kind)), endRules });
}

/** The filter table's four dispatch chains (and their children) over `set`. */
export function filterHostDispatchChains(set: DispatchSet): Chain[] {
  return [
    ...dispatch(CHAIN_FROM_HOST_ENDPOINT, 'in', 'from-host', set),
    ...dispatch(CHAIN_TO_HOST_ENDPOINT, 'out', 'to-host', set),
    ...dispatch(CHAIN_FROM_HEP_FORWARD, 'in', 'from-host-forward', set),
    ...dispatch(CHAIN_TO_HEP_FORWARD, 'out', 'to-host-forward', set),
  ];
}

/**
 * The mangle table's `cali-from-host-endpoint` over `preDnat` and `cali-to-host-endpoint` over
 * `all`, whose `*` default is skipped for packets to local workloads (`prefixes`).
 */
export function mangleHostDispatchChains(preDnat: DispatchSet, all: DispatchSet, prefixes: readonly string[]): Chain[] {
  const skip: ChainRule[] = prefixes.map((p) => ({
    match: new MatchBuilder().outInterface(`${p}+`).build(),
    action: RETURN,
    comments: ['Skip egress WHEP policy for traffic to local workload'],
  }));
  return [...dispatch(CHAIN_FROM_HOST_ENDPOINT, 'in', 'from-host', preDnat), ...dispatch(CHAIN_TO_HOST_ENDPOINT, 'out', 'to-host', all, skip)];
}

/** The raw table's dispatch chains over the interfaces with untracked policy (never `*`). */
export function rawHostDispatchChains(ifaces: readonly string[]): Chain[] {
  const set = { ifaces };
  return [...dispatch(CHAIN_FROM_HOST_ENDPOINT, 'in', 'from-host', set), ...dispatch(CHAIN_TO_HOST_ENDPOINT, 'out', 'to-host', set)];
}

/** A table's dispatch chains with no host endpoint at all (what the static chains start with). */
export function hostDispatchChains(table: 'filter' | 'mangle' | 'raw', prefixes: readonly string[]): Chain[] {
  if (table === 'filter') return filterHostDispatchChains(NO_SET);
  if (table === 'mangle') return mangleHostDispatchChains(NO_SET, NO_SET, prefixes);
  return rawHostDispatchChains([]);
}
