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
 *   (all agent workers together, % of one core, from the first update to the report),
 *   typhaLagP50AtMostMs / typhaLagP99AtMostMs (during the updates, how far behind the newest
 *   breadcrumb each connection was as it took up a crumb — `tessera_typha_client_latency_secs`,
 *   so at its buckets' resolution: Typha's side of the delay, before the agents read) and
 *   agentCpuUsPerDelivery (their CPU per update received by one agent), undelivered
 *   (update × agent pairs missing 30 s after the last update), disconnects, uptime (load).
 *   On a small machine every process shares the same cores: Typha's CPU figure is its own, but
 *   the agents' work competes with it, which a real cluster (one agent per node) does not.
 *   `TYPHA_BENCH_WORKER_PROF=<dir>` writes a CPU profile of every agent worker there.
 *
 * - `direct [agents=100] [objects=100000] [seconds=60] [rate=1000] [full=10] [workers=4]`: the
 *   comparison — the same agents each listing and watching a real kube-apiserver (bench/typha-direct.ts).
 *
 * Figures are one JSON line per case (`report`); heap needs `--expose-gc` (`npm run bench`
 * passes it).
 */
import { loadavg } from 'node:os';

import { report, type BenchScenario } from '../scenario.ts';
import type { WorkloadEndpoint } from '../../src/api/index.ts';
import { newRegistry, type Registry } from '../../src/runtime/metrics.ts';
import { PersistentMap } from '../../src/typha/persistent-map.ts';
import { decodeUpdate } from '../../src/typha/serialized-update.ts';
import { SnapshotCache } from '../../src/typha/snapshot-cache.ts';
import { SyncServer } from '../../src/typha/sync-server.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';
import { AgentPool, until } from '../typha-agent-pool.ts';
import { runDirect } from '../typha-direct.ts';
import { sendStamped, stampNow, STAMP_LABEL } from '../typha-agent-protocol.ts';
import type { Update } from '../../src/syncer/index.ts';

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

/** How far behind the newest crumb a connection is as it takes up a crumb: Typha's own lag. */
const LAG_METRIC = 'tessera_typha_client_latency_secs';

/** CPU of this process (% of one core) between two `process.cpuUsage()` readings `ms` apart. */
function cpuPercent(from: NodeJS.CpuUsage, ms: number): number {
  const d = process.cpuUsage(from);
  return Math.round(((d.user + d.system) / 1000 / ms) * 100);
}

/** Cumulative bucket counts (by `le`) of a histogram in `registry`. */
async function histogramBuckets(registry: Registry, name: string): Promise<Map<string, number>> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return new Map(values.filter((v) => (v as { metricName?: string }).metricName === `${name}_bucket`).map((v) => [String(v.labels['le']), v.value]));
}

/**
 * The bucket bound (ms) under which `p` % of the observations between two readings fall (the
 * histogram's resolution: an upper bound, not an interpolation); NaN without observations.
 */
function bucketPercentileMs(before: Map<string, number>, after: Map<string, number>, p: number): number {
  const rows = [...after].map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n - (before.get(le) ?? 0)] as const).sort((a, b) => a[0] - b[0]);
  const total = rows.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const row = rows.find(([, n]) => n >= (p / 100) * total);
  return row === undefined ? NaN : row[0] * 1000;
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
  const pool = new AgentPool(objects, totalUpdates);
  const t0 = performance.now();
  let cpu0 = process.cpuUsage();
  pool.startAll(agents, full, lightWorkers, { full: 'full', light: 'light' }, String(port));
  const progress = (): string => `${pool.inSync}/${agents} in sync, ${pool.closed} disconnected, ${server.connectionCount} connections, Typha RSS ${Math.round(process.memoryUsage().rss / 1048576)} MiB`;
  await until(() => pool.inSync + pool.closed >= agents, 'every agent to be in sync', 1_800_000, progress);
  const allInSyncSeconds = (performance.now() - t0) / 1000;
  const fanoutCpuPercent = cpuPercent(cpu0, performance.now() - t0);
  const fanoutRssMiB = Math.round(peakRss / 1048576);

  // Updates: every 10 ms, rate/100 label changes, stamped with their id and send time.
  cpu0 = process.cpuUsage();
  const lagBefore = await histogramBuckets(registry, LAG_METRIC);
  pool.mark();
  const t1 = performance.now();
  await sendStamped(totalUpdates, rate, (first, end) => {
    const batch: Update[] = [];
    for (let id = first; id < end; id++) {
      const base = fixture[id % fixture.length] as Extract<Update, { op: 'upsert' }>;
      const wep = base.resource as WorkloadEndpoint;
      batch.push({ op: 'upsert', resource: { ...wep, metadata: { ...wep.metadata, labels: { ...wep.metadata.labels, [STAMP_LABEL]: stampNow(id) } } } });
    }
    cache.onUpdates(batch);
  });
  const sendSeconds = (performance.now() - t1) / 1000;
  const updatesCpuPercent = cpuPercent(cpu0, performance.now() - t1);
  // Let the stragglers arrive (bounded), then collect.
  const lagAfter = await histogramBuckets(registry, LAG_METRIC);
  const delivery = await pool.collect(30_000);
  clearInterval(sampler);
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
    typhaCpuPercent: updatesCpuPercent,
    typhaLagP50AtMostMs: bucketPercentileMs(lagBefore, lagAfter, 50),
    typhaLagP99AtMostMs: bucketPercentileMs(lagBefore, lagAfter, 99),
    ...delivery,
    disconnects: pool.closed,
    serverCloses: Object.fromEntries(((await registry.getSingleMetric('tessera_typha_connections_closed')?.get())?.values ?? []).map((v) => [v.labels['reason'], v.value])),
    heapMB: heapMB(),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  });
  await pool.exit();
  await server.close();
  stop.abort();
}

const scenario: BenchScenario = {
  description: "Typha: the snapshot's persistent map, and one Typha fanning 100,000 objects and 1,000 updates/s out to N agents in worker processes over loopback TCP",
  includeInDefaultRun: false,
  async run(args) {
    const [which, ...rest] = args;
    const num = (i: number, d: number): number => (rest[i] === undefined ? d : Number(rest[i]));
    if (which === undefined || which === 'map') runMap(num(0, 100_000));
    if (which === undefined || which === 'fanout') await runFanout(num(0, 1000), num(1, 100_000), num(2, 60), num(3, 1000), num(4, 10), num(5, 4));
    if (which === 'direct') await runDirect(num(0, 100), num(1, 100_000), num(2, 60), num(3, 1000), num(4, 10), num(5, 4));
  },
};

export default scenario;
