/**
 * Staged policies in the calculation graph: selected and scanned like any policy (active when
 * they select a local endpoint, their rules' IP sets computed), but filed in the tier's staged
 * lists — never in the enforced ones — so the dataplane only counts them. A
 * StagedKubernetesNetworkPolicy arrives converted as the controllers convert its enforced
 * counterpart; `stagedAction: Delete` holds nothing; a bad staged object is invalid, not guessed.
 */
import { describe, expect, it } from 'vitest';

import type { V3Resource } from '../api/index.ts';
import type { InvalidResource } from './index.ts';
import { graphWith } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { UpdateProcessor } from './update-processor.ts';
import { wep } from '../../test/calc/fixtures.ts';

const web = wep('web', { namespace: 'shop', labels: { app: 'web' }, ips: ['10.65.0.2/32'], profiles: ['kns.shop'] });
const tier = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'default' }, spec: { order: 1_000_000 } } as V3Resource;

function staged(kind: string, name: string, spec: Record<string, unknown>, namespace?: string): V3Resource {
  return { apiVersion: 'projectcalico.org/v3', kind, metadata: { name, ...(namespace === undefined ? {} : { namespace }) }, spec } as unknown as V3Resource;
}

describe('staged policies in the calc graph', () => {
  it('are active and scanned, but only in the staged lists of their tier', () => {
    const { dp } = graphWith([
      tier,
      web,
      staged('StagedNetworkPolicy', 'deny-udp', { selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny', protocol: 'UDP', source: { selector: "app == 'client'" } }] }, 'shop'),
      staged('StagedGlobalNetworkPolicy', 'iso', { selector: 'all()', types: ['Egress'], egress: [{ action: 'Deny' }] }),
      staged('StagedKubernetesNetworkPolicy', 'web', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress: [] }, 'shop'),
    ]);
    const ep = [...dp.endpoints.values()][0]!;
    expect(ep.tiers).toHaveLength(1);
    const t = ep.tiers[0]!;
    expect(t.ingressPolicies).toEqual([]);
    expect(t.egressPolicies).toEqual([]);
    expect(t.stagedIngressPolicies?.map((p) => `${p.kind} ${p.namespace ?? ''}/${p.name}`)).toEqual(['StagedNetworkPolicy shop/knp.default.web', 'StagedNetworkPolicy shop/deny-udp']);
    expect(t.stagedEgressPolicies?.map((p) => `${p.kind} ${p.name}`)).toEqual(['StagedGlobalNetworkPolicy iso']);
    expect([...dp.policies.values()].map((p) => p.id.kind).sort()).toEqual(['StagedGlobalNetworkPolicy', 'StagedNetworkPolicy', 'StagedNetworkPolicy']);
    // The staged rule's selector is an IP set like any other.
    const rule = [...dp.policies.values()].find((p) => p.id.name === 'deny-udp')!.policy.inboundRules[0]!;
    expect(rule.action).toBe('deny');
    expect(dp.ipSets.has(rule.srcIpSetIds[0]!)).toBe(true);
  });

  it('next to an enforced policy: the enforced lists are exactly as without the staged one', () => {
    const enforced = { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'allow', namespace: 'shop' }, spec: { tier: 'default', selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow' }] } } as V3Resource;
    const alone = graphWith([tier, web, enforced]).dp;
    const both = graphWith([tier, web, enforced, staged('StagedNetworkPolicy', 'allow', { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny' }] }, 'shop')]).dp;
    const tiersOf = (dp: MockDataplane) => [...dp.endpoints.values()][0]!.tiers.map((t) => ({ name: t.name, ingressPolicies: t.ingressPolicies, egressPolicies: t.egressPolicies }));
    expect(tiersOf(both)).toEqual(tiersOf(alone));
    expect([...both.endpoints.values()][0]!.tiers[0]!.stagedIngressPolicies).toEqual([{ tier: 'default', name: 'allow', namespace: 'shop', kind: 'StagedNetworkPolicy' }]);
  });

  it("Learn and Ignore are counted as Felix counts them (like Set, never enforced); a Delete with a spec is invalid with Calico's message (issue 27 item 12)", () => {
    const { dp } = graphWith([
      tier,
      web,
      staged('StagedNetworkPolicy', 'learned', { stagedAction: 'Learn', selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny' }] }, 'shop'),
      staged('StagedGlobalNetworkPolicy', 'ignored', { stagedAction: 'Ignore', selector: 'all()', types: ['Egress'], egress: [{ action: 'Deny' }] }),
    ]);
    const t = [...dp.endpoints.values()][0]!.tiers[0]!;
    expect(t.ingressPolicies).toEqual([]);
    expect(t.egressPolicies).toEqual([]);
    expect(t.stagedIngressPolicies?.map((p) => p.name)).toEqual(['learned']);
    expect(t.stagedEgressPolicies?.map((p) => p.name)).toEqual(['ignored']);
    const invalid: InvalidResource[] = [];
    const out = new UpdateProcessor({ onInvalid: (i) => invalid.push(i) }).process({
      op: 'upsert',
      resource: staged('StagedNetworkPolicy', 'd', { stagedAction: 'Delete', selector: 'all()', ingress: [{ action: 'Allow' }] }, 'shop'),
    });
    expect(out).toEqual([]);
    expect(invalid).toEqual([
      { kind: 'StagedNetworkPolicy', name: 'd', namespace: 'shop', reason: 'StagedNetworkPolicy shop/d: spec: Spec fields, except Tier, should all be zero-value if stagedAction is Delete (set: selector, ingress)' },
    ]);
  });

  it('stagedAction Delete holds nothing, a change to Delete removes it, and a bad one is invalid', () => {
    const { graph, dp } = graphWith([tier, web, staged('StagedNetworkPolicy', 'p', { selector: 'all()', ingress: [{ action: 'Deny' }] }, 'shop')]);
    expect(dp.policies.size).toBe(1);
    graph.onUpdates([{ op: 'upsert', resource: staged('StagedNetworkPolicy', 'p', { stagedAction: 'Delete' }, 'shop') }]);
    dp.apply(graph.flush());
    expect(dp.policies.size).toBe(0);
    graph.onUpdates([{ op: 'upsert', resource: staged('StagedNetworkPolicy', 'q', { stagedAction: 'Maybe', selector: 'all()' }, 'shop') }]);
    dp.apply(graph.flush());
    expect(dp.policies.size).toBe(0);
    const invalid: InvalidResource[] = [];
    new UpdateProcessor({ onInvalid: (i) => invalid.push(i) }).process({ op: 'upsert', resource: staged('StagedNetworkPolicy', 'q', { stagedAction: 'Maybe', selector: 'all()' }, 'shop') });
    expect(invalid).toEqual([expect.objectContaining({ kind: 'StagedNetworkPolicy', name: 'q', namespace: 'shop', reason: expect.stringMatching(/stagedAction/) })]);
    graph.onUpdates([{ op: 'upsert', resource: staged('StagedNetworkPolicy', 'r', { selector: 'all()', ingress: [{ action: 'Deny' }] }, 'shop') }]);
    dp.apply(graph.flush());
    expect(dp.policies.size).toBe(1);
    graph.onUpdates([{ op: 'delete', kind: 'StagedNetworkPolicy', name: 'r', namespace: 'shop' }]);
    dp.apply(graph.flush());
    expect(dp.policies.size).toBe(0);
  });
});
