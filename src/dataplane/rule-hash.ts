/**
 * Chained rule hashes (dataplane.md §4; Felix `generictables/rules.go`).
 *
 * `h₀ = SHA-224(chainName)`, `hᵢ = SHA-224(hᵢ₋₁ ‖ "-A <chain> HASH <rule>")`, and the comment is
 * `base64url(hᵢ)[0:16]`. Guarantees:
 * - a rule's hash covers its chain, its content and every rule above it, so comparing the hash
 *   lists read back from `iptables-save` with the desired ones finds the first difference
 *   without parsing rules;
 * - an unchanged prefix keeps its hashes, so those rules are not rewritten and keep their
 *   packet counters.
 */
import { createHash } from 'node:crypto';
import { ruleBody, type IptablesRule } from './chain.ts';

/** Felix `HashLength = 16` (96 bits). */
export const RULE_HASH_LENGTH = 16;

/** The hash comment value of every rule of `chainName`, in order. */
export function ruleHashes(chainName: string, rules: readonly IptablesRule[]): string[] {
  let prev = createHash('sha224').update(chainName).digest();
  const out: string[] = new Array<string>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const h = createHash('sha224');
    h.update(prev);
    h.update(`-A ${chainName} ${ruleBody(rules[i]!, 'HASH')}`);
    prev = h.digest();
    out[i] = prev.toString('base64url').slice(0, RULE_HASH_LENGTH);
  }
  return out;
}
