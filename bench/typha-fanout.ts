/**
 * The Typha fan-out bench (`npm run bench -- typha fanout …`, see bench/scenarios/typha.ts for
 * the arguments): one Typha in THIS process — a SnapshotCache fed the workload's snapshot
 * (bench/typha-fanout-workload.ts), behind a SyncServer on 127.0.0.1 — and its clients in
 * worker processes (bench/typha-agents.ts), all connecting at once; then `rate` stamped ids/s
 * for `seconds` s (every 10 ms, rate/100 of them, each stamped with its id and the time the
 * bench called `SnapshotCache.onUpdates`).
 *
 * Readers (`readers`):
 * - `drain` (the default, issue 31): `agents - full` connections whose readers drain and frame
 *   the bytes and do nothing more, plus `full` real SyncClients that inflate, decode and apply
 *   everything and stamp end-to-end latency. What a node does with the bytes — inflate, decode
 *   — is each node's CPU on a real cluster (one agent per node), measured apart per update and
 *   per snapshot (bench/typha-node-cost.ts) and reported beside (`node`). Typha runs without
 *   pings (a drain reader never sees one to answer).
 * - `inflating` (issue 15's bench): the `light` readers also inflate every frame and read the
 *   stamps — 1,000 of them on this 2-core machine measure the readers more than Typha.
 *
 * Figures: allSentSeconds (first connect → Typha has written the whole snapshot and its status
 * to every connection: `streamingCount`), fullInSyncSeconds (→ the real clients applied it),
 * typhaRssMiB (peak, sampled every 100 ms; the fixture's objects — the "API side" — included),
 * typhaCpuPercent during the fan-out and during the updates (this process, % of one core; the
 * updates' construction by the bench included), typhaCpuUsPerUpdatePerConnection (Typha's CPU
 * during the updates per stamped id per connection), writtenToAll* (bench/typha-written-
 * latency.ts: update → the last of the connections' sockets accepted its crumb), delivery* /
 * perAgent* (update → applied at the real clients: every full client / every delivery),
 * fullAgentsCpuPercent and agentCpuUsPerDelivery (the real clients' worker), drainCpuPercent
 * (the drain readers' workers), wireBytesPerIdPerConnection, typhaLag* (how far behind the
 * newest crumb a connection is as it takes one up, at the histogram's resolution), loopDelay*
 * (Typha's event-loop delay during the updates), gc* (its GC pauses then), disconnects,
 * serverCloses, loadavg.
 */
import { loadavg } from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

import { report } from './scenario.ts';
import { newRegistry, type Registry } from '../src/runtime/metrics.ts';
import { serializeUpdate, type SerializedUpdate } from '../src/typha/serialized-update.ts';
import { SnapshotCache } from '../src/typha/snapshot-cache.ts';
import { SyncServer } from '../src/typha/sync-server.ts';
import { AgentPool, until } from './typha-agent-pool.ts';
import { sendStamped } from './typha-agent-protocol.ts';
import { fanoutWorkload, type FanoutWorkload, type Workload } from './typha-fanout-workload.ts';
import { measureNodeCost } from './typha-node-cost.ts';
import { WrittenLatency } from './typha-written-latency.ts';

export interface FanoutOptions {
  readonly readers: 'drain' | 'inflating';
  readonly workload: Workload;
  readonly agents: number;
  readonly objects: number;
  readonly seconds: number;
  readonly rate: number;
  readonly full: number;
  readonly workers: number;
}

/** How far behind the newest crumb a connection is as it takes up a crumb: Typha's own lag. */
const LAG_METRIC = 'tessera_typha_client_latency_secs';

/** CPU of this process (% of one core) since a `process.cpuUsage()` reading `ms` ago, and its ms. */
function cpuSince(from: NodeJS.CpuUsage, ms: number): { percent: number; ms: number } {
  const d = process.cpuUsage(from);
  const used = (d.user + d.system) / 1000;
  return { percent: Math.round((used / ms) * 100), ms: used };
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

/** `ids` stamped ids' updates after `from`, serialized, without the no-ops Typha drops (what a node receives). */
function nodeSample(workload: FanoutWorkload, from: number, ids: number): SerializedUpdate[] {
  const last = new Map<string, string | null>();
  const out: SerializedUpdate[] = [];
  for (let id = from; id < from + ids; id++) {
    for (const u of workload.batch(id)) {
      const s = serializeUpdate(u);
      if (last.has(s.key) && last.get(s.key) === s.value) continue;
      last.set(s.key, s.value);
      out.push(s);
    }
  }
  return out;
}

export async function runFanout(o: FanoutOptions): Promise<void> {
  const workload = fanoutWorkload(o.workload, o.objects);
  const totalUpdates = Math.round(o.rate * o.seconds);
  const stop = new AbortController();
  const cache = new SnapshotCache();
  void cache.start(stop.signal);
  cache.onStatusUpdated('resync-in-progress');
  for (const b of workload.initial) cache.onUpdates(b);
  cache.onStatusUpdated('in-sync');
  await until(() => cache.latest().syncStatus === 'in-sync', 'the cache to ingest the objects', 600_000);

  // Each node's cost, before any client connects (the sample ids are past the run's).
  const perMessage = Math.max(1, Math.round(o.rate / 100));
  const node =
    process.env['TYPHA_BENCH_NODE_COST'] === '0'
      ? undefined
      : await measureNodeCost(cache.latest(), nodeSample(workload, totalUpdates, 6000), perMessage * workload.kvsPerId);
  if (node !== undefined) process.stderr.write(`typha bench: each node's cost: ${JSON.stringify(node)}\n`);

  const registry = newRegistry();
  const written = new WrittenLatency();
  const drain = o.readers === 'drain';
  const server = new SyncServer({
    source: cache,
    host: '127.0.0.1',
    port: 0,
    registry,
    onCrumbsWritten: written.onCrumbsWritten,
    ...(drain ? { pingIntervalMs: 1e9 } : {}),
  });
  const { port } = await server.listen();

  (globalThis as { gc?: () => void }).gc?.();
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
  const full = Math.min(o.full, o.agents);
  const pool = new AgentPool(workload.objects, totalUpdates);
  const t0 = performance.now();
  let cpu0 = process.cpuUsage();
  pool.startAll(o.agents, full, o.workers, { full: 'full', light: drain ? 'drain' : 'light' }, String(port));
  const progress = (): string =>
    `${pool.inSync}/${o.agents} ready, ${server.streamingCount} sent, ${pool.closed} disconnected, ${server.connectionCount} connections, Typha RSS ${Math.round(process.memoryUsage.rss() / 1048576)} MiB`;
  let allSentSeconds = NaN;
  await until(
    () => {
      if (Number.isNaN(allSentSeconds) && server.streamingCount >= o.agents) allSentSeconds = (performance.now() - t0) / 1000;
      return pool.inSync + pool.closed >= o.agents && server.streamingCount + pool.closed >= o.agents;
    },
    'every connection to be sent its snapshot',
    1_800_000,
    progress,
  );
  const fullInSyncSeconds = (performance.now() - t0) / 1000;
  const fanout = cpuSince(cpu0, performance.now() - t0);
  const fanoutRssMiB = Math.round(peakRss / 1048576);
  // The drain readers ack once their socket goes quiet after the snapshot: let them, then stop.
  if (drain) {
    await new Promise((r) => setTimeout(r, 2000));
    pool.stopAcks();
  }
  const before = drain ? await pool.drainCounts() : { frames: 0, bytes: 0 };

  // Typha's event loop during the updates: how long a ready write could wait, and GC's share of it.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  const gc = { count: 0, totalMs: 0, maxMs: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.totalMs += e.duration;
      gc.maxMs = Math.max(gc.maxMs, e.duration);
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  loopDelay.enable();
  cpu0 = process.cpuUsage();
  const lagBefore = await histogramBuckets(registry, LAG_METRIC);
  pool.mark();
  const t1 = performance.now();
  await sendStamped(totalUpdates, o.rate, (first, end) => {
    const batch = [];
    for (let id = first; id < end; id++) batch.push(...workload.batch(id));
    cache.onUpdates(batch);
  });
  const sendSeconds = (performance.now() - t1) / 1000;
  const updates = cpuSince(cpu0, performance.now() - t1);
  loopDelay.disable();
  gcObserver.disconnect();
  const lagAfter = await histogramBuckets(registry, LAG_METRIC);
  const delivery = await pool.collect(30_000);
  const after = drain ? await pool.drainCounts() : before;
  clearInterval(sampler);
  const drainConnections = drain ? o.agents - full : 0;
  report('typha', o.readers === 'drain' ? (o.workload === 'churn' ? 'fanout-endpointslices' : 'fanout') : 'fanout-inflating', {
    readers: o.readers,
    workload: o.workload,
    agents: o.agents,
    fullAgents: full,
    workers: o.workers,
    snapshotObjects: workload.objects,
    kvsPerId: workload.kvsPerId,
    allSentSeconds: Number(allSentSeconds.toFixed(1)),
    fullInSyncSeconds: Number(fullInSyncSeconds.toFixed(1)),
    fanoutCpuPercent: fanout.percent,
    fanoutRssMiB,
    typhaRssMiB: Math.round(peakRss / 1048576),
    idsPerSecond: Math.round(totalUpdates / sendSeconds),
    updateSeconds: Number(sendSeconds.toFixed(1)),
    typhaCpuPercent: updates.percent,
    typhaCpuUsPerUpdatePerConnection: Number(((updates.ms * 1000) / (totalUpdates * o.agents)).toFixed(3)),
    ...written.figures(o.agents - pool.closed, totalUpdates),
    loopDelayP99Ms: Number((loopDelay.percentile(99) / 1e6).toFixed(1)),
    loopDelayMaxMs: Number((loopDelay.max / 1e6).toFixed(1)),
    gcPauses: gc.count,
    gcTotalMs: Math.round(gc.totalMs),
    gcMaxMs: Number(gc.maxMs.toFixed(1)),
    typhaLagP50AtMostMs: bucketPercentileMs(lagBefore, lagAfter, 50),
    typhaLagP99AtMostMs: bucketPercentileMs(lagBefore, lagAfter, 99),
    ...delivery,
    ...(drain ? { wireBytesPerIdPerConnection: Math.round((after.bytes - before.bytes) / (totalUpdates * Math.max(1, drainConnections))) } : {}),
    node,
    disconnects: pool.closed,
    serverCloses: Object.fromEntries(((await registry.getSingleMetric('tessera_typha_connections_closed')?.get())?.values ?? []).map((v) => [v.labels['reason'], v.value])),
    loadavg: loadavg().map((l) => Number(l.toFixed(2))),
  });
  await pool.exit();
  await server.close();
  stop.abort();
}
