import { describe, expect, it } from 'vitest';
import { describeObject, isCalicoApiVersion, kindOf, objectKey, ObjectKeyError, UnsupportedResourceError } from './keys.ts';

describe('objectKey', () => {
  it('is namespace/name for namespaced objects and name for cluster-scoped ones', () => {
    expect(objectKey({ metadata: { name: 'web', namespace: 'shop' } })).toBe('shop/web');
    expect(objectKey({ metadata: { name: 'security' } })).toBe('security');
  });

  it('throws ObjectKeyError without a name', () => {
    expect(() => objectKey({ metadata: {} })).toThrow(ObjectKeyError);
    expect(() => objectKey({})).toThrow('object has no metadata.name');
  });
});

describe('describeObject', () => {
  it('prints Kind ns/name and never throws', () => {
    expect(describeObject({ kind: 'NetworkPolicy', metadata: { name: 'web', namespace: 'shop' } })).toBe('NetworkPolicy shop/web');
    expect(describeObject({ kind: 'Tier', metadata: {} })).toBe('Tier <unnamed>');
    expect(describeObject({})).toBe('object <unnamed>');
  });
});

describe('kindOf', () => {
  const v3 = (kind: string) => ({ apiVersion: 'projectcalico.org/v3', kind });

  it.each(['NetworkPolicy', 'GlobalNetworkPolicy', 'Tier', 'Profile', 'WorkloadEndpoint'])('recognises %s', (kind) => {
    expect(kindOf(v3(kind))).toBe(kind);
  });

  function reasonOf(obj: unknown): [string, string] {
    try {
      kindOf(obj);
    } catch (err) {
      if (err instanceof UnsupportedResourceError) return [err.reason, err.message];
      throw err;
    }
    throw new Error('kindOf did not throw');
  }

  it('rejects a Kubernetes NetworkPolicy as not a Calico resource', () => {
    expect(reasonOf({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' })).toEqual([
      'not-calico',
      'networking.k8s.io/v1 NetworkPolicy is not a projectcalico.org resource',
    ]);
  });

  it('rejects other versions of the Calico API, pointing crd.projectcalico.org users to v3', () => {
    expect(reasonOf({ apiVersion: 'crd.projectcalico.org/v1', kind: 'NetworkPolicy' })).toEqual([
      'unsupported-api-version',
      `unsupported apiVersion "crd.projectcalico.org/v1"; that is Calico's internal storage form — write projectcalico.org/v3 objects`,
    ]);
    expect(reasonOf({ apiVersion: 'projectcalico.org/v2', kind: 'Tier' })[0]).toBe('unsupported-api-version');
  });

  it('tells real Calico kinds Tessera does not read from typos', () => {
    expect(reasonOf(v3('IPPool'))[0]).toBe('unsupported-kind');
    expect(reasonOf(v3('networkpolicy'))).toEqual([
      'unknown-kind',
      'unknown kind "networkpolicy" in projectcalico.org/v3 (did you mean NetworkPolicy?)',
    ]);
    expect(reasonOf(v3('Frobnicator'))[1]).toContain('Tessera reads NetworkPolicy, GlobalNetworkPolicy, Tier, Profile, WorkloadEndpoint');
  });

  it('rejects non-objects and objects without apiVersion or kind', () => {
    expect(reasonOf('text')[0]).toBe('not-an-object');
    expect(reasonOf({ kind: 'Tier' })[1]).toBe('apiVersion is missing (expected projectcalico.org/v3)');
    expect(reasonOf({ apiVersion: 'projectcalico.org/v3' })[1]).toBe('kind is missing (apiVersion projectcalico.org/v3)');
  });

  it('isCalicoApiVersion matches the group and its subgroups only', () => {
    expect(isCalicoApiVersion('projectcalico.org/v3')).toBe(true);
    expect(isCalicoApiVersion('crd.projectcalico.org/v1')).toBe(true);
    expect(isCalicoApiVersion('notprojectcalico.org/v1')).toBe(false);
    expect(isCalicoApiVersion('v1')).toBe(false);
  });
});
