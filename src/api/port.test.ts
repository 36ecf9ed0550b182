import { describe, expect, it } from 'vitest';
import { formatPort, isNumericPort, parsePort } from './port.ts';

describe('parsePort', () => {
  it.each([
    [80, { kind: 'range', min: 80, max: 80 }],
    ['443', { kind: 'range', min: 443, max: 443 }],
    [1, { kind: 'range', min: 1, max: 1 }],
    [65535, { kind: 'range', min: 65535, max: 65535 }],
  ])('reads %j as a single port (min === max)', (input, want) => {
    expect(parsePort(input)).toEqual({ ok: true, value: want });
  });

  it('reads "min:max" as an inclusive range', () => {
    expect(parsePort('8000:8080')).toEqual({ ok: true, value: { kind: 'range', min: 8000, max: 8080 } });
  });

  it('accepts a range whose min equals its max', () => {
    expect(parsePort('80:80')).toEqual({ ok: true, value: { kind: 'range', min: 80, max: 80 } });
  });

  it('rejects a range whose min is greater than its max', () => {
    expect(parsePort('90:80')).toEqual({ ok: false, message: 'port range "90:80" has min greater than max' });
  });

  it.each([0, 65536, '0', '65536', '99999999999999999999'])('rejects out-of-range port %j', (input) => {
    expect(parsePort(input)).toEqual({ ok: false, message: `port ${input} is out of range (1-65535)` });
  });

  it.each(['0:10', '1:65536'])('rejects a range with an end out of range (%s)', (input) => {
    expect(parsePort(input)).toEqual({ ok: false, message: `port range "${input}" is out of range (1-65535)` });
  });

  it.each(['http', 'metrics-2', 'a', '9-http', 'x'.repeat(15)])('reads %s as a named port', (input) => {
    expect(parsePort(input)).toEqual({ ok: true, value: { kind: 'named', name: input } });
  });

  // Calico's numorstring.Port.PortName is validate:"portName" (Kubernetes IsValidPortName):
  // these parse as names in numorstring but Calico's validator rejects them.
  it.each(['my_port.v1', 'A', 'HTTP', 'a.b', 'x'.repeat(16), 'x'.repeat(128), '-http', 'http-', 'a--b', '123-456-7'])(
    'rejects %s, which is not a Kubernetes port name, as Calico does',
    (input) => {
      expect(parsePort(input)).toEqual({
        ok: false,
        message: `${JSON.stringify(input)} is not a valid port name (1-15 of lower-case letters, digits and '-', with at least one letter, no leading, trailing or double '-')`,
      });
    },
  );

  it('rejects a named port longer than 128 characters', () => {
    expect(parsePort('x'.repeat(129)).ok).toBe(false);
  });

  it.each(['bad name', 'p!', '', '80:', ':80', '80:90:100'])('rejects %j, which is neither a port, a range nor a name', (input) => {
    expect(parsePort(input)).toEqual({
      ok: false,
      message: `${JSON.stringify(input)} is not a port, a "min:max" range or a port name (names match ^[a-zA-Z0-9_.-]{1,128}$)`,
    });
  });

  it('rejects "80-90", which Calico would take as a name, and suggests the range syntax', () => {
    expect(parsePort('80-90')).toEqual({ ok: false, message: '"80-90" is not a port or a range (use "80:90")' });
  });

  it('rejects fractional numbers and non-scalar values', () => {
    expect(parsePort(80.5)).toEqual({ ok: false, message: '80.5 is not a port number' });
    expect(parsePort(true)).toEqual({
      ok: false,
      message: 'true is not a port (use a number, a "min:max" range or a port name)',
    });
    expect(parsePort({ port: 80 }).ok).toBe(false);
  });
});

describe('formatPort', () => {
  it('writes a single port as a number, a range as "min:max" and a name as itself', () => {
    expect(formatPort({ kind: 'range', min: 80, max: 80 })).toBe(80);
    expect(formatPort({ kind: 'range', min: 80, max: 90 })).toBe('80:90');
    expect(formatPort({ kind: 'named', name: 'http' })).toBe('http');
  });

  it('round-trips every accepted form', () => {
    for (const input of [80, '1:65535', 'http']) {
      const result = parsePort(input);
      if (!result.ok) throw new Error(result.message);
      expect(formatPort(result.value)).toBe(input);
    }
  });

  it('isNumericPort separates numeric ports from named ones', () => {
    expect(isNumericPort({ kind: 'range', min: 1, max: 2 })).toBe(true);
    expect(isNumericPort({ kind: 'named', name: 'dns' })).toBe(false);
  });
});
