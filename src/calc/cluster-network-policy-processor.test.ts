/**
 * ClusterNetworkPolicies and Nodes through the update processor (cluster-network-policy-
 * processor.ts), and through a whole calc graph: the kind, the tier, fail-closed rules, the
 * `nodes` peer kept current, and Node writes that change nothing.
 */
import { describe, expect, it } from 'vitest';

import type { ClusterNetworkPolicy } from '../api/cluster-network-policy.ts';
import type { V3Resource } from '../api/index.ts';
import { defaultTiers } from '../convert/default-tiers.ts';
import type { AnyUpdate } from '../syncer/update.ts';
import { graphWith } from '../../test/calc/harness.ts';
import { wep } from '../../test/calc/fixtures.ts';
import type { ModelPolicy, ModelUpdate } from './model.ts';
import { nodePeerInfo } from './cluster-network-policy-processor.ts';
import { UpdateProcessor, type InvalidResource } from './update-processor.ts';

function cnp(name: string, spec: unknown, version = 'v1beta1'): ClusterNetworkPolicy {
  return { apiVersion: `policy.networking.k8s.io/${version}` as ClusterNetworkPolicy['apiVersion'], kind: 'ClusterNetworkPolicy', metadata: { name }, spec: spec as ClusterNetworkPolicy['spec'] };
}

function node(name: string, labels: Record<string, string>, addresses: string[], extra: Record<string, unknown> = {}): AnyUpdate {
  return {
    op: 'upsert',
    resource: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, status: { addresses: addresses.map((address) => ({ type: 'InternalIP', address })), ...extra } } as unknown as AnyUpdate extends { resource: infer R } ? R : never,
  };
}

function upsert(r: ClusterNetworkPolicy): AnyUpdate {
  return { op: 'upsert', resource: r as unknown as AnyUpdate extends { resource: infer R } ? R : never };
}

function processor(): { p: UpdateProcessor; invalid: InvalidResource[]; counts: Array<ReadonlyMap<string, number>> } {
  const invalid: InvalidResource[] = [];
  const counts: Array<ReadonlyMap<string, number>> = [];
  const p = new UpdateProcessor({ onInvalid: (i) => invalid.push(i), onFailClosedCount: (c) => counts.push(new Map(c)) });
  return { p, invalid, counts };
}

function policies(out: readonly ModelUpdate[]): Array<[string, ModelPolicy | null]> {
  return out.filter((u): u is Extract<ModelUpdate, { kind: 'policy' }> => u.kind === 'policy').map((u) => [u.key, u.value]);
}

const denyAll = { tier: 'Admin', priority: 10, subject: { namespaces: {} }, ingress: [{ name: 'no-in', action: 'Deny', from: [{ namespaces: {} }] }] };

describe('UpdateProcessor: ClusterNetworkPolicy', () => {
  it.each(['v1beta1', 'v1alpha2'])('an upsert of %s becomes a KubernetesClusterNetworkPolicy in kube-admin, order = priority; a delete of either version removes it', (version) => {
    const { p, invalid } = processor();
    const [[key, policy]] = policies(p.process(upsert(cnp('deny-all', denyAll, version)))) as [[string, ModelPolicy]];
    expect(policy.id).toEqual({ tier: 'kube-admin', name: 'deny-all', kind: 'KubernetesClusterNetworkPolicy' });
    expect(key).toBe('KubernetesClusterNetworkPolicy/-/kube-admin/deny-all');
    expect(policy.order).toBe(10);
    expect(policy.selector).toBe('(projectcalico.org/orchestrator == "k8s" && has(projectcalico.org/namespace))');
    expect(policy.inboundRules.map((r) => r.action)).toEqual(['deny']);
    expect(policy).toMatchObject({ governsIngress: true, governsEgress: false });
    expect(invalid).toEqual([]);
    const other = version === 'v1beta1' ? 'v1alpha2' : 'v1beta1';
    expect(policies(p.process({ op: 'delete', apiVersion: `policy.networking.k8s.io/${other}`, kind: 'ClusterNetworkPolicy', name: 'deny-all' }))).toEqual([[key, null]]);
  });

  it('a tier move (Admin → Baseline) removes the kube-admin key', () => {
    const { p } = processor();
    p.process(upsert(cnp('x', denyAll)));
    expect(policies(p.process(upsert(cnp('x', { ...denyAll, tier: 'Baseline' })))).map(([k, v]) => [k, v === null])).toEqual([
      ['KubernetesClusterNetworkPolicy/-/kube-admin/x', true],
      ['KubernetesClusterNetworkPolicy/-/kube-baseline/x', false],
    ]);
  });

  it('a rule that does not convert fails closed and the object is reported and counted fail-closed until fixed', () => {
    const { p, invalid, counts } = processor();
    const bad = { ...denyAll, egress: [{ name: 'dns', action: 'Pass', to: [{ domainNames: ['*.example.com'] }] }] };
    const [[, policy]] = policies(p.process(upsert(cnp('x', bad)))) as [[string, ModelPolicy]];
    expect(policy.outboundRules.map((r) => r.action)).toEqual(['deny']);
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({ kind: 'ClusterNetworkPolicy', name: 'x', failClosed: {} });
    expect(invalid[0]?.reason).toContain('spec.egress[0].to[0].domainNames');
    expect(counts.at(-1)?.get('ClusterNetworkPolicy')).toBe(1);
    p.process(upsert(cnp('x', denyAll)));
    expect(counts.at(-1)?.get('ClusterNetworkPolicy')).toBeUndefined();
  });

  it("the API validation's findings on a rule fail that rule closed", () => {
    const invalid: InvalidResource[] = [];
    const p = new UpdateProcessor({ onInvalid: (i) => invalid.push(i), validateClusterNetworkPolicy: () => [{ path: 'spec.ingress[0].name', message: 'may not be more than 100 characters' }] });
    const accept = { ...denyAll, ingress: [{ action: 'Accept', from: [{ namespaces: {} }] }] };
    const [[, policy]] = policies(p.process(upsert(cnp('x', accept)))) as [[string, ModelPolicy]];
    expect(policy.inboundRules).toEqual([]);
    expect(invalid[0]?.reason).toContain('spec.ingress[0].name: may not be more than 100 characters');
  });

  it("by default the API's validateClusterNetworkPolicy decides: a range with start == end (CEL start < end; the converter alone would read one port) fails its rule closed", () => {
    const { p, invalid } = processor();
    const spec = { ...denyAll, ingress: [{ action: 'Pass', from: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { range: { start: 80, end: 80 } } } }] }] };
    const [[, policy]] = policies(p.process(upsert(cnp('x', spec)))) as [[string, ModelPolicy]];
    expect(policy.inboundRules.map((r) => [r.action, r.dst.ports])).toEqual([['deny', []]]);
    expect(invalid[0]?.reason).toContain('spec.ingress[0].protocols[0].tcp.destinationPort.range');
  });

  it('a CNP that cannot be placed is reported and held as deleted', () => {
    const { p, invalid } = processor();
    p.process(upsert(cnp('x', denyAll)));
    expect(policies(p.process(upsert(cnp('x', { ...denyAll, tier: 'Middle' }))))).toEqual([['KubernetesClusterNetworkPolicy/-/kube-admin/x', null]]);
    expect(invalid[0]?.reason).toContain('spec.tier');
  });
});

describe('UpdateProcessor: Nodes for the egress nodes peer', () => {
  const toWorkers = { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'worker' } } }] }] };
  const nets = (pol: ModelPolicy | null): readonly string[] | undefined => pol?.outboundRules[0]?.dst.nets;

  it('nodePeerInfo: canonical IPs of every address type, host names dropped, labels sorted', () => {
    expect(
      nodePeerInfo({ metadata: { name: 'n', labels: { b: '2', a: '1' } }, status: { addresses: [{ type: 'Hostname', address: 'n.example' }, { type: 'InternalIP', address: 'fd00:0::1' }, { type: 'ExternalIP', address: '192.0.2.1' }] } }),
    ).toEqual({ name: 'n', labels: { a: '1', b: '2' }, addresses: ['fd00::1', '192.0.2.1'] });
  });

  it('re-converts only the CNPs with a nodes peer when a Node appears, changes labels or addresses, or goes', () => {
    const { p } = processor();
    const key = 'KubernetesClusterNetworkPolicy/-/kube-admin/to-workers';
    // No worker yet: a Deny that names no address emits no rule.
    expect(policies(p.process(upsert(cnp('to-workers', toWorkers)))).map(([, v]) => v?.outboundRules.length)).toEqual([0]);
    p.process(upsert(cnp('other', denyAll)));
    expect(policies(p.process(node('w1', { role: 'worker' }, ['10.0.0.1'])))).toEqual([[key, expect.anything()]]);
    const added = policies(p.process(node('w2', { role: 'worker' }, ['10.0.0.2', 'fd00::2'])));
    expect(added.map(([k, v]) => [k, nets(v)])).toEqual([[key, ['10.0.0.1/32', '10.0.0.2/32', 'fd00::2/128']]]);
    // A Node that no selector picks changes no conversion: nothing is emitted.
    expect(p.process(node('cp', { role: 'control-plane' }, ['10.0.0.9']))).toEqual([]);
    // Relabelled out of the selection.
    expect(policies(p.process(node('w2', { role: 'gpu' }, ['10.0.0.2', 'fd00::2']))).map(([, v]) => nets(v))).toEqual([['10.0.0.1/32']]);
    // Gone.
    expect(policies(p.process({ op: 'delete', apiVersion: 'v1', kind: 'Node', name: 'w1' })).map(([, v]) => v?.outboundRules.length)).toEqual([0]);
  });

  it('a Node write that changes neither labels nor addresses (a heartbeat) emits nothing', () => {
    const { p } = processor();
    p.process(upsert(cnp('to-workers', toWorkers)));
    p.process(node('w1', { role: 'worker' }, ['10.0.0.1']));
    expect(p.process(node('w1', { role: 'worker' }, ['10.0.0.1'], { conditions: [{ type: 'Ready', lastHeartbeatTime: '2026-11-28T00:00:10Z' }] }))).toEqual([]);
  });

  it('after the CNP drops its nodes peer, Node changes no longer re-convert it', () => {
    const { p } = processor();
    p.process(upsert(cnp('to-workers', toWorkers)));
    p.process(upsert(cnp('to-workers', denyAll)));
    expect(p.process(node('w1', { role: 'worker' }, ['10.0.0.1']))).toEqual([]);
  });
});

describe('calc graph: ClusterNetworkPolicy tiers and order', () => {
  const web = wep('web', { namespace: 'default', labels: { app: 'web' }, ips: ['10.65.0.2/32'], profiles: ['kns.default'] });
  const ingressOrder = (resources: readonly unknown[]): string[] => {
    const { dp } = graphWith([...defaultTiers(), web, ...(resources as V3Resource[])]);
    const ep = [...dp.endpoints.values()][0]!;
    return ep.tiers.flatMap((t) => t.ingressPolicies.map((p) => `${t.name}:${p.kind}/${p.name}`));
  };

  it('CNPs land in kube-admin / kube-baseline around default, by priority then name; a same-named GNP of equal order runs first', () => {
    const admin = (name: string, priority: number, tier = 'Admin') => cnp(name, { ...denyAll, tier, priority });
    const gnp = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'b' },
      spec: { tier: 'kube-admin', order: 5, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Pass' }] },
    };
    expect(ingressOrder([admin('b', 5), admin('a', 5), admin('z', 1), gnp, admin('base', 0, 'Baseline')])).toEqual([
      'kube-admin:KubernetesClusterNetworkPolicy/z',
      'kube-admin:KubernetesClusterNetworkPolicy/a',
      'kube-admin:GlobalNetworkPolicy/b',
      'kube-admin:KubernetesClusterNetworkPolicy/b',
      'kube-baseline:KubernetesClusterNetworkPolicy/base',
    ]);
  });
});
