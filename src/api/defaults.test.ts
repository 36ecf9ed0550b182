import { describe, expect, it } from 'vitest';
import { applyDefaults, defaultPolicyTypes, withDefaults } from './defaults.ts';
import type { V3Resource } from './types.ts';
import type { GlobalNetworkPolicy, NetworkPolicy, Profile, Rule, Tier } from './types.ts';

const allow: Rule = { action: 'Allow' };

function policy(spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'ns' }, spec };
}

describe('policy types defaulting (calico-semantics §4.3)', () => {
  it.each([
    ['no rules at all', {}, ['Ingress']],
    ['ingress rules only', { ingress: [allow] }, ['Ingress']],
    ['egress rules only', { egress: [allow] }, ['Egress']],
    ['both ingress and egress rules', { ingress: [allow], egress: [allow] }, ['Ingress', 'Egress']],
    ['empty rule lists', { ingress: [], egress: [] }, ['Ingress']],
    ['empty ingress list and egress rules', { ingress: [], egress: [allow] }, ['Egress']],
  ])('%s → %j', (_name, spec, want) => {
    expect(applyDefaults(policy(spec)).spec.types).toEqual(want);
    expect(defaultPolicyTypes(spec)).toEqual(want);
  });

  it('treats an empty types list as absent', () => {
    expect(applyDefaults(policy({ types: [], egress: [allow] })).spec.types).toEqual(['Egress']);
  });

  it('keeps types that are given, even when they disagree with the rules present', () => {
    expect(applyDefaults(policy({ types: ['Egress'], ingress: [allow] })).spec.types).toEqual(['Egress']);
  });

  it('defaults GlobalNetworkPolicy types the same way', () => {
    const gnp: GlobalNetworkPolicy = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'g' },
      spec: { egress: [allow] },
    };
    expect(applyDefaults(gnp).spec).toEqual({ tier: 'default', types: ['Egress'], egress: [allow] });
  });
});

describe('tier defaulting', () => {
  it('puts a policy without a tier in the default tier', () => {
    expect(applyDefaults(policy({})).spec.tier).toBe('default');
    expect(applyDefaults(policy({ tier: '' })).spec.tier).toBe('default');
  });

  it('keeps an explicit tier', () => {
    expect(applyDefaults(policy({ tier: 'security' })).spec.tier).toBe('security');
  });

  it('gives a Tier without defaultAction the default action Deny, and keeps Pass', () => {
    const tier: Tier = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 't' }, spec: { order: 10 } };
    expect(applyDefaults(tier).spec).toEqual({ order: 10, defaultAction: 'Deny' });
    expect(applyDefaults({ ...tier, spec: { defaultAction: 'Pass' } }).spec.defaultAction).toBe('Pass');
  });

  it('does not invent a Tier order (nil order sorts last)', () => {
    const tier: Tier = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 't' }, spec: {} };
    expect(applyDefaults(tier).spec.order).toBeUndefined();
  });
});

describe('applyDefaults', () => {
  it('does not mutate its input and returns a fresh object', () => {
    const input = policy({ ingress: [allow] });
    const frozen = structuredClone(input);
    const out = applyDefaults(input);
    expect(input).toEqual(frozen);
    expect(out).not.toBe(input);
    expect(out.spec.ingress).not.toBe(input.spec.ingress);
  });

  it('is idempotent', () => {
    const once = applyDefaults(policy({ egress: [allow] }));
    expect(applyDefaults(once)).toEqual(once);
  });

  it('fills in namespace "default" for a namespaced object without one, as kubectl does', () => {
    const np: NetworkPolicy = { ...policy({}), metadata: { name: 'p' } };
    expect(applyDefaults(np).metadata.namespace).toBe('default');
  });

  it('leaves a missing spec missing (the CRD requires one; validation reports it)', () => {
    const np = { ...policy({}), spec: undefined } as unknown as NetworkPolicy;
    expect(applyDefaults(np).spec).toBeUndefined();
  });

  it('leaves profiles unchanged and tolerates a malformed spec', () => {
    const profile: Profile = { apiVersion: 'projectcalico.org/v3', kind: 'Profile', metadata: { name: 'kns.a' }, spec: { ingress: [allow] } };
    expect(applyDefaults(profile)).toEqual(profile);
    const broken = { ...policy({}), spec: 'nonsense' } as unknown as NetworkPolicy;
    expect(applyDefaults(broken).spec).toBe('nonsense');
  });
});

describe('withDefaults: applyDefaults without the deep copy', () => {
  const cases: [string, unknown][] = [
    ['a policy with tier and types', policy({ tier: 't', types: ['Ingress'], ingress: [allow] })],
    ['a policy with neither', policy({ ingress: [allow], egress: [allow] })],
    ['a policy with an empty tier and null types', policy({ tier: '', types: null as unknown as [], egress: [allow] })],
    ['a policy without a namespace', { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p' }, spec: { tier: 'default', types: ['Egress'] } }],
    ['a policy with an empty namespace and no spec', { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: '' } }],
    ['a policy whose spec is not an object', { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'a' }, spec: [] }],
    ['a GlobalNetworkPolicy with a namespace', { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'g', namespace: '' }, spec: { types: [] } }],
    ['a Tier without defaultAction', { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 't' }, spec: { order: 1 } }],
    ['a Tier with one', { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 't' }, spec: { defaultAction: 'Pass' } }],
    ['a WorkloadEndpoint without a namespace', { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: { name: 'w' }, spec: {} }],
    ['a WorkloadEndpoint whose metadata is not an object', { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: 'x' }],
    ['a Profile', { apiVersion: 'projectcalico.org/v3', kind: 'Profile', metadata: { name: 'p' }, spec: {} }],
  ];
  it.each(cases)('%s: equal to applyDefaults, input untouched, unchanged parts shared', (_name, input) => {
    const before = structuredClone(input);
    const out = withDefaults(input as V3Resource);
    expect(out).toEqual(applyDefaults(input as V3Resource));
    expect(input).toEqual(before);
    const deep = JSON.stringify(applyDefaults(input as V3Resource)) === JSON.stringify(input);
    if (deep) expect(out).toBe(input);
    const r = input as { spec?: { ingress?: unknown } };
    if (r.spec?.ingress !== undefined) expect((out as unknown as { spec: { ingress: unknown } }).spec.ingress).toBe(r.spec.ingress);
  });

  it('is idempotent', () => {
    const once = withDefaults(policy({ egress: [allow] }));
    expect(withDefaults(once)).toBe(once);
  });
});
