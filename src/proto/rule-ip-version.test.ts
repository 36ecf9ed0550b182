import { describe, expect, it } from 'vitest';
import { makeRule, type Rule } from './dataplane-messages.ts';
import { filterRuleToIpVersion, ruleOmittedFromFamily, type IpFamily } from './rule-ip-version.ts';

type NetField = 'srcNets' | 'notSrcNets' | 'dstNets' | 'notDstNets';
type Contents = 'v4-only' | 'v6-only' | 'mixed';

const FIELDS: readonly NetField[] = ['srcNets', 'notSrcNets', 'dstNets', 'notDstNets'];
const CONTENTS: readonly Contents[] = ['v4-only', 'v6-only', 'mixed'];
const IP_VERSIONS: ReadonlyArray<IpFamily | undefined> = [4, 6, undefined];
const FAMILIES: readonly IpFamily[] = [4, 6];

const V4 = '10.0.0.0/8';
const V6 = 'fd00::/64';
const listOf = (c: Contents): string[] => (c === 'v4-only' ? [V4] : c === 'v6-only' ? [V6] : [V4, V6]);

/**
 * The table, written out from Felix's `FilterRuleToIPVersion`/`filterNets` (felix/rules/policy.go):
 * a rule is dropped for a family when its ipVersion is the other one, or when any non-empty CIDR
 * list — negated or not — keeps no entry of the family; otherwise each list keeps its family's
 * entries.
 */
function felixExpectation(contents: Contents, ipVersion: IpFamily | undefined, family: IpFamily): string[] | undefined {
  if (ipVersion !== undefined && ipVersion !== family) return undefined;
  if (contents === 'v4-only') return family === 4 ? [V4] : undefined;
  if (contents === 'v6-only') return family === 6 ? [V6] : undefined;
  return family === 4 ? [V4] : [V6];
}

describe('filterRuleToIpVersion: Felix FilterRuleToIPVersion for every nets/notNets × src/dst × family mix × ipVersion', () => {
  for (const field of FIELDS) {
    for (const contents of CONTENTS) {
      for (const ipVersion of IP_VERSIONS) {
        for (const family of FAMILIES) {
          const expected = felixExpectation(contents, ipVersion, family);
          it(`${field}: ${contents}, ipVersion ${ipVersion ?? 'absent'}, IPv${family} → ${expected === undefined ? 'omitted' : expected.join(',')}`, () => {
            const rule = makeRule({ action: 'allow', [field]: listOf(contents), ...(ipVersion === undefined ? {} : { ipVersion }) });
            const filtered = filterRuleToIpVersion(rule, family);
            if (expected === undefined) {
              expect(filtered).toBeUndefined();
              expect(ruleOmittedFromFamily(rule, family)).toBeTypeOf('string');
            } else {
              expect(filtered?.[field]).toEqual(expected);
              expect(ruleOmittedFromFamily(rule, family)).toBeUndefined();
            }
          });
        }
      }
    }
  }

  it("the audit's input: an Allow with source.notNets [fd00::/64] is not in the IPv4 table (and is, unchanged, in the IPv6 one)", () => {
    const rule = makeRule({ action: 'allow', notSrcNets: ['fd00::/64'] });
    expect(filterRuleToIpVersion(rule, 4)).toBeUndefined();
    expect(ruleOmittedFromFamily(rule, 4)).toBe('source notNets: fd00::/64 is IPv6; the rule is not rendered for IPv4');
    expect(filterRuleToIpVersion(rule, 6)).toBe(rule);
  });

  it('every list is checked on its own: a kept positive list does not save a negated list of the other family', () => {
    const rule = makeRule({ action: 'allow', srcNets: [V4, V6], notDstNets: ['fd00:1::/64'] });
    expect(filterRuleToIpVersion(rule, 4)).toBeUndefined();
    expect(filterRuleToIpVersion(rule, 6)).toMatchObject({ srcNets: [V6], notDstNets: ['fd00:1::/64'] });
  });

  it("a negated catch-all of the family omits the rule for that family only (Felix isCatchAllCIDR)", () => {
    const rule = makeRule({ action: 'deny', notSrcNets: ['0.0.0.0/0', V6] });
    expect(filterRuleToIpVersion(rule, 4)).toBeUndefined();
    expect(filterRuleToIpVersion(rule, 6)).toMatchObject({ notSrcNets: [V6] });
    expect(filterRuleToIpVersion(makeRule({ action: 'deny', srcNets: ['0.0.0.0/0'] }), 4)).toMatchObject({ srcNets: ['0.0.0.0/0'] });
  });

  it('returns the same rule object when nothing is filtered (no copy on the render path)', () => {
    const rule: Rule = makeRule({ action: 'allow', srcNets: [V4], notDstNets: ['10.1.0.0/16'] });
    expect(filterRuleToIpVersion(rule, 4)).toBe(rule);
  });
});
