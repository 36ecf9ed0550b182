/**
 * A schema node of the declaration (schema.ts) as a CRD's OpenAPI v3 node: the plain JSON
 * Schema keys TypeBox already holds, without its symbols, in one fixed key order so the
 * generated YAML is stable (and byte-identical to the CRDs published before the schema was
 * declared once). A key this module does not know is an error, not silently dropped: the
 * apiserver would read it, so the generator must say what it emits.
 */
import type { TSchema } from '@sinclair/typebox';

export type OpenApiNode = { [key: string]: unknown };

/** The key order of an int-or-string node (controller-gen's). */
const INT_OR_STRING_ORDER = ['description', 'x-kubernetes-int-or-string', 'anyOf', 'minimum', 'maximum', 'maxLength', 'pattern'];

/** The key order of every other node. */
const ORDER = [
  'type',
  'description',
  'properties',
  'items',
  'additionalProperties',
  'enum',
  'default',
  'format',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'required',
  'minProperties',
  'maxProperties',
  'minItems',
  'maxItems',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
  'x-kubernetes-preserve-unknown-fields',
];

const KNOWN = new Set([...ORDER, ...INT_OR_STRING_ORDER]);

/** `schema` as an OpenAPI node (a fresh tree: the result shares nothing with the declaration). */
export function toOpenApi(schema: TSchema | OpenApiNode, path = ''): OpenApiNode {
  const node = schema as OpenApiNode;
  for (const key of Object.keys(node)) {
    if (!KNOWN.has(key)) throw new RangeError(`toOpenApi: ${path || '(root)'}: no OpenAPI rendering for schema key ${JSON.stringify(key)}`);
  }
  const order = node['x-kubernetes-int-or-string'] === true ? INT_OR_STRING_ORDER : ORDER;
  const out: OpenApiNode = {};
  for (const key of order) {
    const value = node[key];
    if (value === undefined) continue;
    switch (key) {
      case 'properties':
        out[key] = Object.fromEntries(
          Object.entries(value as Record<string, TSchema>).map(([k, v]) => [k, toOpenApi(v, `${path}.${k}`)]),
        );
        break;
      case 'items':
      case 'additionalProperties':
        out[key] = toOpenApi(value as TSchema, `${path}[]`);
        break;
      default:
        out[key] = structuredClone(value);
    }
  }
  return out;
}
