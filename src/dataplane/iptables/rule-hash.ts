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
import type { ChainRule } from '../chain.ts';
import { ruleTail } from './rule-text.ts';

/** Felix `HashLength = 16` (96 bits): base64 of the first 12 digest bytes. */
export const RULE_HASH_LENGTH = 16;

/** The hash comment value of every rule of `chainName`, in order. */
export function ruleHashes(chainName: string, rules: readonly ChainRule[]): string[] {
  return hashRuleTails(chainName, rules.map(ruleTail));
}

/** `ruleHashes` over pre-rendered rule tails (see `ruleTail`), so callers render each rule once. */
export function hashRuleTails(chainName: string, tails: readonly string[]): string[] {
  // hᵢ₋₁ ‖ "-A <chain> HASH" ‖ (" " ‖ tail) is assembled in one reused buffer: the chain's
  // prefix is written once, each tail in place after it, and each digest (as base64url) is
  // decoded back over the first 28 bytes. One-shot hashing into a string avoids a Hash object
  // and a fresh Buffer per rule, which dominated hashing and GC time at 100k rules.
  const prefix = `-A ${chainName} HASH`;
  let buf = reserve(SHA224_BYTES + 3 * prefix.length + 1, 0);
  buf.write(sha224(Buffer.from(chainName)), 0, 'base64url');
  const body = SHA224_BYTES + buf.write(prefix, SHA224_BYTES, 'utf8');
  buf[body] = SPACE;
  const out: string[] = new Array<string>(tails.length);
  for (let i = 0; i < tails.length; i++) {
    const tail = tails[i]!;
    let end = body;
    if (tail !== '') {
      // 3 bytes per UTF-16 unit bounds its UTF-8 length, so `write` never truncates.
      buf = reserve(body + 1 + 3 * tail.length, body + 1);
      end = body + 1 + (buf as unknown as RawBuffer).utf8Write(tail, body + 1, buf.length - body - 1);
    }
    const raw = buf as unknown as RawBuffer;
    raw.base64urlWrite(sha224(buf.subarray(0, end)), 0, SHA224_BYTES);
    // Re-encoded from the digest's first 12 bytes rather than sliced from the digest's text:
    // a slice keeps the whole 38-character digest alive for as long as the chain is programmed.
    out[i] = raw.base64urlSlice(0, RULE_HASH_BYTES);
  }
  return out;
}

const SHA224_BYTES = 28;
/** The digest bytes `RULE_HASH_LENGTH` base64 characters encode. */
const RULE_HASH_BYTES = (RULE_HASH_LENGTH / 4) * 3;

/**
 * What `Buffer#write` and `Buffer#toString` call after checking their arguments, called
 * directly in the per-rule loop (the checks cost as much as the copies).
 */
interface RawBuffer {
  utf8Write(text: string, offset: number, length: number): number;
  base64urlWrite(text: string, offset: number, length: number): number;
  base64urlSlice(start: number, end: number): string;
}
const SPACE = 0x20;

/** The shared scratch buffer, at least `size` bytes, its first `keep` bytes preserved. */
let scratch = Buffer.allocUnsafe(4096);
function reserve(size: number, keep: number): Buffer {
  if (size > scratch.length) {
    const grown = Buffer.allocUnsafe(Math.max(size, 2 * scratch.length));
    scratch.copy(grown, 0, 0, keep);
    scratch = grown;
  }
  return scratch;
}

type OneShotHash = (algorithm: string, data: Buffer, outputEncoding: 'base64url') => string;
/** Node ≥ 20.12 has `crypto.hash` (one-shot, no object); fall back to `createHash`. */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;
/** SHA-224 of `data`, base64url without padding (the first 16 characters encode the first 12 bytes). */
function sha224(data: Buffer): string {
  return oneShot !== undefined ? oneShot('sha224', data, 'base64url') : crypto.createHash('sha224').update(data).digest('base64url');
}
