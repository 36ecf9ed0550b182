/**
 * `services` rule matches in the simulator: the verdict engine decides what the rendered
 * `--match-set <svc> dst,dst` / `src` rules decide, `explain` names the Service and the member,
 * and EndpointSlices reach the graphs from the input (or derived from Services and pods).
 */
import { describe, expect, it } from 'vitest';

import type { K8sEndpointSlice } from '../api/index.ts';
import { translateCluster, type ClusterObjects } from './cluster-objects.ts';
import { describeVerdict } from './explanation.ts';
import { IpSetNames } from './ipset-names.ts';
import { initialState, stateObjects, type Scenario } from './scenario-file.ts';
import { Simulation } from './simulation.ts';
import { NodeState } from './node-state.ts';
import { evaluateDirection, makePacket, type ProbeProtocol } from './verdict-engine.ts';
import { makeRule, type WorkloadEndpoint } from '../proto/index.ts';

const ns = (name: string): { name: string; labels: Record<string, string> } => ({ name, labels: { 'kubernetes.io/metadata.name': name } });

function slice(name: string, service: string, addresses: string[], ports: K8sEndpointSlice['ports'], namespace = 'x'): K8sEndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: addresses[0]?.includes(':') === true ? 'IPv6' : 'IPv4',
    endpoints: addresses.map((a) => ({ addresses: [a], conditions: { ready: false } })),
    ports,
  };
}

const egressToWeb = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  // No services.namespace: the policy's own (x).
  metadata: { name: 'client-to-web', namespace: 'x' },
  spec: { selector: "app == 'client'", types: ['Egress'], egress: [{ action: 'Allow', destination: { services: { name: 'web' } } }] },
};
const ingressFromClients = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'web-from-clients' },
  spec: { selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Allow', source: { services: { name: 'clients', namespace: 'x' } } }] },
};

const scenario: Scenario = {
  name: 'services',
  namespaces: [ns('x')],
  pods: [
    { namespace: 'x', name: 'client', labels: { app: 'client' }, ip: '10.66.1.3', node: 'node-1' },
    { namespace: 'x', name: 'web-1', labels: { app: 'web' }, ip: '10.66.1.2', node: 'node-1' },
    { namespace: 'x', name: 'web-2', labels: { app: 'web' }, ip: '10.66.2.2', node: 'node-2' },
    { namespace: 'x', name: 'stranger', labels: { app: 'client' }, ip: '10.66.2.9', node: 'node-2' },
  ],
  policies: [egressToWeb, ingressFromClients],
  probes: [],
};

function simulate(slices: K8sEndpointSlice[]): { sim: Simulation; names: IpSetNames } {
  const notes: string[] = [];
  const objs: ClusterObjects = { ...stateObjects(initialState(scenario), notes), endpointSlices: slices };
  const t = translateCluster(objs);
  return { sim: new Simulation(t.resources), names: new IpSetNames(t.resources.values()) };
}

// web-1 serves 8080/TCP through Service x/web; web-2 is not among its endpoints.
const SLICES = [
  slice('web-abc', 'web', ['10.66.1.2'], [{ name: 'http', protocol: 'TCP', port: 8080 }, { name: 'dns', protocol: 'UDP', port: 53 }]),
  slice('clients-abc', 'clients', ['10.66.1.3'], []),
];

function verdict(from: string, to: string, protocol: ProbeProtocol, port: number, slices = SLICES): { allowed: boolean; text: string } {
  const { sim, names } = simulate(slices);
  const f = sim.endpointFor(from)!;
  const t = sim.endpointFor(to)!;
  const v = sim.verdict(f, t, protocol, port, true);
  return { allowed: v.allowed, text: describeVerdict(f, t, protocol, port, v, names).join('\n') };
}

describe('verdict engine: a dstIpPortSetIds rule (--match-set <svc> dst,dst)', () => {
  const SVC = 'svc:Jhwii46PCMT5NlhWsUqZmv7al8TeHFbNQMhoVg';
  const state = new NodeState('node-1');
  state.apply([
    { type: 'IPSetUpdate', id: SVC, ipsetType: 'hash:ip,port', members: ['10.0.0.1,tcp:80', '10.0.0.2,udp:53', 'fd00::1,sctp:80'] },
    {
      type: 'ActivePolicyUpdate',
      id: { tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' },
      policy: { inboundRules: [], outboundRules: [makeRule({ action: 'allow', dstIpPortSetIds: [SVC] })], untracked: false, preDnat: false, applyOnForward: false },
    },
  ]);
  const ep: WorkloadEndpoint = {
    interfaceName: 'cali1',
    state: 'active',
    mac: '',
    ipv4Nets: ['10.0.0.9/32'],
    ipv6Nets: ['fd00::9/128'],
    profileIds: [],
    tiers: [{ name: 'default', defaultAction: 'Deny', ingressPolicies: [], egressPolicies: [{ tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' }] }],
  };
  const egress = (dst: string, protocol: ProbeProtocol | 'ICMP', port: number): boolean =>
    evaluateDirection(state, ep, 'egress', makePacket(dst.includes(':') ? 'fd00::9/128' : '10.0.0.9/32', dst, protocol, port)).allowed;

  it('allows only (member ip, proto:port): not another port, protocol or address; never ICMP', () => {
    expect(egress('10.0.0.1/32', 'TCP', 80)).toBe(true);
    expect(egress('10.0.0.2/32', 'UDP', 53)).toBe(true);
    expect(egress('fd00::1/128', 'SCTP', 80)).toBe(true);
    expect(egress('10.0.0.1/32', 'TCP', 81)).toBe(false);
    expect(egress('10.0.0.1/32', 'UDP', 80)).toBe(false);
    expect(egress('10.0.0.2/32', 'TCP', 80)).toBe(false);
    expect(egress('fd00::1/128', 'TCP', 80)).toBe(false);
    expect(egress('10.0.0.1/32', 'ICMP', 0)).toBe(false);
  });
});

describe('services in the verdict engine', () => {
  it('egress to a Service allows exactly (member ip, proto:port), and explain names the Service and the member', () => {
    const ok = verdict('x/client', 'x/web-1', 'TCP', 8080);
    expect(ok.allowed).toBe(true);
    expect(ok.text).toContain('egress[0] Allow: matched — destination 10.66.1.2,tcp:8080 is in {Service x/web (endpoint addresses and ports)}');
    expect(ok.text).toContain('ingress[0] Allow: matched — source 10.66.1.3/32 is in {Service x/clients (endpoint addresses)}');
    expect(verdict('x/client', 'x/web-1', 'UDP', 53).allowed).toBe(true);
    // Another port, another protocol on a listed port, another pod: the set does not hold them.
    const wrongPort = verdict('x/client', 'x/web-1', 'TCP', 9090);
    expect(wrongPort.allowed).toBe(false);
    expect(wrongPort.text).toContain('no match — destination service: 10.66.1.2,tcp:9090 is not in {Service x/web (endpoint addresses and ports)}');
    expect(verdict('x/client', 'x/web-1', 'UDP', 8080).allowed).toBe(false);
    expect(verdict('x/client', 'x/web-2', 'TCP', 8080).allowed).toBe(false);
  });

  it('ingress from a Service admits only its endpoint addresses', () => {
    const denied = verdict('x/stranger', 'x/web-1', 'TCP', 8080);
    // stranger's egress policy is client-to-web too; web-1:8080 is a member, so egress allows.
    expect(denied.allowed).toBe(false);
    expect(denied.text).toContain('no match — source service: 10.66.2.9 is not in {Service x/clients (endpoint addresses)}');
  });

  it('without slices a Service matches nothing (Felix: no EndpointSlice, no members)', () => {
    expect(verdict('x/client', 'x/web-1', 'TCP', 8080, []).allowed).toBe(false);
  });

  it('a slice update reaches the graphs incrementally (Simulation.update), deletes included', () => {
    const notes: string[] = [];
    const base = stateObjects(initialState(scenario), notes);
    const sim = new Simulation(translateCluster({ ...base, endpointSlices: SLICES }).resources);
    const probe = (): boolean => sim.verdict(sim.endpointFor('x/client')!, sim.endpointFor('x/web-2')!, 'TCP', 8080).allowed;
    expect(probe()).toBe(false);
    sim.update(translateCluster({ ...base, endpointSlices: [...SLICES, slice('web-def', 'web', ['10.66.2.2'], [{ port: 8080 }])] }).resources);
    expect(probe()).toBe(true);
    sim.update(translateCluster({ ...base, endpointSlices: SLICES }).resources);
    expect(probe()).toBe(false);
  });
});
