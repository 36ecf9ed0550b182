/**
 * Typha benchmarks (`npm run bench -- typha [case] [args…]`; not in the default run).
 *
 * Cases:
 * - `map [n=100000]`: the snapshot's persistent map (src/typha/persistent-map.ts) on n keys of
 *   the snapshot's form, in shuffled order: insert / update / delete per second, in batches of
 *   100 (as the cache applies them) and one at a time; get per second; heap of the map; extra
 *   heap of 1,000 retained versions of 100 scattered updates each (crumbs a slow client pins).
 * - `fanout [agents=20] [objects=100000] [deltas=1000]`: one Typha — a SnapshotCache fed
 *   `objects` WorkloadEndpoints (the realistic fixture), behind a SyncServer on 127.0.0.1 — and
 *   `agents` SyncClients in this process over loopback TCP. Figures: seconds to ingest the
 *   objects into the cache; seconds until every agent holds the whole snapshot and is in-sync;
 *   then seconds until every agent has seen `deltas` label changes; heap and RSS at the end.
 *   Server and clients share the 2 cores and one heap, so the fan-out figure is dominated by
 *   the clients (each decodes and keeps its own copy of every object; a CPU profile of one
 *   agent × 100,000 shows GC first, then JSON encode/decode): it bounds a real cluster's from
 *   above, where each agent is its own process on its own node.
 * - `fanout-light [agents=100] [objects=100000] [deltas=1000] [wave=20]`: the same Typha, with
 *   light agents — a socket that does the handshake, follows the compression restart, answers
 *   pings and counts the KVs it decodes, keeping none and parsing no values — so the figures
 *   are mostly Typha's and the wire's, not N copies of the agent's state. They connect in waves
 *   of `wave`, each wave in sync before the next: all 100 at once in this one process, each
 *   takes over 60 s to read its snapshot and Typha rightly drops it for not answering its ping
 *   within the pong timeout (60 s) — a real agent reads on its own node's CPU.
 *
 * Figures are one JSON line per case (`report`); heap needs `--expose-gc` (`npm run bench`
 * passes it).
 */
import { setMaxListeners } from 'node:events';

import net from 'node:net';

import { report, type BenchScenario } from '../scenario.ts';
import type { ResourceUpdate } from '../../src/calc/update-processor.ts';
import { realClock } from '../../src/runtime/clock.ts';
import type { CompressionAlgorithm } from '../../src/typha/compression.ts';
import { DEFAULT_MAX_FRAME_BYTES } from '../../src/typha/frame-codec.ts';
import { MessageReader, MessageWriter } from '../../src/typha/message-stream.ts';
import { PersistentMap } from '../../src/typha/persistent-map.ts';
import { decodeUpdate, type SyncStatus } from '../../src/typha/serialized-update.ts';
import { SnapshotCache } from '../../src/typha/snapshot-cache.ts';
import { SyncClient } from '../../src/typha/sync-client.ts';
import { SyncServer } from '../../src/typha/sync-server.ts';
import { workloadEndpointSnapshot } from '../../src/typha/testing/workload-endpoint-fixture.ts';

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

/** An agent's view: the keys it holds and its status. */
class AgentView {
  readonly keys = new Set<string>();
  status: SyncStatus = 'wait-for-datastore';
  updates = 0;
  onUpdates(updates: readonly ResourceUpdate[]): void {
    for (const u of updates) {
      this.updates++;
      const key = u.op === 'delete' ? `${u.kind}/${u.namespace ?? ''}/${u.name}` : `${u.resource.kind}/${u.resource.metadata.namespace ?? ''}/${u.resource.metadata.name}`;
      if (u.op === 'delete') this.keys.delete(key);
      else this.keys.add(key);
    }
  }
  onStatusUpdated(status: SyncStatus): void {
    this.status = status;
  }
}

/** A wire-level agent: handshake, restart, pongs; counts KVs, keeps nothing. */
class LightAgent {
  kvs = 0;
  status: SyncStatus | undefined;
  closed = false;
  readonly #socket: net.Socket;
  readonly #reader: MessageReader;
  readonly #writer: MessageWriter;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('close', () => (this.closed = true));
    this.#writer = new MessageWriter(socket, { clock: realClock, writeTimeoutMs: 60_000, maxFrameBytes: DEFAULT_MAX_FRAME_BYTES });
    this.#reader = new MessageReader(socket, {
      clock: realClock,
      maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
      maxKVsPerMessage: 100,
      onError: () => socket.destroy(),
      onMessage: (m) => {
        if (m.type === 'kvs') this.kvs += m.kvs.length;
        else if (m.type === 'sync-status') this.status = m.status;
        else if (m.type === 'ping') void this.#writer.send({ type: 'pong', pingTimestamp: m.timestamp, pongTimestamp: 0 }).catch(() => undefined);
        else if (m.type === 'decoder-restart') {
          this.#reader.restart(m.compression === 'none' ? undefined : (m.compression as CompressionAlgorithm));
          void this.#writer.send({ type: 'ack' }).catch(() => undefined);
        }
      },
    });
  }

  static async connect(port: number, node: string): Promise<LightAgent> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const agent = new LightAgent(socket);
    await agent.#writer.send({
      type: 'client-hello',
      hostname: node,
      info: 'typha bench',
      version: 'bench',
      syncerType: 'felix',
      supportsDecoderRestart: true,
      supportedCompression: ['deflate-raw'],
      clientConnId: 1,
    });
    return agent;
  }

  close(): void {
    this.#reader.stop();
    this.#writer.close();
    this.#socket.destroy();
  }
}

async function runFanoutLight(agents: number, objects: number, deltas: number, wave: number): Promise<void> {
  const updates = workloadEndpointSnapshot(objects).map(decodeUpdate);
  const stop = new AbortController();
  const cache = new SnapshotCache();
  void cache.start(stop.signal);
  cache.onStatusUpdated('resync-in-progress');
  for (let i = 0; i < updates.length; i += 1000) cache.onUpdates(updates.slice(i, i + 1000));
  cache.onStatusUpdated('in-sync');
  await until(() => cache.latest().syncStatus === 'in-sync', 'the cache to ingest the objects', 600_000);
  const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0 });
  const { port } = await server.listen();
  let t = performance.now();
  const light: LightAgent[] = [];
  const lightProgress = (): string =>
    `${light.filter((a) => a.status === 'in-sync').length} in sync, ${light.filter((a) => a.closed).length} disconnected, ${light.reduce((n, a) => n + a.kvs, 0)} KVs received, ${server.connectionCount} connections`;
  while (light.length < agents) {
    const n = Math.min(wave, agents - light.length);
    light.push(...(await Promise.all(Array.from({ length: n }, (_, i) => LightAgent.connect(port, `node-${light.length + i}`)))));
    await until(() => light.every((a) => a.status === 'in-sync' && a.kvs >= objects), `${light.length} light agents to hold the snapshot`, 600_000, lightProgress);
  }
  const fanoutSeconds = (performance.now() - t) / 1000;
  const before = light.map((a) => a.kvs);
  t = performance.now();
  for (const u of updates.slice(0, deltas)) {
    if (u.op !== 'upsert') continue;
    const meta = u.resource.metadata;
    cache.onUpdates([{ op: 'upsert', resource: { ...u.resource, metadata: { ...meta, labels: { ...meta.labels, bench: 'changed' } } } as typeof u.resource }]);
  }
  await until(() => light.every((a, i) => a.kvs - (before[i] as number) >= deltas), 'every light agent to see the deltas', 600_000, lightProgress);
  const deltaSeconds = (performance.now() - t) / 1000;
  report('typha', 'fanout-light', {
    agents,
    objects,
    deltas,
    wave,
    fanoutSeconds: Number(fanoutSeconds.toFixed(2)),
    snapshotsPerSecond: Number((agents / fanoutSeconds).toFixed(1)),
    deltaSeconds: Number(deltaSeconds.toFixed(3)),
    heapMB: heapMB(),
    rssMB: Math.round(process.memoryUsage().rss / 1048576),
    connections: server.connectionCount,
  });
  for (const a of light) a.close();
  await server.close();
  stop.abort();
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

async function runFanout(agents: number, objects: number, deltas: number): Promise<void> {
  const updates = workloadEndpointSnapshot(objects).map(decodeUpdate);
  const stop = new AbortController();
  setMaxListeners(agents + 10, stop.signal); // every client, the cache and the server listen on it
  const cache = new SnapshotCache();
  void cache.start(stop.signal);
  let t = performance.now();
  cache.onStatusUpdated('resync-in-progress');
  for (let i = 0; i < updates.length; i += 1000) cache.onUpdates(updates.slice(i, i + 1000));
  cache.onStatusUpdated('in-sync');
  await until(() => cache.latest().syncStatus === 'in-sync', 'the cache to ingest the objects', 600_000);
  const ingestSeconds = (performance.now() - t) / 1000;

  const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0 });
  const { port } = await server.listen();
  const views = Array.from({ length: agents }, () => new AgentView());
  const clients = views.map((v, i) => new SyncClient({ addresses: () => [`127.0.0.1:${port}`], hostname: `node-${i}` }, v));
  t = performance.now();
  const runs = clients.map((c) => c.run(stop.signal));
  await until(() => views.every((v) => v.status === 'in-sync' && v.keys.size === objects), 'every agent to hold the snapshot', 600_000);
  const fanoutSeconds = (performance.now() - t) / 1000;

  const changed = updates.slice(0, deltas).map((u): ResourceUpdate => {
    if (u.op !== 'upsert') return u;
    const meta = u.resource.metadata;
    return { op: 'upsert', resource: { ...u.resource, metadata: { ...meta, labels: { ...meta.labels, bench: 'changed' } } } as typeof u.resource };
  });
  const before = views.map((v) => v.updates);
  t = performance.now();
  for (const u of changed) cache.onUpdates([u]);
  await until(() => views.every((v, i) => v.updates - (before[i] as number) >= deltas), 'every agent to see the deltas', 600_000);
  const deltaSeconds = (performance.now() - t) / 1000;

  report('typha', 'fanout', {
    agents,
    objects,
    deltas,
    ingestSeconds: Number(ingestSeconds.toFixed(2)),
    fanoutSeconds: Number(fanoutSeconds.toFixed(2)),
    deltaSeconds: Number(deltaSeconds.toFixed(3)),
    heapMB: heapMB(),
    rssMB: Math.round(process.memoryUsage().rss / 1048576),
    connections: server.connectionCount,
  });
  await server.close();
  stop.abort();
  await Promise.allSettled(runs);
}

const scenario: BenchScenario = {
  description: "Typha: the snapshot's persistent map, and one Typha fanning 100,000 objects out to N agents over loopback TCP",
  includeInDefaultRun: false,
  async run(args) {
    const [which, ...rest] = args;
    const num = (i: number, d: number): number => (rest[i] === undefined ? d : Number(rest[i]));
    if (which === undefined || which === 'map') runMap(num(0, 100_000));
    if (which === undefined || which === 'fanout') await runFanout(num(0, 20), num(1, 100_000), num(2, 1000));
    if (which === undefined || which === 'fanout-light') await runFanoutLight(num(0, 100), num(1, 100_000), num(2, 1000), num(3, 20));
  },
};

export default scenario;
