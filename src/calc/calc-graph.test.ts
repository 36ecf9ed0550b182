/**
 * Behaviours of the public `CalcGraph` interface that state tables do not pin down on
 * their own: rule content (resolved IP-set ids, the v1 view), fail-closed profiles,
 * the validation filter, in-sync gating, and candidate indexing in the member index.
 */
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import type { V3Resource } from '../api/index.ts';
import type { DataplaneMessage, Policy, Profile } from '../proto/index.ts';
import { CalcGraph } from './index.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { gnp, knp, localWlEp1, localWlEp2, np, pk, policy1Order20, profile, REMOTE_NODE, sel, wep } from '../../test/calc/fixtures.ts';
import { DROP_ALL_PROFILE } from './rule-scanner.ts';

function graphWith(resources: V3Resource[], opts: { registry?: Registry } = {}): { graph: CalcGraph; dp: MockDataplane; first: DataplaneMessage[] } {
  const graph = new CalcGraph({ nodeName: LOCAL_NODE, ...opts });
  const dp = new MockDataplane();
  graph.onUpdates(resources.map((resource) => ({ op: 'upsert', resource })));
  graph.onStatusUpdated('in-sync');
  dp.graphInSync = true;
  const first = graph.flush();
  dp.apply(first);
  return { graph, dp, first };
}

function policyOf(dp: MockDataplane, key: string): Policy {
  const p = dp.policies.get(key);
  if (p === undefined) throw new Error(`policy ${key} not active`);
  return p.policy;
}

describe('CalcGraph', () => {
  it('emits nothing before in-sync, then the full state followed by InSync, then only deltas', () => {
    const graph = new CalcGraph({ nodeName: LOCAL_NODE });
    graph.onUpdates([{ op: 'upsert', resource: policy1Order20 }, { op: 'upsert', resource: localWlEp1 }]);
    expect(graph.flush()).toEqual([]);
    graph.onStatusUpdated('resync-in-progress');
    expect(graph.flush()).toEqual([]);
    graph.onStatusUpdated('in-sync');
    const first = graph.flush();
    expect(first.at(-1)).toEqual({ type: 'InSync' });
    expect(first.map((m) => m.type)).toEqual([
      'IPSetUpdate',
      'IPSetUpdate',
      'ActivePolicyUpdate',
      'ActiveProfileUpdate',
      'ActiveProfileUpdate',
      'ActiveProfileUpdate',
      'WorkloadEndpointUpdate',
      'InSync',
    ]);
    expect(graph.flush()).toEqual([]);
    graph.onUpdates([{ op: 'upsert', resource: localWlEp2 }]);
    expect(graph.flush().map((m) => m.type)).toEqual(['IPSetDeltaUpdate', 'ActiveProfileUpdate', 'WorkloadEndpointUpdate']);
  });

  it('removes in reverse dependency order: endpoints, profiles, policies, then IP sets', () => {
    const { graph } = graphWith([policy1Order20, localWlEp1]);
    graph.onUpdates([{ op: 'delete', kind: 'WorkloadEndpoint', namespace: 'default', name: 'ep1' }]);
    expect(graph.flush().map((m) => m.type)).toEqual([
      'WorkloadEndpointRemove',
      'ActiveProfileRemove',
      'ActiveProfileRemove',
      'ActiveProfileRemove',
      'ActivePolicyRemove',
      'IPSetRemove',
      'IPSetRemove',
    ]);
  });

  it('rules carry resolved IP-set ids: merged positive/negated selectors, named ports, lower-case actions', () => {
    const pol = gnp('pol-r', {
      order: 1,
      selector: "a == 'a'",
      ingress: [
        { action: 'Pass', protocol: 'TCP', source: { selector: "b == 'b'", notSelector: "c == 'c'", ports: ['tcpport', 80] } },
        { action: 'Deny', source: { notSelector: "c == 'c'", nets: ['10.1.0.0/16'] } },
      ],
      egress: [{ action: 'Log', protocol: 'UDP', destination: { notPorts: ['udpport'] } }],
    });
    const { dp } = graphWith([pol, localWlEp1]);
    const p = policyOf(dp, pk('pol-r'));
    const merged = "(b == 'b') && (!(c == 'c'))";
    const [r0, r1] = p.inboundRules;
    expect(r0).toMatchObject({
      action: 'next-tier',
      protocol: 'tcp',
      srcIpSetIds: [sel(merged)],
      notSrcIpSetIds: [],
      srcNamedPortIpSetIds: [np(merged, 'tcp', 'tcpport')],
      srcPorts: [{ first: 80, last: 80 }],
    });
    expect(r1).toMatchObject({ action: 'deny', srcIpSetIds: [], notSrcIpSetIds: [sel("c == 'c'")], srcNets: ['10.1.0.0/16'] });
    expect(p.outboundRules[0]).toMatchObject({ action: 'log', protocol: 'udp', notDstNamedPortIpSetIds: [np('all()', 'udp', 'udpport')], dstIpSetIds: [] });
    expect(JSON.stringify(p)).not.toContain('==');
    expect(r0?.ruleId).toMatch(/^r:/);
  });

  it('scopes a namespaced policy and its rule selectors to its namespace; serviceAccounts.names match the stamped projectcalico.org/serviceaccount label', () => {
    const ep = wep('web', { namespace: 'prod', labels: { app: 'web' }, ips: ['10.2.0.1/32'] });
    const pol = knp('prod', 'p', {
      selector: "app == 'web'",
      ingress: [{ action: 'Allow', source: { selector: "role == 'fe'", serviceAccounts: { names: ['sa1'] } } }],
      types: ['Ingress'],
    });
    const { dp } = graphWith([pol, ep]);
    const p = policyOf(dp, pk('p', { namespace: 'prod' }));
    expect(p.inboundRules[0]?.srcIpSetIds).toEqual([
      sel("(projectcalico.org/namespace == 'prod') && ((projectcalico.org/serviceaccount in {'sa1'}) && (role == 'fe'))"),
    ]);
    // The same policy does not select an endpoint with the same labels in another namespace.
    const other = wep('web', { namespace: 'dev', labels: { app: 'web' }, ips: ['10.3.0.1/32'] });
    const { dp: dp2 } = graphWith([pol, other]);
    expect(dp2.policies.size).toBe(0);
    expect(dp2.endpoints.get('dev/web')?.tiers).toEqual([]);
  });

  it('carries GlobalNetworkPolicy doNotTrack / preDNAT / applyOnForward into the proto policy', () => {
    const pol = gnp('untracked', { selector: 'all()', ingress: [{ action: 'Allow' }], types: ['Ingress'] });
    const p2 = { ...pol, spec: { ...pol.spec, doNotTrack: true, applyOnForward: true } };
    const { dp } = graphWith([p2, localWlEp1]);
    expect(policyOf(dp, pk('untracked'))).toMatchObject({ untracked: true, preDnat: false, applyOnForward: true });
  });

  it('fails closed: a referenced profile that does not exist is active with drop-all rules', () => {
    const { graph, dp } = graphWith([localWlEp1, profile('prof-1', undefined, true)]);
    expect(dp.profiles.get('prof-missing')).toEqual(DROP_ALL_PROFILE);
    expect(dp.profiles.get('prof-1')?.inboundRules[0]?.action).toBe('allow');
    // Deleting a profile that an endpoint still uses turns it into drop-all, not a removal.
    graph.onUpdates([{ op: 'delete', kind: 'Profile', name: 'prof-1' }]);
    const out = graph.flush();
    dp.apply(out);
    expect(out).toEqual([{ type: 'ActiveProfileUpdate', id: { name: 'prof-1' }, profile: DROP_ALL_PROFILE }]);
    expect((dp.profiles.get('prof-1') as Profile).outboundRules.map((r) => r.action)).toEqual(['deny']);
  });

  it('enforces an invalid policy fail-closed, drops other invalid objects, logs and counts them, and never throws', async () => {
    const registry = new Registry();
    const { graph, dp } = graphWith([policy1Order20, localWlEp1], { registry });
    // "80-90" is no port, range or Kubernetes port name (Calico refuses it too).
    const bad = { ...policy1Order20, spec: { ...policy1Order20.spec, ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['80-90'] } }] } } as V3Resource;
    expect(() =>
      graph.onUpdates([
        { op: 'upsert', resource: bad },
        { op: 'upsert', resource: { kind: 'WorkloadEndpoint' } as unknown as V3Resource },
        { op: 'upsert', resource: null as unknown as V3Resource },
      ]),
    ).not.toThrow();
    dp.apply(graph.flush());
    expect([...dp.policies.values()].map((p) => [p.id.name, p.policy.inboundRules.length, p.policy.outboundRules.length])).toEqual([['pol-1', 0, 0]]);
    expect(await registry.getSingleMetricAsString('tessera_calc_invalid_updates_total')).toContain('tessera_calc_invalid_updates_total{kind="GlobalNetworkPolicy"} 1');
    expect(await registry.getSingleMetricAsString('tessera_invalid_policies')).toContain('tessera_invalid_policies{kind="GlobalNetworkPolicy"} 1');
    graph.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    dp.apply(graph.flush());
    expect([...dp.policies.values()].map((p) => [p.id.name, p.policy.inboundRules.length])).toEqual([['pol-1', 1]]);
    expect(await registry.getSingleMetricAsString('tessera_invalid_policies')).not.toContain('kind="GlobalNetworkPolicy"');
  });

  it('registers Felix-named metrics on the injected registry', async () => {
    const registry = new Registry();
    graphWith([policy1Order20, localWlEp1, localWlEp2], { registry });
    const text = await registry.metrics();
    for (const name of [
      'felix_calc_graph_updates_processed',
      'felix_calc_graph_output_events',
      'felix_calc_graph_update_time_seconds',
      'felix_active_local_endpoints 2',
      'felix_active_local_policies 1',
      'felix_active_local_selectors 2',
      'felix_resync_state 3',
    ]) {
      expect(text).toContain(name);
    }
  });

  it('a remote endpoint update evaluates only candidate selectors, not every active selector', () => {
    // 500 policies, each active on one local endpoint, each with its own rule selector.
    const resources: V3Resource[] = [];
    for (let i = 0; i < 500; i++) {
      resources.push(
        gnp(`p${i}`, { selector: `id == 'local-${i}'`, ingress: [{ action: 'Allow', source: { selector: `app == 'app-${i}'` } }], types: ['Ingress'] }),
        wep(`local-${i}`, { labels: { id: `local-${i}` }, ips: [`10.0.${i >> 8}.${i & 255}/32`] }),
      );
    }
    const { graph, dp } = graphWith(resources);
    expect(graph.activeIPSetCount).toBe(500);
    const before = graph.memberIndexEvaluations;
    for (let i = 0; i < 100; i++) {
      graph.onUpdates([{ op: 'upsert', resource: wep('remote', { node: REMOTE_NODE, labels: { app: `app-${i % 2 === 0 ? i : 'none'}` }, ips: ['10.9.0.1/32'] }) }]);
    }
    dp.apply(graph.flush());
    // One candidate per update (the selector indexed under its app value), not 500.
    expect(graph.memberIndexEvaluations - before).toBeLessThanOrEqual(100);
    expect(dp.ipSets.get(sel("app == 'app-98'"))?.members.size).toBe(0);
    graph.onUpdates([{ op: 'upsert', resource: wep('remote', { node: REMOTE_NODE, labels: { app: 'app-98' }, ips: ['10.9.0.1/32'] }) }]);
    dp.apply(graph.flush());
    expect([...(dp.ipSets.get(sel("app == 'app-98'"))?.members ?? [])]).toEqual(['10.9.0.1/32']);
  });
});
