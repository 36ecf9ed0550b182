/**
 * NetworkSets and GlobalNetworkSets in the calculation graph (calico-semantics §5.3 "Network
 * sets"; libcalico-go's NetworkSet processor): their CIDRs join the selector IP sets their
 * labels match, a namespaced set only through its own namespace's scope, namespace labels
 * inherited through `kns.<namespace>`; a large set changed by one CIDR is one member delta.
 */
import { describe, expect, it } from 'vitest';

import type { V3Resource } from '../api/index.ts';
import type { DataplaneMessage } from '../proto/index.ts';
import { graphWith } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { gnp, knp, netset, pk, profile, sel, wep } from '../../test/calc/fixtures.ts';

function members(dp: MockDataplane, id: string): string[] {
  const set = dp.ipSets.get(id);
  if (set === undefined) throw new Error(`IP set ${id} is not active`);
  return [...set.members].sort();
}

const client = wep('client', { namespace: 'shop', labels: { app: 'client' }, ips: ['10.65.0.1/32'], profiles: ['kns.shop'] });
const trusted = "role == 'trusted-saas'";

describe('network sets in the calc graph', () => {
  it("a GlobalNetworkSet's CIDRs (host bits cleared, duplicates once) join a global rule's set; a namespaced NetworkSet only its own namespace's", () => {
    const resources: V3Resource[] = [
      client,
      gnp('egress-saas', { selector: 'all()', egress: [{ action: 'Allow', destination: { selector: trusted } }], types: ['Egress'] }),
      knp('shop', 'to-partners', { selector: "app == 'client'", egress: [{ action: 'Allow', destination: { selector: trusted } }], types: ['Egress'] }),
      netset('saas-allow', { labels: { role: 'trusted-saas' }, nets: ['52.1.0.0/16', '52.1.2.3/16', '2600:1f00::/40', '198.51.100.7'] }),
      netset('partners', { namespace: 'shop', labels: { role: 'trusted-saas' }, nets: ['198.51.100.0/24'] }),
      netset('partners', { namespace: 'other', labels: { role: 'trusted-saas' }, nets: ['203.0.113.0/24'] }),
      netset('unrelated', { labels: { role: 'other' }, nets: ['192.0.2.0/24'] }),
    ];
    const { dp } = graphWith(resources);
    // The GlobalNetworkPolicy's rule has no namespace scope: every matching set, global or not.
    expect(members(dp, sel(trusted))).toEqual(['198.51.100.0/24', '198.51.100.7/32', '203.0.113.0/24', '2600:1f00::/40', '52.1.0.0/16']);
    // The namespaced policy's rule is scoped to its namespace: only shop's NetworkSet.
    const scoped = dp.policies.get(pk('to-partners', { namespace: 'shop' }))?.policy.outboundRules[0]?.dstIpSetIds[0] as string;
    expect(scoped).toBe(sel(`(projectcalico.org/namespace == 'shop') && (${trusted})`));
    expect(members(dp, scoped)).toEqual(['198.51.100.0/24']);
  });

  it("namespaceSelector picks namespaced sets by their namespace's labels (kns. profile); global() picks GlobalNetworkSets", () => {
    const { dp } = graphWith([
      client,
      profile('kns.shop', { 'pcns.team': 'a' }),
      profile('kns.other', { 'pcns.team': 'b' }),
      gnp('by-ns', {
        selector: 'all()',
        egress: [
          { action: 'Allow', destination: { namespaceSelector: "team == 'a'", selector: trusted } },
          { action: 'Allow', destination: { namespaceSelector: 'global()', selector: trusted } },
        ],
        types: ['Egress'],
      }),
      netset('partners', { namespace: 'shop', labels: { role: 'trusted-saas' }, nets: ['198.51.100.0/24'] }),
      netset('partners', { namespace: 'other', labels: { role: 'trusted-saas' }, nets: ['203.0.113.0/24'] }),
      netset('saas-allow', { labels: { role: 'trusted-saas' }, nets: ['52.1.0.0/16'] }),
    ]);
    const [teamA, global] = dp.policies.get(pk('by-ns'))?.policy.outboundRules ?? [];
    expect(members(dp, teamA?.dstIpSetIds[0] as string)).toEqual(['198.51.100.0/24']);
    expect(members(dp, global?.dstIpSetIds[0] as string)).toEqual(['52.1.0.0/16']);
  });

  it('a CIDR held by an endpoint and two sets is one member, removed only with the last holder; a set adds nothing to named-port sets', () => {
    const server = wep('server', { namespace: 'shop', labels: { role: 'trusted-saas' }, ips: ['10.65.0.9/32'], ports: [{ name: 'https', protocol: 'TCP', port: 443 }] });
    const { graph, dp } = graphWith([
      client,
      server,
      gnp('g', { selector: 'all()', egress: [{ action: 'Allow', protocol: 'TCP', destination: { selector: trusted, ports: ['https'] } }, { action: 'Allow', destination: { selector: trusted } }], types: ['Egress'] }),
      netset('a', { labels: { role: 'trusted-saas' }, nets: ['10.65.0.9/32', '10.66.0.0/16'] }),
      netset('b', { namespace: 'shop', labels: { role: 'trusted-saas' }, nets: ['10.66.0.0/16'] }),
    ]);
    const rules = dp.policies.get(pk('g'))?.policy.outboundRules ?? [];
    const namedPortSet = rules[0]?.dstNamedPortIpSetIds[0] as string;
    const selectorSet = rules[1]?.dstIpSetIds[0] as string;
    expect(members(dp, namedPortSet)).toEqual(['10.65.0.9,tcp:443']);
    expect(members(dp, selectorSet)).toEqual(['10.65.0.9/32', '10.66.0.0/16']);
    graph.onUpdates([{ op: 'delete', kind: 'GlobalNetworkSet', name: 'a' }]);
    const out = graph.flush();
    dp.apply(out);
    // 10.65.0.9/32 stays (the endpoint), 10.66.0.0/16 stays (set b): nothing to send.
    expect(out).toEqual([]);
    graph.onUpdates([{ op: 'delete', kind: 'NetworkSet', namespace: 'shop', name: 'b' }]);
    dp.apply(graph.flush());
    expect(members(dp, selectorSet)).toEqual(['10.65.0.9/32']);
  });

  it('relabelled out of a selector, a set leaves its IP set; an invalid set is dropped as deleted', () => {
    const { graph, dp } = graphWith([client, gnp('g', { selector: 'all()', egress: [{ action: 'Allow', destination: { selector: trusted } }], types: ['Egress'] }), netset('s', { labels: { role: 'trusted-saas' }, nets: ['52.1.0.0/16'] })]);
    graph.onUpdates([{ op: 'upsert', resource: netset('s', { labels: { role: 'other' }, nets: ['52.1.0.0/16'] }) }]);
    dp.apply(graph.flush());
    expect(members(dp, sel(trusted))).toEqual([]);
    graph.onUpdates([{ op: 'upsert', resource: netset('s', { labels: { role: 'trusted-saas' }, nets: ['52.1.0.0/16'] }) }]);
    dp.apply(graph.flush());
    expect(members(dp, sel(trusted))).toEqual(['52.1.0.0/16']);
    graph.onUpdates([{ op: 'upsert', resource: netset('s', { labels: { role: 'trusted-saas' }, nets: ['52.1.0.0/16', 'not-a-cidr'] }) }]);
    dp.apply(graph.flush());
    expect(members(dp, sel(trusted))).toEqual([]);
  });

  it("a GlobalNetworkSet labelled projectcalico.org/namespace: shop never reaches shop's namespace-scoped rules (issue 27 item 4)", () => {
    const claim = { 'projectcalico.org/namespace': 'shop', role: 'trusted-saas' };
    const scopedSel = sel(`(projectcalico.org/namespace == 'shop') && (${trusted})`);
    const { graph, dp } = graphWith([
      client,
      knp('shop', 'to-partners', { selector: "app == 'client'", egress: [{ action: 'Allow', destination: { selector: trusted } }], types: ['Egress'] }),
      netset('partners', { namespace: 'shop', labels: { role: 'trusted-saas' }, nets: ['198.51.100.0/24'] }),
      netset('inject', { labels: claim, nets: ['203.0.113.0/24'] }),
      netset('inject-ns', { namespace: 'other', labels: claim, nets: ['192.0.2.0/24'] }),
    ]);
    expect(members(dp, scopedSel)).toEqual(['198.51.100.0/24']);
    // A valid set that later claims the namespace is removed, not kept with its old labels.
    graph.onUpdates([{ op: 'upsert', resource: netset('later', { labels: { role: 'trusted-saas' }, nets: ['100.64.0.0/10'] }) }]);
    dp.apply(graph.flush());
    graph.onUpdates([{ op: 'upsert', resource: netset('later', { labels: claim, nets: ['100.64.0.0/10'] }) }]);
    dp.apply(graph.flush());
    expect(members(dp, scopedSel)).toEqual(['198.51.100.0/24']);
  });

  it('a 10,000-CIDR set changed by one CIDR is one IP-set delta with one added and one removed member', () => {
    const nets = Array.from({ length: 10_000 }, (_, i) => `10.${100 + (i >> 8)}.${i & 255}.0/24`);
    const { graph, dp } = graphWith([client, gnp('g', { selector: 'all()', egress: [{ action: 'Deny', destination: { selector: trusted } }], types: ['Egress'] }), netset('big', { labels: { role: 'trusted-saas' }, nets })]);
    expect(members(dp, sel(trusted))).toHaveLength(10_000);
    graph.onUpdates([{ op: 'upsert', resource: netset('big', { labels: { role: 'trusted-saas' }, nets: [...nets.slice(1), '172.16.0.0/12'] }) }]);
    const out: DataplaneMessage[] = graph.flush();
    dp.apply(out);
    expect(out).toEqual([{ type: 'IPSetDeltaUpdate', id: sel(trusted), added: ['172.16.0.0/12'], removed: ['10.100.0.0/24'] }]);
    expect(members(dp, sel(trusted))).toHaveLength(10_000);
  });
});
