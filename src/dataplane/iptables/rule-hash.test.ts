import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACCEPT, DROP, clearMark } from '../action.ts';
import type { ChainRule } from '../chain.ts';
import { MatchBuilder } from '../match-builder.ts';
import { ANY } from '../match.ts';
import { hashRuleTails, ruleHashes, RULE_HASH_LENGTH } from './rule-hash.ts';

const rules: ChainRule[] = [
  { match: new MatchBuilder().conntrackState('RELATED', 'ESTABLISHED').build(), action: ACCEPT },
  { match: ANY, action: clearMark(0x30000) },
  { match: ANY, action: DROP, comments: ['Drop if no profiles matched'] },
];

describe('ruleHashes (dataplane.md §4)', () => {
  it('chains SHA-224 over the chain name and each rule in append form with HASH for the comment', () => {
    let prev = createHash('sha224').update('cali-tw-x').digest();
    const expected = [
      '-A cali-tw-x HASH -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A cali-tw-x HASH -j MARK --set-xmark 0x0/0x30000',
      '-A cali-tw-x HASH -m comment --comment "Drop if no profiles matched" -j DROP',
    ].map((line) => {
      prev = createHash('sha224').update(prev).update(line).digest();
      return prev.toString('base64url').slice(0, 16);
    });
    expect(ruleHashes('cali-tw-x', rules)).toEqual(expected);
  });

  it('gives 16-character base64url hashes', () => {
    for (const h of ruleHashes('cali-x', rules)) expect(h).toMatch(new RegExp(`^[A-Za-z0-9_-]{${RULE_HASH_LENGTH}}$`));
  });

  it('changes a rule hash and every hash below it, never the ones above', () => {
    const before = ruleHashes('cali-x', rules);
    const changed = [rules[0]!, { match: new MatchBuilder().protocol('tcp').build(), action: DROP }, rules[2]!];
    const after = ruleHashes('cali-x', changed);
    expect(after[0]).toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    expect(after[2]).not.toBe(before[2]);
  });

  it('depends on the chain name: the same rules in another chain hash differently', () => {
    expect(ruleHashes('cali-a', rules)[0]).not.toBe(ruleHashes('cali-b', rules)[0]);
  });

  it('gives identical rules at different positions different hashes', () => {
    const r: ChainRule = { match: ANY, action: DROP };
    const [a, b] = ruleHashes('cali-x', [r, r]);
    expect(a).not.toBe(b);
  });

  it('hashes rules of any length and any UTF-8 text as the plain definition does (the scratch buffer grows and keeps the prefix)', () => {
    const reference = (chain: string, tails: readonly string[]): string[] => {
      let prev = createHash('sha224').update(chain).digest();
      return tails.map((tail) => {
        prev = createHash('sha224').update(prev).update(tail === '' ? `-A ${chain} HASH` : `-A ${chain} HASH ${tail}`).digest();
        return prev.toString('base64url').slice(0, RULE_HASH_LENGTH);
      });
    };
    const tails = ['', '-j ACCEPT', 'x'.repeat(10_000), '-m comment --comment "é ✓ 𝄞" -j DROP', '', 'y'.repeat(50_000), '-j RETURN'];
    expect(hashRuleTails('cali-grow', tails)).toEqual(reference('cali-grow', tails));
    // After growing, a short chain again.
    expect(hashRuleTails('cali-pi-é', ['-j DROP'])).toEqual(reference('cali-pi-é', ['-j DROP']));
  });
});
