/**
 * The Typha client's dedupe buffer and in-place resync (typha.md §5, Calico PR #10306): what
 * lets a node agent switch Typhas without tearing down its calc graph and dataplane.
 *
 * It remembers every live key it has passed on with a digest of the value it passed (SHA-1: the
 * values themselves were ~550 bytes an endpoint, 67 MB of an agent's heap at 100k endpoints;
 * two different values with one digest would need a SHA-1 collision, deliberately crafted, in
 * one key's values from the datastore). The digests are held as 20 bytes in one typed array,
 * a slot per key, not as a base64 string per key (~40 bytes and an object each: 4 MB at 100k
 * endpoints); freed slots are reused. Then:
 * - an update whose value equals what was passed on for its key is a no-op and is not passed on
 *   (the resourceVersion is ignored, as in `wouldBeNoOp`); a deletion of a key never passed on
 *   is dropped likewise — so a re-sent snapshot reaches the consumer only as its differences;
 * - new/updated is recomputed from the buffer, not taken from the server: a key the consumer
 *   has is `updated`, otherwise `new` (the calc graph's `Update` spells both `upsert`;
 *   the distinction is kept in `SerializedUpdate` terms for callers that need it);
 * - after a reconnect (`startSession`), every key the new server mentions is recorded; when the
 *   new server first reports `in-sync` — the end of its complete view, which a snapshot taken
 *   while it was still resyncing is not — a deletion is synthesised for every key passed on
 *   and not mentioned, BEFORE the `in-sync` is passed on.
 *
 * Status choice: within one connection statuses pass through as the server sends them (a Typha
 * whose own datastore re-lists does go back to resync-in-progress, and Felix sees that too).
 * Across a reconnect, once the consumer has seen `in-sync`, the new connection's statuses before
 * its own `in-sync` are withheld: the consumer keeps its complete (briefly stale) view and never
 * sees the switch as a regression. A status equal to the last passed on is not repeated.
 *
 * A KV whose value cannot be decoded is dropped with an error log naming the key (§2.6); its
 * key still counts as mentioned, so no deletion is synthesised for it and the consumer keeps
 * the last value it understood.
 */
import { createHash } from 'node:crypto';

import type { Logger } from '../runtime/logger.ts';
import { decodeUpdate, deleteForKey, type SerializedUpdate, type UpdateType } from './serialized-update.ts';
import type { SyncStatus, SyncerCallbacks, Update } from '../syncer/index.ts';

export interface ResyncBufferCounters {
  onSkipped(n: number): void;
  onDropped(key: string): void;
  onSynthesisedDeletes(n: number): void;
  onResyncDone(): void;
}

export class ResyncBuffer {
  readonly #callbacks: SyncerCallbacks;
  readonly #log: Logger;
  readonly #counters: ResyncBufferCounters | undefined;
  /** key → its slot in `#digests`: the digest of the value passed on (live keys only). */
  readonly #passedOn = new Map<string, number>();
  readonly #digests = new DigestSlots();
  /** Keys mentioned since the reconnect; undefined outside a resync. */
  #mentioned: Set<string> | undefined;
  #lastStatus: SyncStatus | undefined;
  #everInSync = false;

  constructor(callbacks: SyncerCallbacks, log: Logger, counters?: ResyncBufferCounters) {
    this.#callbacks = callbacks;
    this.#log = log;
    this.#counters = counters;
  }

  /** Live keys the consumer has. */
  get size(): number {
    return this.#passedOn.size;
  }

  /** Whether a resync is in progress (a reconnect, not yet confirmed by the new server's in-sync). */
  get resyncing(): boolean {
    return this.#mentioned !== undefined;
  }

  /** What the consumer would see `u` as: `new` or `updated` (by the buffer), or `deleted`. */
  updateTypeFor(u: SerializedUpdate): UpdateType {
    if (u.value === null) return 'deleted';
    return this.#passedOn.has(u.key) ? 'updated' : 'new';
  }

  /** A new connection starts; from here until its in-sync, this is a resync in place. */
  startSession(): void {
    this.#mentioned = this.#passedOn.size > 0 || this.#lastStatus !== undefined ? new Set() : undefined;
  }

  onKVs(kvs: readonly SerializedUpdate[]): void {
    const out: Update[] = [];
    let skipped = 0;
    for (const kv of kvs) {
      this.#mentioned?.add(kv.key);
      const previous = this.#passedOn.get(kv.key);
      const digest = kv.value === null ? undefined : valueDigest(kv.value);
      if (digest === undefined ? previous === undefined : previous !== undefined && this.#digests.equals(previous, digest)) {
        skipped++;
        continue;
      }
      let update: Update;
      try {
        update = decodeUpdate(kv);
      } catch (err) {
        this.#log.error({ key: kv.key, err: (err as Error).message }, 'dropping a Typha update whose value cannot be parsed');
        this.#counters?.onDropped(kv.key);
        continue;
      }
      if (digest === undefined) {
        if (previous !== undefined) this.#digests.free(previous);
        this.#passedOn.delete(kv.key);
      } else if (previous !== undefined) this.#digests.write(previous, digest);
      else this.#passedOn.set(kv.key, this.#digests.allocate(digest));
      out.push(update);
    }
    if (skipped > 0) this.#counters?.onSkipped(skipped);
    if (out.length > 0) this.#callbacks.onUpdates(out);
  }

  onStatus(status: SyncStatus): void {
    if (this.#mentioned !== undefined) {
      if (status !== 'in-sync') {
        if (!this.#everInSync) this.#pass(status);
        return;
      }
      this.#finishResync(this.#mentioned);
    }
    this.#pass(status);
  }

  #finishResync(mentioned: Set<string>): void {
    this.#mentioned = undefined;
    const deletes: Update[] = [];
    for (const [key, slot] of [...this.#passedOn]) {
      if (mentioned.has(key)) continue;
      this.#passedOn.delete(key);
      this.#digests.free(slot);
      const deletion = deleteForKey(key);
      if (deletion === undefined) {
        // Never happens for a key that decoded; kept so a bad key cannot wedge the buffer.
        this.#log.error({ key }, 'cannot synthesise a deletion for a malformed key');
        continue;
      }
      deletes.push(deletion);
    }
    if (deletes.length > 0) {
      this.#log.info({ deletes: deletes.length }, 'resync in place: deleting keys the new Typha did not re-send');
      this.#callbacks.onUpdates(deletes);
    }
    this.#counters?.onSynthesisedDeletes(deletes.length);
    this.#counters?.onResyncDone();
  }

  #pass(status: SyncStatus): void {
    if (status === 'in-sync') this.#everInSync = true;
    if (status === this.#lastStatus) return;
    this.#lastStatus = status;
    this.#callbacks.onStatusUpdated(status);
  }
}

/** createHash, not crypto.hash: that one needs Node ≥ 20.12, and package.json allows any 20. */
function valueDigest(value: string): Buffer {
  return createHash('sha1').update(value).digest();
}

const DIGEST_WORDS = 5;

/** SHA-1 digests in slots of one growable typed array; freed slots are reused first. */
class DigestSlots {
  #words = new Uint32Array(DIGEST_WORDS * 256);
  readonly #free: number[] = [];
  #next = 0;

  allocate(digest: Buffer): number {
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#next++;
      if ((slot + 1) * DIGEST_WORDS > this.#words.length) {
        const grown = new Uint32Array(this.#words.length * 2);
        grown.set(this.#words);
        this.#words = grown;
      }
    }
    this.write(slot, digest);
    return slot;
  }

  write(slot: number, digest: Buffer): void {
    for (let w = 0; w < DIGEST_WORDS; w++) this.#words[slot * DIGEST_WORDS + w] = digest.readUInt32BE(w * 4);
  }

  equals(slot: number, digest: Buffer): boolean {
    for (let w = 0; w < DIGEST_WORDS; w++) if (this.#words[slot * DIGEST_WORDS + w] !== digest.readUInt32BE(w * 4)) return false;
    return true;
  }

  free(slot: number): void {
    this.#free.push(slot);
  }
}
