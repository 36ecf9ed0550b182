/**
 * HostEndpoints through the calculation graph (reference host-endpoints-and-services §A.1–A.3;
 * Felix `calc/states_for_test.go` host endpoint states, `event_sequencer.go`
 * `tierInfoToProtoTierInfo`): a local HostEndpoint becomes a `HostEndpointUpdate` with the four
 * tier lists; every HostEndpoint's expectedIPs (and named ports) feed selector IP sets on every
 * node; no namespaced policy ever selects one.
 */
import { describe, expect, it } from 'vitest';

import type { HostEndpoint as V3HostEndpoint, V3Resource } from '../api/index.ts';
import type { HostEndpoint, TierInfo } from '../proto/index.ts';
import { graphWith, LOCAL_NODE } from '../../test/calc/harness.ts';
import { gnp, knp, np, REMOTE_NODE, sel, tier, wep } from '../../test/calc/fixtures.ts';
import { DEFAULT_ALLOW_PROFILE } from './update-processor.ts';

function hep(name: string, spec: V3HostEndpoint['spec'], labels: Record<string, string> = {}): V3HostEndpoint {
  return { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name, labels }, spec };
}

/** A tier list as `tier(default):in=a,b;out=c`, for compact expectations. */
function tiers(list: readonly TierInfo[]): string[] {
  return list.map((t) => `${t.name}(${t.defaultAction}):in=${t.ingressPolicies.map((p) => p.name).join(',')};out=${t.egressPolicies.map((p) => p.name).join(',')}`);
}

function only(resources: readonly V3Resource[]): HostEndpoint {
  const { dp } = graphWith(resources);
  expect([...dp.hostEndpoints.keys()]).toHaveLength(1);
  return [...dp.hostEndpoints.values()][0]!;
}

const eth0 = hep('node-eth0', { node: LOCAL_NODE, interfaceName: 'eth0', expectedIPs: ['10.0.0.5', 'fc00::5'] }, { role: 'host' });
const allow = [{ action: 'Allow' as const }];

describe('host endpoints in the calculation graph', () => {
  it('a local HostEndpoint with no policy: every list empty, its interface, expected IPs and profiles as given', () => {
    const ep = only([hep('node-star', { node: LOCAL_NODE, interfaceName: '*', expectedIPs: ['10.0.0.5'], profiles: [DEFAULT_ALLOW_PROFILE] })]);
    expect(ep).toEqual({
      name: '*',
      expectedIpv4Addrs: ['10.0.0.5'],
      expectedIpv6Addrs: [],
      profileIds: [DEFAULT_ALLOW_PROFILE],
      tiers: [],
      untrackedTiers: [],
      preDnatTiers: [],
      forwardTiers: [],
    });
  });

  it('projectcalico-default-allow is built in: active with allow-all rules once a local endpoint names it', () => {
    const { dp } = graphWith([hep('h', { node: LOCAL_NODE, interfaceName: '*', profiles: [DEFAULT_ALLOW_PROFILE] })]);
    const p = dp.profiles.get(DEFAULT_ALLOW_PROFILE)!;
    expect(p.inboundRules.map((r) => r.action)).toEqual(['allow']);
    expect(p.outboundRules.map((r) => r.action)).toEqual(['allow']);
    expect(p.inboundRules[0]!.srcNets).toEqual([]);
  });

  it('a stored Profile named projectcalico-default-allow cannot replace or delete the built-in one', () => {
    const deny = { apiVersion: 'projectcalico.org/v3', kind: 'Profile', metadata: { name: DEFAULT_ALLOW_PROFILE }, spec: { ingress: [{ action: 'Deny' }] } } as V3Resource;
    const { graph, dp } = graphWith([deny, hep('h', { node: LOCAL_NODE, interfaceName: '*', profiles: [DEFAULT_ALLOW_PROFILE] })]);
    expect(dp.profiles.get(DEFAULT_ALLOW_PROFILE)!.inboundRules.map((r) => r.action)).toEqual(['allow']);
    graph.onUpdates([{ op: 'delete', kind: 'Profile', name: DEFAULT_ALLOW_PROFILE }]);
    dp.apply(graph.flush());
    expect(dp.profiles.has(DEFAULT_ALLOW_PROFILE)).toBe(true);
  });

  it('a HostEndpoint of another node is not programmed here', () => {
    const { dp } = graphWith([hep('remote', { node: REMOTE_NODE, interfaceName: '*' })]);
    expect(dp.hostEndpoints.size).toBe(0);
  });

  it('Felix hostEp1WithPolicy: a normal GlobalNetworkPolicy goes to `tiers` only, keeping the tier default', () => {
    const ep = only([eth0, gnp('pol-1', { order: 10, selector: "role == 'host'", ingress: allow, egress: allow })]);
    expect(tiers(ep.tiers)).toEqual(['default(Deny):in=pol-1;out=pol-1']);
    expect([ep.untrackedTiers, ep.preDnatTiers, ep.forwardTiers]).toEqual([[], [], []]);
  });

  it('ingress-only and egress-only policies fill only their direction', () => {
    const ep = only([eth0, gnp('in-only', { selector: 'all()', types: ['Ingress'], ingress: allow }), gnp('out-only', { selector: 'all()', types: ['Egress'], egress: allow })]);
    expect(tiers(ep.tiers)).toEqual(['default(Deny):in=in-only;out=out-only']);
  });

  it('Felix untracked state: a doNotTrack policy is in `untrackedTiers` only (both directions), the tier default forced to Pass', () => {
    const untracked = gnp('untracked', { selector: "role == 'host'", ingress: allow, egress: allow });
    untracked.spec = { ...untracked.spec, doNotTrack: true, applyOnForward: true };
    const ep = only([eth0, untracked]);
    expect(tiers(ep.untrackedTiers)).toEqual(['default(Pass):in=untracked;out=untracked']);
    expect([ep.tiers, ep.preDnatTiers, ep.forwardTiers]).toEqual([[], [], []]);
  });

  it('Felix pre-DNAT state: a preDNAT policy is in `preDnatTiers` only, ingress only, default Pass', () => {
    const preDnat = gnp('pre-dnat', { selector: "role == 'host'", types: ['Ingress'], ingress: allow });
    preDnat.spec = { ...preDnat.spec, preDNAT: true, applyOnForward: true };
    const ep = only([eth0, preDnat]);
    expect(tiers(ep.preDnatTiers)).toEqual(['default(Pass):in=pre-dnat;out=']);
    expect([ep.tiers, ep.untrackedTiers, ep.forwardTiers]).toEqual([[], [], []]);
  });

  it('an applyOnForward policy is in both `forwardTiers` and `tiers`, keeping the tier default', () => {
    const aof = gnp('aof', { selector: 'all()', ingress: allow, egress: allow });
    aof.spec = { ...aof.spec, applyOnForward: true };
    const ep = only([eth0, aof, gnp('plain', { order: 1, selector: 'all()', types: ['Ingress'], ingress: allow })]);
    expect(tiers(ep.forwardTiers)).toEqual(['default(Deny):in=aof;out=aof']);
    expect(tiers(ep.tiers)).toEqual(['default(Deny):in=plain,aof;out=aof']);
  });

  it('tracked and untracked together, across tiers in tier order (Felix hostEp1WithTrackedAndUntrackedPolicy)', () => {
    const untracked = gnp('untracked', { tier: 'sec', selector: 'all()', ingress: allow, egress: allow });
    untracked.spec = { ...untracked.spec, doNotTrack: true, applyOnForward: true };
    const ep = only([eth0, tier('sec', 5), untracked, gnp('tracked', { selector: 'all()', ingress: allow, egress: allow })]);
    expect(tiers(ep.untrackedTiers)).toEqual(['sec(Pass):in=sec.untracked;out=sec.untracked']);
    expect(tiers(ep.tiers)).toEqual(['default(Deny):in=tracked;out=tracked']);
  });

  it('no namespaced policy selects a host endpoint, not even with all()', () => {
    const ep = only([eth0, knp('default', 'everything', { selector: 'all()', ingress: allow, egress: allow })]);
    expect(ep.tiers).toEqual([]);
  });

  it('workload endpoints ignore doNotTrack and preDNAT policies but take applyOnForward ones as normal policy', () => {
    const untracked = gnp('untracked', { selector: 'all()', ingress: allow });
    untracked.spec = { ...untracked.spec, doNotTrack: true, applyOnForward: true };
    const aof = gnp('aof', { selector: 'all()', types: ['Ingress'], ingress: allow });
    aof.spec = { ...aof.spec, applyOnForward: true };
    const { dp } = graphWith([wep('w', { labels: {}, ips: ['10.65.0.2/32'] }), untracked, aof]);
    expect(tiers([...dp.endpoints.values()][0]!.tiers)).toEqual(['default(Deny):in=aof;out=']);
  });

  it("every HostEndpoint's expectedIPs are members of the selector IP sets that match it, also from other nodes", () => {
    const bastion = hep('bastion', { node: REMOTE_NODE, interfaceName: '*', expectedIPs: ['10.9.0.1', 'fd00::9'] }, { role: 'bastion' });
    const pol = gnp('from-bastion', { selector: 'all()', ingress: [{ action: 'Allow', source: { selector: "role == 'bastion'" } }] });
    const { dp } = graphWith([wep('w', { labels: {}, ips: ['10.65.0.2/32'] }), bastion, pol]);
    expect([...dp.ipSets.get(sel("role == 'bastion'"))!.members].sort()).toEqual(['10.9.0.1/32', 'fd00::9/128']);
  });

  it('named ports of a HostEndpoint: expectedIPs × ports (Felix localHostEp1WithNamedPortPolicy)', () => {
    const h = hep('h', { node: REMOTE_NODE, interfaceName: 'eth0', expectedIPs: ['10.9.0.1'], ports: [{ name: 'ssh', protocol: 'TCP', port: 22 }] }, { role: 'host' });
    const pol = gnp('to-ssh', { selector: 'all()', egress: [{ action: 'Allow', protocol: 'TCP', destination: { selector: "role == 'host'", ports: ['ssh'] } }] });
    const { dp } = graphWith([wep('w', { labels: {}, ips: ['10.65.0.2/32'] }), h, pol]);
    expect([...dp.ipSets.get(np("role == 'host'", 'tcp', 'ssh'))!.members]).toEqual(['10.9.0.1,tcp:22']);
  });

  it('moving a HostEndpoint to another node removes it here; changing its labels re-resolves its policy', () => {
    const { graph, dp } = graphWith([eth0, gnp('pol', { selector: "role == 'host'", types: ['Ingress'], ingress: allow })]);
    expect(tiers(dp.hostEndpoints.get('node-eth0')!.tiers)).toEqual(['default(Deny):in=pol;out=']);
    graph.onUpdates([{ op: 'upsert', resource: hep('node-eth0', eth0.spec, { role: 'other' }) }]);
    dp.apply(graph.flush());
    expect(dp.hostEndpoints.get('node-eth0')!.tiers).toEqual([]);
    graph.onUpdates([{ op: 'upsert', resource: hep('node-eth0', { ...eth0.spec, node: REMOTE_NODE }) }]);
    dp.apply(graph.flush());
    expect(dp.hostEndpoints.size).toBe(0);
  });

  it('an invalid HostEndpoint (no node) is held as deleted', () => {
    const { graph, dp } = graphWith([eth0]);
    graph.onUpdates([{ op: 'upsert', resource: hep('node-eth0', { interfaceName: 'eth0' } as V3HostEndpoint['spec']) }]);
    dp.apply(graph.flush());
    expect(dp.hostEndpoints.size).toBe(0);
  });
});
