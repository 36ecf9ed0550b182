import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../api/index.ts';
import { IpSetNames, Simulation, translateCluster } from '../simulate/index.ts';
import { explainOne } from './explain.ts';
import { runSimulate } from './simulate.ts';
import { capture } from './testdata/capture.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-simulate-hosts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const probe = (from: string, to: string, port: number, expected: boolean) => ({ from, to, port, protocol: 'TCP', expected });

/** Two nodes with addresses and host ports, a pod on each, no host endpoint: `probes` checked. */
function scenarioFile(name: string, probes: readonly object[]): string {
  const file = path.join(dir, `${name}.json`);
  const nodes = ['node-1', 'node-2'].map((n, i) => ({ name: n, ip: `10.72.0.${i + 1}`, hostPorts: [{ port: 22 }, { port: 8080 }] }));
  const pods = [
    { namespace: 'x', name: 'a', ip: '10.72.1.10', node: 'node-1', containerPorts: [{ containerPort: 80 }] },
    { namespace: 'x', name: 'b', ip: '10.72.2.10', node: 'node-2', containerPorts: [{ containerPort: 80 }] },
  ];
  writeFileSync(file, JSON.stringify({ schema: 'calico-truth-tables/v1', scenarios: [{ name, namespaces: [{ name: 'x' }], nodes, pods, policies: [], probes }] }));
  return file;
}

describe('tessera simulate --scenarios with nodes as probe ends (no host endpoints)', () => {
  it('hosts are not policed; a pod → its own host is decided by DefaultEndpointToHostAction (ACCEPT, as manifests/ run the agent)', async () => {
    const file = scenarioFile('hosts-unpoliced', [
      probe('node-1', 'node-2', 8080, true),
      probe('x/a', 'node-2', 8080, true),
      probe('node-1', 'x/b', 80, true),
      probe('node-1', 'x/a', 80, true),
      probe('x/b', 'x/a', 80, true),
      probe('x/a', 'node-1', 8080, true),
    ]);
    const r = await capture(runSimulate, ['--scenarios', file]);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('{"scenarios":1,"probes":6,"passed":6,"failed":0}');
    expect(r.code).toBe(0);
  });

  it('a mismatch names the stage that dropped the flow: node, table, chain', async () => {
    const r = await capture(runSimulate, ['--scenarios', scenarioFile('own-host', [probe('x/a', 'node-1', 8080, true)]), '--default-endpoint-to-host-action', 'drop']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('MISMATCH own-host: expected allowed, got denied');
    expect(r.stdout).toContain('dropped on node-1, table filter, chain cali-wl-to-host');
    expect(r.stdout).toContain('denied by DefaultEndpointToHostAction DROP');
  });
});

describe("the agent's flags that change host verdicts", () => {
  it("--default-endpoint-to-host-action DROP (the agent's own default) keeps a pod from its own host", async () => {
    const file = scenarioFile('own-host-drop', [probe('x/a', 'node-1', 8080, false)]);
    const r = await capture(runSimulate, ['--scenarios', file, '--default-endpoint-to-host-action', 'drop']);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('{"scenarios":1,"probes":1,"passed":1,"failed":0}');
  });

  it('a failsafe list in Felix syntax is read as the agent reads it; a bad one is a usage error naming the flag', async () => {
    const file = scenarioFile('no-failsafes', [probe('x/a', 'node-2', 22, true)]);
    expect((await capture(runSimulate, ['--scenarios', file, '--failsafe-inbound-host-ports', 'none'])).code).toBe(0);
    const bad = await capture(runSimulate, ['--scenarios', file, '--failsafe-inbound-host-ports', 'tcp:99999']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--failsafe-inbound-host-ports');
  });
});

describe('tessera explain with host endpoints', () => {
  // The objects go to translateCluster as Calico objects directly (whatever unenforced-kinds.ts says of HostEndpoint).
  const t = translateCluster({
    namespaces: [{ metadata: { name: 'x' } }],
    serviceAccounts: [],
    pods: [{ metadata: { name: 'a', namespace: 'x' }, spec: { nodeName: 'node-1', containers: [{}] }, status: { phase: 'Running', podIP: '10.72.1.10' } }],
    networkPolicies: [],
    calico: [
      { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'hep-node-2' }, spec: { node: 'node-2', interfaceName: '*', expectedIPs: ['10.72.0.2'] } } as unknown as V3Resource,
    ],
  });
  const sim = new Simulation(t.resources);
  const names = new IpSetNames(t.resources.values());

  it('a node by name or by an address its HostEndpoints expect: the HostEndpoint, table and chain that decided', () => {
    for (const to of ['node-2', '10.72.0.2']) {
      const out: string[] = [];
      const code = explainOne(sim, names, 'x/a', to, 'TCP', 8080, 'text', { stdout: (s) => out.push(s), stderr: (s) => out.push(s) });
      expect(code).toBe(0);
      const text = out.join('');
      expect(text).toContain("x/a → node-2 TCP/8080: DENIED");
      expect(text).toContain('dropped on node-2, table filter, chain cali-fh-any-interface-at-all — HostEndpoint hep-node-2 (normal policy, ingress)');
      expect(text).toContain('ingress of host node-2 (10.72.0.2): denied: no tier decided and no profile allowed it');
    }
  });

  it('--output json carries the stages', () => {
    const out: string[] = [];
    explainOne(sim, names, 'x/a', 'node-2', 'TCP', 22, 'json', { stdout: (s) => out.push(s), stderr: () => undefined });
    const v = JSON.parse(out.join('')) as { allowed: boolean; stages: Array<{ node: string; table: string; chain: string; hostEndpoint?: string }> };
    expect(v.allowed).toBe(true);
    expect(v.stages.at(-1)).toMatchObject({ node: 'node-2', table: 'filter', chain: 'cali-failsafe-in', hostEndpoint: 'hep-node-2' });
  });

  it('a node to itself is refused (self-traffic is not simulated)', () => {
    const err: string[] = [];
    expect(explainOne(sim, names, 'node-2', '10.72.0.2', 'TCP', 22, 'text', { stdout: () => undefined, stderr: (s) => err.push(s) })).toBe(1);
    expect(err.join('')).toContain('self-traffic is not simulated');
  });
});
