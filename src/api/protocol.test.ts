import { describe, expect, it } from 'vitest';
import { formatProtocol, isICMPv4, isICMPv6, parseProtocol, PROTOCOL_NAMES, supportsPorts } from './protocol.ts';

describe('parseProtocol', () => {
  it.each([
    ['TCP', 6],
    ['UDP', 17],
    ['ICMP', 1],
    ['ICMPv6', 58],
    ['SCTP', 132],
    ['UDPLite', 136],
  ] as const)('reads the name %s as protocol number %i', (name, number) => {
    expect(parseProtocol(name)).toEqual({ ok: true, value: { number, name } });
  });

  it('reads numbers 1-255, given as numbers or digit strings', () => {
    expect(parseProtocol(1)).toEqual({ ok: true, value: { number: 1 } });
    expect(parseProtocol(255)).toEqual({ ok: true, value: { number: 255 } });
    expect(parseProtocol('47')).toEqual({ ok: true, value: { number: 47 } });
  });

  it.each([0, 256, '0', '300', -1])('rejects protocol number %j', (n) => {
    expect(parseProtocol(n)).toEqual({ ok: false, message: `protocol ${n} is out of range (1-255)` });
  });

  it('rejects a lower-case name, as Calico does, and names the right spelling', () => {
    expect(parseProtocol('tcp')).toEqual({
      ok: false,
      message: 'protocol "tcp" is not valid: names are case-sensitive (use "TCP")',
    });
    expect(parseProtocol('icmpv6')).toMatchObject({ ok: false, message: expect.stringContaining('"ICMPv6"') });
  });

  it('rejects unknown names with the list of valid forms', () => {
    expect(parseProtocol('GRE')).toEqual({
      ok: false,
      message: '"GRE" is not a protocol (use TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255)',
    });
  });
});

describe('protocol properties', () => {
  const p = (v: string | number) => {
    const r = parseProtocol(v);
    if (!r.ok) throw new Error(r.message);
    return r.value;
  };

  it('only TCP, UDP and SCTP (6, 17, 132) support ports, by name or number', () => {
    const withPorts = PROTOCOL_NAMES.filter((n) => supportsPorts(p(n)));
    expect(withPorts).toEqual(['TCP', 'UDP', 'SCTP']);
    expect([6, 17, 132, 1, 58].map((n) => supportsPorts(p(n)))).toEqual([true, true, true, false, false]);
  });

  it('recognises ICMP and ICMPv6 by number too', () => {
    expect(isICMPv4(p(1))).toBe(true);
    expect(isICMPv6(p(58))).toBe(true);
    expect(isICMPv4(p('ICMPv6'))).toBe(false);
  });

  it('formats a protocol the way it was written', () => {
    expect(formatProtocol(p('TCP'))).toBe('TCP');
    expect(formatProtocol(p(6))).toBe(6);
  });
});

describe('parseProtocol: named results are shared', () => {
  it('returns one frozen result per name, equal to a fresh parse', () => {
    const a = parseProtocol('TCP');
    expect(parseProtocol(JSON.parse('"TCP"') as string)).toBe(a);
    expect(a).toEqual({ ok: true, value: { number: 6, name: 'TCP' } });
    expect(Object.isFrozen(a)).toBe(true);
    if (a.ok) expect(Object.isFrozen(a.value)).toBe(true);
    expect(parseProtocol('tcp').ok).toBe(false);
    expect(parseProtocol('6')).toEqual({ ok: true, value: { number: 6 } });
  });
});
