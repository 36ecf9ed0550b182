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
import * as crypto from 'node:crypto';
import { ruleTail, type IptablesRule } from './chain.ts';

/** Felix `HashLength = 16` (96 bits): base64 of the first 12 digest bytes. */
export const RULE_HASH_LENGTH = 16;

/** The hash comment value of every rule of `chainName`, in order. */
export function ruleHashes(chainName: string, rules: readonly IptablesRule[]): string[] {
  return hashRuleTails(chainName, rules.map(ruleTail));
}

/** `ruleHashes` over pre-rendered rule tails (see `ruleTail`), so callers render each rule once. */
export function hashRuleTails(chainName: string, tails: readonly string[]): string[] {
  let prev = sha224(Buffer.from(chainName));
  const out: string[] = new Array<string>(tails.length);
  for (let i = 0; i < tails.length; i++) {
    const tail = tails[i]!;
    const text = tail === '' ? `-A ${chainName} HASH` : `-A ${chainName} HASH ${tail}`;
    // hᵢ₋₁ ‖ renderᵢ in one (pooled) buffer: one-shot hashing avoids a Hash object per rule,
    // which dominated GC time at 100k rules.
    const buf = Buffer.allocUnsafe(SHA224_BYTES + Buffer.byteLength(text));
    prev.copy(buf, 0);
    buf.write(text, SHA224_BYTES);
    prev = sha224(buf);
    out[i] = prev.toString('base64url', 0, 12);
  }
  return out;
}

const SHA224_BYTES = 28;

type OneShotHash = (algorithm: string, data: Buffer, outputEncoding: 'buffer') => Buffer;
/** Node ≥ 20.12 has `crypto.hash` (one-shot, no object); fall back to `createHash`. */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;
function sha224(data: Buffer): Buffer {
  return oneShot !== undefined ? oneShot('sha224', data, 'buffer') : crypto.createHash('sha224').update(data).digest();
}
