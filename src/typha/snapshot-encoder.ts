/**
 * The encoded (and compressed) snapshot of a breadcrumb, generated once and shared by every
 * client that starts at that crumb (typha.md §2.5): `tessera_typha_snapshots_generated` counts
 * generations, `_reused` the clients that found one ready (or in progress).
 *
 * What a client receives as its snapshot is `frames`, written as they are:
 * - without compression: one frame per `kvs` message of ≤ `maxKVsPerMessage` updates;
 * - with compression C: the frames are ONE fresh C stream (the client restarted its decoder
 *   just before them): the `kvs` messages, then a final `decoder-restart` C inside that stream,
 *   so the client starts a fresh decoder for what follows — the connection's own C stream,
 *   which carries the status and the deltas. The trailing restart is what makes the
 *   compressed bytes independent of any connection's state, hence shareable.
 *
 * Entries are held in a WeakMap keyed by the crumb's snapshot map, not the crumb: the cache
 * publishes a crumb at least every second even when idle, and an idle crumb carries the same
 * (immutable) map object as its predecessor, so clients reconnecting over several quiet seconds
 * still share one encoding. An encoded snapshot lives as long as its map does.
 */
import type { Breadcrumb, SnapshotMap } from './breadcrumb.ts';
import { StreamCompressor, type CompressionAlgorithm } from './compression.ts';
import { encodeFrame } from './frame-codec.ts';
import { encodeMessage, type Message } from './messages.ts';
import type { SerializedUpdate } from './serialized-update.ts';
import type { SyncServerMetrics } from './sync-server-metrics.ts';

/**
 * Frames are concatenated into wire chunks of about this size: a 100,000-object snapshot is
 * ~1,000 frames, and writing it to 1,000 clients frame by frame would be a million socket
 * writes (each a syscall, a promise and, when the socket is full, a drain wait); in ~1 MiB
 * chunks it is ~10 per client. Frame boundaries mean nothing to the wire.
 */
export const SNAPSHOT_CHUNK_BYTES = 1 << 20;

export interface EncodedSnapshot {
  /** Ready-to-write bytes: the frames, concatenated into chunks of about SNAPSHOT_CHUNK_BYTES. */
  readonly frames: readonly Buffer[];
  /** Number of `kvs` messages. */
  readonly messages: number;
  readonly kvs: number;
  /** Bytes of the encoded messages before compression and framing. */
  readonly rawBytes: number;
  /** Bytes of `frames`. */
  readonly wireBytes: number;
}

export interface SnapshotEncoderOptions {
  readonly maxKVsPerMessage: number;
  readonly maxFrameBytes: number;
  readonly metrics: SyncServerMetrics;
}

export class SnapshotEncoder {
  readonly #opts: SnapshotEncoderOptions;
  readonly #cache = new WeakMap<SnapshotMap, Map<string, Promise<EncodedSnapshot>>>();

  constructor(opts: SnapshotEncoderOptions) {
    this.#opts = opts;
  }

  /** The encoded snapshot of `crumb` for `compression` (undefined: none); generated on first use of its map. */
  get(crumb: Breadcrumb, compression: CompressionAlgorithm | undefined): Promise<EncodedSnapshot> {
    let perCompression = this.#cache.get(crumb.snapshot);
    if (perCompression === undefined) {
      perCompression = new Map();
      this.#cache.set(crumb.snapshot, perCompression);
    }
    const name = compression ?? 'none';
    const existing = perCompression.get(name);
    if (existing !== undefined) {
      this.#opts.metrics.snapshotsReused.inc();
      return existing;
    }
    const generated = this.#generate(crumb.snapshot, compression);
    perCompression.set(name, generated);
    // A failed generation is not cached: the next client tries again.
    generated.catch(() => {
      if (perCompression.get(name) === generated) perCompression.delete(name);
    });
    return generated;
  }

  async #generate(snapshot: SnapshotMap, compression: CompressionAlgorithm | undefined): Promise<EncodedSnapshot> {
    const { maxKVsPerMessage, maxFrameBytes, metrics } = this.#opts;
    metrics.snapshotsGenerated.inc();
    const messages: Message[] = [];
    let batch: SerializedUpdate[] = [];
    let kvs = 0;
    for (const u of snapshot.values()) {
      batch.push(u);
      kvs++;
      if (batch.length === maxKVsPerMessage) {
        messages.push({ type: 'kvs', kvs: batch });
        batch = [];
      }
    }
    if (batch.length > 0) messages.push({ type: 'kvs', kvs: batch });
    const kvsMessages = messages.length;
    if (compression !== undefined) messages.push({ type: 'decoder-restart', compression });

    const frames: Buffer[] = [];
    let rawBytes = 0;
    const compressor = compression === undefined ? undefined : new StreamCompressor(compression);
    try {
      for (const m of messages) {
        const encoded = encodeMessage(m);
        if (m.type === 'kvs') rawBytes += encoded.length;
        frames.push(encodeFrame(compressor === undefined ? encoded : await compressor.compress(encoded), maxFrameBytes));
      }
    } finally {
      compressor?.close();
    }
    const wireBytes = frames.reduce((n, f) => n + f.length, 0);
    metrics.snapshotRawBytes.set(rawBytes);
    metrics.snapshotCompressedBytes.set({ compression: compression ?? 'none' }, wireBytes);
    return { frames: concatChunks(frames, SNAPSHOT_CHUNK_BYTES), messages: kvsMessages, kvs, rawBytes, wireBytes };
  }
}

/** `frames` concatenated, in order, into buffers of at least `size` bytes (but the last). */
function concatChunks(frames: readonly Buffer[], size: number): Buffer[] {
  const chunks: Buffer[] = [];
  let pending: Buffer[] = [];
  let bytes = 0;
  for (const f of frames) {
    pending.push(f);
    bytes += f.length;
    if (bytes >= size) {
      chunks.push(Buffer.concat(pending, bytes));
      pending = [];
      bytes = 0;
    }
  }
  if (pending.length > 0) chunks.push(Buffer.concat(pending, bytes));
  return chunks;
}
