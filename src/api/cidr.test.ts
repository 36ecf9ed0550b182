import { describe, expect, it } from 'vitest';
import { CidrParseError, cidrContains, formatIP, isCanonicalIPv4HostCidr, normaliseCidr, parseCidr, parseCidrUncached, parseIP } from './cidr.ts';

describe('normaliseCidr', () => {
  it.each([
    ['10.1.2.3/16', '10.1.0.0/16'],
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['192.168.1.77/31', '192.168.1.76/31'],
    ['10.0.0.1', '10.0.0.1/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['255.255.255.255/1', '128.0.0.0/1'],
  ])('clears IPv4 host bits: %s → %s', (input, want) => {
    expect(normaliseCidr(input)).toBe(want);
  });

  it.each([
    ['2001:DB8::1/32', '2001:db8::/32'],
    ['2001:0db8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329/128'],
    ['fd00::1234:5678/120', 'fd00::1234:5600/120'],
    ['::', '::/128'],
    ['::1', '::1/128'],
    ['::/0', '::/0'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1/128'],
    ['fe80:0:0:1:0:0:0:1', 'fe80:0:0:1::1/128'],
    ['1:0:2:0:3:0:4:0', '1:0:2:0:3:0:4:0/128'],
    ['64:ff9b::192.0.2.33/96', '64:ff9b::/96'],
  ])('canonicalises IPv6 (RFC 5952) and clears host bits: %s → %s', (input, want) => {
    expect(normaliseCidr(input)).toBe(want);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0/-1', '10.0.0/8', '300.1.1.1', 'fe80::1%eth0', 'garbage', ''])(
    'throws CidrParseError for %j',
    (input) => {
      expect(() => normaliseCidr(input)).toThrow(CidrParseError);
    },
  );
});

/**
 * Go's own readings (`net.ParseCIDR` + `IPNet.String()`, Calico's `cnet.ParseCIDROrIP`), each
 * checked against Go: its `net`/`netip` parsing is the same in 1.24.6 (Calico v3.30's) and 1.26.
 */
describe('parseCidr reads text exactly as Go does', () => {
  it.each([
    // Prefix lengths: decimal with any number of leading zeros (Go's dtoi).
    ['10.0.0.0/08', '10.0.0.0/8'],
    ['10.1.0.0/016', '10.1.0.0/16'],
    ['10.0.0.0/0000000000000000000000008', '10.0.0.0/8'],
    ['fd00::/0064', 'fd00::/64'],
    // IPv4-mapped IPv6: the 128-bit mask first; a network that is still mapped is IPv4.
    ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
    ['::ffff:10.1.2.3/120', '10.1.2.0/24'],
    ['::ffff:10.0.0.0/96', '0.0.0.0/0'],
    ['::ffff:10.0.0.0/95', '::fffe:0:0/95'],
    ['::ffff:10.0.0.0/64', '::/64'],
    ['::ffff:0a00:0001/128', '10.0.0.1/32'],
    ['::ffff:10.1.2.3', '10.1.2.3/32'],
    // An ellipsis may stand for a single zero group; hex digits in either case.
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0/128'],
    ['FD00:0:0:0:0:0:0:1/64', 'fd00::/64'],
  ])('%s → %s', (input, want) => {
    expect(normaliseCidr(input)).toBe(want);
  });

  it.each([
    ['010.0.0.0/8', 'IPv4 field has octet with leading zero'],
    ['10.0.0.01', 'IPv4 field has octet with leading zero'],
    ['::ffff:010.0.0.0/104', 'IPv4 field has octet with leading zero'],
    ['00001::/16', 'each group must have 4 or less digits'],
    ['1:2:3:4:5:6:7:8::', 'the :: must expand to at least one field of zeros'],
    ['1::2::3', 'multiple :: in address'],
    ['1:2:3:4:5:6:1.2.3.4:5', 'unexpected character'],
    ['1:2:3:4:5:1.2.3.4', 'embedded IPv4 address must replace the final 2 fields of the address'],
    ['fe80::1%eth0/64', 'an IPv6 zone is not an address'],
    ['10.0.0.0/+8', 'invalid prefix length'],
    ['10.0.0.0/8 ', 'invalid prefix length'],
    ['10.0.0.0/', 'invalid prefix length'],
    ['10.0.0.0/104', 'invalid prefix length (IPv4 allows 0-32)'],
  ])('rejects %j (%s)', (input, why) => {
    const r = parseCidr(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(why);
  });

  it('an IPv4-mapped network is IPv4, with its prefix in IPv4 bits', () => {
    expect(parseCidr('::ffff:10.0.0.0/104')).toMatchObject({ ok: true, value: { version: 4, prefixLength: 8, hasHostBits: false } });
    expect(parseCidr('::ffff:10.0.0.0/64')).toMatchObject({ ok: true, value: { version: 6, prefixLength: 64, hasHostBits: true } });
  });
});

describe('parseCidr', () => {
  it('reports the written address, the network and whether host bits were set', () => {
    expect(parseCidr('10.1.2.3/16')).toMatchObject({
      ok: true,
      value: {
        version: 4,
        prefixLength: 16,
        address: '10.1.2.3',
        network: '10.1.0.0/16',
        hasHostBits: true,
        isAddress: false,
      },
    });
    expect(parseCidr('2001:db8::1')).toMatchObject({
      ok: true,
      value: { version: 6, prefixLength: 128, hasHostBits: false, isAddress: true },
    });
  });

  it('explains a bad prefix length per family', () => {
    expect(parseCidr('10.0.0.0/40')).toEqual({
      ok: false,
      message: '"10.0.0.0/40" has an invalid prefix length (IPv4 allows 0-32)',
    });
  });

  it('rejects non-strings', () => {
    expect(parseCidr(10)).toEqual({ ok: false, message: '10 is not a CIDR or IP address' });
  });
});

describe('parseIP / formatIP', () => {
  it('round-trips addresses through bytes', () => {
    for (const text of ['1.2.3.4', '2001:db8::1', '::', 'fe80::1:2']) {
      const r = parseIP(text);
      if (!r.ok) throw new Error(r.message);
      expect(formatIP(r.value.bytes)).toBe(text);
    }
  });

  it('reads an IPv4-mapped address as IPv4 (Go: IP.To4)', () => {
    const r = parseIP('::ffff:10.1.2.3');
    expect(r).toMatchObject({ ok: true, value: { version: 4 } });
    if (r.ok) expect(formatIP(r.value.bytes)).toBe('10.1.2.3');
  });

  it('rejects CIDRs and zones where a plain address is wanted', () => {
    expect(parseIP('10.0.0.0/8').ok).toBe(false);
    expect(parseIP('fe80::1%eth0').ok).toBe(false);
  });
});

describe('cidrContains', () => {
  const net = (s: string) => {
    const r = parseCidr(s);
    if (!r.ok) throw new Error(r.message);
    return r.value;
  };
  it('is true for addresses and sub-networks inside, false otherwise', () => {
    expect(cidrContains(net('10.0.0.0/8'), '10.9.9.9')).toBe(true);
    expect(cidrContains(net('10.0.0.0/8'), '10.1.0.0/16')).toBe(true);
    expect(cidrContains(net('10.1.0.0/16'), '10.0.0.0/8')).toBe(false);
    expect(cidrContains(net('10.0.0.0/8'), '11.0.0.1')).toBe(false);
    expect(cidrContains(net('10.0.0.0/8'), '::1')).toBe(false);
  });
});

describe('parseCidr IPv4 fast path', () => {
  it('gives the general parse for random and edge-case IPv4 text, canonical or not', () => {
    const texts = ['0.0.0.0', '0.0.0.0/0', '255.255.255.255/32', '10.1.2.3/16', '10.1.2.3/8', '10.0.0.1', '1.2.3.4/0', '1.2.3.4/33', '01.2.3.4', '1.2.3.4/08', '1.2.3.4/', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1.2.3.4/32 ', ' 1.2.3.4', '1..2.3', '1.2.3.4/3a', '1.2.3.04/24', '1.2.3.4//24'];
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let k = 0; k < 20000; k++) {
      const octet = (): string => (rand(10) === 0 ? `0${rand(30)}` : String(rand(10) === 0 ? 250 + rand(10) : rand(256)));
      const prefix = rand(4) === 0 ? '' : `/${rand(8) === 0 ? `0${rand(9)}` : rand(36)}`;
      texts.push(`${octet()}.${octet()}.${octet()}.${octet()}${prefix}`);
    }
    for (const t of texts) expect(parseCidr(t), t).toEqual(parseCidrUncached(t));
  });
});

describe('isCanonicalIPv4HostCidr', () => {
  it.each(['10.0.0.1/32', '0.0.0.0/32', '255.255.255.255/32', '192.168.100.9/32', '1.22.133.244/32'])('%s: a /32 parseCidr reads as its own network', (text) => {
    expect(isCanonicalIPv4HostCidr(text)).toBe(true);
    const r = parseCidr(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toMatchObject({ version: 4, prefixLength: 32, network: text, address: text.slice(0, -3), hasHostBits: false, isAddress: false });
  });

  it.each(['10.0.0.1', '10.0.0.1/31', '10.0.0.0/24', '010.0.0.1/32', '10.0.0.01/32', '256.0.0.1/32', '10.0.0.1/032', '10.0.0.1/32\n', ' 10.0.0.1/32', '10.0.0/32', '::1/128', '::ffff:10.0.0.1/128', ''])(
    '%j: not one (the general path judges it)',
    (text) => {
      expect(isCanonicalIPv4HostCidr(text)).toBe(false);
    },
  );
});
