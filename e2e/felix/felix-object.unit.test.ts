/**
 * What the Felix differential writes for each side: the Calico objects Felix reads
 * (`crd.projectcalico.org/v1`, `types` defaulted as Calico's clientv3 defaults them before
 * storing), the Kubernetes objects both read, and the v3 objects Tessera reads.
 */
import { describe, expect, it } from 'vitest';

import { roundScenario, SimulatorSide } from '../differential/differential.ts';
import { felixObject } from './felix-cluster.ts';
import { felixObjectsOf, tesseraObjectsOf } from './felix-differential.ts';

const v3 = 'projectcalico.org/v3';

describe('felixObject', () => {
  it('moves a Calico policy to crd.projectcalico.org/v1 with its spec, namespace and labels', () => {
    const o = felixObject({ apiVersion: v3, kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'alpha', labels: { a: 'b' }, resourceVersion: '7' }, spec: { order: 10, types: ['Egress'], egress: [{ action: 'Deny' }] } });
    expect(o).toEqual({ apiVersion: 'crd.projectcalico.org/v1', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'alpha', labels: { a: 'b' } }, spec: { order: 10, types: ['Egress'], egress: [{ action: 'Deny' }] } });
  });

  it("defaults an empty types as clientv3 does: Ingress without egress rules, Egress without ingress rules, else both", () => {
    const types = (spec: Record<string, unknown>) => (felixObject({ apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 'p' }, spec }) as { spec: { types: string[] } }).spec.types;
    expect(types({})).toEqual(['Ingress']);
    expect(types({ ingress: [{ action: 'Allow' }] })).toEqual(['Ingress']);
    expect(types({ egress: [{ action: 'Allow' }] })).toEqual(['Egress']);
    expect(types({ egress: [{ action: 'Allow' }], ingress: [] })).toEqual(['Egress']);
    expect(types({ egress: [{ action: 'Allow' }], ingress: [{ action: 'Deny' }] })).toEqual(['Ingress', 'Egress']);
    expect(types({ types: ['Egress'], ingress: [{ action: 'Deny' }] })).toEqual(['Egress']);
  });

  it('moves a HostEndpoint to crd.projectcalico.org/v1 with its labels and spec as written (the v1 CRD has the v3 spec: node, interfaceName, expectedIPs, profiles, ports)', () => {
    const spec = { node: 'node-1', interfaceName: '*', expectedIPs: ['10.66.0.1', 'fd00:66::1'], profiles: ['projectcalico-default-allow'], ports: [{ name: 'ssh', protocol: 'TCP', port: 22 }] };
    expect(felixObject({ apiVersion: v3, kind: 'HostEndpoint', metadata: { name: 'node-1-hep-0', labels: { hep: 'a' }, uid: 'x' }, spec })).toEqual({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'HostEndpoint',
      metadata: { name: 'node-1-hep-0', labels: { hep: 'a' } },
      spec,
    });
  });

  it('leaves network sets without types and Kubernetes objects as they are (minus status)', () => {
    expect(felixObject({ apiVersion: v3, kind: 'GlobalNetworkSet', metadata: { name: 's', labels: { set: 'a' } }, spec: { nets: ['10.0.0.0/8'] } })).toEqual({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'GlobalNetworkSet',
      metadata: { name: 's', labels: { set: 'a' } },
      spec: { nets: ['10.0.0.0/8'] },
    });
    const knp = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'beta' }, spec: { podSelector: {} } };
    expect(felixObject({ ...knp, status: {} })).toEqual(knp);
  });

  it('refuses what Felix v3.28 cannot hold: tiers, a tier other than default, profiles', () => {
    expect(() => felixObject({ apiVersion: v3, kind: 'Tier', metadata: { name: 't' }, spec: { order: 1 } })).toThrow(/no writable Tier/);
    expect(() => felixObject({ apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 't.p' }, spec: { tier: 't' } })).toThrow(/no tiers/);
    expect(() => felixObject({ apiVersion: v3, kind: 'Profile', metadata: { name: 'kns.alpha' }, spec: {} })).toThrow(/no writable Profile/);
    expect((felixObject({ apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 'p' }, spec: { tier: 'default' } }) as { spec: Record<string, unknown> }).spec['tier']).toBeUndefined();
  });
});

describe('a round, as each side reads it', () => {
  const policies = [
    { apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec: { egress: [{ action: 'Allow' }] } },
    { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'alpha' }, spec: { podSelector: {} } },
  ];
  const scenario = roundScenario('r', policies);
  const side = SimulatorSide.of(scenario);

  it("Felix's: the Calico objects in v1, the Kubernetes ones once, Services and every EndpointSlice (given and derived)", () => {
    const felix = felixObjectsOf(scenario, side);
    const kinds = felix.map((o) => `${o.apiVersion}/${o.kind}`);
    expect(kinds).toContain('crd.projectcalico.org/v1/GlobalNetworkPolicy');
    expect(kinds.filter((k) => k === 'networking.k8s.io/v1/NetworkPolicy')).toHaveLength(1);
    expect(kinds).toContain('v1/Service');
    const slices = felix.filter((o) => o.kind === 'EndpointSlice');
    // Seven given slices, and the derived ones of beta/web (the fixture's one selector Service with members).
    expect(slices.length).toBeGreaterThan(7);
    expect(slices.every((s) => s.apiVersion === 'discovery.k8s.io/v1' && s.metadata?.namespace !== undefined)).toBe(true);
    expect(kinds).not.toContain('projectcalico.org/v3/GlobalNetworkPolicy');
  });

  it("Tessera's: the Calico objects as written, in projectcalico.org/v3, and nothing else", () => {
    expect(tesseraObjectsOf(scenario)).toEqual([policies[0]]);
  });
});
