/**
 * `EndpointStore`: endpoints as small integer ids and their addresses as 32-bit words in typed
 * arrays (an IPv4 address is one word, an IPv6 address four), with an index from address to
 * the id that holds it — instead of a string-keyed Map from address text to an object per
 * endpoint (at 100k endpoints that Map, its key strings and the objects were ~90 bytes an
 * address more than this).
 *
 * Invariants:
 * - ids are 0 … capacity-1; a released id is handed out again before the store grows, so ids
 *   stay dense and callers can keep per-id data in plain arrays indexed by id;
 * - an address maps to at most one id: the last to claim it. Releasing an id (or unclaiming
 *   its addresses) drops only the addresses still mapped to it, so an address another id
 *   claimed since stays with that id;
 * - the tables grow (doubling) and never shrink; an address table stays at most half full, so
 *   a probe is short, and deletion shifts entries back (no tombstones to accumulate).
 *
 * Single-threaded; no strings are kept — callers parse and format (the runtime layer knows no
 * address syntax).
 */

/** An address: one word (IPv4, host order) or four (IPv6, most significant first). */
export type AddressWords = number | readonly [number, number, number, number];

const EMPTY = -1;

/** Open-addressing (linear probing) map from `width`-word keys to non-negative ints. */
class WordTable {
  readonly #width: number;
  #keys: Uint32Array;
  #values: Int32Array;
  #mask: number;
  #size = 0;

  constructor(width: number, capacity = 64) {
    this.#width = width;
    this.#keys = new Uint32Array(capacity * width);
    this.#values = new Int32Array(capacity).fill(EMPTY);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size;
  }

  get(key: ArrayLike<number>): number {
    for (let i = this.#slot(key); ; i = (i + 1) & this.#mask) {
      const v = this.#values[i] as number;
      if (v === EMPTY || this.#keyAt(i, key)) return v;
    }
  }

  set(key: ArrayLike<number>, value: number): void {
    let i = this.#slot(key);
    for (; this.#values[i] !== EMPTY; i = (i + 1) & this.#mask) {
      if (this.#keyAt(i, key)) {
        this.#values[i] = value;
        return;
      }
    }
    for (let w = 0; w < this.#width; w++) this.#keys[i * this.#width + w] = key[w] as number;
    this.#values[i] = value;
    if (++this.#size * 2 > this.#values.length) this.#grow();
  }

  /** Removes `key` if it maps to `value`; true if it did. */
  deleteIf(key: ArrayLike<number>, value: number): boolean {
    let i = this.#slot(key);
    for (; ; i = (i + 1) & this.#mask) {
      const v = this.#values[i] as number;
      if (v === EMPTY) return false;
      if (this.#keyAt(i, key)) break;
    }
    if (this.#values[i] !== value) return false;
    // Backward-shift deletion: move up every later entry of the run whose home slot is not
    // cyclically within (i, j], so no probe chain is broken.
    const width = this.#width;
    const mask = this.#mask;
    for (let j = (i + 1) & mask; this.#values[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.#slotAt(j);
      const between = i <= j ? i < home && home <= j : i < home || home <= j;
      if (between) continue;
      this.#keys.copyWithin(i * width, j * width, j * width + width);
      this.#values[i] = this.#values[j] as number;
      i = j;
    }
    this.#values[i] = EMPTY;
    this.#size--;
    return true;
  }

  #keyAt(i: number, key: ArrayLike<number>): boolean {
    const base = i * this.#width;
    for (let w = 0; w < this.#width; w++) if (this.#keys[base + w] !== key[w]) return false;
    return true;
  }

  #slot(key: ArrayLike<number>): number {
    let h = 0x811c9dc5;
    for (let w = 0; w < this.#width; w++) h = Math.imul(h ^ (key[w] as number), 0x9e3779b1);
    return (h ^ (h >>> 15)) & this.#mask;
  }

  #slotAt(i: number): number {
    return this.#slot(this.#keys.subarray(i * this.#width, i * this.#width + this.#width));
  }

  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    const width = this.#width;
    this.#keys = new Uint32Array(keys.length * 2);
    this.#values = new Int32Array(values.length * 2).fill(EMPTY);
    this.#mask = this.#values.length - 1;
    this.#size = 0;
    for (let i = 0; i < values.length; i++) {
      if (values[i] !== EMPTY) this.set(keys.subarray(i * width, i * width + width), values[i] as number);
    }
  }
}

const NONE = 0xffffffff;

export class EndpointStore {
  readonly #v4 = new WordTable(1);
  readonly #v6 = new WordTable(4);
  /** Per id: its first IPv4 address claimed, or NONE (0xffffffff, a broadcast address no endpoint has). */
  #firstV4 = new Uint32Array(16).fill(NONE);
  /** Per id: the addresses claimed besides `#firstV4` (IPv6, a second IPv4); rare. */
  readonly #more = new Map<number, AddressWords[]>();
  readonly #free: number[] = [];
  #next = 0;
  readonly #key1 = new Uint32Array(1);
  readonly #key4 = new Uint32Array(4);

  /** Ids in use. */
  get size(): number {
    return this.#next - this.#free.length;
  }

  /** Ids handed out so far (in use or free): per-id arrays need this length. */
  get capacity(): number {
    return this.#next;
  }

  /** A free id: a released one if any, else the next. */
  allocate(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const id = this.#next++;
    if (id >= this.#firstV4.length) {
      const grown = new Uint32Array(this.#firstV4.length * 2).fill(NONE);
      grown.set(this.#firstV4);
      this.#firstV4 = grown;
    }
    return id;
  }

  /** Unclaims `id`'s addresses and frees it for reuse. */
  release(id: number): void {
    this.unclaimAll(id);
    this.#free.push(id);
  }

  /** `address` now maps to `id` (taken from whoever had it). */
  claim(id: number, address: AddressWords): void {
    const key = this.#key(address);
    (typeof address === 'number' ? this.#v4 : this.#v6).set(key, id);
    if (typeof address === 'number' && this.#firstV4[id] === NONE && address !== NONE) {
      this.#firstV4[id] = address;
      return;
    }
    let more = this.#more.get(id);
    if (more === undefined) this.#more.set(id, (more = []));
    more.push(typeof address === 'number' ? address : [...address]);
  }

  /** Drops every address `id` claimed that still maps to it; `id` stays allocated. */
  unclaimAll(id: number): void {
    const first = this.#firstV4[id] as number;
    if (first !== NONE) {
      this.#v4.deleteIf(this.#key(first), id);
      this.#firstV4[id] = NONE;
    }
    const more = this.#more.get(id);
    if (more === undefined) return;
    this.#more.delete(id);
    for (const a of more) (typeof a === 'number' ? this.#v4 : this.#v6).deleteIf(this.#key(a), id);
  }

  /** The id `address` maps to, or -1. */
  idOf(address: AddressWords): number {
    return (typeof address === 'number' ? this.#v4 : this.#v6).get(this.#key(address));
  }

  /** Addresses mapped to some id. */
  get addressCount(): number {
    return this.#v4.size + this.#v6.size;
  }

  #key(address: AddressWords): Uint32Array {
    if (typeof address === 'number') {
      this.#key1[0] = address;
      return this.#key1;
    }
    for (let w = 0; w < 4; w++) this.#key4[w] = address[w] as number;
    return this.#key4;
  }
}
