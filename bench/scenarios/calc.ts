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
 * The workload builders are bench/calc-workload.ts's, shared with `calc-vs-felix`, which runs
 * the same shapes beside Felix's own calculation graph.
 */
import { report, type BenchScenario } from '../scenario.ts';
import type { V3Resource } from '../../src/api/index.ts';
import { CalcGraph } from '../../src/calc/index.ts';
import { clusterChurn, isolatedCustomers, largeCluster, LOCAL_NODE as LOCAL } from '../calc-workload.ts';
import type { Update } from '../../src/syncer/index.ts';

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function heapMB(): number {
  gc();
  gc();
  return Number((process.memoryUsage().heapUsed / 1048576).toFixed(1));
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
  let batch: Update[] = [];
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

function runSync(caseName: string, resources: Iterable<V3Resource>): void {
  const graph = new CalcGraph({ nodeName: LOCAL });
  const figures = initialSync(graph, resources);
  report('calc', caseName, { ...figures, gcExposed: (globalThis as { gc?: unknown }).gc !== undefined });
}

function runChurn(): void {
  const shape = { endpoints: 50_000, namespaces: 200, policiesPerNs: 10, localCount: 200 };
  const graph = new CalcGraph({ nodeName: LOCAL });
  const sync = initialSync(graph, largeCluster(shape));
  const [round0, round1] = clusterChurn(shape);
  const flips = round0.map((r, i): [Update, Update] => [
    { op: 'upsert', resource: r },
    { op: 'upsert', resource: round1[i] as V3Resource },
  ]);
  let updates = 0;
  let messages = 0;
  let deltaMembers = 0;
  const minMs = 3000;
  const start = performance.now();
  let round = 0;
  while (performance.now() - start < minMs) {
    const phase = round++ % 2;
    for (let i = 0; i < flips.length; i++) {
      graph.onUpdates([(flips[i] as [Update, Update])[phase] as Update]);
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
  'local-200-of-250k': () => runSync('local-200-of-250k', largeCluster({ endpoints: 250_000, namespaces: 1_000, policiesPerNs: 10, localCount: 200 })),
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
