/**
 * The shallow tree of dispatch chains Felix builds from interface names (`dispatch.go`
 * `sortAndDivideEndpointNamesToPrefixTree`, `buildSingleDispatchChainTree`), shared by the
 * workload (`cali-from-wl-dispatch`) and host endpoint (`cali-from-host-endpoint`) dispatch.
 *
 * Every packet walks its dispatch chain at roughly 1 µs a rule, so it is a tree rather than one
 * list: names are sorted, deduplicated and binned by their first character after the common
 * prefix of all names; a bin of one becomes a rule in the root chain, a larger bin a wildcard
 * rule (`-i cali1+ -g cali-from-wl-dispatch-1`) into a child chain `<root>-<char>` holding that
 * bin's names followed by the same end rules as the root (a `--goto` never comes back).
 * Children come before their root. The same set of names always renders the same chains.
 */
import { goTo, type Action } from './action.ts';
import type { Chain, ChainRule } from './chain.ts';
import type { Match } from './match.ts';
import { MatchBuilder } from './match-builder.ts';

/** The longest prefix all of `names` share ('' for none). */
function commonPrefix(names: readonly string[]): string {
  if (names.length === 0) return '';
  let prefix = names[0]!;
  for (const name of names) {
    let i = 0;
    while (i < prefix.length && i < name.length && prefix[i] === name[i]) i++;
    prefix = prefix.slice(0, i);
  }
  return prefix;
}

export interface DispatchTreeSpec {
  /** The root chain's name (children are `<root>-<char>`). */
  readonly root: string;
  /** Match on arriving (`in`) or leaving (`out`) by an interface. */
  readonly ifaceDir: 'in' | 'out';
  /** What a packet of interface `name` does (a `goto` to its endpoint chain). */
  readonly target: (name: string) => Action;
  /** The rules after the names, in the root and in every child. */
  readonly endRules: readonly ChainRule[];
}

/** The chains (children, then the root) dispatching `names` (see the module comment). */
export function dispatchTree(names: Iterable<string>, spec: DispatchTreeSpec): Chain[] {
  const sorted = [...new Set(names)].sort();
  const common = commonPrefix(sorted);
  const bins = new Map<string, string[]>();
  for (const name of sorted) {
    const key = name.slice(0, common.length + 1);
    const bin = bins.get(key);
    if (bin === undefined) bins.set(key, [name]);
    else bin.push(name);
  }
  const onInterface = (name: string): Match => (spec.ifaceDir === 'in' ? new MatchBuilder().inInterface(name) : new MatchBuilder().outInterface(name)).build();
  const toEndpoint = (name: string): ChainRule => ({ match: onInterface(name), action: spec.target(name) });
  const children: Chain[] = [];
  const rootRules: ChainRule[] = [];
  for (const [prefix, binNames] of bins) {
    if (binNames.length === 1) {
      rootRules.push(toEndpoint(binNames[0]!));
      continue;
    }
    const child = `${spec.root}-${prefix.slice(common.length)}`;
    rootRules.push({ match: onInterface(`${prefix}+`), action: goTo(child) });
    children.push({ name: child, rules: [...binNames.map(toEndpoint), ...spec.endRules] });
  }
  rootRules.push(...spec.endRules);
  return [...children, { name: spec.root, rules: rootRules }];
}
