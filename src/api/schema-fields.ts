/**
 * The object shapes validation checks against, compiled once from the schema declaration
 * (schema.ts, schema-rule.ts) when this module loads: per object node of the declaration, the
 * set of fields it declares. validation.ts and rule-validation.ts check every object node of
 * every resource with these (`ObjectShape.check`: an object, and no undeclared field) instead
 * of field lists of their own, so a field added to the declaration is one the validator
 * accepts, and the CRD too.
 *
 * The semantic checks of each field (selectors, ports, CIDRs, names, combinations) stay
 * hand-written; they own their messages ("ipVersion must be 4 or 6, not 5"), which tests,
 * goldens and the CLI's output rely on.
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import { fieldPath } from './field-error.ts';
import type { FieldErrorCollector } from './field-error.ts';
import { HOST_ENDPOINT_SPEC, KIND_SCHEMAS, WORKLOAD_ENDPOINT_SPEC } from './schema.ts';
import { ENTITY_RULE, RULE } from './schema-rule.ts';
import { describeType, isRecord } from './shape.ts';
import type { V3Kind } from './types.ts';

/** One object node of the declaration, as validation checks it. */
export class ObjectShape {
  readonly #fields: ReadonlySet<string>;

  constructor(schema: TObject) {
    this.#fields = new Set(Object.keys(schema.properties));
  }

  /** Whether the node declares `field`. */
  has(field: string): boolean {
    return this.#fields.has(field);
  }

  /**
   * Reports `value` at `path` if it is not an object, and each of its keys the node does not
   * declare (strict field validation, as kubectl's), in the object's key order.
   */
  check(c: FieldErrorCollector, path: string, value: unknown): value is Record<string, unknown> {
    if (!isRecord(value)) {
      c.error(path, `must be an object, not ${describeType(value)}`);
      return false;
    }
    this.checkFields(c, path, value);
    return true;
  }

  /** Reports each key of `value` the node does not declare. */
  checkFields(c: FieldErrorCollector, path: string, value: Record<string, unknown>): void {
    // for…in, not Object.keys: this runs on every object node of every resource.
    for (const key in value) {
      if (!Object.prototype.hasOwnProperty.call(value, key) || this.#fields.has(key)) continue;
      c.error(fieldPath(path, key), `unknown field ${JSON.stringify(key)}`);
    }
  }
}

/** The object schema at `field` of `schema` (or of its list items with `items`). */
function objectAt(schema: TObject, field: string, { items = false } = {}): TObject {
  let node: TSchema | undefined = schema.properties[field];
  if (items) node = (node as { items?: TSchema } | undefined)?.items;
  if (node === undefined || (node as { type?: unknown }).type !== 'object' || (node as { properties?: unknown }).properties === undefined) {
    throw new RangeError(`schema-fields: ${field}${items ? '[]' : ''} is not an object node of the declaration`);
  }
  return node as TObject;
}

/** Each kind's `spec`. */
export const SPEC_SHAPES: Readonly<Record<V3Kind, ObjectShape>> = Object.fromEntries(
  Object.entries(KIND_SCHEMAS).map(([kind, s]) => [kind, new ObjectShape(s.spec)]),
) as Record<V3Kind, ObjectShape>;

export const RULE_SHAPE = new ObjectShape(RULE);
export const ENTITY_RULE_SHAPE = new ObjectShape(ENTITY_RULE);
export const ICMP_SHAPE = new ObjectShape(objectAt(RULE, 'icmp'));
export const RULE_METADATA_SHAPE = new ObjectShape(objectAt(RULE, 'metadata'));
export const HTTP_SHAPE = new ObjectShape(objectAt(RULE, 'http'));
export const HTTP_PATH_SHAPE = new ObjectShape(objectAt(objectAt(RULE, 'http'), 'paths', { items: true }));
export const SERVICE_ACCOUNTS_SHAPE = new ObjectShape(objectAt(ENTITY_RULE, 'serviceAccounts'));
export const SERVICES_SHAPE = new ObjectShape(objectAt(ENTITY_RULE, 'services'));
export const IPNAT_SHAPE = new ObjectShape(objectAt(WORKLOAD_ENDPOINT_SPEC, 'ipNATs', { items: true }));
export const ENDPOINT_PORT_SHAPE = new ObjectShape(objectAt(WORKLOAD_ENDPOINT_SPEC, 'ports', { items: true }));
export const HOST_ENDPOINT_PORT_SHAPE = new ObjectShape(objectAt(HOST_ENDPOINT_SPEC, 'ports', { items: true }));
