import { describe, expect, it } from 'vitest';

import type { V3Resource } from '../api/types.ts';
import { decodeUpdate, parseUpdateKey, serializeUpdate, updateKey, wouldBeNoOp } from './serialized-update.ts';

const np = (rv: string, selector = 'all()'): V3Resource =>
  ({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'x', resourceVersion: rv }, spec: { selector } }) as V3Resource;

describe('SerializedUpdate', () => {
  it('keys are <kind>/<namespace>/<name>, namespace empty for cluster-scoped kinds, and parse back', () => {
    expect(updateKey('NetworkPolicy', 'x', 'p')).toBe('NetworkPolicy/x/p');
    expect(updateKey('Tier', undefined, 'security')).toBe('Tier//security');
    expect(parseUpdateKey('Tier//security')).toEqual({ kind: 'Tier', name: 'security' });
    expect(parseUpdateKey('NetworkPolicy/x/p')).toEqual({ kind: 'NetworkPolicy', namespace: 'x', name: 'p' });
    for (const bad of ['', 'Tier', 'Tier/', '/x/p', 'Tier//']) expect(parseUpdateKey(bad)).toBeUndefined();
  });

  it('carries the resourceVersion beside the value, and decodes to the same resource', () => {
    const s = serializeUpdate({ op: 'upsert', resource: np('41') });
    expect(s).toMatchObject({ key: 'NetworkPolicy/x/p', resourceVersion: '41', updateType: 'new' });
    expect(s.value).not.toContain('41');
    expect(decodeUpdate(s)).toEqual({ op: 'upsert', resource: np('41') });
  });

  it('an upsert of a live key is updated; a delete has a null value and decodes to a delete by key', () => {
    const first = serializeUpdate({ op: 'upsert', resource: np('1') });
    expect(serializeUpdate({ op: 'upsert', resource: np('2') }, first).updateType).toBe('updated');
    const del = serializeUpdate({ op: 'delete', kind: 'NetworkPolicy', namespace: 'x', name: 'p' }, first);
    expect(del).toEqual({ key: 'NetworkPolicy/x/p', value: null, resourceVersion: '', updateType: 'deleted' });
    expect(decodeUpdate(del)).toEqual({ op: 'delete', kind: 'NetworkPolicy', namespace: 'x', name: 'p' });
    expect(serializeUpdate({ op: 'upsert', resource: np('3') }, del).updateType).toBe('new');
  });

  it('an update equal but for its resourceVersion is a no-op; so is deleting an absent key', () => {
    const a = serializeUpdate({ op: 'upsert', resource: np('1') });
    expect(wouldBeNoOp(a, serializeUpdate({ op: 'upsert', resource: np('2') }, a))).toBe(true);
    expect(wouldBeNoOp(a, serializeUpdate({ op: 'upsert', resource: np('2', 'app == "x"') }, a))).toBe(false);
    const del = serializeUpdate({ op: 'delete', kind: 'NetworkPolicy', namespace: 'x', name: 'p' });
    expect(wouldBeNoOp(undefined, del)).toBe(true);
    expect(wouldBeNoOp(a, del)).toBe(false);
  });

  it('a value that is not a resource is a TypeError, not a crash later', () => {
    expect(() => decodeUpdate({ key: 'NetworkPolicy/x/p', value: '42', resourceVersion: '', updateType: 'new' })).toThrow(TypeError);
    expect(() => decodeUpdate({ key: 'NetworkPolicy/x/p', value: '{', resourceVersion: '', updateType: 'new' })).toThrow(SyntaxError);
    expect(() => decodeUpdate({ key: 'bad', value: null, resourceVersion: '', updateType: 'deleted' })).toThrow(TypeError);
  });
});
