/**
 * "Hosts as endpoints" in the cluster runners: the pieces that need no cluster. The process
 * runner end to end is `npm run e2e -- --scenarios e2e/runner/testdata/hosts-as-endpoints.json`.
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { parseScenarioFile as parseForSimulate } from '../../src/simulate/scenario-file.ts';
import { freePort } from '../controlplane/free-port.ts';
import { kubeConfigFor } from '../controlplane/kubeconfig.ts';
import { hostPodManifest, hostPodName, kindNodeAddressCommands, kindNodeRouteCommands } from './kind-cluster.ts';
import { nodeAddressCommands, nodeRouteCommands } from './network.ts';
import { scenarioNodeAddresses } from './node-addresses.ts';
import { probeRequest, sourceList } from './pod-server.ts';
import { ScenarioRun, withClusterNodeName } from './run-scenario.ts';
import type { PodProber, ScenarioCluster, StartNodeOptions } from './scenario-cluster.ts';
import { parseScenarioFile, type Scenario, type ScenarioNode } from './scenario.ts';

const TESTDATA = fileURLToPath(new URL('testdata/hosts-as-endpoints.json', import.meta.url));
const PROBE_AGENT = fileURLToPath(new URL('../dataplane/probe-agent.mjs', import.meta.url));

describe('scenario node addresses', () => {
  it('by family: an IPv4 ip, an IPv6 ip, an IPv4 ip with ip6', () => {
    expect(scenarioNodeAddresses({ ip: '10.65.0.1' })).toEqual({ ipv4: '10.65.0.1' });
    expect(scenarioNodeAddresses({ ip: 'fd00:65::1' })).toEqual({ ipv6: 'fd00:65::1' });
    expect(scenarioNodeAddresses({ ip: '10.65.0.1', ip6: 'fd00:65::1' })).toEqual({ ipv4: '10.65.0.1', ipv6: 'fd00:65::1' });
  });
});

describe('process runner: node addresses in the node namespaces', () => {
  const addrs = { ipv4: '10.65.0.1', ipv6: 'fd00:65::1' };

  it('go on a link as host routes, IPv6 without DAD (the same address is on every link of the node); on lo without nodad', () => {
    expect(nodeAddressCommands(addrs, 'tsn1', 'add')).toEqual([
      ['ip', 'addr', 'add', '10.65.0.1/32', 'dev', 'tsn1'],
      ['ip', '-6', 'addr', 'add', 'fd00:65::1/128', 'dev', 'tsn1', 'nodad'],
    ]);
    expect(nodeAddressCommands(addrs, 'lo', 'add')[1]).toEqual(['ip', '-6', 'addr', 'add', 'fd00:65::1/128', 'dev', 'lo']);
    expect(nodeAddressCommands({ ipv4: '10.65.0.1' }, 'tsn1', 'del')).toEqual([['ip', 'addr', 'del', '10.65.0.1/32', 'dev', 'tsn1']]);
  });

  it('are routed from the other nodes onto the link towards the node (IPv6 via its link-local), as pods are', () => {
    expect(nodeRouteCommands(addrs, 'tsn0', 'fe80::ff:1', 'add')).toEqual([
      ['ip', 'route', 'replace', '10.65.0.1/32', 'dev', 'tsn0', 'scope', 'link'],
      ['ip', '-6', 'route', 'replace', 'fd00:65::1/128', 'via', 'fe80::ff:1', 'dev', 'tsn0'],
    ]);
    expect(nodeRouteCommands(addrs, 'tsn0', 'fe80::ff:1', 'del')).toEqual([
      ['ip', 'route', 'del', '10.65.0.1/32'],
      ['ip', '-6', 'route', 'del', 'fd00:65::1/128'],
    ]);
  });
});

describe('kind runner: node addresses, routes and the host pod', () => {
  const home = { name: 'tessera-worker', ipv4: '172.18.0.3', ipv6: undefined };

  it('the address goes on the kind node’s eth0, routed from the others via its InternalIP', () => {
    expect(kindNodeAddressCommands({ ipv4: '10.65.0.1' }, 'add')).toEqual([['ip', '-4', 'addr', 'replace', '10.65.0.1/32', 'dev', 'eth0']]);
    expect(kindNodeAddressCommands({ ipv6: 'fd00:65::1' }, 'del')).toEqual([['ip', '-6', 'addr', 'del', 'fd00:65::1/128', 'dev', 'eth0']]);
    expect(kindNodeRouteCommands({ ipv4: '10.65.0.1' }, home, 'add')).toEqual([['ip', '-4', 'route', 'replace', '10.65.0.1/32', 'via', '172.18.0.3']]);
  });

  it('an IPv6 node address on a kind node without an IPv6 InternalIP is refused, naming both', () => {
    expect(() => kindNodeRouteCommands({ ipv6: 'fd00:65::1' }, home, 'add')).toThrow(/fd00:65::1: kind node tessera-worker has no InternalIP of that family/);
    expect(kindNodeRouteCommands({ ipv6: 'fd00:65::1' }, home, 'del')).toEqual([['ip', '-6', 'route', 'del', 'fd00:65::1/128']]);
  });

  it('the host pod runs in the node’s host network on that node, serving the hostPorts', () => {
    const pod = hostPodManifest(hostPodName('tessera-worker'), 'tessera-worker', 'localhost/tessera-probe:1', [{ port: 22, protocol: 'TCP' }], ['10.65.0.1']);
    expect(pod.metadata?.name).toBe('tessera-e2e-host-tessera-worker');
    expect(pod.spec?.hostNetwork).toBe(true);
    expect(pod.spec?.nodeName).toBe('tessera-worker');
    expect(pod.spec?.containers[0]?.args).toEqual(['[{"port":22,"protocol":"TCP"}]', '{"serve":true,"bind":["10.65.0.1"]}']);
  });
});

describe('HostEndpoint objects', () => {
  it('spec.node names the cluster’s node; other objects and fields are untouched', () => {
    const hep = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'h' }, spec: { node: 'node-1', interfaceName: '*', expectedIPs: ['10.65.0.1'] } };
    expect(withClusterNodeName(hep, (n) => `kind-${n}`)).toEqual({ ...hep, spec: { ...hep.spec, node: 'kind-node-1' } });
    expect(hep.spec.node).toBe('node-1');
    const gnp = { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec: { node: 'node-1' } };
    expect(withClusterNodeName(gnp, (n) => `kind-${n}`)).toBe(gnp);
  });
});

describe('probes from a node bind its address', () => {
  it('a request carries the source of the target’s family; loopback targets (the runner’s is-it-serving check) none', () => {
    const sources = { ipv4: '10.65.0.1', ipv6: 'fd00:65::1' };
    expect(probeRequest(1, 'TCP', '10.65.1.10', 80, 400, sources)).toEqual({ id: 1, protocol: 'TCP', host: '10.65.1.10', port: 80, timeoutMs: 400, source: '10.65.0.1' });
    expect(probeRequest(2, 'UDP', 'fd00:66::1', 53, 400, sources)).toMatchObject({ source: 'fd00:65::1' });
    expect(probeRequest(3, 'TCP', 'fd00:66::1', 80, 400, { ipv4: '10.65.0.1' })).not.toHaveProperty('source');
    expect(probeRequest(4, 'TCP', '127.0.0.1', 80, 400, sources)).not.toHaveProperty('source');
    expect(probeRequest(5, 'TCP', '::1', 80, 400, sources)).not.toHaveProperty('source');
    expect(probeRequest(6, 'TCP', '10.65.1.10', 80, 400, {})).not.toHaveProperty('source');
    expect(sourceList(sources)).toEqual(['10.65.0.1', 'fd00:65::1']);
  });

  it('probe-agent.mjs connects from the source it is given (TCP and UDP, over loopback: 127.0.0.2 → 127.0.0.1)', async () => {
    const seen: string[] = [];
    const tcp = net.createServer((s) => {
      seen.push(`tcp ${s.remoteAddress}`);
      s.end('ok');
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const udp = dgram.createSocket('udp4');
    udp.on('message', (m, rinfo) => {
      seen.push(`udp ${rinfo.address}`);
      udp.send(m, rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    const agent = spawn(process.execPath, [PROBE_AGENT, '[]'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const replies = new Map<number, boolean>();
    const lines = readline.createInterface({ input: agent.stdout });
    const ready = new Promise<Record<string, unknown>>((resolve) => {
      lines.on('line', (line) => {
        const msg = JSON.parse(line) as { ready?: boolean; id?: number; ok?: boolean };
        if (msg.ready === true) resolve(msg);
        else replies.set(msg.id ?? -1, msg.ok === true);
      });
    });
    try {
      expect(await ready).toEqual({ ready: true, source: true });
      const ask = (id: number, protocol: string, port: number) => agent.stdin.write(`${JSON.stringify({ id, protocol, host: '127.0.0.1', port, timeoutMs: 2_000, source: '127.0.0.2' })}\n`);
      ask(1, 'TCP', (tcp.address() as net.AddressInfo).port);
      ask(2, 'UDP', udp.address().port);
      for (let i = 0; i < 100 && replies.size < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(Object.fromEntries(replies)).toEqual({ 1: true, 2: true });
      expect(seen.sort()).toEqual(['tcp 127.0.0.2', 'udp 127.0.0.2']);
    } finally {
      agent.kill();
      tcp.close();
      udp.close();
    }
  });
});

describe('a node serves its hostPorts on its own addresses only', () => {
  it('probe-agent.mjs with `bind` listens there, and its UDP echo leaves from the address probed', async () => {
    const port = await freePort();
    const agent = spawn(process.execPath, [PROBE_AGENT, JSON.stringify([{ port, protocol: 'TCP' }, { port, protocol: 'UDP' }]), JSON.stringify({ bind: ['127.0.0.3'] })], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve) => readline.createInterface({ input: agent.stdout }).on('line', (l) => (JSON.parse(l) as { ready?: boolean }).ready === true && resolve()));
      const echoFrom = await new Promise<string>((resolve, reject) => {
        const c = dgram.createSocket('udp4');
        c.on('message', (_m, rinfo) => {
          c.close();
          resolve(rinfo.address);
        });
        c.on('error', reject);
        c.send('token', port, '127.0.0.3');
      });
      expect(echoFrom).toBe('127.0.0.3');
      const connects = (host: string) =>
        new Promise<boolean>((resolve) => {
          const s = net.connect({ host, port }, () => {
            s.destroy();
            resolve(true);
          });
          s.on('error', () => resolve(false));
        });
      expect(await connects('127.0.0.3')).toBe(true);
      expect(await connects('127.0.0.1')).toBe(false);
    } finally {
      agent.kill();
    }
  });
});

/** A cluster that records node starts and stops and answers probes from its fake node probers; no API server. */
function fakeCluster(opts: { failStart?: string } = {}) {
  const calls: string[] = [];
  const cluster: ScenarioCluster = {
    admin: kubeConfigFor({ server: 'https://127.0.0.1:1', token: 't', user: 'u' }),
    hasNamespaceController: false,
    ensureNodes: (nodes) => {
      calls.push(`ensure ${nodes.join(',')}`);
      return Promise.resolve();
    },
    startPod: () => Promise.reject(new Error('no pods here')),
    stopPod: () => Promise.resolve(),
    startNode: (n: ScenarioNode, o?: StartNodeOptions) => {
      calls.push(`start ${n.name}${o?.atReportedAddresses === true ? ' (and at its reported address)' : ''}`);
      if (n.name === opts.failStart) return Promise.reject(new Error('no such luck'));
      const prober: PodProber = {
        probe: (protocol, host, port) => {
          calls.push(`probe ${n.name} → ${host} ${protocol}/${port}`);
          return Promise.resolve(true);
        },
        stop: () => void calls.push(`stop prober ${n.name}`),
      };
      return Promise.resolve(prober);
    },
    stopNode: (n) => {
      calls.push(`stop ${n.name}`);
      return Promise.resolve();
    },
    /** A kind-like cluster: the Node reports an address of its own (192.0.2.<last octet>). */
    reportedNodeAddress: (n, family) => (family === 4 ? `192.0.2.${n.ip.split('.').pop() ?? ''}` : undefined),
    ensureClusterNetworkPolicyCrd: () => {
      calls.push('ensure cnp crd');
      return Promise.resolve();
    },
    clusterNodeName: (n) => n,
    agentsIdle: () => Promise.resolve(),
  };
  return { cluster, calls };
}

describe('ScenarioRun with nodes', () => {
  const scenario: Scenario = {
    name: 'hosts',
    namespaces: [],
    pods: [],
    nodes: [
      { name: 'node-1', ip: '10.65.0.1', ip6: 'fd00:65::1', hostPorts: [{ port: 22 }] },
      { name: 'node-2', ip: '10.65.0.2', hostPorts: [{ port: 8443 }] },
    ],
    probes: [
      { from: 'node-1', to: 'node-2', port: 8443, protocol: 'TCP', expected: true },
      { from: 'node-2', to: 'node-1', port: 22, expected: true },
    ],
  };

  it('makes every listed node an endpoint, probes from its prober to the target node’s address, and undoes the nodes after', async () => {
    const { cluster, calls } = fakeCluster();
    const results = await new ScenarioRun(cluster, scenario, { settleMs: 0 }).run();
    expect(results.map((r) => r.got)).toEqual([true, true]);
    expect(calls).toEqual([
      'ensure node-1,node-2',
      'start node-1',
      'start node-2',
      'probe node-1 → 10.65.0.2 TCP/8443',
      'probe node-2 → 10.65.0.1 TCP/22',
      'stop prober node-1',
      'stop prober node-2',
      'stop node-1',
      'stop node-2',
    ]);
  });

  it('an IPv6 probe goes to the node’s IPv6 address', () => {
    const run = new ScenarioRun(fakeCluster().cluster, scenario);
    expect(run.targetAddress({ from: 'node-2', to: 'node-1', port: 22, ipVersion: 6, expected: true })).toBe('fd00:65::1');
    expect(() => run.targetAddress({ from: 'node-1', to: 'node-2', port: 8443, ipVersion: 6, expected: true })).toThrow(/node-2 has no IPv6 address/);
  });

  it('a node that cannot be made an endpoint fails the scenario naming it, and is undone with the others', async () => {
    const { cluster, calls } = fakeCluster({ failStart: 'node-2' });
    await expect(new ScenarioRun(cluster, scenario, { settleMs: 0 }).run()).rejects.toThrow(/scenario hosts: 1 of 2 pods and nodes did not start: node node-2 could not be made an endpoint: no such luck/);
    expect(calls.filter((c) => c.startsWith('stop node'))).toEqual(['stop node-1', 'stop node-2']);
  });
});

describe('ScenarioRun with a ClusterNetworkPolicy egress nodes peer', () => {
  const denyInfra = {
    apiVersion: 'policy.networking.k8s.io/v1beta1',
    kind: 'ClusterNetworkPolicy',
    metadata: { name: 'deny-infra' },
    spec: { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'infra' } } }] }] },
  };
  const scenario = (policies: Scenario['policies']): Scenario => ({
    name: 'node-peers',
    namespaces: [],
    pods: [],
    nodes: [{ name: 'node-2', labels: { role: 'infra' }, ip: '10.66.0.2', hostPorts: [{ port: 8080 }] }],
    policies,
    probes: [],
  });

  it('serves and probes nodes at the addresses their Node objects report (a kind node’s own), and only then', async () => {
    const { cluster, calls } = fakeCluster();
    const run = new ScenarioRun(cluster, scenario([denyInfra]), { settleMs: 0 });
    await run.setUp();
    expect(calls).toContain('start node-2 (and at its reported address)');
    expect(run.targetAddress({ from: 'x/a', to: 'node-2', port: 8080, expected: false })).toBe('192.0.2.2');
    await run.tearDown();
    const plain = new ScenarioRun(fakeCluster().cluster, scenario([]));
    expect(plain.targetAddress({ from: 'x/a', to: 'node-2', port: 8080, expected: true })).toBe('10.66.0.2');
  });

  it('makes the cluster serve the experimental CRD before the first ClusterNetworkPolicy, and a failure to apply one names it', async () => {
    const { cluster, calls } = fakeCluster();
    const run = new ScenarioRun(cluster, scenario([]), { settleMs: 0 });
    await expect(run.upsert(denyInfra)).rejects.toThrow(/^cannot apply policy\.networking\.k8s\.io\/v1beta1 ClusterNetworkPolicy deny-infra: /);
    expect(calls).toEqual(['ensure cnp crd']);
  });
});

describe('the runner’s own hosts scenario file', () => {
  it('is valid for the runner and for tessera simulate, and uses nodes as probe sources and destinations', () => {
    const text = readFileSync(TESTDATA, 'utf8');
    const runner = parseScenarioFile(TESTDATA, text);
    parseForSimulate(text, TESTDATA);
    const probes = runner.scenarios.flatMap((s) => s.probes ?? []);
    expect(probes.some((p) => !p.from.includes('/'))).toBe(true);
    expect(probes.some((p) => !p.to.includes('/'))).toBe(true);
    expect(runner.scenarios.flatMap((s) => s.policies ?? []).some((o) => o.kind === 'HostEndpoint')).toBe(false);
  });
});
