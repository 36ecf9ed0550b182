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

/** A connection on the shared stream writes at most this many published crumbs at once. */
export const MAX_CRUMBS_PER_WRITE = 256;

/** What one tick writes for every parked connection at the same crumb. */
export interface TickWrite {
  /** The first and last crumb written (list order, inclusive). */
  readonly from: Breadcrumb;
  readonly to: Breadcrumb;
  /** Their shared frames, concatenated once for every connection at this position. */
  readonly bytes: Buffer;
  /** The bytes end with a decoder-restart (the last crumb ends its segment). */
  readonly endsSegment: boolean;
  /** The written crumbs' kvs messages and their sizes (for `_kvs_per_msg`). */
  readonly kvsCounts: readonly number[];
}

/**
 * A connection parked on the shared stream's tick: caught up, inside a segment, with nothing of
 * its own queued. The tick calls one of these synchronously (no promise per connection).
 */
export interface TickMember {
  /**
   * Write `w` now. True: the socket accepted it and the member stays parked, at `w.to`. False:
   * it left the tick (backpressure, a segment end, too far behind, closed) and resumes its own
   * loop, which catches up from the crumb list as any lagging connection does.
   */
  tickWrite(w: TickWrite): boolean;
  /** The tick cannot serve the member (its crumbs' bytes failed): it resumes its own loop at its position. */
  tickResume(): void;
}

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
  readonly #coalesceMinMembers: number;
  #segment: { compressor: StreamCompressor; startedAt: number } | undefined;
  /** Parked members and the crumb each has written last (insertion order: the write order of a tick). */
  readonly #parked = new Map<TickMember, Breadcrumb>();
  #tickArmed = false;

  constructor(algorithm: CompressionAlgorithm, messages: CrumbMessageCache, maxFrameBytes: number, coalesceMinMembers = COALESCE_MIN_MEMBERS) {
    this.#algorithm = algorithm;
    this.#messages = messages;
    this.#maxFrameBytes = maxFrameBytes;
    this.#coalesceMinMembers = coalesceMinMembers;
  }

  /** Enough members that each writes on the shared tick rather than per crumb. */
  get coalescing(): boolean {
    return this.members >= this.#coalesceMinMembers;
  }

  /** Members parked on the tick now. */
  get parked(): number {
    return this.#parked.size;
  }

  /**
   * Parks `member`, which has written every crumb up to `at` (inside a segment, nothing of its
   * own queued): from now on the tick writes for it, until it leaves (`TickMember`) or `unpark`.
   */
  park(member: TickMember, at: Breadcrumb, clock: Clock): void {
    this.#parked.set(member, at);
    this.#armTick(clock);
  }

  /** Removes a parked member (it closed); nothing more is written or called for it. */
  unpark(member: TickMember): void {
    this.#parked.delete(member);
  }

  /**
   * One tick for the parked members, armed while any is parked: at the shared tick after a
   * crumb was published beyond some member's position (one timer, and one wait for the next
   * crumb when all are at the newest — per stream, not per member).
   */
  #armTick(clock: Clock): void {
    if (this.#tickArmed || this.#parked.size === 0) return;
    this.#tickArmed = true;
    let waitFrom: Breadcrumb | undefined;
    for (const at of this.#parked.values()) {
      if (at.nextIfPublished !== undefined) {
        waitFrom = undefined;
        break;
      }
      waitFrom ??= at;
    }
    const published = waitFrom === undefined ? Promise.resolve() : waitFrom.next().then(() => undefined);
    void published
      .then(() => this.tick(clock))
      .then(() => this.#runTick())
      .catch(() => undefined)
      .finally(() => {
        this.#tickArmed = false;
        this.#armTick(clock);
      });
  }

  /**
   * Builds each distinct position's bytes once (every crumb published after it, up to
   * `MAX_CRUMBS_PER_WRITE`, concatenated into one buffer), waits for their compression once,
   * then writes in one synchronous loop over the parked members: one `socket.write` of a
   * shared buffer per member per tick. A member parked during the wait at a position not built
   * this tick waits for the next.
   */
  async #runTick(): Promise<void> {
    const plans = new Map<Breadcrumb, { crumbs: Breadcrumb[]; frames: SharedCrumbFrames[] }>();
    for (const at of this.#parked.values()) {
      if (plans.has(at) || at.nextIfPublished === undefined) continue;
      const crumbs: Breadcrumb[] = [];
      const frames: SharedCrumbFrames[] = [];
      let status = at.syncStatus;
      for (let c: Breadcrumb | undefined = at.nextIfPublished; c !== undefined && crumbs.length < MAX_CRUMBS_PER_WRITE; c = c.nextIfPublished) {
        const f = this.framesFor(c, status);
        if (f === undefined) break;
        crumbs.push(c);
        frames.push(f);
        status = c.syncStatus;
      }
      plans.set(at, { crumbs, frames });
    }
    if (plans.size === 0) return;
    const writes = new Map<Breadcrumb, TickWrite | undefined>();
    try {
      const all = await Promise.all([...plans.values()].map((p) => Promise.all(p.frames.map((f) => f.bytes))));
      let i = 0;
      for (const [at, p] of plans) {
        const chunks = all[i++] as Buffer[];
        if (p.crumbs.length === 0) {
          writes.set(at, undefined);
          continue;
        }
        const from = p.crumbs[0] as Breadcrumb;
        writes.set(at, {
          from,
          to: p.crumbs.at(-1) as Breadcrumb,
          bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks),
          endsSegment: (p.frames.at(-1) as SharedCrumbFrames).endsSegment,
          kvsCounts: p.frames.flatMap((f) => f.kvsCounts),
        });
      }
    } catch {
      // A crumb's bytes failed: every member waiting on them resumes its own loop, which meets
      // the failure and closes.
      for (const [member, at] of this.#parked) {
        if (!plans.has(at)) continue;
        this.#parked.delete(member);
        member.tickResume();
      }
      return;
    }
    for (const [member, at] of this.#parked) {
      if (!writes.has(at)) continue;
      const w = writes.get(at);
      if (w === undefined) {
        // No bytes for the crumbs after it (before the stream's start): its own loop serves it.
        this.#parked.delete(member);
        member.tickResume();
      } else if (member.tickWrite(w)) {
        this.#parked.set(member, w.to);
      } else {
        this.#parked.delete(member);
      }
    }
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
