/**
 * The outcome of parsing one user-written value (a port, a protocol, a CIDR).
 *
 * Parsers in `src/api` never throw on bad input: validation wants every problem, so a
 * failure is data — a message written for the user, without the field path, which the
 * caller knows and prepends.
 */
export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly message: string };

export function parsed<T>(value: T): ParseResult<T> {
  return { ok: true, value };
}

export function failed<T = never>(message: string): ParseResult<T> {
  return { ok: false, message };
}

/** Renders a user-supplied value for a message: strings quoted, everything else as JSON. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    const json = JSON.stringify(value);
    return json.length > 60 ? `${json.slice(0, 57)}...` : json;
  } catch {
    return String(value);
  }
}
