/**
 * Calico's generic content-derived ID (`libcalico-go/lib/hash/unique_id.go`, `MakeUniqueID`):
 * `prefix + ":" + base64url_nopad(SHA-224(prefix + ":" + content))`.
 *
 * SHA-224 gives 28 bytes, i.e. 38 base64url characters, so every ID is `prefix:` plus 38
 * characters. The calc graph uses these IDs as IP set identities (selector sets `s:`, named
 * ports `n:`, services `svc:`), and the kernel set name is derived from them, so they must
 * match Calico's byte for byte. Content is hashed as UTF-8, as Go hashes its strings.
 */
import { createHash } from 'node:crypto';

export function makeUniqueId(prefix: string, content: string): string {
  const digest = createHash('sha224').update(`${prefix}:${content}`, 'utf8').digest('base64url');
  return `${prefix}:${digest}`;
}
