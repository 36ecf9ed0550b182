/**
 * The vocabulary the projectcalico.org/v3 schema (schema.ts, schema-rule.ts) is declared in:
 * TypeBox schemas, so one declaration gives the TypeScript types (`Static<…>`), the CRDs'
 * OpenAPI (schema-openapi.ts) and the field sets validation checks against (schema-fields.ts).
 *
 * Why TypeBox and not a local declaration: its schemas *are* JSON Schema objects (what a CRD
 * holds) with the static type carried alongside, so the declaration needs no second, typed
 * form and no type-level inference of our own to maintain. Measured, not assumed:
 * - bundle: the six builders imported by name add ~3.1 kB to an esbuild --minify bundle of
 *   schema-crd.ts (26.6 → 29.8 kB); importing the `Type` namespace instead would add ~46 kB
 *   (a class, so nothing tree-shakes). A local declaration could save at most those ~3 kB.
 * - speed: only the builders are used. A compiled library checker would not pay: ajv on the
 *   generated CRD schema (types, unknown fields, patterns) checks the 50,000 WorkloadEndpoints
 *   of the calc-vs-Felix medium workload in ~19 ms of CPU, against ~55 ms for
 *   `validateResource` in the same process — the structure is the small part; CIDR parsing,
 *   name and label checks and selector parsing are the rest, and a second pass for the
 *   structure would only add to them. TypeBox's TypeCompiler cannot compile the `Unsafe` nodes below
 *   (int-or-string, typed enums) without registering custom kinds, and its messages
 *   ("Expected string") are not the ones users, goldens and the CLI see. So validation
 *   checks each object node against its declared field set (schema-fields.ts) in the one
 *   hand-written pass that also runs the semantic checks.
 *
 * Helpers here fix the few shapes Kubernetes needs that JSON Schema spells differently:
 * int-or-string, string maps (`additionalProperties`, not TypeBox's `patternProperties`),
 * string enums typed as unions, and CEL rules (`x-kubernetes-validations`).
 */
// Named builders, not the `Type` namespace: `Type` is a class whose every method esbuild must
// keep (~46 kB minified); the six builders used here tree-shake to a few kB.
import { Array as TArray, Boolean as TBoolean, Integer, Number as TNumber, Object as TObjectOf, Optional, String as TString, Unsafe } from '@sinclair/typebox';
import type { TArray as TArrayOf, TObject, TProperties, TSchema, TUnsafe } from '@sinclair/typebox';

/** Facets passed through to the OpenAPI node as they are (maxLength, pattern, enum, …). */
export type Facets = Record<string, unknown>;

/** One CEL rule on a node (`x-kubernetes-validations`), as the apiserver reads it. */
export interface CelRule {
  readonly rule: string;
  readonly message: string;
  readonly fieldPath?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export function cel(...rules: CelRule[]): Facets {
  return { 'x-kubernetes-validations': rules };
}

/** A regex as a CEL single-quoted string literal body (CEL rejects unknown escapes like `\.`). */
export function celRegex(re: string): string {
  return re.replace(/\\/g, '\\\\');
}

/** A string; an array's items go without a description. */
export function str(description: string | undefined, extra: Facets = {}): TSchema & { static: string } {
  return TString({ ...(description === undefined ? {} : { description }), ...extra });
}

/** A string restricted to `values`, typed as their union. */
export function strEnum<const V extends string>(description: string | undefined, values: readonly V[], extra: Facets = {}): TUnsafe<V> {
  return Unsafe<V>({ type: 'string', ...(description === undefined ? {} : { description }), enum: [...values], ...extra });
}

export function bool(description: string): TSchema & { static: boolean } {
  return TBoolean({ description });
}

export function int(description: string, extra: Facets = {}): TSchema & { static: number } {
  return Integer({ description, ...extra });
}

/** An integer restricted to `values`, typed as their union. */
export function intEnum<const V extends number>(description: string, values: readonly V[]): TUnsafe<V> {
  return Unsafe<V>({ type: 'integer', description, enum: [...values] });
}

export function num(description: string): TSchema & { static: number } {
  return TNumber({ description });
}

export function obj<P extends TProperties>(description: string, properties: P, extra: Facets = {}): TObject<P> {
  return TObjectOf(properties, { description, ...extra });
}

export function arr<T extends TSchema>(description: string | undefined, items: T, extra: Facets = {}): TArrayOf<T> {
  return TArray(items, { ...(description === undefined ? {} : { description }), ...extra });
}

/** A map of string to string (labels, annotations). */
export function stringMap(description: string): TUnsafe<Record<string, string>> {
  return Unsafe<Record<string, string>>({ type: 'object', description, additionalProperties: { type: 'string' } });
}

/**
 * An `x-kubernetes-int-or-string` node: no `type`, the anyOf form controller-gen emits. Integer
 * facets (`minimum`/`maximum`) apply to the integer, string facets (`pattern`) to the string.
 */
export function intOrString(description: string, extra: Facets = {}): TUnsafe<number | string> {
  return Unsafe<number | string>({
    description,
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    ...extra,
  });
}

/** An object the schema does not describe (ObjectMeta: the apiserver owns it). */
export function opaqueObject<T>(): TUnsafe<T> {
  return Unsafe<T>({ type: 'object' });
}

/**
 * `schema` with its `required` list in `order`. TypeBox lists required properties in
 * declaration order; the published CRDs list an endpoint port's as `[port, protocol]`, and
 * keeping that order keeps the generated YAML byte-identical.
 */
export function requiredInOrder<T extends TObject>(schema: T, order: readonly string[]): T {
  const have = [...(schema.required ?? [])].sort();
  if (JSON.stringify(have) !== JSON.stringify([...order].sort())) {
    throw new RangeError(`requiredInOrder: ${order.join(', ')} is not a reordering of ${have.join(', ')}`);
  }
  return { ...schema, required: [...order] };
}

export const opt = Optional;
