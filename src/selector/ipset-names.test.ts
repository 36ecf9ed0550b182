import { describe, expect, it } from 'vitest';
import { ipSetName, MAX_IPSET_NAME_LENGTH, namedPortIpSetId } from './ipset-names.ts';
import { parseSelector } from './parser.ts';

describe('namedPortIpSetId', () => {
  it('pins all(), tcp, tcpport to n:RMAIMXhhyW5sWWm_0o9euzK6TlyAbtjf6Ta9Jw', () => {
    expect(namedPortIpSetId(parseSelector('all()'), 'tcp', 'tcpport')).toBe('n:RMAIMXhhyW5sWWm_0o9euzK6TlyAbtjf6Ta9Jw');
  });
  it('depends on the protocol and the port name', () => {
    const sel = parseSelector('all()');
    const ids = new Set([
      namedPortIpSetId(sel, 'tcp', 'http'),
      namedPortIpSetId(sel, 'udp', 'http'),
      namedPortIpSetId(sel, 'any', 'http'),
      namedPortIpSetId(sel, 'tcp', 'https'),
    ]);
    expect(ids.size).toBe(4);
  });
});

describe('ipSetName', () => {
  it.each([
    ['s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug', 'cali40s:5y5I3VdRZfDU01O--xXAPx2'],
    ['s:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q', 'cali40s:Iss0uCleLYv1GSv_pNm7hAO'],
    ['n:RMAIMXhhyW5sWWm_0o9euzK6TlyAbtjf6Ta9Jw', 'cali40n:RMAIMXhhyW5sWWm_0o9euzK'],
  ])('names the IPv4 set for %s %s (§1.7 examples)', (id, name) => {
    expect(ipSetName(id, 4)).toBe(name);
    expect(name).toHaveLength(MAX_IPSET_NAME_LENGTH);
  });
  it('uses cali60 for IPv6', () => {
    expect(ipSetName('s:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug', 6)).toBe('cali60s:5y5I3VdRZfDU01O--xXAPx2');
  });
  it('does not pad short IDs', () => {
    expect(ipSetName('x', 4)).toBe('cali40x');
  });
  it('rejects an IP version other than 4 or 6', () => {
    expect(() => ipSetName('x', 5 as 4)).toThrow(RangeError);
  });
});
