/**
 * Typha benchmarks (`npm run bench -- typha [case] [args…]`; not in the default run).
 *
 * Cases:
 * - `map [n=100000]`: the snapshot's persistent map (src/typha/persistent-map.ts) on n keys of
 *   the snapshot's form, in shuffled order: insert / update / delete per second, in batches of
 *   100 (as the cache applies them) and one at a time; get per second; heap of the map; extra
 *   heap of 1,000 retained versions of 100 scattered updates each (crumbs a slow client pins).
 * - `fanout [agents=1000] [objects=100000] [seconds=60] [rate=1000] [full=10] [workers=4]`
 *   (issue 15's target): one Typha in THIS process — a SnapshotCache fed `objects`
 *   WorkloadEndpoints (the realistic fixture), behind a SyncServer on 127.0.0.1 — and `agents`
 *   simulated agents in child processes (bench/typha-agents.ts): `full` real SyncClients in one
 *   worker, the rest light wire-level agents (framing, inflate, acks, pongs; no JSON parse of
 *   kvs) spread over `workers` processes. All connect at once. Then `rate` updates/s for
 *   `seconds` s (every 10 ms, rate/100 label changes of existing endpoints, each stamped with
 *   its id and the time the bench called `SnapshotCache.onUpdates`).
 *   Figures: allInSyncSeconds (first connect → every agent in sync with the whole snapshot),
 *   typhaRssMiB (peak, sampled every 100 ms in this process; the fixture's objects — the
 *   "API side" — included), typhaCpuPercent (this process, % of one core) during the fan-out and
 *   during the updates, deliveryP50Ms / deliveryP99Ms (per update, the time until the LAST
 *   agent received it), perAgentP50Ms / perAgentP99Ms (over every delivery), agentsCpuPercent
 *   (all agent workers together, % of one core, from the first update to the report) and
 *   agentCpuUsPerDelivery (their CPU per update received by one agent), undelivered
 *   (update × agent pairs missing 30 s after the last update), disconnects, uptime (load).
 *   On a small machine every process shares the same cores: Typha's CPU figure is its own, but
 *   the agents' work competes with it, which a real cluster (one agent per node) does not.
 *   `TYPHA_BENCH_WORKER_PROF=<dir>` writes a CPU profile of every agent worker there.
 *
 * Figures are one JSON line per case (`report`); heap needs `--expose-gc` (`npm run bench`
 * passes it).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

import { report, type BenchScenario } from '../scenario.ts';
import type { ResourceUpdate } from '../../src/calc/update-processor.ts';
import type { WorkloadEndpoint } from '../../src/api/index.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { PersistentMap } from '../../src/typha/persistent-map.ts';
import { decodeUpdate } from '../../src/typha/serialized-update.ts';
import { SnapshotCache } from '../../src/typha/snapshot-cache.ts';
import { SyncServer } from '../../src/typha/sync-server.ts';
import { workloadEndpointSnapshot } from '../../src/typha/testing/workload-endpoint-fixture.ts';
import { HISTOGRAM_MS, STAMP_LABEL, type WorkerReport } from '../typha-agent-protocol.ts';

function heapMB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return Number((process.memoryUsage().heapUsed / 1048576).toFixed(1));
}

/** Best of `runs` timings of `fn`, as operations per second. */
function bestRate(ops: number, fn: () => void, runs = 5): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    best = Math.min(best, performance.now() - t);
  }
  return Math.round((ops * 1000) / best);
}


function runMap(n: number): void {
  // Flat strings (JSON round trip): a template literal is a rope that flattens — and changes
  // size — the first time the map compares it, which would blur the heap figure.
  const keys: string[] = JSON.parse(JSON.stringify(Array.from({ length: n }, (_, i) => `WorkloadEndpoint/ns-${i % 1000}/wep-${i}`))) as string[];
  let seed = 1;
  const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
  }
  const v1 = { v: 1 };
  const v2 = { v: 2 };
  const batched = (from: PersistentMap<object>, edit: (m: { set(k: string, v: object): void; delete(k: string): boolean }, k: string) => void): PersistentMap<object> => {
    let m = from;
    for (let i = 0; i < n; i += 100) {
      m = m.withMutations((e) => {
        for (let j = i; j < Math.min(n, i + 100); j++) edit(e, keys[j] as string);
      });
    }
    return m;
  };
  const full = batched(PersistentMap.empty(), (e, k) => e.set(k, v1));
  const figures = {
    keys: n,
    insertBatchedPerSec: bestRate(n, () => batched(PersistentMap.empty(), (e, k) => e.set(k, v1))),
    insertSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.set(k, v1), PersistentMap.empty<object>())),
    updateBatchedPerSec: bestRate(n, () => batched(full, (e, k) => e.set(k, v2))),
    updateSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.set(k, v2), full)),
    deleteBatchedPerSec: bestRate(n, () => batched(full, (e, k) => void e.delete(k))),
    deleteSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.delete(k), full)),
    getPerSec: bestRate(n, () => keys.forEach((k) => full.get(k))),
    orderedForEachMs: Number((n / bestRate(n, () => full.forEach(() => undefined)) * 1000).toFixed(2)),
  };
  const before = heapMB();
  const again = batched(PersistentMap.empty(), (e, k) => e.set(k, v1));
  const mapMB = Number((heapMB() - before).toFixed(2));
  const versions: PersistentMap<object>[] = [];
  const beforeVersions = heapMB();
  let m = again;
  for (let b = 0; b < 1000; b++) {
    const start = Math.floor(random() * n);
    m = m.withMutations((e) => {
      for (let j = 0; j < 100; j++) e.set(keys[(start + j * 997) % n] as string, b % 2 === 0 ? v2 : v1);
    });
    versions.push(m);
  }
  const versionsMB = Number((heapMB() - beforeVersions).toFixed(1));
  report('typha', 'map', { ...figures, mapMB, mapSize: again.size, thousandVersionsMB: versionsMB, retainedVersions: versions.length });
}

/** Polls `cond`; every 10 s writes `progress()` to stderr; throws naming `what` after `timeoutMs`. */
async function until(cond: () => boolean, what: string, timeoutMs: number, progress?: () => string): Promise<void> {
  const start = performance.now();
  let reported = start;
  while (!cond()) {
    const now = performance.now();
    if (now - start > timeoutMs) throw new Error(`typha bench: timed out after ${timeoutMs} ms waiting for ${what}${progress === undefined ? '' : `: ${progress()}`}`);
    if (progress !== undefined && now - reported > 10_000) {
      reported = now;
      process.stderr.write(`typha bench: ${Math.round((now - start) / 1000)} s waiting for ${what}: ${progress()}\n`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}


const AGENTS_SCRIPT = fileURLToPath(new URL('../typha-agents.ts', import.meta.url));

interface Worker {
  readonly child: ChildProcess;
  inSync: number;
  closed: number;
  report?: WorkerReport;
}

function startWorker(role: 'light' | 'full', port: number, count: number, first: number, objects: number, updates: number): Worker {
  const child = fork(AGENTS_SCRIPT, [role, String(port), String(count), String(first), String(objects), String(updates)], { execArgv: ['--import', 'tsx', ...(process.env['TYPHA_BENCH_WORKER_PROF'] ? ['--cpu-prof', '--cpu-prof-dir', process.env['TYPHA_BENCH_WORKER_PROF']] : [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const w: Worker = { child, inSync: 0, closed: 0 };
  child.on('message', (m: { type: string; inSync?: number; closed?: number }) => {
    if (m.type === 'state') {
      w.inSync = m.inSync as number;
      w.closed = m.closed as number;
    } else if (m.type === 'report') w.report = m as WorkerReport;
  });
  return w;
}

/** CPU of this process (% of one core) between two `process.cpuUsage()` readings `ms` apart. */
function cpuPercent(from: NodeJS.CpuUsage, ms: number): number {
  const d = process.cpuUsage(from);
  return Math.round(((d.user + d.system) / 1000 / ms) * 100);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function runFanout(agents: number, objects: number, seconds: number, rate: number, fullAgents: number, lightWorkers: number): Promise<void> {
  const fixture = workloadEndpointSnapshot(objects).map(decodeUpdate);
  const totalUpdates = Math.round(rate * seconds);
  const stop = new AbortController();
  const cache = new SnapshotCache();
  void cache.start(stop.signal);
  cache.onStatusUpdated('resync-in-progress');
  for (let i = 0; i < fixture.length; i += 1000) cache.onUpdates(fixture.slice(i, i + 1000));
  cache.onStatusUpdated('in-sync');
  await until(() => cache.latest().syncStatus === 'in-sync', 'the cache to ingest the objects', 600_000);
  const registry = newRegistry();
  const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0, registry });
  const { port } = await server.listen();

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
  const full = Math.min(fullAgents, agents);
  const light = agents - full;
  const workers: Worker[] = [];
  const t0 = performance.now();
  let cpu0 = process.cpuUsage();
  if (full > 0) workers.push(startWorker('full', port, full, 0, objects, totalUpdates));
  const per = Math.ceil(light / lightWorkers);
  for (let first = 0; first < light; first += per) workers.push(startWorker('light', port, Math.min(per, light - first), full + first, objects, totalUpdates));
  const inSync = (): number => workers.reduce((n, w) => n + w.inSync, 0);
  const closed = (): number => workers.reduce((n, w) => n + w.closed, 0);
  const progress = (): string => `${inSync()}/${agents} in sync, ${closed()} disconnected, ${server.connectionCount} connections, Typha RSS ${Math.round(process.memoryUsage().rss / 1048576)} MiB`;
  await until(() => inSync() + closed() >= agents, 'every agent to be in sync', 1_800_000, progress);
  const allInSyncSeconds = (performance.now() - t0) / 1000;
  const fanoutCpuPercent = cpuPercent(cpu0, performance.now() - t0);
  const fanoutRssMiB = Math.round(peakRss / 1048576);

  // Updates: every 10 ms, rate/100 label changes, stamped with their id and send time.
  const perTick = Math.max(1, Math.round(rate / 100));
  let sent = 0;
  cpu0 = process.cpuUsage();
  for (const w of workers) w.child.send({ type: 'mark' });
  const t1 = performance.now();
  while (sent < totalUpdates) {
    const due = Math.min(totalUpdates, Math.floor(((performance.now() - t1) / 10) * perTick) + perTick);
    const batch: ResourceUpdate[] = [];
    for (; sent < due; sent++) {
      const base = fixture[sent % fixture.length] as Extract<ResourceUpdate, { op: 'upsert' }>;
      const wep = base.resource as WorkloadEndpoint;
      const stamp = `${sent}_${(performance.timeOrigin + performance.now()).toFixed(3)}`;
      batch.push({ op: 'upsert', resource: { ...wep, metadata: { ...wep.metadata, labels: { ...wep.metadata.labels, [STAMP_LABEL]: stamp } } } });
    }
    cache.onUpdates(batch);
    await new Promise((r) => setTimeout(r, 10));
  }
  const sendSeconds = (performance.now() - t1) / 1000;
  const updatesCpuPercent = cpuPercent(cpu0, performance.now() - t1);
  // Let the stragglers arrive (bounded), then collect.
  const deadline = performance.now() + 30_000;
  let reports: WorkerReport[] = [];
  for (;;) {
    for (const w of workers) {
      w.report = undefined;
      w.child.send({ type: 'report' });
    }
    await until(() => workers.every((w) => w.report !== undefined || w.child.exitCode !== null), 'worker reports', 60_000);
    reports = workers.flatMap((w) => (w.report === undefined ? [] : [w.report]));
    const missing = reports.reduce((n, r) => n + r.counts.reduce((m, c) => m + (c < r.agents ? r.agents - c : 0), 0), 0);
    if (missing === 0 || performance.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  clearInterval(sampler);
  const agentsCpuMs = reports.reduce((n, r) => n + r.cpuMsSinceMark, 0);
  const agentDeliveries = reports.reduce((n, r) => n + r.deliveriesSinceMark, 0);
  const markToReportMs = performance.now() - t1;

  const allAgents: number[] = [];
  let undelivered = 0;
  for (let id = 0; id < totalUpdates; id++) {
    let max = 0;
    let ok = true;
    for (const r of reports) {
      if ((r.counts[id] as number) < r.agents) {
        ok = false;
        undelivered += r.agents - (r.counts[id] as number);
      }
      max = Math.max(max, r.maxLatencyMs[id] as number);
    }
    if (ok) allAgents.push(max);
  }
  allAgents.sort((a, b) => a - b);
  const hist = new Float64Array(HISTOGRAM_MS + 1);
  let deliveries = 0;
  for (const r of reports) {
    for (const [b, n] of r.histogram) {
      hist[b] = (hist[b] as number) + n;
      deliveries += n;
    }
  }
  const histPercentile = (p: number): number => {
    let acc = 0;
    for (let b = 0; b <= HISTOGRAM_MS; b++) if ((acc += hist[b] as number) >= (p / 100) * deliveries) return b;
    return NaN;
  };
  report('typha', 'fanout', {
    agents,
    fullAgents: full,
    lightWorkers,
    snapshotObjects: objects,
    allInSyncSeconds: Number(allInSyncSeconds.toFixed(1)),
    fanoutCpuPercent,
    fanoutRssMiB,
    typhaRssMiB: Math.round(peakRss / 1048576),
    updatesPerSecond: Math.round(totalUpdates / sendSeconds),
    updateSeconds: Number(sendSeconds.toFixed(1)),
    deliveryP50Ms: Math.round(percentile(allAgents, 50)),
    deliveryP99Ms: Math.round(percentile(allAgents, 99)),
    deliveryMaxMs: Math.round(allAgents.at(-1) ?? NaN),
    perAgentP50Ms: histPercentile(50),
    perAgentP99Ms: histPercentile(99),
    typhaCpuPercent: updatesCpuPercent,
    agentsCpuPercent: Math.round((agentsCpuMs / markToReportMs) * 100),
    agentCpuUsPerDelivery: Number(((agentsCpuMs * 1000) / Math.max(1, agentDeliveries)).toFixed(2)),
    updatesDeliveredToAll: allAgents.length,
    undelivered,
    disconnects: closed(),
    serverCloses: Object.fromEntries(((await registry.getSingleMetric('tessera_typha_connections_closed')?.get())?.values ?? []).map((v) => [v.labels['reason'], v.value])),
    heapMB: heapMB(),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  });
  for (const w of workers) w.child.send({ type: 'exit' });
  await server.close();
  stop.abort();
  await Promise.all(workers.map((w) => (w.child.exitCode !== null ? undefined : new Promise((r) => w.child.once('exit', r)))));
}

const scenario: BenchScenario = {
  description: "Typha: the snapshot's persistent map, and one Typha fanning 100,000 objects and 1,000 updates/s out to N agents in worker processes over loopback TCP",
  includeInDefaultRun: false,
  async run(args) {
    const [which, ...rest] = args;
    const num = (i: number, d: number): number => (rest[i] === undefined ? d : Number(rest[i]));
    if (which === undefined || which === 'map') runMap(num(0, 100_000));
    if (which === undefined || which === 'fanout') await runFanout(num(0, 1000), num(1, 100_000), num(2, 60), num(3, 1000), num(4, 10), num(5, 4));
  },
};

export default scenario;
