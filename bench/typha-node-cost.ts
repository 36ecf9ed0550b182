/**
 * What each node pays to take Typha's stream in, measured apart from the fan-out (the fan-out's
 * 1,000 readers do not inflate: on a real cluster that CPU is each node's, not Typha's, and
 * 1,000 of them on this 2-core machine would measure the readers, not Typha).
 *
 * Per snapshot: Typha's own encoding of the crumb's snapshot (SnapshotEncoder, deflate-raw, the
 * bytes a connection receives) is inflated frame by frame on one stream (bench/typha-sync-
 * inflate.ts: the zlib work without a threadpool hop per frame), then decoded
 * (`decodeMessage`), then each KV turned into an Update (`decodeUpdate`, what the client's
 * resync buffer does with each). Per update: `updates` are sent as the fan-out sends them, in
 * kvs messages of `perMessage` on one deflate-raw stream (as the shared delta stream carries
 * them), and taken in the same three steps. Each figure is the best of `runs` CPU times
 * (process.cpuUsage: other processes on the machine do not inflate it). What the agent does
 * after (the calc graph) is not Typha's stream and not here.
 */
import { newRegistry } from '../src/runtime/metrics.ts';
import type { Breadcrumb } from '../src/typha/breadcrumb.ts';
import { StreamCompressor } from '../src/typha/compression.ts';
import { DEFAULT_MAX_FRAME_BYTES, encodeFrame, FrameDecoder } from '../src/typha/frame-codec.ts';
import { decodeMessage, encodeMessage, MAX_KVS_PER_MESSAGE, type Message } from '../src/typha/messages.ts';
import { decodeUpdate, type SerializedUpdate } from '../src/typha/serialized-update.ts';
import { SnapshotEncoder } from '../src/typha/snapshot-encoder.ts';
import { SyncServerMetrics } from '../src/typha/sync-server-metrics.ts';
import { SyncInflater } from './typha-sync-inflate.ts';

export interface NodeCost {
  snapshotKVs: number;
  snapshotWireMiB: number;
  snapshotInflateMs: number;
  snapshotDecodeMs: number;
  snapshotToUpdatesMs: number;
  updateWireBytes: number;
  updateInflateUs: number;
  updateDecodeUs: number;
  updateToUpdatesUs: number;
}

function cpuMs(fn: () => void, runs: number): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    fn();
    const d = process.cpuUsage(c);
    best = Math.min(best, (d.user + d.system) / 1000);
  }
  return best;
}

/** The three steps over compressed frame payloads of ONE stream: [inflate, decode, to-updates] CPU ms. */
function take(payloads: readonly Buffer[], runs: number): [number, number, number] {
  const inflate = cpuMs(() => {
    const z = new SyncInflater();
    for (const p of payloads) z.inflate(p);
    z.close();
  }, runs);
  const z = new SyncInflater();
  const plain = payloads.map((p) => Buffer.from(z.inflate(p)));
  z.close();
  let messages: Message[] = [];
  const decode = cpuMs(() => void (messages = plain.map((p) => decodeMessage(p, { maxKVs: MAX_KVS_PER_MESSAGE }))), runs);
  const toUpdates = cpuMs(() => {
    for (const m of messages) if (m.type === 'kvs') for (const kv of m.kvs) decodeUpdate(kv);
  }, runs);
  return [inflate, decode, toUpdates];
}

/** Payloads of the frames in `chunks` (concatenated frames). */
function payloadsOf(chunks: readonly Buffer[]): Buffer[] {
  const d = new FrameDecoder({ maxFrameBytes: DEFAULT_MAX_FRAME_BYTES });
  return chunks.flatMap((c) => d.push(c).frames);
}

export async function measureNodeCost(crumb: Breadcrumb, updates: readonly SerializedUpdate[], perMessage: number, runs = 3): Promise<NodeCost> {
  const encoder = new SnapshotEncoder({ maxKVsPerMessage: MAX_KVS_PER_MESSAGE, maxFrameBytes: DEFAULT_MAX_FRAME_BYTES, metrics: new SyncServerMetrics(newRegistry()) });
  const snapshot = await encoder.get(crumb, 'deflate-raw');
  const [sInflate, sDecode, sUpdates] = take(payloadsOf(snapshot.frames), runs);

  const compressor = new StreamCompressor('deflate-raw');
  const frames: Buffer[] = [];
  for (let i = 0; i < updates.length; i += perMessage) frames.push(encodeFrame(await compressor.compress(encodeMessage({ type: 'kvs', kvs: updates.slice(i, i + perMessage) }))));
  compressor.close();
  const wire = frames.reduce((n, f) => n + f.length, 0);
  const [uInflate, uDecode, uUpdates] = take(payloadsOf(frames), runs);
  const perUpdateUs = (ms: number): number => Number(((ms * 1000) / updates.length).toFixed(2));
  return {
    snapshotKVs: snapshot.kvs,
    snapshotWireMiB: Number((snapshot.wireBytes / 1048576).toFixed(1)),
    snapshotInflateMs: Math.round(sInflate),
    snapshotDecodeMs: Math.round(sDecode),
    snapshotToUpdatesMs: Math.round(sUpdates),
    updateWireBytes: Math.round(wire / updates.length),
    updateInflateUs: perUpdateUs(uInflate),
    updateDecodeUs: perUpdateUs(uDecode),
    updateToUpdatesUs: perUpdateUs(uUpdates),
  };
}
