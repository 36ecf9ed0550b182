/**
 * Host endpoints through the whole simulator: v3 HostEndpoints and GlobalNetworkPolicies →
 * the node's calc graph (HostEndpointUpdate with the four tier lists, expectedIPs in selector
 * sets) → NodeState → `decideFlow`. The objects are handed to `translateCluster` as Calico
 * objects directly, so this holds whatever api/unenforced-kinds.ts says of the kind.
 */
import { describe, expect, it } from 'vitest';
import type { K8sPod, V3Resource } from '../api/index.ts';
import { translateCluster } from './cluster-objects.ts';
import { describeVerdict } from './explanation.ts';
import { IpSetNames } from './ipset-names.ts';
import { Simulation, type SimPeer, type SimulationOptions } from './simulation.ts';

const NODES = { 'node-1': '10.72.0.1', 'node-2': '10.72.0.2', 'node-3': '10.72.0.3' } as const;

const pod = (name: string, node: string, ip: string, labels: Record<string, string> = {}): K8sPod => ({
  metadata: { name, namespace: 'x', labels },
  spec: { nodeName: node, serviceAccountName: 'default', containers: [{ ports: [{ containerPort: 80 }] }] },
  status: { phase: 'Running', podIP: ip },
});

const hep = (node: keyof typeof NODES, labels: Record<string, string>, spec: object = {}): V3Resource =>
  ({ apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: `hep-${node}`, labels }, spec: { node, interfaceName: '*', expectedIPs: [NODES[node]], ...spec } }) as unknown as V3Resource;

const gnp = (name: string, spec: object): V3Resource => ({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name }, spec }) as unknown as V3Resource;

function simulation(calico: readonly V3Resource[], options: SimulationOptions = {}): { sim: Simulation; peer: (id: string) => SimPeer; names: IpSetNames } {
  const t = translateCluster({
    namespaces: [{ metadata: { name: 'x' } }],
    serviceAccounts: [],
    pods: [pod('a', 'node-1', '10.72.1.10'), pod('b', 'node-2', '10.72.2.10', { app: 'db' }), pod('d', 'node-3', '10.72.3.10')],
    networkPolicies: [],
    calico,
  });
  const sim = new Simulation(t.resources, { ...options, hosts: Object.entries(NODES).map(([name, ip]) => ({ name, addresses: [ip] })) });
  const peer = (id: string): SimPeer => (id.includes('/') ? sim.endpointFor(id)! : sim.hostFor(id)!);
  return { sim, peer, names: new IpSetNames(t.resources.values()) };
}

describe('host endpoints through the calc graph and the verdict engine', () => {
  it('a * HostEndpoint with no policy (hostendpoints_test.go): host traffic denied but failsafe, pods unaffected, host → own pod allowed', () => {
    const { sim, peer } = simulation([hep('node-1', { 'host-endpoint': 'true' }), hep('node-2', { 'host-endpoint': 'true' })]);
    const ok = (f: string, t: string, port: number): boolean => sim.verdict(peer(f), peer(t), 'TCP', port).allowed;
    expect(ok('node-1', 'node-2', 8080)).toBe(false);
    expect(ok('node-1', 'node-2', 6667)).toBe(true);
    expect(ok('x/a', 'node-2', 22)).toBe(true);
    expect(ok('x/a', 'node-2', 8080)).toBe(false);
    expect(ok('x/a', 'x/b', 80)).toBe(true);
    expect(ok('node-1', 'x/a', 80)).toBe(true);
    expect(ok('node-1', 'x/b', 80)).toBe(false);
    expect(ok('x/a', 'node-3', 8080)).toBe(true);
  });

  it("the failsafe lists are the agent's configuration: with none, tcp:22 is denied too", () => {
    const { sim, peer } = simulation([hep('node-2', {})], { failsafes: { inbound: [], outbound: [] } });
    expect(sim.verdict(peer('x/a'), peer('node-2'), 'TCP', 22).allowed).toBe(false);
    const net = simulation([hep('node-2', {})], { failsafes: { inbound: [{ protocol: 'tcp', port: 22, net: '10.72.1.0/24' }], outbound: [] } });
    expect(net.sim.verdict(net.peer('x/a'), net.peer('node-2'), 'TCP', 22).allowed).toBe(true);
    expect(net.sim.verdict(net.peer('x/d'), net.peer('node-2'), 'TCP', 22).allowed).toBe(false);
  });

  it('projectcalico-default-allow on the HostEndpoints allows host traffic; an applyOnForward deny then shows in the pod matrix', () => {
    const allowAll = { profiles: ['projectcalico-default-allow'] };
    const base = [hep('node-1', { 'host-endpoint': 'true' }, allowAll), hep('node-2', { 'host-endpoint': 'true', hostname: 'node-2' }, allowAll)];
    const { sim, peer } = simulation(base);
    expect(sim.verdict(peer('node-1'), peer('node-2'), 'TCP', 8080).allowed).toBe(true);
    expect(sim.matrix('TCP', 80).flat().filter((c) => c).length).toBe(6);
    const aof = simulation([...base, gnp('aof-node-2', { selector: "hostname == 'node-2'", applyOnForward: true, types: ['Ingress'], ingress: [{ action: 'Deny', source: { nets: ['10.72.1.0/24'] } }, { action: 'Allow' }] })]);
    const ids = aof.sim.endpoints.map((e) => e.id);
    const m = aof.sim.matrix('TCP', 80);
    expect(m[ids.indexOf('x/a')]![ids.indexOf('x/b')]).toBe(false);
    expect(m[ids.indexOf('x/d')]![ids.indexOf('x/b')]).toBe(true);
    expect(m[ids.indexOf('x/b')]![ids.indexOf('x/a')]).toBe(true);
  });

  it("a HostEndpoint as a rule peer by label: its expectedIPs are in the selector's IP set; explain names the rule", () => {
    const { sim, peer, names } = simulation([
      hep('node-1', { role: 'bastion' }, { profiles: ['projectcalico-default-allow'] }),
      gnp('db-from-bastion', { selector: "app == 'db'", types: ['Ingress'], ingress: [{ action: 'Allow', source: { selector: "role == 'bastion'" } }] }),
    ]);
    const v = sim.verdict(peer('node-1'), peer('x/b'), 'TCP', 80, true);
    expect(v.allowed).toBe(true);
    expect(sim.verdict(peer('node-3'), peer('x/b'), 'TCP', 80).allowed).toBe(false);
    expect(sim.verdict(peer('x/a'), peer('x/b'), 'TCP', 80).allowed).toBe(false);
    const text = describeVerdict(peer('node-3'), peer('x/b'), 'TCP', 80, sim.verdict(peer('node-3'), peer('x/b'), 'TCP', 80, true), names).join('\n');
    expect(text).toContain('source selector: 10.72.0.3 is not in {role == "bastion"}');
  });

  it('a node is known by name or by an address its HostEndpoints expect, without scenario hosts', () => {
    const t = translateCluster({ namespaces: [{ metadata: { name: 'x' } }], serviceAccounts: [], pods: [pod('a', 'node-1', '10.72.1.10')], networkPolicies: [], calico: [hep('node-2', {})] });
    const sim = new Simulation(t.resources);
    expect(sim.hostFor('node-2')?.ip).toBe('10.72.0.2');
    expect(sim.hostByAddress('10.72.0.2')?.node).toBe('node-2');
    expect(sim.hostFor('node-1')).toBeUndefined();
    const v = sim.verdict(sim.endpointFor('x/a')!, sim.hostFor('node-2')!, 'TCP', 8080, true);
    expect(v.allowed).toBe(false);
    expect(v.stages?.at(-1)).toMatchObject({ node: 'node-2', table: 'filter', chain: 'cali-fh-any-interface-at-all', hostEndpoint: 'hep-node-2' });
  });
});
