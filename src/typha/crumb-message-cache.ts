/**
 * The encoded `kvs` messages of one breadcrumb's deltas, built once and shared by every client
 * that keeps up (typha.md §1.1 "serialise once", carried one step further: not only each
 * update but each message around them). A client that keeps up sends exactly these messages
 * for the crumb, so with N clients the JSON of a crumb's messages is built once instead of N
 * times. `SharedDeltaStream` (below) also compresses them once, for every client that keeps up.
 *
 * Held in a WeakMap keyed by the crumb: the bytes live as long as the crumb does. Merged
 * batches for lagging clients (sync-connection.ts) span several crumbs and are encoded by the
 * connection itself.
 */
import type { Clock } from '../runtime/clock.ts';
import type { Breadcrumb } from './breadcrumb.ts';
import { StreamCompressor, type CompressionAlgorithm } from './compression.ts';
import { encodeFrame } from './frame-codec.ts';
import { encodeMessage } from './messages.ts';
import type { SyncStatus } from '../syncer/index.ts';

export interface EncodedKVs {
  readonly bytes: Buffer;
  /** KVs in the message (for `_kvs_per_msg`). */
  readonly count: number;
}

export class CrumbMessageCache {
  readonly #maxKVsPerMessage: number;
  readonly #cache = new WeakMap<Breadcrumb, readonly EncodedKVs[]>();

  constructor(maxKVsPerMessage: number) {
    this.#maxKVsPerMessage = maxKVsPerMessage;
  }

  /** The crumb's deltas as `kvs` messages of at most `maxKVsPerMessage` (none for an empty crumb). */
  kvsMessages(crumb: Breadcrumb): readonly EncodedKVs[] {
    let messages = this.#cache.get(crumb);
    if (messages === undefined) {
      const built: EncodedKVs[] = [];
      for (let i = 0; i < crumb.deltas.length; i += this.#maxKVsPerMessage) {
        const kvs = crumb.deltas.slice(i, i + this.#maxKVsPerMessage);
        built.push({ bytes: encodeMessage({ type: 'kvs', kvs }), count: kvs.length });
      }
      messages = built;
      this.#cache.set(crumb, messages);
    }
    return messages;
  }
}

/**
 * A crumb's part of the shared compressed delta stream (see `SharedDeltaStream`): its messages
 * (kvs, then a sync-status if the crumb changed it, then a decoder-restart if the segment ends
 * here), compressed in the segment's stream and framed, as one buffer.
 */
export interface SharedCrumbFrames {
  /** Resolves once the segment's compressor has reached this crumb. */
  readonly bytes: Promise<Buffer>;
  /** The crumb is the first of its segment: a client may join here, from a fresh decoder. */
  readonly startsSegment: boolean;
  /** The bytes end with a decoder-restart: after them the client's decoder is fresh again. */
  readonly endsSegment: boolean;
  /** The crumb's kvs messages and their sizes (for `_kvs_per_msg`). */
  readonly kvsCounts: readonly number[];
}

/** A segment of the shared stream ends at the first crumb at least this much newer than its first. */
export const SEGMENT_MS = 1000;

/**
 * With at least `COALESCE_MIN_MEMBERS` connections on the shared stream, each writes on a
 * shared tick of `COALESCE_MS` (every crumb published by then in one write) instead of once per
 * crumb: at 1,000 clients and ~100 crumbs/s, per-crumb writes are 100,000 syscalls a second.
 * Adds at most `COALESCE_MS` to a delta's latency; small servers (and the tests) are unaffected.
 */
export const COALESCE_MS = 25;
export const COALESCE_MIN_MEMBERS = 100;

/**
 * The live delta stream compressed ONCE for every client that keeps up (typha.md §1.1 "serialise
 * once", applied to compression): without it each of N clients compresses every crumb's
 * messages in its own stream — N deflate calls per crumb, which at 1,000 clients and 1,000
 * updates/s is a gigabyte of deflate per second.
 *
 * The stream is cut into segments of ≥ `SEGMENT_MS` of crumbs (by crumb timestamp). Each
 * segment is a fresh compression stream that ends with a `decoder-restart` to the same
 * algorithm, so its bytes depend on nothing before it (as the shared snapshot's, see
 * snapshot-encoder.ts), and segments follow each other crumb after crumb. A client joins at a
 * segment's first crumb with a fresh decoder and from then on writes the shared bytes as they
 * are; its own compressor is used only between segments (see sync-connection.ts).
 *
 * Crumbs are encoded in order, each once, by the first client to reach it; results are held in
 * a WeakMap keyed by the crumb (they live as long as the crumb). The stream holds its newest
 * encoded crumb only weakly: a live older crumb links to it, so it can be collected only when no
 * client is at or before it, and then nobody needs the open segment continued — the next
 * request starts a new one.
 */
export class SharedDeltaStream {
  readonly #algorithm: CompressionAlgorithm;
  readonly #messages: CrumbMessageCache;
  readonly #maxFrameBytes: number;
  readonly #encoded = new WeakMap<Breadcrumb, SharedCrumbFrames>();
  #last: WeakRef<Breadcrumb> | undefined;
  #tick: Promise<void> | undefined;
  /** Connections on the shared stream (joined and not closed). */
  members = 0;
  #segment: { compressor: StreamCompressor; startedAt: number } | undefined;

  constructor(algorithm: CompressionAlgorithm, messages: CrumbMessageCache, maxFrameBytes: number) {
    this.#algorithm = algorithm;
    this.#messages = messages;
    this.#maxFrameBytes = maxFrameBytes;
  }

  /**
   * `crumb`'s shared frames, encoding every crumb from the stream's newest up to it; undefined
   * for a crumb before the stream's start (a client there stays on its own stream).
   */
  framesFor(crumb: Breadcrumb, previousStatus: SyncStatus): SharedCrumbFrames | undefined {
    const known = this.#encoded.get(crumb);
    if (known !== undefined) return known;
    const last = this.#last?.deref();
    if (last !== undefined && crumb.seq <= last.seq) return undefined;
    if (last === undefined) {
      this.#segment?.compressor.close();
      this.#segment = undefined;
      return this.#encode(crumb, previousStatus);
    }
    let status = last.syncStatus;
    for (let c = last.nextIfPublished; c !== undefined; c = c.nextIfPublished) {
      const encoded = this.#encode(c, status);
      if (c === crumb) return encoded;
      status = c.syncStatus;
    }
    return undefined;
  }

  /** Resolves at the next shared write tick (one timer for every member). */
  tick(clock: Clock): Promise<void> {
    return (this.#tick ??= new Promise((resolve) =>
      clock.setTimer(() => {
        this.#tick = undefined;
        resolve();
      }, COALESCE_MS),
    ));
  }

  #encode(crumb: Breadcrumb, previousStatus: SyncStatus): SharedCrumbFrames {
    const startsSegment = this.#segment === undefined;
    const segment = (this.#segment ??= { compressor: new StreamCompressor(this.#algorithm), startedAt: crumb.timestamp });
    const endsSegment = crumb.timestamp - segment.startedAt >= SEGMENT_MS;
    const kvs = this.#messages.kvsMessages(crumb);
    const payloads = kvs.map((m) => m.bytes);
    if (crumb.syncStatus !== previousStatus) payloads.push(encodeMessage({ type: 'sync-status', status: crumb.syncStatus }));
    if (endsSegment) {
      payloads.push(encodeMessage({ type: 'decoder-restart', compression: this.#algorithm }));
      this.#segment = undefined;
    }
    // Queued on the segment's compressor now, so crumbs are compressed in list order.
    const bytes = Promise.all(payloads.map((p) => segment.compressor.compress(p))).then((chunks) => Buffer.concat(chunks.map((c) => encodeFrame(c, this.#maxFrameBytes))));
    if (endsSegment) void bytes.finally(() => segment.compressor.close()).catch(() => undefined);
    bytes.catch(() => undefined);
    const result: SharedCrumbFrames = { bytes, startsSegment, endsSegment, kvsCounts: kvs.map((m) => m.count) };
    this.#encoded.set(crumb, result);
    this.#last = new WeakRef(crumb);
    return result;
  }
}
