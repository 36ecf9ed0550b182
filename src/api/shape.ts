/**
 * Type checks of single values, shared by the validators: objects loaded from YAML are
 * `unknown` until checked, so every field read goes through one of these and a wrong type
 * becomes a finding (`spec.order: must be a number, not a string`) rather than an exception.
 * Which fields an object may have comes from the schema declaration (schema-fields.ts).
 *
 * `null` counts as absent, as it does for optional fields in the Kubernetes API
 * (`selector:` with nothing after it in YAML is null).
 */
import type { FieldErrorCollector } from './field-error.ts';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** "a string", "a list", "an object"… for "must be X, not Y" messages. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}

export function expectRecord(c: FieldErrorCollector, path: string, value: unknown): value is Record<string, unknown> {
  if (isRecord(value)) return true;
  c.error(path, `must be an object, not ${describeType(value)}`);
  return false;
}

export function expectString(c: FieldErrorCollector, path: string, value: unknown): value is string {
  if (typeof value === 'string') return true;
  c.error(path, `must be a string, not ${describeType(value)}`);
  return false;
}

export function expectBoolean(c: FieldErrorCollector, path: string, value: unknown): value is boolean {
  if (typeof value === 'boolean') return true;
  c.error(path, `must be true or false, not ${describeType(value)}`);
  return false;
}

export function expectNumber(c: FieldErrorCollector, path: string, value: unknown): value is number {
  if (typeof value === 'number' && Number.isFinite(value)) return true;
  c.error(path, `must be a number, not ${describeType(value)}`);
  return false;
}

/** A list, with an optional maximum length (the CRD's `MaxItems`). */
export function expectArray(
  c: FieldErrorCollector,
  path: string,
  value: unknown,
  maxItems?: number,
): value is unknown[] {
  if (!Array.isArray(value)) {
    c.error(path, `must be a list, not ${describeType(value)}`);
    return false;
  }
  if (maxItems !== undefined && value.length > maxItems) {
    c.error(path, `has ${value.length} items; at most ${maxItems} are allowed`);
  }
  return true;
}

/** A map of string to string (labels, annotations); reports non-string values. */
export function expectStringMap(
  c: FieldErrorCollector,
  path: string,
  value: unknown,
): value is Record<string, string> {
  if (!expectRecord(c, path, value)) return false;
  let ok = true;
  // for…in, not Object.entries: this runs on every object's labels, and the pairs are garbage.
  for (const k in value) {
    if (!Object.prototype.hasOwnProperty.call(value, k)) continue;
    const v = value[k];
    if (typeof v !== 'string') {
      c.error(`${path}[${JSON.stringify(k)}]`, `must be a string, not ${describeType(v)}`);
      ok = false;
    }
  }
  return ok;
}
