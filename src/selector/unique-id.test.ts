import { describe, expect, it } from 'vitest';
import { makeUniqueId } from './unique-id.ts';

describe('makeUniqueId (Calico hash.MakeUniqueID)', () => {
  it('is prefix + ":" + base64url_nopad(SHA-224(prefix + ":" + content))', () => {
    expect(makeUniqueId('s', 'all()')).toBe('s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug');
    expect(makeUniqueId('s', 'b == "b"')).toBe('s:8Fb8HeM2GAxsfgNYVjbNrgSZ2H4cZJI8ODNBVg');
  });
  it('produces 38 hash characters without padding for any prefix', () => {
    const id = makeUniqueId('svc', 'default/kubernetes');
    expect(id).toMatch(/^svc:[A-Za-z0-9_-]{38}$/);
  });
  it('hashes non-ASCII content as UTF-8', () => {
    expect(makeUniqueId('s', 'a == "é"')).not.toBe(makeUniqueId('s', 'a == "e"'));
    expect(makeUniqueId('s', 'a == "é"')).toBe(makeUniqueId('s', 'a == "\u00e9"'));
  });
});
