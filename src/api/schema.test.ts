import { describe, expect, it } from 'vitest';
import { KINDS } from './kinds.ts';
import type { KindRow } from './kinds.ts';
import { KIND_SCHEMAS } from './schema.ts';
import { buildCrds } from './schema-crd.ts';
import { requiredInOrder, obj, opt, str } from './schema-node.ts';
import { toOpenApi } from './schema-openapi.ts';
import { ENTITY_RULE, RULE } from './schema-rule.ts';
import { validateResource } from './validation.ts';
import type { V3Kind } from './types.ts';
import { V3_KINDS } from './types.ts';

const envelope = (kind: V3Kind, spec: Record<string, unknown>) => ({
  apiVersion: 'projectcalico.org/v3',
  kind,
  metadata: { name: 'default', ...(kind === 'NetworkPolicy' || kind === 'WorkloadEndpoint' || kind === 'NetworkSet' ? { namespace: 'shop' } : {}) },
  spec,
});
const unknownFieldFindings = (o: unknown) => validateResource(o).filter((f) => f.message.startsWith('unknown field'));

describe('the schema declaration', () => {
  it('declares every enforced v3 kind, in the order validation names them', () => {
    expect(V3_KINDS).toEqual(['NetworkPolicy', 'GlobalNetworkPolicy', 'Tier', 'Profile', 'WorkloadEndpoint', 'NetworkSet', 'GlobalNetworkSet', 'HostEndpoint']);
  });

  it('has a CRD for every kind-table row that ships one, and only those', () => {
    const shipped = KINDS.filter((r: KindRow) => r.crd === true).map((r: KindRow) => `${r.plural}.${r.group}`);
    expect(buildCrds().map((c) => (c.crd['metadata'] as { name: string }).name)).toEqual(shipped);
  });

  it.each(V3_KINDS)('%s: validation accepts every spec field the CRD declares, and no other', (kind) => {
    for (const field of Object.keys(KIND_SCHEMAS[kind].spec.properties)) {
      expect(unknownFieldFindings(envelope(kind, { [field]: null })), field).toEqual([]);
    }
    expect(unknownFieldFindings(envelope(kind, { undeclared: 1 }))).toEqual([{ path: 'spec.undeclared', message: 'unknown field "undeclared"' }]);
  });

  it('validation accepts every Rule and EntityRule field the CRD declares, and no other', () => {
    const policy = (rule: Record<string, unknown>) => envelope('GlobalNetworkPolicy', { ingress: [rule] });
    for (const field of Object.keys(RULE.properties)) {
      expect(unknownFieldFindings(policy({ action: 'Allow', [field]: null })), field).toEqual([]);
    }
    for (const field of Object.keys(ENTITY_RULE.properties)) {
      expect(unknownFieldFindings(policy({ action: 'Allow', source: { [field]: null } })), field).toEqual([]);
    }
    expect(unknownFieldFindings(policy({ action: 'Allow', source: { net: [] } }))).toEqual([
      { path: 'spec.ingress[0].source.net', message: 'unknown field "net"' },
    ]);
  });
});

describe('toOpenApi', () => {
  it('renders keys in one fixed order and drops TypeBox symbols', () => {
    const node = toOpenApi(obj('d', { b: opt(str('b', { pattern: 'x', maxLength: 3 })), a: str('a') }));
    expect(JSON.stringify(node)).toBe(
      '{"type":"object","description":"d","properties":{"b":{"type":"string","description":"b","maxLength":3,"pattern":"x"},"a":{"type":"string","description":"a"}},"required":["a"]}',
    );
    expect(Object.getOwnPropertySymbols(node)).toEqual([]);
  });

  it('refuses a schema key it has no rendering for, naming where', () => {
    expect(() => toOpenApi(obj('d', { a: str('a', { examples: ['x'] }) }))).toThrow(/\.a: no OpenAPI rendering for schema key "examples"/);
  });
});

describe('requiredInOrder', () => {
  it('reorders the required list, and refuses anything but a reordering', () => {
    const s = obj('d', { a: str('a'), b: str('b') });
    expect(requiredInOrder(s, ['b', 'a']).required).toEqual(['b', 'a']);
    expect(() => requiredInOrder(s, ['a'])).toThrow(RangeError);
  });
});
