import { describe, expect, it } from 'vitest';
import type { DataplaneMessage, HostEndpoint, PolicyId, Rule, TierInfo } from '../proto/index.ts';
import { allowAllProfile, endpoint, policy, port, rule } from '../../test/dataplane/fixtures.ts';
import { NodeState } from './node-state.ts';
import { hostChainName, hostEndpointFor, FELIX_DEFAULT_FAILSAFES, failsafeEntry } from './host-endpoints.ts';
import { decideFlow, type FlowOptions, type FlowPeer, type FlowResult } from './host-flow.ts';
import { makePacket } from './verdict-engine.ts';
import { describeDroppingStage, describeStages } from './explanation.ts';

// Two nodes, each with one interface holding its address, and a pod on each (node-1 has two).
const NODE_IP = { 'node-1': '10.72.0.1', 'node-2': '10.72.0.2' } as const;
type Node = keyof typeof NODE_IP;

const gnp = (name: string, tierName = 'default'): PolicyId => ({ tier: tierName, name, kind: 'GlobalNetworkPolicy' });

function hep(over: Partial<HostEndpoint> = {}): HostEndpoint {
  return { name: '*', expectedIpv4Addrs: [], expectedIpv6Addrs: [], profileIds: [], tiers: [], untrackedTiers: [], preDnatTiers: [], forwardTiers: [], ...over };
}

const tierOf = (ingress: readonly PolicyId[], egress: readonly PolicyId[] = [], defaultAction: TierInfo['defaultAction'] = 'Deny'): TierInfo => ({
  name: 'default',
  defaultAction,
  ingressPolicies: ingress,
  egressPolicies: egress,
});

interface Cluster {
  readonly states: Record<Node, NodeState>;
  readonly host: (n: Node) => FlowPeer;
  readonly pod: (id: 'x/a' | 'x/b' | 'x/c') => FlowPeer;
}

/** `heps` per node (name → endpoint), `policies` (id, inbound, outbound) programmed on both nodes. */
function cluster(heps: Partial<Record<Node, Record<string, HostEndpoint>>>, policies: ReadonlyArray<readonly [PolicyId, readonly Rule[], readonly Rule[]]> = []): Cluster {
  const states = { 'node-1': new NodeState('node-1'), 'node-2': new NodeState('node-2') };
  for (const n of ['node-1', 'node-2'] as const) {
    const msgs: DataplaneMessage[] = [allowAllProfile('kns.x'), allowAllProfile('allow-all')];
    for (const [id, inbound, outbound] of policies) msgs.push({ type: 'ActivePolicyUpdate', id, policy: policy(inbound, outbound) });
    for (const [name, ep] of Object.entries(heps[n] ?? {})) msgs.push({ type: 'HostEndpointUpdate', id: { name }, endpoint: ep });
    states[n].apply(msgs);
  }
  const pods = { 'x/a': ['node-1', '10.72.1.10'], 'x/c': ['node-1', '10.72.1.11'], 'x/b': ['node-2', '10.72.2.10'] } as const;
  return {
    states,
    host: (n) => ({ kind: 'host', node: n, state: states[n], net: `${NODE_IP[n]}/32` }),
    pod: (id) => {
      const [node, ip] = pods[id];
      return { kind: 'workload', id, node, state: states[node], net: `${ip}/32`, endpoint: endpoint({ profileIds: ['kns.x'], ipv4Nets: [`${ip}/32`] }) };
    },
  };
}

const opts: FlowOptions = { interfaceOf: (node) => ({ addresses: [NODE_IP[node as Node]] }) };

function flow(c: Cluster, from: FlowPeer, to: FlowPeer, dstPort: number, o: Partial<FlowOptions> = {}): FlowResult {
  return decideFlow(from, to, makePacket(from.net, to.net, 'TCP', dstPort), { ...opts, ...o }, true);
}

/** `node table chain` of the stage that dropped the flow. */
function droppedAt(r: FlowResult): string | undefined {
  const st = r.stages.find((s) => !s.verdict.allowed);
  return st === undefined ? undefined : `${st.node} ${st.table} ${st.chain}`;
}

const ANY = 'cali-fh-any-interface-at-all';
const ANY_OUT = 'cali-th-any-interface-at-all';

describe('chain names', () => {
  it("are Felix's: the * chains fit in 28 characters, the forward ones are hashed", () => {
    expect(hostChainName('cali-fh-', 'any-interface-at-all')).toBe(ANY);
    expect(hostChainName('cali-fhfw-', 'any-interface-at-all')).toBe('cali-fhfw-_Nqh4HyA73udmyanQI');
    expect(hostChainName('cali-thfw-', 'any-interface-at-all')).toBe('cali-thfw-_Nqh4HyA73udmyanQI');
    expect(hostChainName('cali-fh-', 'eth0')).toBe('cali-fh-eth0');
  });
});

describe('failsafes (Felix defaults)', () => {
  const pkt = (dst: number, src?: number, proto: 'TCP' | 'UDP' = 'TCP') => makePacket('10.72.0.1/32', '10.72.0.2/32', proto, dst, src);
  it('tcp:22 is inbound only; tcp:2379 both ways; udp:53 outbound only', () => {
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-in', 'filter', pkt(22))).toBe('tcp:22');
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-out', 'filter', pkt(22))).toBeUndefined();
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-out', 'filter', pkt(2379))).toBe('tcp:2379');
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-out', 'filter', pkt(53, undefined, 'UDP'))).toBe('udp:53');
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-in', 'filter', pkt(53, undefined, 'UDP'))).toBeUndefined();
  });
  it('the raw chains also hold the other direction as source ports (replies of failsafe connections)', () => {
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-out', 'raw', pkt(40000, 22))).toBe('tcp:22 (source port)');
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-out', 'filter', pkt(40000, 22))).toBeUndefined();
    // An ephemeral source port never matches a --sport entry.
    expect(failsafeEntry(FELIX_DEFAULT_FAILSAFES, 'cali-failsafe-in', 'raw', pkt(40000))).toBeUndefined();
  });
});

describe('interface matching', () => {
  const iface = { addresses: ['10.72.0.1'] };
  it('by expectedIPs; a named interface never matches an unnamed one; the smallest name wins; * is the default', () => {
    const c = cluster({
      'node-1': {
        'b-hep': hep({ name: '', expectedIpv4Addrs: ['10.72.0.1'] }),
        'a-hep': hep({ name: '', expectedIpv4Addrs: ['10.72.0.1'] }),
        'named': hep({ name: 'eth0', expectedIpv4Addrs: ['10.72.0.1'] }),
        'z-any': hep(),
        'y-any': hep(),
      },
    });
    expect(hostEndpointFor(c.states['node-1'], iface, 'filter')?.name).toBe('a-hep');
    expect(hostEndpointFor(c.states['node-1'], { addresses: ['10.72.0.9'] }, 'filter')?.name).toBe('y-any');
    expect(hostEndpointFor(c.states['node-1'], undefined, 'filter')?.name).toBe('y-any');
    expect(hostEndpointFor(c.states['node-1'], { name: 'eth0', addresses: ['10.72.0.9'] }, 'filter')?.name).toBe('named');
  });
  it('raw: only specific endpoints with untracked tiers, never *; mangle: a * default with preDNAT tiers catches an interface whose endpoint has none', () => {
    const t = [tierOf([gnp('p')])];
    const c = cluster({ 'node-1': { spec: hep({ name: '', expectedIpv4Addrs: ['10.72.0.1'] }), any: hep({ untrackedTiers: t, preDnatTiers: t }) } });
    expect(hostEndpointFor(c.states['node-1'], iface, 'raw')).toBeUndefined();
    expect(hostEndpointFor(c.states['node-1'], iface, 'mangle-prednat')?.name).toBe('any');
    expect(hostEndpointFor(c.states['node-1'], iface, 'filter')?.name).toBe('spec');
  });
});

describe('a * host endpoint with no policy and no profile (felix/fv/hostendpoints_test.go "with no policies and no profiles")', () => {
  const c = cluster({ 'node-1': { 'hep-1': hep() }, 'node-2': { 'hep-2': hep() } });

  it('host → host is denied by the source egress (no profile matched), except ports failsafe both ways', () => {
    const r = flow(c, c.host('node-1'), c.host('node-2'), 8080);
    expect(r.allowed).toBe(false);
    expect(droppedAt(r)).toBe(`node-1 filter ${ANY_OUT}`);
    expect(r.stages.at(-1)?.verdict.decision).toEqual({ kind: 'no-profile-matched', action: 'deny' });
    const ok = flow(c, c.host('node-1'), c.host('node-2'), 2379);
    expect(ok.allowed).toBe(true);
    expect(ok.stages.map((s) => `${s.node} ${s.table} ${s.chain}`)).toEqual(['node-1 filter cali-failsafe-out', 'node-2 filter cali-failsafe-in']);
  });

  it('tcp:22 is inbound only: a pod reaches it, a host (whose egress is denied) does not (donottrack_test.go "Port 22 is inbound-only")', () => {
    expect(flow(c, c.pod('x/a'), c.host('node-2'), 22).allowed).toBe(true);
    expect(droppedAt(flow(c, c.host('node-1'), c.host('node-2'), 22))).toBe(`node-1 filter ${ANY_OUT}`);
  });

  it('a pod → a remote host on another port is denied by the destination host endpoint ingress', () => {
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-2'), 8080))).toBe(`node-2 filter ${ANY}`);
  });

  it('pod ↔ pod is unaffected: the forward chains allow by default', () => {
    const r = flow(c, c.pod('x/a'), c.pod('x/b'), 8080);
    expect(r.allowed).toBe(true);
    expect(r.stages.filter((s) => s.hostEndpoint !== undefined).map((s) => `${s.node} ${s.chain} ${s.verdict.decision.kind}`)).toEqual([
      'node-1 cali-fhfw-_Nqh4HyA73udmyanQI forward-default',
      'node-1 cali-thfw-_Nqh4HyA73udmyanQI forward-default',
      'node-2 cali-fhfw-_Nqh4HyA73udmyanQI forward-default',
      'node-2 cali-thfw-_Nqh4HyA73udmyanQI forward-default',
    ]);
    expect(flow(c, c.pod('x/a'), c.pod('x/c'), 8080).allowed).toBe(true);
  });

  it('host → its own pod is always allowed; host → a remote pod is denied', () => {
    const own = flow(c, c.host('node-1'), c.pod('x/a'), 8080);
    expect(own.allowed).toBe(true);
    expect(own.stages.map((s) => s.verdict.decision.kind)).toEqual(['host-to-local-workload']);
    expect(droppedAt(flow(c, c.host('node-1'), c.pod('x/b'), 8080))).toBe(`node-1 filter ${ANY_OUT}`);
  });

  it('pod → its own host is its egress then DefaultEndpointToHostAction, never the host endpoint ingress', () => {
    const drop = flow(c, c.pod('x/a'), c.host('node-1'), 8080);
    expect(droppedAt(drop)).toBe('node-1 filter cali-wl-to-host');
    expect(drop.stages.some((s) => s.chain === ANY)).toBe(false);
    expect(flow(c, c.pod('x/a'), c.host('node-1'), 8080, { endpointToHostAction: 'ACCEPT' }).allowed).toBe(true);
    expect(flow(c, c.pod('x/a'), c.host('node-1'), 8080, { endpointToHostAction: 'RETURN' }).allowed).toBe(true);
  });
});

describe('profiles and policies on a * host endpoint', () => {
  it('the allow-all profile allows host traffic (hostendpoints_test.go "allow-all profile")', () => {
    const c = cluster({ 'node-1': { h1: hep({ profileIds: ['allow-all'] }) }, 'node-2': { h2: hep({ profileIds: ['allow-all'] }) } });
    expect(flow(c, c.host('node-1'), c.host('node-2'), 8080).allowed).toBe(true);
    expect(flow(c, c.host('node-1'), c.pod('x/b'), 8080).allowed).toBe(true);
  });

  it('per-direction default deny: an ingress-only policy and no profile drops all egress', () => {
    const p = gnp('open-8080');
    const c = cluster({ 'node-2': { h2: hep({ tiers: [tierOf([p])] }) } }, [[p, [rule({ protocol: 'tcp', dstPorts: [port(8080)] })], []]]);
    expect(flow(c, c.pod('x/a'), c.host('node-2'), 8080).allowed).toBe(true);
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-2'), 9090))).toBe(`node-2 filter ${ANY}`);
    const out = flow(c, c.host('node-2'), c.pod('x/a'), 8080);
    expect(droppedAt(out)).toBe(`node-2 filter ${ANY_OUT}`);
    expect(out.stages.at(-1)?.verdict.decision).toEqual({ kind: 'no-profile-matched', action: 'deny' });
  });

  it('applyOnForward: forward tiers police forwarded pod traffic both ways on the node, normal tiers do not (hostendpoints_test.go "AOF policy denies it")', () => {
    // aof-f1 on node-2: ingress only from its own pod x/b, all egress; aof-f0 on node-1: allow both ways.
    const [f0, f1] = [gnp('aof-f0'), gnp('aof-f1')];
    const c = cluster(
      {
        'node-1': { h1: hep({ tiers: [tierOf([f0], [f0])], forwardTiers: [tierOf([f0], [f0])], profileIds: ['allow-all'] }) },
        'node-2': { h2: hep({ tiers: [tierOf([f1], [f1])], forwardTiers: [tierOf([f1], [f1])], profileIds: ['allow-all'] }) },
      },
      [
        [f0, [rule()], [rule()]],
        [f1, [rule({ srcNets: ['10.72.2.10/32'] })], [rule()]],
      ],
    );
    expect(droppedAt(flow(c, c.host('node-1'), c.host('node-2'), 8080))).toBe(`node-2 filter ${ANY}`);
    expect(droppedAt(flow(c, c.host('node-1'), c.pod('x/b'), 8080))).toBe('node-2 filter cali-fhfw-_Nqh4HyA73udmyanQI');
    expect(droppedAt(flow(c, c.pod('x/a'), c.pod('x/b'), 8080))).toBe('node-2 filter cali-fhfw-_Nqh4HyA73udmyanQI');
    expect(flow(c, c.pod('x/b'), c.pod('x/a'), 8080).allowed).toBe(true);
    expect(flow(c, c.host('node-1'), c.pod('x/a'), 8080).allowed).toBe(true);
  });

  it('the same policy without applyOnForward polices the host only', () => {
    const p = gnp('deny-node-1-pods');
    const t = [tierOf([p])];
    const c = cluster({ 'node-2': { h2: hep({ tiers: t, profileIds: ['allow-all'] }) } }, [[p, [rule({ action: 'deny', srcNets: ['10.72.1.0/24'] })], []]]);
    expect(flow(c, c.pod('x/a'), c.pod('x/b'), 8080).allowed).toBe(true);
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-2'), 8080))).toBe(`node-2 filter ${ANY}`);
  });

  it('forward tiers for the other direction only: the fhfw chain returns without a verdict, the * thfw (towards the pod) decides', () => {
    const p = gnp('aof-egress');
    const c = cluster({ 'node-2': { h2: hep({ forwardTiers: [tierOf([], [p])], profileIds: ['allow-all'] }) } }, [[p, [], [rule({ action: 'deny' })]]]);
    const r = flow(c, c.pod('x/a'), c.pod('x/b'), 8080);
    expect(r.stages.find((s) => s.chain === 'cali-fhfw-_Nqh4HyA73udmyanQI')?.verdict.decision.kind).toBe('no-verdict');
    expect(droppedAt(r)).toBe('node-2 filter cali-thfw-_Nqh4HyA73udmyanQI');
  });

  it('preDNAT: a * deny catches traffic arriving from other nodes and from local pods (pre_dnat_test.go all-interfaces HEP)', () => {
    const p = gnp('pre-deny-9090');
    const t = [tierOf([p], [], 'Pass')];
    const c = cluster({ 'node-2': { h2: hep({ preDnatTiers: t, profileIds: ['allow-all'] }) }, 'node-1': { h1: hep({ preDnatTiers: t, profileIds: ['allow-all'] }) } }, [[p, [rule({ action: 'deny', protocol: 'tcp', dstPorts: [port(9090)] })], []]]);
    // A pod's packets meet the * preDNAT chain of their own node first.
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-2'), 9090))).toBe(`node-1 mangle ${ANY}`);
    expect(droppedAt(flow(c, c.pod('x/a'), c.pod('x/c'), 9090))).toBe(`node-1 mangle ${ANY}`);
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-1'), 9090, { endpointToHostAction: 'ACCEPT' }))).toBe(`node-1 mangle ${ANY}`);
    expect(flow(c, c.pod('x/a'), c.host('node-2'), 8080).allowed).toBe(true);
    // preDNAT is ingress only: a host's egress never meets it; the destination's ingress does.
    const r = flow(c, c.host('node-1'), c.host('node-2'), 9090);
    expect(r.stages.filter((s) => s.node === 'node-1').map((s) => `${s.table} ${s.chain}`)).toEqual([`filter ${ANY_OUT}`]);
    expect(droppedAt(r)).toBe(`node-2 mangle ${ANY}`);
  });

  it('preDNAT allow skips the normal ingress policy of the host, not the workload policy', () => {
    const p = gnp('pre-allow-8080');
    const t = [tierOf([p], [], 'Pass')];
    const c = cluster({ 'node-2': { h2: hep({ preDnatTiers: t }) } }, [[p, [rule({ protocol: 'tcp', dstPorts: [port(8080)] })], []]]);
    const r = flow(c, c.pod('x/a'), c.host('node-2'), 8080);
    expect(r.allowed).toBe(true);
    expect(r.stages.some((s) => s.chain === ANY && s.table === 'filter')).toBe(false);
    expect(droppedAt(flow(c, c.pod('x/a'), c.host('node-2'), 9090))).toBe(`node-2 filter ${ANY}`);
  });
});

describe('doNotTrack (felix/fv/donottrack_test.go), specific host endpoints matched by expectedIPs', () => {
  const [p1, p2] = [gnp('host-0-pol'), gnp('host-1-pol')];
  const specific = (ip: string, pol: PolicyId): HostEndpoint => hep({ name: '', expectedIpv4Addrs: [ip], untrackedTiers: [tierOf([pol], [pol], 'Pass')] });
  const both = (r1in: Rule[], r1out: Rule[]): Cluster =>
    cluster({ 'node-1': { 'eth0-1': specific('10.72.0.1', p1) }, 'node-2': { 'eth0-2': specific('10.72.0.2', p2) } }, [
      [p1, r1in, r1out],
      [p2, [rule({ srcNets: ['10.72.0.1/32'] })], [rule({ dstNets: ['10.72.0.1/32'] })]],
    ]);

  it('bidirectional untracked allows give full connectivity, without any tracked policy or profile', () => {
    const c = both([rule({ srcNets: ['10.72.0.2/32'] })], [rule({ dstNets: ['10.72.0.2/32'] })]);
    for (const p of [8080, 2379, 22]) {
      expect(flow(c, c.host('node-1'), c.host('node-2'), p).allowed).toBe(true);
      expect(flow(c, c.host('node-2'), c.host('node-1'), p).allowed).toBe(true);
    }
    expect(flow(c, c.host('node-1'), c.host('node-2'), 8080).stages.map((s) => `${s.packet} ${s.node} ${s.table} ${s.verdict.decision.kind}`)).toEqual([
      'request node-1 raw rule',
      'request node-2 raw rule',
      'reply node-2 raw rule',
      'reply node-1 raw rule',
    ]);
  });

  it("host-0's egress replaced by a non-matching deny: only failsafe connectivity, and the reply of an untracked request is dropped", () => {
    const c = both([rule({ srcNets: ['10.72.0.2/32'] })], [rule({ action: 'deny', dstNets: ['10.72.0.1/32'] })]);
    expect(droppedAt(flow(c, c.host('node-1'), c.host('node-2'), 8080))).toBe('node-1 filter cali-th-<interface of 10.72.0.1>');
    const back = flow(c, c.host('node-2'), c.host('node-1'), 8080);
    expect(back.allowed).toBe(false);
    expect(back.stages.at(-1)).toMatchObject({ node: 'node-1', packet: 'reply', table: 'filter', chain: 'cali-th-<interface of 10.72.0.1>', hostEndpoint: 'eth0-1' });
    expect(back.stages.at(-1)?.verdict.decision).toEqual({ kind: 'untracked-mismatch', action: 'deny', untracked: 'request' });
    expect(flow(c, c.host('node-1'), c.host('node-2'), 2379).allowed).toBe(true);
    expect(flow(c, c.host('node-2'), c.host('node-1'), 2379).allowed).toBe(true);
    expect(flow(c, c.host('node-2'), c.host('node-1'), 22).allowed).toBe(true);
    expect(flow(c, c.host('node-1'), c.host('node-2'), 22).allowed).toBe(false);
  });

  it("host-0's ingress replaced by a deny to itself: dropped in raw, both ways, except failsafe ports", () => {
    const c = both([rule({ action: 'deny', dstNets: ['10.72.0.1/32'] })], [rule({ dstNets: ['10.72.0.2/32'] })]);
    expect(droppedAt(flow(c, c.host('node-2'), c.host('node-1'), 8080))).toBe('node-1 raw cali-fh-<interface of 10.72.0.1>');
    const there = flow(c, c.host('node-1'), c.host('node-2'), 8080);
    expect(there.stages.at(-1)).toMatchObject({ packet: 'reply', node: 'node-1', table: 'raw' });
    expect(there.allowed).toBe(false);
    expect(flow(c, c.host('node-2'), c.host('node-1'), 22).allowed).toBe(true);
    expect(flow(c, c.host('node-1'), c.host('node-2'), 2379).allowed).toBe(true);
  });

  it("a pod's tracked connection whose reply node-1 untracks: the pod's next packet is INVALID (found by the process e2e: donottrack, x/a → node-2:22)", () => {
    const c = both([rule({ srcNets: ['10.72.0.2/32'] })], [rule({ dstNets: ['10.72.0.2/32'] })]);
    const r = flow(c, c.pod('x/a'), c.host('node-2'), 22);
    expect(r.allowed).toBe(false);
    expect(r.stages.at(-1)).toMatchObject({ node: 'node-1', table: 'filter', chain: 'cali-fw-x/a', packet: 'reply' });
    expect(r.stages.at(-1)?.verdict.decision).toEqual({ kind: 'untracked-mismatch', action: 'deny', untracked: 'reply' });
    expect(describeDroppingStage(r.stages)).toBe("the client's next packet, on node-1, table filter, chain cali-fw-x/a — egress");
    // Node-2's failsafe reply is tracked on node-2 (the raw source-port entry): no mismatch there.
    expect(r.stages.find((s) => s.packet === 'reply' && s.node === 'node-2')?.chain).toBe('cali-failsafe-out');
  });

  it('doNotTrack on a * host endpoint is ignored, as Felix ignores it', () => {
    const p = gnp('dnt');
    const c = cluster({ 'node-2': { any: hep({ untrackedTiers: [tierOf([p], [], 'Pass')], profileIds: ['allow-all'] }) } }, [[p, [rule({ action: 'deny' })], []]]);
    expect(flow(c, c.pod('x/a'), c.host('node-2'), 8080).allowed).toBe(true);
  });
});

describe('explanations of host flows name the host endpoint, the table and the chain', () => {
  it('the * default deny: node, filter, cali-fh-any-interface-at-all, HostEndpoint, and the walk', () => {
    const c = cluster({ 'node-2': { 'hep-2': hep() } });
    const r = flow(c, c.pod('x/a'), c.host('node-2'), 8080);
    expect(describeDroppingStage(r.stages)).toBe('on node-2, table filter, chain cali-fh-any-interface-at-all — HostEndpoint hep-2 (normal policy, ingress)');
    expect(describeStages(r.stages, undefined)).toEqual([
      'path (iptables, in packet order):',
      '  node-1 filter cali-fw-x/a — pod x/a (egress): allowed by profile kns.x egress[0] (Allow)',
      "  DROPPED at node-2 filter cali-fh-any-interface-at-all — HostEndpoint hep-2 (normal policy, ingress): denied: no tier decided and no profile allowed it (the endpoint chain's final DROP)",
      '      no tier has ingress policies for this endpoint: straight to its profiles',
      '      no profile matched → DROP',
    ]);
  });

  it('a failsafe port: the failsafe chain and its entry', () => {
    const c = cluster({ 'node-2': { 'hep-2': hep() } });
    const r = flow(c, c.pod('x/a'), c.host('node-2'), 22);
    expect(describeStages(r.stages, undefined).at(-1)).toBe('  node-2 filter cali-failsafe-in — HostEndpoint hep-2 (normal policy, ingress): allowed by cali-failsafe-in (failsafe tcp:22)');
  });

  it('an untracked request whose reply is not untracked', () => {
    const p = gnp('dnt');
    const c = cluster({ 'node-2': { eth: hep({ name: '', expectedIpv4Addrs: ['10.72.0.2'], untrackedTiers: [tierOf([p], [], 'Pass')] }) } }, [[p, [rule()], []]]);
    const r = flow(c, c.host('node-1'), c.host('node-2'), 8080);
    expect(describeDroppingStage(r.stages)).toBe('the reply, on node-2, table filter, chain cali-th-<interface of 10.72.0.2> — HostEndpoint eth (ctstate INVALID rule, egress)');
  });
});

describe('conntrack by protocol, when request and reply are tracked differently (differential findings F1–F3; Felix and Tessera\'s dataplane agree on each)', () => {
  const dnt = gnp('dnt');
  /** node-2's endpoint untracks (and allows) everything it sends; nothing untracked comes in. */
  const egressUntracked = (): Cluster =>
    cluster({ 'node-2': { 'node-2-hep': hep({ name: '', expectedIpv4Addrs: ['10.72.0.2'], untrackedTiers: [tierOf([], [dnt], 'Pass')], profileIds: ['allow-all'] }) } }, [[dnt, [], [rule()]]]);
  const udp = (c: Cluster, from: FlowPeer, to: FlowPeer, port: number): FlowResult => decideFlow(from, to, makePacket(from.net, to.net, 'UDP', port), opts, true);
  const icmp = (c: Cluster, from: FlowPeer, to: FlowPeer): FlowResult => decideFlow(from, to, makePacket(from.net, to.net, 'ICMP', 0), opts, true);

  it('F1: an ICMP echo whose request was untracked: the echo reply is INVALID and dropped where it arrives', () => {
    const c = egressUntracked();
    for (const to of [c.host('node-1'), c.pod('x/a')]) {
      const r = icmp(c, c.host('node-2'), to);
      expect(r.allowed).toBe(false);
      expect(r.stages.at(-1)?.verdict.decision).toEqual({ kind: 'untracked-mismatch', action: 'deny', untracked: 'request' });
    }
  });

  it('F2: a UDP reply to an untracked request is a new flow, which normal policy (here the allow-all profile) decides; a UDP reply left untracked ends the exchange', () => {
    const c = egressUntracked();
    expect(udp(c, c.host('node-2'), c.pod('x/a'), 5353).allowed).toBe(true);
    expect(udp(c, c.pod('x/a'), c.host('node-2'), 5353).allowed).toBe(true);
    // The same new-flow reply with no profile to allow it: the endpoint's normal chain drops it.
    const strict = cluster({ 'node-2': { 'node-2-hep': hep({ name: '', expectedIpv4Addrs: ['10.72.0.2'], untrackedTiers: [tierOf([], [dnt], 'Pass')] }) } }, [[dnt, [], [rule()]]]);
    const r = udp(strict, strict.host('node-2'), strict.pod('x/a'), 5353);
    expect(r.allowed).toBe(false);
    expect(droppedAt(r)).toBe('node-2 filter cali-fh-<interface of 10.72.0.2>');
    // TCP keeps the INVALID rule.
    expect(flow(c, c.host('node-2'), c.pod('x/a'), 80).allowed).toBe(false);
  });

  it("F3: forwarded pod traffic untracked by the destination node's endpoint: an ICMP echo reply is INVALID; a UDP reply is the pod's new egress flow", () => {
    const c = cluster({ 'node-1': { 'node-1-hep': hep({ name: '', expectedIpv4Addrs: ['10.72.0.1'], untrackedTiers: [tierOf([dnt], [], 'Pass')] }) } }, [[dnt, [rule()], []]]);
    expect(icmp(c, c.pod('x/b'), c.pod('x/a')).allowed).toBe(false);
    expect(udp(c, c.pod('x/b'), c.pod('x/a'), 53).allowed).toBe(true);
    expect(flow(c, c.pod('x/b'), c.pod('x/a'), 80).allowed).toBe(false);
  });
});

describe('IPv6', () => {
  it('an endpoint matched by an expected IPv6 address; failsafes apply to IPv6 packets as to IPv4', () => {
    const states = { n1: new NodeState('node-1'), n2: new NodeState('node-2') };
    states.n2.apply([{ type: 'HostEndpointUpdate', id: { name: 'v6' }, endpoint: hep({ name: '', expectedIpv6Addrs: ['fd00:72::2'] }) }]);
    const from: FlowPeer = { kind: 'host', node: 'node-1', state: states.n1, net: 'fd00:72::1/128' };
    const to: FlowPeer = { kind: 'host', node: 'node-2', state: states.n2, net: 'fd00:72::2/128' };
    const o: FlowOptions = { interfaceOf: (n) => ({ addresses: [n === 'node-1' ? 'fd00:72::1' : 'fd00:72::2'] }) };
    const denied = decideFlow(from, to, makePacket(from.net, to.net, 'TCP', 8080), o);
    expect(droppedAt(denied)).toBe('node-2 filter cali-fh-<interface of fd00:72::2>');
    expect(decideFlow(from, to, makePacket(from.net, to.net, 'TCP', 22), o).allowed).toBe(true);
    // The same endpoint does not match an interface holding only IPv4 addresses.
    expect(decideFlow(from, to, makePacket(from.net, to.net, 'TCP', 8080), { interfaceOf: () => ({ addresses: ['10.72.0.2'] }) }).allowed).toBe(true);
  });
});
