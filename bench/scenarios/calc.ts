/**
 * Calc-graph benchmarks modelled on Felix's `calc_graph_bench_test.go` (calico-semantics
 * §6.6). Targets on the 2-core CI machine: `local-200-of-250k` ≤ 10 s and ≤ 1.5 GB heap;
 * `churn` ≥ 20,000 updates/s.
 *
 * Cases (`npm run bench -- calc [case…]`; all by default; each in a fresh graph):
 * - `local-200-of-250k`: 250,000 WorkloadEndpoints in 1,000 namespaces, 200 of them on this
 *   node, 10,000 NetworkPolicies (10 per namespace) whose rules select peers by app —
 *   initial sync (every object through validation and the graph) to the first flush.
 * - `isolated-1k`, `isolated-10k`: "isolated customers" — N namespaces, each with 10
 *   endpoints and its own 2 policies allowing traffic only from its own namespace; this
 *   node hosts 100 endpoints spread across namespaces.
 * - `churn`: after a 50,000-endpoint / 2,000-policy sync, remote endpoints flip an `app`
 *   label so they move in and out of active IP sets; full WEP upserts (as a syncer delivers
 *   them), flushed every 100 updates; updates/s.
 *
 * Figures: seconds, messages (first flush), IP sets (active), policies (active), heap MB
 * (heapUsed after GC, graph alive — needs `--expose-gc`, which `npm run bench` passes).
 */
import { report, type BenchScenario } from '../scenario.ts';
import type { NetworkPolicy, Profile, V3Resource, WorkloadEndpoint } from '../../src/api/index.ts';
import { CalcGraph, type ResourceUpdate } from '../../src/calc/index.ts';

const LOCAL = 'node-0';

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function heapMB(): number {
  gc();
  gc();
  return Number((process.memoryUsage().heapUsed / 1048576).toFixed(1));
}

function nsProfile(ns: string): Profile {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: { name: `kns.${ns}` },
    spec: {
      labelsToApply: { 'pcns.projectcalico.org/name': ns, 'pcns.team': `team-${ns.length % 7}` },
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
    },
  };
}

function endpoint(ns: string, name: string, node: string, app: string, ip: number): WorkloadEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name,
      namespace: ns,
      labels: { app, 'pod-template-hash': 'abc123', 'projectcalico.org/orchestrator': 'k8s', 'projectcalico.org/namespace': ns },
    },
    spec: {
      node,
      orchestrator: 'k8s',
      pod: name,
      endpoint: 'eth0',
      interfaceName: `cali${(ip >>> 0).toString(16).padStart(11, '0')}`,
      ipNetworks: [`10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}/32`],
      profiles: [`kns.${ns}`],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    },
  };
}

function policy(ns: string, name: string, app: string, fromApp: string, namedPort: boolean): NetworkPolicy {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec: {
      tier: 'default',
      order: 100,
      selector: `app == '${app}'`,
      types: ['Ingress', 'Egress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `app == '${fromApp}'` },
          destination: { ports: namedPort ? ['http'] : [8080] },
        },
      ],
      egress: [{ action: 'Allow', destination: { selector: `app == '${fromApp}'` } }],
    },
  };
}

interface SyncFigures {
  seconds: number;
  messages: number;
  ipSets: number;
  policies: number;
  heapMB: number;
}

/** Feeds `resources` in syncer-sized batches, goes in-sync, flushes once. */
function initialSync(graph: CalcGraph, resources: Iterable<V3Resource>): SyncFigures {
  const start = performance.now();
  let batch: ResourceUpdate[] = [];
  graph.onStatusUpdated('resync-in-progress');
  for (const resource of resources) {
    batch.push({ op: 'upsert', resource });
    if (batch.length === 1000) {
      graph.onUpdates(batch);
      batch = [];
    }
  }
  graph.onUpdates(batch);
  graph.onStatusUpdated('in-sync');
  const out = graph.flush();
  const seconds = (performance.now() - start) / 1000;
  return {
    seconds: Number(seconds.toFixed(2)),
    messages: out.length,
    ipSets: out.filter((m) => m.type === 'IPSetUpdate').length,
    policies: out.filter((m) => m.type === 'ActivePolicyUpdate').length,
    heapMB: heapMB(),
  };
}

function* largeCluster(endpoints: number, namespaces: number, policiesPerNs: number, localCount: number): Generator<V3Resource> {
  const apps = 50;
  for (let n = 0; n < namespaces; n++) yield nsProfile(`ns-${n}`);
  for (let n = 0; n < namespaces; n++) {
    for (let p = 0; p < policiesPerNs; p++) {
      const app = `app-${(n * policiesPerNs + p) % apps}`;
      const from = `app-${(n * policiesPerNs + p + 1) % apps}`;
      yield policy(`ns-${n}`, `pol-${p}`, app, from, p % 2 === 0);
    }
  }
  const nodes = Math.ceil(endpoints / localCount);
  for (let i = 0; i < endpoints; i++) {
    const ns = `ns-${i % namespaces}`;
    // Round-robin over nodes: node-0 gets endpoints 0, nodes, 2*nodes, … (localCount of them).
    const node = `node-${i % nodes}`;
    // Local endpoints fall in 4 namespaces whose numbers are multiples of 5; in each they are
    // app-0 or app-5, so the active policies there are pol-0 (peers app-1) and pol-5 (peers
    // app-6).
    const app = node === LOCAL ? `app-${Math.floor(i / nodes / 4) % 2 === 0 ? 0 : 5}` : `app-${Math.floor(i / namespaces) % apps}`;
    yield endpoint(ns, `pod-${i}`, node, app, i + 1);
  }
}

function* isolatedCustomers(namespaces: number, localCount: number): Generator<V3Resource> {
  const perNs = 10;
  const total = namespaces * perNs;
  const nodes = Math.ceil(total / localCount);
  for (let n = 0; n < namespaces; n++) {
    const ns = `cust-${n}`;
    yield nsProfile(ns);
    yield policy(ns, 'allow-same-ns', 'web', 'web', false);
    yield {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'default-deny', namespace: ns },
      spec: { tier: 'default', order: 1000, selector: 'all()', types: ['Ingress', 'Egress'], ingress: [{ action: 'Allow', source: { selector: 'all()' } }] },
    } satisfies NetworkPolicy;
    for (let e = 0; e < perNs; e++) {
      const i = n * perNs + e;
      yield endpoint(ns, `pod-${e}`, `node-${i % nodes}`, e % 2 === 0 ? 'web' : 'db', i + 1);
    }
  }
}

function runSync(caseName: string, resources: Iterable<V3Resource>): void {
  const graph = new CalcGraph({ nodeName: LOCAL });
  const figures = initialSync(graph, resources);
  report('calc', caseName, { ...figures, gcExposed: (globalThis as { gc?: unknown }).gc !== undefined });
}

function runChurn(): void {
  const endpoints = 50_000;
  const namespaces = 200;
  const graph = new CalcGraph({ nodeName: LOCAL });
  const sync = initialSync(graph, largeCluster(endpoints, namespaces, 10, 200));
  // Remote endpoints in this node's namespaces flip between app-1 and app-6, the peers of
  // the active policies there, so every update moves one endpoint out of one active IP set
  // and into another (two member changes).
  const flips: Array<[ResourceUpdate, ResourceUpdate]> = [];
  const nodes = Math.ceil(endpoints / 200);
  const localNamespaces = new Set<string>();
  for (let i = 0; i < endpoints; i += nodes) localNamespaces.add(`ns-${i % namespaces}`);
  for (let i = 0; i < endpoints; i++) {
    const ns = `ns-${i % namespaces}`;
    const node = `node-${i % nodes}`;
    if (node === LOCAL || !localNamespaces.has(ns)) continue;
    flips.push([
      { op: 'upsert', resource: endpoint(ns, `pod-${i}`, node, 'app-1', i + 1) },
      { op: 'upsert', resource: endpoint(ns, `pod-${i}`, node, 'app-6', i + 1) },
    ]);
  }
  let updates = 0;
  let messages = 0;
  let deltaMembers = 0;
  const minMs = 3000;
  const start = performance.now();
  let round = 0;
  while (performance.now() - start < minMs) {
    const phase = round++ % 2;
    for (let i = 0; i < flips.length; i++) {
      graph.onUpdates([(flips[i] as [ResourceUpdate, ResourceUpdate])[phase] as ResourceUpdate]);
      updates++;
      if (updates % 100 === 0) {
        const out = graph.flush();
        messages += out.length;
        for (const m of out) if (m.type === 'IPSetDeltaUpdate') deltaMembers += m.added.length + m.removed.length;
      }
    }
  }
  const seconds = (performance.now() - start) / 1000;
  report('calc', 'churn', {
    updatesPerSecond: Math.round(updates / seconds),
    updates,
    flippingEndpoints: flips.length,
    seconds: Number(seconds.toFixed(2)),
    messages,
    ipSetMemberChanges: deltaMembers,
    syncSeconds: sync.seconds,
    activeIpSets: graph.activeIPSetCount,
    heapMB: heapMB(),
  });
}

const CASES: Readonly<Record<string, () => void>> = {
  'local-200-of-250k': () => runSync('local-200-of-250k', largeCluster(250_000, 1_000, 10, 200)),
  'isolated-1k': () => runSync('isolated-1k', isolatedCustomers(1_000, 100)),
  'isolated-10k': () => runSync('isolated-10k', isolatedCustomers(10_000, 100)),
  churn: runChurn,
};

const scenario: BenchScenario = {
  description: 'calc graph: initial sync to first flush at 250k endpoints / 10k policies, isolated customers, churn updates/s',
  includeInDefaultRun: false,
  async run(args) {
    const names = args.length > 0 ? args : Object.keys(CASES);
    for (const name of names) {
      const c = CASES[name];
      if (c === undefined) {
        process.stderr.write(`unknown calc case '${name}'; available: ${Object.keys(CASES).join(', ')}\n`);
        process.exitCode = 2;
        return;
      }
      c();
    }
  },
};

export default scenario;
