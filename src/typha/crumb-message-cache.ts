/**
 * The encoded `kvs` messages of one breadcrumb's deltas, built once and shared by every client
 * that keeps up (typha.md §1.1 "serialise once", carried one step further: not only each
 * update but each message around them). A client that keeps up sends exactly these messages
 * for the crumb, so with N clients the JSON of a crumb's messages is built once instead of N
 * times; only the per-connection compression remains per client.
 *
 * Held in a WeakMap keyed by the crumb: the bytes live as long as the crumb does. Merged
 * batches for lagging clients (sync-connection.ts) span several crumbs and are encoded by the
 * connection itself.
 */
import type { Breadcrumb } from './breadcrumb.ts';
import { encodeMessage } from './messages.ts';

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
