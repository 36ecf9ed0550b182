/**
 * Which rules apply to one IP family, and with which CIDRs (Felix `FilterRuleToIPVersion`,
 * `felix/rules/policy.go`). Every reader of a proto `Rule` that decides per family — the
 * dataplane renderer (one table per family) and the simulator's verdict engine — goes
 * through this one function, so what the kernel is given and what `simulate`/`explain` say
 * cannot disagree.
 *
 * A rule is omitted from a family's table (it can never match a packet of that family) when:
 * - its `ipVersion` is the other family;
 * - one of its four CIDR lists (`srcNets`, `notSrcNets`, `dstNets`, `notDstNets`) is
 *   non-empty and holds only CIDRs of the other family. This holds for the negated lists too:
 *   `notNets: [fd00::/64]` does not make an Allow match every IPv4 packet — Felix drops the
 *   whole rule from the IPv4 chain (its test "should skip with mixed negated source CIDR
 *   matches");
 * - a negated list holds this family's catch-all (`0.0.0.0/0`, `::/0`): the rule matches no
 *   packet of the family (Felix drops it rather than render a contradiction).
 *
 * Otherwise the rule applies with each CIDR list reduced to this family's entries: a list of
 * both families (`nets: [10.0.0.0/8, fd00::/8]`) matches in both tables.
 *
 * The family of a CIDR is read as Felix reads it: IPv6 when its text contains `:`.
 */
import { makeRule, type Rule } from './dataplane-messages.ts';

export type IpFamily = 4 | 6;

type NetField = 'srcNets' | 'notSrcNets' | 'dstNets' | 'notDstNets';

const NET_FIELDS: ReadonlyArray<{ readonly field: NetField; readonly negated: boolean; readonly what: string }> = [
  { field: 'srcNets', negated: false, what: 'source nets' },
  { field: 'notSrcNets', negated: true, what: 'source notNets' },
  { field: 'dstNets', negated: false, what: 'destination nets' },
  { field: 'notDstNets', negated: true, what: 'destination notNets' },
];

/** Whether `cidr` is of `family` (Felix: IPv6 when the text contains `:`). */
export function cidrIsFamily(cidr: string, family: IpFamily): boolean {
  return cidr.includes(':') === (family === 6);
}

/** The whole address space of `family` (any prefix with length 0). */
function isCatchAll(cidr: string): boolean {
  return cidr.endsWith('/0');
}

/**
 * Why `rule` is not in `family`'s table, or undefined when it is. The reason names the field,
 * for `explain`.
 */
export function ruleOmittedFromFamily(rule: Rule, family: IpFamily): string | undefined {
  if (rule.ipVersion !== undefined && rule.ipVersion !== family) return `ipVersion: rule is IPv${rule.ipVersion}, packet is IPv${family}`;
  for (const { field, negated, what } of NET_FIELDS) {
    const nets = rule[field];
    if (nets.length === 0) continue;
    let ofFamily = 0;
    for (const n of nets) {
      if (!cidrIsFamily(n, family)) continue;
      if (negated && isCatchAll(n)) return `${what}: ${n} excludes every IPv${family} address; the rule is not rendered for IPv${family}`;
      ofFamily++;
    }
    if (ofFamily === 0) return `${what}: ${nets.join(', ')} ${nets.length === 1 ? 'is' : 'are all'} IPv${family === 4 ? 6 : 4}; the rule is not rendered for IPv${family}`;
  }
  return undefined;
}

/** `nets` reduced to `family`'s entries (the same array when nothing is dropped). */
export function netsOfFamily(nets: readonly string[], family: IpFamily): readonly string[] {
  for (const n of nets) if (!cidrIsFamily(n, family)) return nets.filter((x) => cidrIsFamily(x, family));
  return nets;
}

/**
 * `rule` as `family`'s table holds it: undefined when {@link ruleOmittedFromFamily} omits it,
 * else the rule with its CIDR lists reduced to the family (the same object when every CIDR is
 * of the family already, the common case: no copy).
 */
export function filterRuleToIpVersion(rule: Rule, family: IpFamily): Rule | undefined {
  if (ruleOmittedFromFamily(rule, family) !== undefined) return undefined;
  const srcNets = netsOfFamily(rule.srcNets, family);
  const notSrcNets = netsOfFamily(rule.notSrcNets, family);
  const dstNets = netsOfFamily(rule.dstNets, family);
  const notDstNets = netsOfFamily(rule.notDstNets, family);
  if (srcNets === rule.srcNets && notSrcNets === rule.notSrcNets && dstNets === rule.dstNets && notDstNets === rule.notDstNets) return rule;
  return makeRule({ ...rule, srcNets, notSrcNets, dstNets, notDstNets });
}
