/**
 * A worker process of the Typha fan-out bench (bench/scenarios/typha.ts): hosts many simulated
 * node agents connected to one Typha over loopback TCP, so the agents' CPU is not the Typha
 * process's.
 *
 * Roles (argv: role, port, count, firstIndex, objects, updates):
 * - `light`: `count` wire-level agents in one event loop. Each does the handshake, follows every
 *   decoder-restart (acks it, starts a fresh inflater), answers pings, and for every frame:
 *   length-framing → synchronous inflate (bench/typha-sync-inflate.ts: no threadpool hop per
 *   frame; into a scratch buffer the frame is handled in before the next) → message type from the payload's first bytes; `kvs` payloads are not JSON-parsed — the bench
 *   stamps are found with `indexOf`. What a real agent does on top (parse, apply) is its own
 *   node's CPU, which the 10 full agents account for.
 * - `drain`: `count` connections whose readers drain and frame the bytes and do nothing more
 *   (bench/typha-frame-counter.ts; no inflate, no decode: that is each node's CPU, measured
 *   apart by bench/typha-node-cost.ts). They negotiate deflate-raw as an agent does, so Typha
 *   does exactly the work it does for a real agent; the handshake's two plain frames are read,
 *   the first restart acked. Everything after is compressed and not looked into, so a drain
 *   reader cannot see the restart ending its snapshot: it acks once per quiet period (nothing
 *   received for a 500 ms tick, something since its last ack) until the parent says every snapshot was sent (`{type:'stop-acks'}`) —
 *   Typha ignores an ack it is not waiting for, and counts one after the snapshot's last byte
 *   was written as the snapshot read, which it then is (the reader drained it). Nor can it
 *   see a ping: the bench runs Typha without pings. `inSync` counts finished handshakes.
 * - `full`: `count` real SyncClients (decode, validate, resync buffer) feeding a consumer that
 *   keeps every key and reads each update's stamp from its labels.
 *
 * Stamps: an update of the bench carries the label `bench-stamp: <id>_<epoch ms when the bench
 * called SnapshotCache.onUpdates>`; at receipt the agent computes the latency on the same
 * machine clock (`performance.timeOrigin + performance.now()`).
 *
 * IPC to the parent: `{type:'state', inSync, closed, failures}` whenever one changes (throttled to
 * every 100 ms); `{type:'mark'}` starts the CPU count; on `{type:'report'}` a `{type:'report', ...}`
 * with, per update id, how many of this worker's agents received it and the largest latency
 * among them, a 1 ms histogram of every delivery's latency, and the worker's CPU time and
 * deliveries since the mark.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

import { KubeConfig } from '@kubernetes/client-node';

import { KubeListerWatcher, resourcePath } from '../src/informers/kube-lister-watcher.ts';
import type { KubeObject } from '../src/informers/object.ts';
import { SharedIndexInformer } from '../src/informers/shared-index-informer.ts';
import { encodeFrame, FrameDecoder } from '../src/typha/frame-codec.ts';
import { encodeMessage } from '../src/typha/messages.ts';
import { SyncClient } from '../src/typha/sync-client.ts';
import { HISTOGRAM_MS, STAMP_LABEL, type WorkerReport } from './typha-agent-protocol.ts';
import { FrameCounter } from './typha-frame-counter.ts';
import { SyncInflater } from './typha-sync-inflate.ts';
import type { SyncStatus, Update } from '../src/syncer/index.ts';

const [role, targetArg, countArg, firstArg, objectsArg, updatesArg] = process.argv.slice(2);
/** A Typha port (light, full) or a kubeconfig path (direct-light, direct-full). */
const target = targetArg as string;
const port = Number(target);
const count = Number(countArg);
const first = Number(firstArg);
const objects = Number(objectsArg);
const totalUpdates = Number(updatesArg);

const counts = new Uint16Array(totalUpdates);
const maxLatency = new Float64Array(totalUpdates);
const histogram = new Uint32Array(HISTOGRAM_MS + 1);
let kvsFrames = 0;
/** Stamped updates received by this worker's agents, and the CPU/deliveries at the parent's `mark`. */
let deliveries = 0;
let markCpu = process.cpuUsage();
let markDeliveries = 0;
const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;
let inSync = 0;
let closed = 0;
/** Failed list or watch requests of direct agents (each retried after a backoff, as a Reflector does). */
let failures = 0;

const nowMs = (): number => performance.timeOrigin + performance.now();

function stamped(id: number, sentMs: number, at: number): void {
  if (!(id >= 0 && id < totalUpdates)) return;
  const latency = at - sentMs;
  deliveries++;
  counts[id] = (counts[id] as number) + 1;
  if (latency > (maxLatency[id] as number)) maxLatency[id] = latency;
  const bucket = Math.min(HISTOGRAM_MS, Math.max(0, Math.round(latency)));
  histogram[bucket] = (histogram[bucket] as number) + 1;
}

/**
 * Every `bench-stamp` in a (JSON-escaped) kvs payload, its digits read in place (no strings):
 * the stamp is `<id>_<ms>.<fraction>`, after the label's closing quote, colon and opening quote.
 */
const STAMP_BYTES = Buffer.from(STAMP_LABEL);
function scanStamps(payload: Buffer, at: number): void {
  const n = payload.length;
  for (let i = payload.indexOf(STAMP_BYTES); i >= 0; i = payload.indexOf(STAMP_BYTES, i + STAMP_BYTES.length)) {
    let j = i + STAMP_BYTES.length;
    let c = payload[j] as number;
    while (j < n && !(c >= 48 && c <= 57)) c = payload[++j] as number;
    let id = 0;
    for (; j < n && c >= 48 && c <= 57; c = payload[++j] as number) id = id * 10 + (c - 48);
    if (c !== 95) continue;
    c = payload[++j] as number;
    let sent = 0;
    for (; j < n && c >= 48 && c <= 57; c = payload[++j] as number) sent = sent * 10 + (c - 48);
    if (c === 46) {
      let scale = 0.1;
      for (c = payload[++j] as number; j < n && c >= 48 && c <= 57; c = payload[++j] as number, scale /= 10) sent += (c - 48) * scale;
    }
    stamped(id, sent, at);
  }
}

let stateTimer: NodeJS.Timeout | undefined;
function stateChanged(): void {
  stateTimer ??= setTimeout(() => {
    stateTimer = undefined;
    if (process.connected) process.send?.({ type: 'state', inSync, closed, failures });
  }, 100);
}

const KVS_PREFIX = Buffer.from('{"type":"kvs"');

/** One wire-level agent. */
function lightAgent(index: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    const frames = new FrameDecoder();
    let inflater: SyncInflater | undefined;
    let synced = false;
    const send = (msg: Parameters<typeof encodeMessage>[0]): void => void socket.write(encodeFrame(encodeMessage(msg)));
    const handle = (payload: Buffer, at: number): void => {
      if (payload.subarray(0, KVS_PREFIX.length).equals(KVS_PREFIX)) {
        kvsFrames++;
        if (synced) scanStamps(payload, at);
        return;
      }
      const m = JSON.parse(payload.toString()) as { type: string; compression?: string; timestamp?: number; status?: SyncStatus };
      if (m.type === 'decoder-restart') {
        inflater?.close();
        inflater = m.compression === 'none' ? undefined : new SyncInflater();
        send({ type: 'ack' });
      } else if (m.type === 'ping') {
        send({ type: 'pong', pingTimestamp: m.timestamp as number, pongTimestamp: 0 });
      } else if (m.type === 'sync-status' && m.status === 'in-sync' && !synced) {
        synced = true;
        inSync++;
        stateChanged();
      }
    };
    socket.once('connect', () => {
      resolve();
      send({ type: 'client-hello', hostname: `node-${index}`, info: 'typha bench', version: 'bench', syncerType: 'felix', supportsDecoderRestart: true, supportedCompression: ['deflate-raw'], clientConnId: 1 });
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed++;
      if (synced) inSync--;
      stateChanged();
      resolve();
    });
    // Frames in order, each inflated synchronously: a decoder-restart switches the inflater for
    // exactly the frames after it.
    socket.on('data', (chunk: Buffer) => {
      const { frames: got, error } = frames.push(chunk);
      if (error !== undefined) return void socket.destroy();
      try {
        for (const f of got) handle(inflater === undefined ? f : inflater.inflate(f), nowMs());
      } catch {
        socket.destroy();
      }
    });
  });
}

/** Every drain reader's counter, and whether it still acks when quiet. */
const drains: Array<{ counter: FrameCounter; socket: net.Socket; lastTick: number; ackedAt: number; handshaken: boolean }> = [];
let drainAcks: NodeJS.Timeout | undefined;

/** One connection that drains and frames what Typha sends, nothing more (see the header). */
function drainAgent(index: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    const d = { counter: new FrameCounter(), socket, lastTick: 0, ackedAt: 0, handshaken: false };
    drains.push(d);
    let head: Buffer = Buffer.alloc(0);
    const send = (msg: Parameters<typeof encodeMessage>[0]): void => void socket.write(encodeFrame(encodeMessage(msg)));
    socket.once('connect', () => {
      resolve();
      send({ type: 'client-hello', hostname: `node-${index}`, info: 'typha bench', version: 'bench', syncerType: 'felix', supportsDecoderRestart: true, supportedCompression: ['deflate-raw'], clientConnId: 1 });
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed++;
      if (d.handshaken) inSync--;
      stateChanged();
      resolve();
    });
    socket.on('data', (chunk: Buffer) => {
      if (d.handshaken) return d.counter.push(chunk);
      // The handshake: server-hello and decoder-restart, plain; the rest is counted.
      head = Buffer.concat([head, chunk]);
      while (!d.handshaken && head.length >= 4 && head.length >= 4 + head.readUInt32BE(0)) {
        const m = JSON.parse(head.subarray(4, 4 + head.readUInt32BE(0)).toString()) as { type: string };
        head = head.subarray(4 + head.readUInt32BE(0));
        if (m.type === 'decoder-restart') {
          send({ type: 'ack' });
          d.handshaken = true;
          inSync++;
          stateChanged();
          d.counter.push(head);
        }
      }
    });
  });
}

/** A real agent's consumer: keeps the keys, reads stamps. */
class CountingConsumer {
  readonly keys = new Set<string>();
  #inSync = false;
  onUpdates(updates: readonly Update[]): void {
    const at = nowMs();
    for (const u of updates) {
      if (u.op === 'delete') continue;
      const m = u.resource.metadata;
      this.keys.add(`${u.resource.kind}/${m.namespace ?? ''}/${m.name}`);
      const stamp = m.labels?.[STAMP_LABEL];
      if (stamp !== undefined) {
        const [id, sent] = stamp.split('_');
        stamped(Number(id), Number(sent), at);
      }
    }
    this.#check();
  }
  #status: SyncStatus = 'wait-for-datastore';
  onStatusUpdated(status: SyncStatus): void {
    this.#status = status;
    this.#check();
  }
  #check(): void {
    if (!this.#inSync && this.#status === 'in-sync' && this.keys.size >= objects) {
      this.#inSync = true;
      inSync++;
      stateChanged();
    }
  }
}

const WEPS = resourcePath({ group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' });
const UID = Buffer.from('"uid":"');
const NEWLINE = 10;

/** A GET on the API server with the kubeconfig's credentials; resolves with the response. */
async function apiGet(kc: KubeConfig, path: string, agent: https.Agent): Promise<http.IncomingMessage> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error(`${target}: no current cluster`);
  const opts: https.RequestOptions = { agent };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = https.get(new URL(path, cluster.server), { ...opts, agent }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
        return;
      }
      resolve(res);
    });
    req.on('error', reject);
    stop.signal.addEventListener('abort', () => req.destroy(), { once: true });
  });
}

/**
 * One agent watching the API server itself, at the light agents' level of work: it lists
 * WorkloadEndpoints as the Reflector does (resourceVersion 0, pages of 500, continue tokens)
 * counting items by their uid without parsing them, then watches from the list's
 * resourceVersion; the watch stream is framed by line and each line's stamps are read in place.
 */
async function directLightAgent(kc: KubeConfig): Promise<void> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  let backoffMs = 800;
  while (!stop.signal.aborted) {
    try {
      await listAndWatch(kc, agent);
      backoffMs = 800;
    } catch (err) {
      if (stop.signal.aborted) break;
      failures++;
      stateChanged();
      process.stderr.write(`direct agent: ${(err as Error).message}; retrying in ${Math.round(backoffMs)} ms\n`);
      await new Promise((r) => setTimeout(r, backoffMs * (1 + Math.random())));
      backoffMs = Math.min(30_000, backoffMs * 2);
    }
  }
  agent.destroy();
  closed++;
  stateChanged();
}

/** One list (all pages) and the watch after it, until the watch ends; throws on a failed request. */
async function listAndWatch(kc: KubeConfig, agent: https.Agent): Promise<void> {
  let items = 0;
  let rv = '';
  let cont: string | undefined;
  do {
    const query = cont === undefined ? 'resourceVersion=0&limit=500' : `limit=500&continue=${encodeURIComponent(cont)}`;
    const res = await apiGet(kc, `${WEPS}?${query}`, agent);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    for (let i = body.indexOf(UID); i >= 0; i = body.indexOf(UID, i + UID.length)) items++;
    // The list's own metadata (resourceVersion, continue) is the last key of an unstructured
    // list, after every item: only that tail is parsed.
    const meta = JSON.parse(`{${body.subarray(body.lastIndexOf('"metadata":{')).toString()}`) as { metadata: { resourceVersion: string; continue?: string } };
    rv = meta.metadata.resourceVersion;
    cont = meta.metadata.continue === undefined || meta.metadata.continue === '' ? undefined : meta.metadata.continue;
  } while (cont !== undefined);
  if (items < objects) throw new Error(`listed ${items} WorkloadEndpoints, expected ${objects}`);
  const watch = await apiGet(kc, `${WEPS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion=${rv}`, agent);
  inSync++;
  stateChanged();
  try {
    let pending: Buffer | undefined;
    for await (const c of watch) {
      const chunk = c as Buffer;
      const at = nowMs();
      const last = chunk.lastIndexOf(NEWLINE);
      if (last < 0) {
        pending = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
        continue;
      }
      const lines = pending === undefined ? chunk.subarray(0, last) : Buffer.concat([pending, chunk.subarray(0, last)]);
      scanStamps(lines, at);
      pending = last + 1 < chunk.length ? chunk.subarray(last + 1) : undefined;
    }
  } finally {
    inSync--;
    stateChanged();
  }
}

/** One agent that is a real informer (Reflector → DeltaFIFO → Indexer) on WorkloadEndpoints. */
async function directFullAgent(kc: KubeConfig): Promise<void> {
  const informer = new SharedIndexInformer<KubeObject>({
    listerWatcher: new KubeListerWatcher<KubeObject>({ kubeConfig: kc, resource: { group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' } }),
  });
  const onObject = (wep: KubeObject): void => {
    const stamp = wep.metadata?.labels?.[STAMP_LABEL];
    if (stamp === undefined) return;
    const [id, sent] = stamp.split('_');
    stamped(Number(id), Number(sent), nowMs());
  };
  informer.addEventHandler({ onAdd: onObject, onUpdate: (_old, wep) => onObject(wep) });
  const running = informer.run(stop.signal);
  if (await informer.waitForCacheSync(stop.signal)) {
    inSync++;
    stateChanged();
  }
  await running.catch(() => undefined);
}

const stop = new AbortController();
process.on('message', (m: { type: string }) => {
  if (m.type === 'mark') {
    markCpu = process.cpuUsage();
    markDeliveries = deliveries;
  } else if (m.type === 'report') {
    const sparse: Array<[number, number]> = [];
    histogram.forEach((n, i) => n > 0 && sparse.push([i, n]));
    const frames = drains.reduce((n, d) => n + d.counter.frames, 0);
    const bytes = drains.reduce((n, d) => n + d.counter.bytes, 0);
    const report: WorkerReport = { type: 'report', agents: role === 'drain' ? 0 : count, framesReceived: frames, bytesReceived: bytes, counts: Array.from(counts), maxLatencyMs: Array.from(maxLatency), histogram: sparse, kvsFrames, cpuMsSinceMark: cpuMs(process.cpuUsage(markCpu)), deliveriesSinceMark: deliveries - markDeliveries };
    process.send?.(report);
  } else if (m.type === 'stop-acks') {
    clearInterval(drainAcks);
  } else if (m.type === 'exit') {
    stop.abort();
    setTimeout(() => process.exit(0), 100);
  }
});

if (role === 'drain') {
  drainAcks = setInterval(() => {
    // Once per quiet period (nothing received for a tick, something since the last ack).
    for (const d of drains) {
      const bytes = d.counter.bytes;
      if (d.handshaken && bytes === d.lastTick && bytes !== d.ackedAt) {
        d.ackedAt = bytes;
        d.socket.write(encodeFrame(encodeMessage({ type: 'ack' })));
      }
      d.lastTick = bytes;
    }
  }, 500);
  for (let i = 0; i < count; i++) await drainAgent(first + i);
} else if (role === 'light') {
  for (let i = 0; i < count; i++) await lightAgent(first + i);
} else if (role === 'direct-light') {
  const kc = new KubeConfig();
  kc.loadFromFile(target);
  setMaxListeners(count * 4 + 10, stop.signal);
  for (let i = 0; i < count; i++) void directLightAgent(kc);
} else if (role === 'direct-full') {
  const kc = new KubeConfig();
  kc.loadFromFile(target);
  setMaxListeners(count * 4 + 10, stop.signal);
  for (let i = 0; i < count; i++) void directFullAgent(kc);
} else {
  setMaxListeners(count + 10, stop.signal);
  for (let i = 0; i < count; i++) {
    const client = new SyncClient({ addresses: () => [`127.0.0.1:${port}`], hostname: `node-${first + i}`, compression: ['deflate-raw'] }, new CountingConsumer());
    void client.run(stop.signal);
  }
}
process.send?.({ type: 'connected' });
