import { describe, expect, it } from 'vitest';
import type { V3Resource } from '../api/index.ts';
import { InputError } from '../runtime/input-error.ts';
import { translateCluster, type ClusterObjects } from './cluster-objects.ts';

const BAD_PORT = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { selector: 'all()', ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['80-90'] } }] },
} as unknown as V3Resource;

const BAD_SELECTOR_K8S = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'db', namespace: 'shop' },
  spec: { podSelector: { matchLabels: { 'bad key': 'x' } } },
};

function cluster(over: Partial<ClusterObjects>): ClusterObjects {
  return { namespaces: [{ metadata: { name: 'shop' } }], serviceAccounts: [], pods: [], networkPolicies: [], calico: [], ...over };
}

function thrown(f: () => unknown): InputError {
  try {
    f();
  } catch (err) {
    if (err instanceof InputError) return err;
    throw err;
  }
  throw new Error('expected an InputError');
}

describe('translateCluster: invalid objects', () => {
  it('an invalid Calico object is an InputError naming the object and the field path', () => {
    const err = thrown(() => translateCluster(cluster({ calico: [BAD_PORT] })));
    expect(err.problems).toEqual([
      { type: 'object', object: 'NetworkPolicy shop/web', path: 'spec.ingress[0].destination.ports[0]', reason: '"80-90" is not a port or a range (use "80:90")' },
    ]);
    expect(err.message).toBe('NetworkPolicy shop/web: spec.ingress[0].destination.ports[0]: "80-90" is not a port or a range (use "80:90")');
  });

  it('a Kubernetes policy whose conversion is invalid names the Kubernetes object and the converted one', () => {
    const err = thrown(() => translateCluster(cluster({ networkPolicies: [BAD_SELECTOR_K8S] })));
    expect(err.problems).toEqual([
      { type: 'object', object: 'networking.k8s.io/v1 NetworkPolicy shop/db (as NetworkPolicy shop/knp.default.db)', path: 'spec.selector', reason: expect.stringMatching(/^expected operator after label 'bad'/) as unknown },
    ]);
  });

  it('with skipInvalid each invalid policy is one note and kept, as the calc graph enforces it fail-closed', () => {
    const t = translateCluster(cluster({ calico: [BAD_PORT], networkPolicies: [BAD_SELECTOR_K8S] }), { skipInvalid: true });
    expect(t.notes).toEqual([
      expect.stringMatching(/^networking\.k8s\.io\/v1 NetworkPolicy shop\/db \(as NetworkPolicy shop\/knp\.default\.db\): invalid, enforced fail-closed as the agent would \(no rules: the endpoints it selects are denied in its directions\): spec\.selector: /),
      'NetworkPolicy shop/web: invalid, enforced fail-closed as the agent would (no rules: the endpoints it selects are denied in its directions): spec.ingress[0].destination.ports[0]: "80-90" is not a port or a range (use "80:90")',
    ]);
    expect([...t.resources.keys()].filter((k) => k.startsWith('NetworkPolicy/'))).toEqual(['NetworkPolicy/shop/knp.default.db', 'NetworkPolicy/shop/web']);
    expect([...t.failClosed.keys()]).toEqual(['NetworkPolicy shop/knp.default.db', 'NetworkPolicy shop/web']);
    expect(t.resources.has('Profile//kns.shop')).toBe(true);
  });
});
