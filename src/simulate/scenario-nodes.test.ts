import { describe, expect, it } from 'vitest';

import { parseScenarioFile, ScenarioFormatError } from './scenario-file.ts';
import { isNodeEndpoint, nodeAddress, nodeProblems, nodesByName, probeNodeProblem, type ScenarioNode } from './scenario-nodes.ts';

const node1: ScenarioNode = { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1', role: 'worker' }, ip: '10.65.0.1', hostPorts: [{ port: 22, protocol: 'TCP' }, { port: 8443 }] };
const node2: ScenarioNode = { name: 'node-2', ip: '10.65.0.2', ip6: 'fd00:65::2', hostPorts: [{ port: 53, protocol: 'UDP' }] };

const file = (scenario: object) =>
  JSON.stringify({
    schema: 'calico-truth-tables/v1',
    scenarios: [
      {
        name: 'hosts',
        namespaces: [{ name: 'x' }],
        pods: [{ namespace: 'x', name: 'a', ip: '10.65.1.10', node: 'node-1', containerPorts: [{ containerPort: 80 }] }],
        policies: [],
        probes: [],
        ...scenario,
      },
    ],
  });

describe('scenario nodes (Hosts as endpoints)', () => {
  it('a file with nodes, node probe endpoints both ways, and a listed node hosting a pod parses', () => {
    const probes = [
      { from: 'node-1', to: 'x/a', port: 80, protocol: 'TCP', expected: true },
      { from: 'x/a', to: 'node-1', port: 8443, protocol: 'TCP', expected: true },
      { from: 'node-1', to: 'node-2', port: 53, protocol: 'UDP', expected: true },
      { from: 'node-2', to: 'node-1', port: 22, protocol: 'TCP', ipVersion: 4, expected: true },
    ];
    const f = parseScenarioFile(file({ nodes: [node1, node2], probes }), 'f.json');
    expect(f.scenarios[0]?.nodes?.map((n) => n.name)).toEqual(['node-1', 'node-2']);
    expect(f.scenarios[0]?.probes).toHaveLength(4);
  });

  it('a scenario without nodes is unchanged (nodes stays absent)', () => {
    expect(parseScenarioFile(file({}), 'f.json').scenarios[0]?.nodes).toBeUndefined();
  });

  it('an endpoint without "/" names a node; with "/" a pod', () => {
    expect(isNodeEndpoint('node-1')).toBe(true);
    expect(isNodeEndpoint('x/a')).toBe(false);
  });

  it('a node has an address per family: ip of either family, ip6 beside an IPv4 ip', () => {
    expect(nodeAddress(node1, 4)).toBe('10.65.0.1');
    expect(nodeAddress(node1, 6)).toBeUndefined();
    expect(nodeAddress(node2, 6)).toBe('fd00:65::2');
    expect(nodeAddress({ ip: 'fd00:65::9' }, 6)).toBe('fd00:65::9');
    expect(nodeAddress({ ip: 'fd00:65::9' }, 4)).toBeUndefined();
  });

  it.each([
    ['a duplicate name', [node1, { ...node2, name: 'node-1' }], /nodes\[1\]\.name: "node-1" is also nodes\[0\]/],
    ['a missing name', [{ ip: '10.65.0.9' }], /nodes\[0\]\.name: required/],
    ['a name with "/"', [{ ...node1, name: 'x/node' }], /nodes\[0\]\.name: "x\/node" contains "\/"/],
    ['a bad ip', [{ ...node1, ip: '10.65.0.300' }], /nodes\[0\]\.ip: "10\.65\.0\.300" is not an IPv4 or IPv6 address/],
    ['no ip', [{ name: 'node-1' }], /nodes\[0\]\.ip: undefined is not an IPv4 or IPv6 address/],
    ['an IPv4 ip6', [{ ...node1, ip6: '10.65.0.7' }], /nodes\[0\]\.ip6: "10\.65\.0\.7" is not an IPv6 address/],
    ['ip6 beside an IPv6 ip', [{ ...node1, ip: 'fd00::1', ip6: 'fd00::2' }], /nodes\[0\]\.ip6: beside an IPv6 ip/],
    ['two nodes with one address', [node1, { ...node2, ip: '10.65.0.1' }], /nodes\[1\]\.ip: 10\.65\.0\.1 is also the address of nodes\[0\]/],
    ['a node with a pod’s address', [{ ...node1, ip: '10.65.1.10' }], /nodes\[0\]\.ip: 10\.65\.1\.10 is also the address of a pod/],
    ['a port out of range', [{ ...node1, hostPorts: [{ port: 0 }] }], /nodes\[0\]\.hostPorts\[0\]\.port: 0 is not a port/],
    ['a fractional port', [{ ...node1, hostPorts: [{ port: 22.5 }] }], /nodes\[0\]\.hostPorts\[0\]\.port: 22\.5 is not a port/],
    ['a bad protocol', [{ ...node1, hostPorts: [{ port: 22, protocol: 'tcp' }] }], /nodes\[0\]\.hostPorts\[0\]\.protocol: "tcp" is not TCP, UDP or SCTP/],
    ['a port listed twice (TCP by default)', [{ ...node1, hostPorts: [{ port: 22 }, { port: 22, protocol: 'TCP' }] }], /nodes\[0\]\.hostPorts\[1\]: 22\/TCP is listed twice/],
    ['labels that are not strings', [{ ...node1, labels: { role: 1 } }], /nodes\[0\]\.labels: must map strings to strings/],
    ['nodes not a list', { 'node-1': node1 }, /nodes must be a list/],
  ])('refuses %s, naming the file, scenario and field', (_what, nodes, message) => {
    expect(() => parseScenarioFile(file({ nodes }), 'f.json')).toThrow(ScenarioFormatError);
    expect(() => parseScenarioFile(file({ nodes }), 'f.json')).toThrow(new RegExp(`^f\\.json: scenarios\\[0\\] \\(hosts\\): ${message.source}`));
  });

  it.each([
    ['from a node not in nodes', { from: 'node-3', to: 'x/a', port: 80 }, /probes\[0\]: from "node-3" names no node of the scenario's nodes/],
    ['to a node not in nodes (only a pod’s node)', { from: 'x/a', to: 'node-9', port: 22 }, /probes\[0\]: to "node-9" names no node/],
    ['to a port the node does not serve', { from: 'x/a', to: 'node-1', port: 23 }, /probes\[0\]: node node-1 does not serve 23\/TCP/],
    ['to a served port over another protocol', { from: 'node-2', to: 'node-1', port: 22, protocol: 'UDP' }, /node node-1 does not serve 22\/UDP/],
    ['over IPv6 from a node without an IPv6 address', { from: 'node-1', to: 'node-2', port: 53, protocol: 'UDP', ipVersion: 6 }, /from node node-1 has no IPv6 address/],
    ['over IPv6 to a pod without ip6', { from: 'node-2', to: 'x/a', port: 80, ipVersion: 6 }, /ipVersion 6 needs ip6 on pod x\/a/],
    ['from a node to itself', { from: 'node-1', to: 'node-1', port: 22 }, /from and to are both node node-1: self-traffic is not probed/],
  ])('refuses a probe %s', (_what, probe, message) => {
    const probes = [{ protocol: 'TCP', expected: true, ...probe }];
    expect(() => parseScenarioFile(file({ nodes: [node1, node2], probes }), 'f.json')).toThrow(message);
  });

  it('checks step probes too', () => {
    const steps = [{ probes: [{ from: 'x/a', to: 'node-2', port: 22, protocol: 'TCP', expected: false }] }];
    expect(() => parseScenarioFile(file({ nodes: [node1, node2], steps }), 'f.json')).toThrow(/steps\[0\]\.probes\[0\]: node node-2 does not serve 22\/TCP/);
  });

  it('nodeProblems reports every problem, probeNodeProblem none for pod-only probes', () => {
    expect(nodeProblems([{ name: 'a', ip: 'x' }, { name: 'a', ip: '10.0.0.1', hostPorts: [{ port: 70000 }] }], [])).toHaveLength(3);
    expect(probeNodeProblem({ from: 'x/a', to: 'x/b', port: 80 }, nodesByName([]))).toBeUndefined();
  });
});
