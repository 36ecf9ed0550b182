import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCidr, RuleRenderError } from './match-builder.ts';

/** What parseCidr must decide for a dotted address, by net.isIP (Go and Node agree on IPv4). */
function reference(addr: string): 4 | 6 | 'error' {
  const fam = isIP(addr);
  return fam === 4 || fam === 6 ? fam : 'error';
}

function decided(addr: string): 4 | 6 | 'error' {
  try {
    return parseCidr(addr).family;
  } catch (e) {
    if (e instanceof RuleRenderError) return 'error';
    throw e;
  }
}

describe('parseCidr', () => {
  it.each([
    ['10.0.0.1', 4],
    ['0.0.0.0', 4],
    ['255.255.255.255', 4],
    ['256.0.0.1', 'error'],
    ['010.0.0.1', 'error'],
    ['1.2.3', 'error'],
    ['1.2.3.4.5', 'error'],
    ['1..3.4', 'error'],
    ['1.2.3.4.', 'error'],
    ['1.2.3.1000', 'error'],
    ['::ffff:1.2.3.4', 4], // Go: an IPv4-mapped address is IPv4 (IP.To4)
    ['fd00::1', 6],
  ] as const)('%s → %s', (addr, want) => {
    expect(decided(addr)).toBe(want);
  });

  it('agrees with net.isIP on arbitrary dotted strings', () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.stringMatching(/^[0-9]{0,4}$/));
    const dotted = fc.array(octet, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.'));
    fc.assert(fc.property(dotted, (addr) => decided(addr) === reference(addr)), { numRuns: 5_000 });
  });

  it('canonicalises a bare address to a host prefix and rejects bad lengths', () => {
    expect(parseCidr('10.1.2.3')).toEqual({ text: '10.1.2.3/32', family: 4 });
    expect(parseCidr('fd00::1/64')).toEqual({ text: 'fd00::/64', family: 6 });
    expect(() => parseCidr('10.0.0.0/33')).toThrow(RuleRenderError);
  });
});
