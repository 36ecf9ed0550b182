import { describe, expect, it } from 'vitest';

import { apiVersionOf } from '../api/kinds.ts';
import type { V3Resource } from '../api/types.ts';
import { CONVERSIONS, networkPolicyConversion, type Conversion } from './conversions.ts';
import { convertNetworkPolicy } from './policy-converter.ts';

/** One source of each entry, and its informer key (`<namespace>/<name>`, or `<name>` cluster-wide). */
const SAMPLES: { readonly [K in keyof typeof CONVERSIONS]: { readonly source: Parameters<(typeof CONVERSIONS)[K]['convert']>[0]; readonly key: string } } = {
  namespaces: { source: { metadata: { name: 'shop', labels: { team: 'web' } } }, key: 'shop' },
  serviceaccounts: { source: { metadata: { name: 'api', namespace: 'shop' } }, key: 'shop/api' },
  pods: {
    source: { metadata: { name: 'web-0', namespace: 'shop', labels: { app: 'web' } }, spec: { nodeName: 'node-1' }, status: { phase: 'Running', podIP: '10.0.0.5' } },
    key: 'shop/web-0',
  },
  'networkpolicies.networking.k8s.io': {
    source: { metadata: { name: 'deny-all', namespace: 'shop' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } },
    key: 'shop/deny-all',
  },
};

const entries = Object.entries(CONVERSIONS) as Array<[keyof typeof CONVERSIONS, Conversion<unknown, V3Resource>]>;

describe('the source → builder table', () => {
  it.each(entries)('%s: converts to its target kind, and sourceKeyOf names the source the target was built from', (name, conversion) => {
    const { source, key } = SAMPLES[name];
    const { resource, errors } = conversion.convert(source);
    expect(errors).toEqual([]);
    expect(resource).toBeDefined();
    expect({ apiVersion: resource?.apiVersion, kind: resource?.kind }).toEqual({ apiVersion: apiVersionOf(conversion.target), kind: conversion.target.kind });
    expect(conversion.sourceKeyOf(resource!)).toBe(key);
  });

  it.each(entries)('%s: a target not named by this entry is not its own (sourceKeyOf undefined)', (_name, conversion) => {
    expect(conversion.sourceKeyOf({ metadata: { name: 'hand-written', namespace: 'shop' }, spec: {} })).toBeUndefined();
  });

  it.each(entries)('%s: reads a kind the controllers and the simulator watch, and writes one both read (the kind table)', (_name, conversion) => {
    for (const row of [conversion.source, conversion.target]) expect(row.watchers).toEqual(expect.arrayContaining(['controllers', 'simulate']));
  });

  it('the NetworkPolicy entry is networkPolicyConversion(convertNetworkPolicy): rule errors and warnings come through', () => {
    const np = { metadata: { name: 'np', namespace: 'shop' }, spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: 'not-a-cidr' } }] }] } };
    const direct = convertNetworkPolicy(np);
    expect(direct.errors.length).toBeGreaterThan(0);
    const viaTable = CONVERSIONS['networkpolicies.networking.k8s.io'].convert(np);
    expect(viaTable).toEqual({ resource: direct.policy, errors: direct.errors, warnings: direct.warnings });
    expect(networkPolicyConversion(convertNetworkPolicy).convert(np)).toEqual(viaTable);
  });

  it('a pod that gets no endpoint converts to nothing', () => {
    expect(CONVERSIONS.pods.convert({ metadata: { name: 'p', namespace: 'shop' }, spec: {}, status: { phase: 'Pending' } }).resource).toBeUndefined();
  });
});
