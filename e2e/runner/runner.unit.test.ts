import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { mismatchTable } from './mismatch-table.ts';
import { caliInterfaceName, randomVethName } from './network.ts';
import { loadScenarioFiles, parseScenarioFile, ScenarioFileError, scenarioNodes, stepsOf } from './scenario.ts';

const minimal = (over: object = {}) =>
  JSON.stringify({
    schema: 'netpol-truth-tables/v1',
    scenarios: [
      {
        name: 's',
        namespaces: [{ name: 'x' }],
        pods: [
          { namespace: 'x', name: 'a', ip: '10.0.0.1', node: 'n1' },
          { namespace: 'x', name: 'b', ip: '10.0.0.2', node: 'n2' },
        ],
        probes: [{ from: 'x/a', to: 'x/b', port: 80, protocol: 'TCP', expected: true }],
        ...over,
      },
    ],
  });

describe('scenario files', () => {
  it('accept both schemas and treat the top level as step 0 before `steps`', () => {
    const f = parseScenarioFile('f.json', minimal({ steps: [{ deletePolicies: [], probes: [{ from: 'x/b', to: 'x/a', port: 80, expected: false }] }] }));
    const steps = stepsOf(f.scenarios[0]!);
    expect(steps.map((s) => s.probes.length)).toEqual([1, 1]);
    expect(steps[1]?.probes[0]?.expected).toBe(false);
  });

  it('name the file, scenario and field of a bad probe or schema', () => {
    expect(() => parseScenarioFile('f.json', minimal({ probes: [{ from: 'x/a', to: 'x/zz', port: 80, expected: true }] }))).toThrow(/f\.json: scenarios\[0\] "s" step 0 probes\[0\]: from\/to must name pods/);
    expect(() => parseScenarioFile('f.json', '{"schema":"v0","scenarios":[]}')).toThrow(ScenarioFileError);
    expect(() => parseScenarioFile('f.json', 'nope')).toThrow(/not JSON/);
  });

  it('load the shared examples and the project scenarios (≥ 30, unique names)', () => {
    const files = loadScenarioFiles(['e2e/scenarios']);
    expect(files.flatMap((f) => f.scenarios).length).toBeGreaterThanOrEqual(30);
    const shared = new URL('../../../shared/scenarios/examples.json', import.meta.url);
    let text: string | undefined;
    try {
      text = readFileSync(shared, 'utf8');
    } catch {
      // Not beside ../shared: nothing more to check.
    }
    if (text !== undefined) expect(parseScenarioFile('examples.json', text).scenarios.length).toBeGreaterThan(0);
  });
});

describe('dual-stack pods and IPv6 probes (runner only)', () => {
  const pods = [
    { namespace: 'x', name: 'a', ip: '10.0.0.1', ip6: 'fd00::1', node: 'n1' },
    { namespace: 'x', name: 'b', ip: '10.0.0.2', ip6: 'fd00::2', node: 'n2' },
    { namespace: 'x', name: 'c', ip: '10.0.0.3', node: 'n2' },
  ];
  const v6 = (from: string, to: string) => ({ from, to, port: 80, ipVersion: 6, expected: true });

  it('accept ip6 on pods and ipVersion 6 between two dual-stack pods', () => {
    const f = parseScenarioFile('f.json', minimal({ pods, probes: [v6('x/a', 'x/b')] }));
    expect(f.scenarios[0]?.pods[0]?.ip6).toBe('fd00::1');
  });

  it('reject a bad ip6, and an IPv6 probe from or to a pod without one', () => {
    expect(() => parseScenarioFile('f.json', minimal({ pods: [{ ...pods[0], ip6: '10.0.0.9' }, pods[1]], probes: [] }))).toThrow(/ip6 "10.0.0.9" is not IPv6/);
    expect(() => parseScenarioFile('f.json', minimal({ pods, probes: [v6('x/a', 'x/c')] }))).toThrow(/ipVersion 6 needs ip6 on both pods \(x\/a → x\/c\)/);
    expect(() => parseScenarioFile('f.json', minimal({ pods, probes: [{ ...v6('x/a', 'x/b'), ipVersion: 5 }] }))).toThrow(/ipVersion must be 4 or 6/);
  });
});

describe('nodes as probe endpoints (Hosts as endpoints)', () => {
  const nodes = [
    { name: 'n1', labels: { role: 'worker' }, ip: '10.0.255.1', hostPorts: [{ port: 22, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }] },
    { name: 'n3', ip: '10.0.255.3', ip6: 'fd00:ff::3', hostPorts: [{ port: 8443 }] },
  ];

  it('accept nodes, a listed node hosting pods, and probes from and to nodes', () => {
    const probes = [
      { from: 'n1', to: 'x/b', port: 80, expected: true },
      { from: 'x/a', to: 'n1', port: 53, protocol: 'UDP', expected: true },
      { from: 'n3', to: 'n1', port: 22, protocol: 'TCP', expected: true },
    ];
    const f = parseScenarioFile('f.json', minimal({ nodes, probes }));
    expect(f.scenarios[0]?.nodes?.map((n) => n.name)).toEqual(['n1', 'n3']);
    expect(scenarioNodes(f.scenarios[0]!)).toEqual(['n1', 'n3', 'n2']);
  });

  it('reject bad nodes and node probes, naming the file, scenario and field', () => {
    expect(() => parseScenarioFile('f.json', minimal({ nodes: [nodes[0], { ...nodes[1], name: 'n1' }] }))).toThrow(/^f\.json: scenarios\[0\] "s": nodes\[1\]\.name: "n1" is also nodes\[0\]/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes: [{ ...nodes[0], ip: '10.0.0.2' }] }))).toThrow(/nodes\[0\]\.ip: 10\.0\.0\.2 is also the address of a pod/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes: [{ ...nodes[0], hostPorts: [{ port: 22, protocol: 'ICMP' }] }] }))).toThrow(/nodes\[0\]\.hostPorts\[0\]\.protocol: "ICMP" is not TCP, UDP or SCTP/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes, probes: [{ from: 'x/a', to: 'n2', port: 22, expected: true }] }))).toThrow(/step 0 probes\[0\]: to "n2" names no node of the scenario's nodes/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes, probes: [{ from: 'x/a', to: 'n1', port: 53, protocol: 'TCP', expected: true }] }))).toThrow(/node n1 does not serve 53\/TCP/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes, probes: [{ from: 'n1', to: 'x/zz', port: 80, expected: true }] }))).toThrow(/from\/to must name pods of the scenario, or nodes/);
    expect(() => parseScenarioFile('f.json', minimal({ nodes, probes: [{ from: 'n1', to: 'n3', port: 8443, ipVersion: 6, expected: true }] }))).toThrow(/from node n1 has no IPv6 address/);
  });
});

describe('randomVethName', () => {
  it('is veth + 8 hex (kindnet, ptp), a valid interface name, and differs between calls', () => {
    const a = randomVethName();
    expect(a).toMatch(/^veth[0-9a-f]{8}$/);
    expect(a).not.toBe(randomVethName());
  });
});

describe('caliInterfaceName', () => {
  it('is cali + 11 hex of sha1("<ns>.<pod>") (what the WorkloadEndpoint controller writes), ≤ 15 characters', () => {
    const name = caliInterfaceName('shop', 'a');
    expect(name).toBe(`cali${createHash('sha1').update('shop.a').digest('hex').slice(0, 11)}`);
    expect(name.length).toBe(15);
  });
});

describe('mismatchTable', () => {
  it('lists step, from, to, port/proto, expected and got in aligned columns', () => {
    const table = mismatchTable([{ scenario: 's', step: 1, probe: { from: 'x/a', to: 'y/b', port: 53, protocol: 'UDP', expected: false }, got: true }]);
    expect(table.split('\n')).toEqual(['    step  from  to   port/proto  expected  got', '    1     x/a   y/b  53/UDP      deny      allow']);
  });
});
