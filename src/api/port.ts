/**
 * Rule ports, with Calico's `numorstring.Port` semantics.
 *
 * In YAML a port is written as a number (`80`), a string of digits (`"80"`), a range
 * `"min:max"` (inclusive, min ≤ max) or a named port matching `^[a-zA-Z0-9_.-]{1,128}$`,
 * which Felix resolves per endpoint through named-port IP sets. Port numbers are 1–65535:
 * Calico parses 0 as a number and its validator then rejects it, so both layers agree.
 *
 * A named port is then checked as Calico's validator checks it: `numorstring.Port.PortName`
 * carries `validate:"portName"`, Kubernetes' IsValidPortName (an IANA service name: 1–15 of
 * lower-case letters, digits and '-', at least one letter, no leading, trailing or double
 * '-'). So `"HTTP"`, `"my_port"` and `"a.b"` parse as names but are rejected, as Calico rejects
 * them. `"80-90"` is one of those (it has no letter); its message suggests the range syntax.
 */
import { isValidEndpointPortName } from './names.ts';
import { failed, parsed, show } from './parse-result.ts';
import type { ParseResult } from './parse-result.ts';

export const MIN_PORT = 1;
export const MAX_PORT = 65535;

/** A numeric port range (a single port has min === max) or a named port. */
export type Port =
  | { readonly kind: 'range'; readonly min: number; readonly max: number }
  | { readonly kind: 'named'; readonly name: string };

// numorstring: allDigits, portRange, nameRegex.
const allDigits = /^\d+$/;
const portRange = /^(\d+):(\d+)$/;
const portNameRegex = /^[a-zA-Z0-9_.-]{1,128}$/;
const dashedRange = /^(\d+)-(\d+)$/;

function inRange(n: number): boolean {
  return Number.isInteger(n) && n >= MIN_PORT && n <= MAX_PORT;
}

/** Parses a port as written in a v3 rule (`ports` / `notPorts` entries). */
export function parsePort(value: unknown): ParseResult<Port> {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return failed(`${value} is not a port number`);
    if (!inRange(value)) return failed(`port ${value} is out of range (${MIN_PORT}-${MAX_PORT})`);
    return parsed({ kind: 'range', min: value, max: value });
  }
  if (typeof value !== 'string') {
    return failed(`${show(value)} is not a port (use a number, a "min:max" range or a port name)`);
  }
  if (allDigits.test(value)) {
    const n = Number(value);
    if (!inRange(n)) return failed(`port ${value} is out of range (${MIN_PORT}-${MAX_PORT})`);
    return parsed({ kind: 'range', min: n, max: n });
  }
  const range = portRange.exec(value);
  if (range !== null) {
    const min = Number(range[1]);
    const max = Number(range[2]);
    if (!inRange(min) || !inRange(max)) {
      return failed(`port range ${show(value)} is out of range (${MIN_PORT}-${MAX_PORT})`);
    }
    if (min > max) return failed(`port range ${show(value)} has min greater than max`);
    return parsed({ kind: 'range', min, max });
  }
  const dashed = dashedRange.exec(value);
  if (dashed !== null) {
    return failed(`${show(value)} is not a port or a range (use "${dashed[1]}:${dashed[2]}")`);
  }
  if (!portNameRegex.test(value)) {
    return failed(
      `${show(value)} is not a port, a "min:max" range or a port name (names match ^[a-zA-Z0-9_.-]{1,128}$)`,
    );
  }
  if (!isValidEndpointPortName(value)) {
    return failed(
      `${show(value)} is not a valid port name (1-15 of lower-case letters, digits and '-', with at least one letter, no leading, trailing or double '-')`,
    );
  }
  return parsed({ kind: 'named', name: value });
}

/** The YAML form of a port: a number for a single port, `"min:max"`, or the name. */
export function formatPort(port: Port): number | string {
  if (port.kind === 'named') return port.name;
  return port.min === port.max ? port.min : `${port.min}:${port.max}`;
}

/** True for a numeric port or range (which needs a TCP, UDP or SCTP protocol on the rule). */
export function isNumericPort(port: Port): port is Extract<Port, { kind: 'range' }> {
  return port.kind === 'range';
}
