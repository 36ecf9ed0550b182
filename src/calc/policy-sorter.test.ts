/**
 * Policy order within a tier (calico-semantics §4.2): ascending order, ties broken by Felix's
 * key `"<name>/<namespace>/<kind>"`, where Calico ≥ 3.32 keys a Kubernetes NetworkPolicy by
 * its own name with kind KubernetesNetworkPolicy (issue 27 item 5).
 */
import { describe, expect, it } from 'vitest';

import type { V3Resource } from '../api/index.ts';
import { convertNetworkPolicy } from '../convert/policy-converter.ts';
import type { PolicyId } from '../proto/index.ts';
import { graphWith } from '../../test/calc/harness.ts';
import { knp, wep } from '../../test/calc/fixtures.ts';
import { comparePolicies, felixPolicyKey } from './policy-sorter.ts';

const web = wep('web', { namespace: 'default', labels: { app: 'web' }, ips: ['10.65.0.2/32'], profiles: ['kns.default'] });

function ingressOrder(resources: readonly V3Resource[]): string[] {
  const { dp } = graphWith([web, ...resources]);
  const ep = [...dp.endpoints.values()][0]!;
  return ep.tiers.flatMap((t) => t.ingressPolicies.map((p) => `${t.name}:${p.namespace ?? ''}/${p.name}`));
}

describe('policy order within a tier', () => {
  it('a Kubernetes policy zeta (knp.default.zeta) and a Calico NetworkPolicy m, both order 1000 in default/default: m runs first', () => {
    const zeta = convertNetworkPolicy({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'zeta', namespace: 'default' },
      spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] },
    }).policy;
    expect(zeta.metadata.name).toBe('knp.default.zeta');
    const m = knp('default', 'm', { order: 1000, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny' }] });
    expect(ingressOrder([zeta, m])).toEqual(['default:default/m', 'default:default/knp.default.zeta']);
    expect(ingressOrder([m, zeta])).toEqual(['default:default/m', 'default:default/knp.default.zeta']);
  });

  it('Kubernetes policies sort among themselves by their own names; a Calico policy named before knp… comes first', () => {
    const k8s = (name: string) =>
      convertNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: 'default' }, spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] } }).policy;
    const calico = (name: string) => knp('default', name, { order: 1000, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow' }] });
    expect(ingressOrder([k8s('b'), calico('c'), k8s('a'), calico('aa')])).toEqual([
      'default:default/knp.default.a',
      'default:default/aa',
      'default:default/knp.default.b',
      'default:default/c',
    ]);
    // Same name: the kind decides, KubernetesNetworkPolicy < NetworkPolicy.
    expect(ingressOrder([calico('x'), k8s('x')])).toEqual(['default:default/knp.default.x', 'default:default/x']);
  });

  it("felixPolicyKey: the converted name and kind of Calico's keys; other policies unchanged", () => {
    const id = (kind: PolicyId['kind'], name: string, namespace?: string): PolicyId => ({ tier: 'default', name, kind, ...(namespace === undefined ? {} : { namespace }) });
    expect(felixPolicyKey(id('NetworkPolicy', 'knp.default.zeta', 'default'))).toEqual({ name: 'zeta', namespace: 'default', kind: 'KubernetesNetworkPolicy' });
    expect(felixPolicyKey(id('StagedNetworkPolicy', 'knp.default.zeta', 'default'))).toEqual({ name: 'zeta', namespace: 'default', kind: 'StagedKubernetesNetworkPolicy' });
    expect(felixPolicyKey(id('NetworkPolicy', 'm', 'default'))).toEqual({ name: 'm', namespace: 'default', kind: 'NetworkPolicy' });
    expect(felixPolicyKey(id('GlobalNetworkPolicy', 'knp.default.x'))).toEqual({ name: 'knp.default.x', namespace: '', kind: 'GlobalNetworkPolicy' });
  });

  it('ClusterNetworkPolicies: priority, then name; a GlobalNetworkPolicy of the same tier, order and name runs first (Felix: x//GlobalNetworkPolicy < x//KubernetesClusterNetworkPolicy)', () => {
    const p = (kind: PolicyId['kind'], name: string, order: number) => ({ order, id: { tier: 'kube-admin', name, kind } as PolicyId });
    const sorted = [p('KubernetesClusterNetworkPolicy', 'b', 10), p('KubernetesClusterNetworkPolicy', 'a', 10), p('GlobalNetworkPolicy', 'b', 10), p('KubernetesClusterNetworkPolicy', 'z', 5), p('GlobalNetworkPolicy', 'aa', 10)]
      .sort(comparePolicies)
      .map((x) => `${x.id.kind}/${x.id.name}`);
    expect(sorted).toEqual(['KubernetesClusterNetworkPolicy/z', 'KubernetesClusterNetworkPolicy/a', 'GlobalNetworkPolicy/aa', 'GlobalNetworkPolicy/b', 'KubernetesClusterNetworkPolicy/b']);
    expect(felixPolicyKey({ tier: 'kube-admin', name: 'knp.default.x', kind: 'KubernetesClusterNetworkPolicy' })).toEqual({ name: 'knp.default.x', namespace: '', kind: 'KubernetesClusterNetworkPolicy' });
  });
});
