/**
 * `SetMap<K, V>`: a map from a key to the set of values filed under it — the reverse index
 * every incremental index keeps (tier → its policies, label value → the items that carry it,
 * index value → object keys).
 *
 * Invariants:
 * - a key is present exactly while at least one value is filed under it: `delete` drops the
 *   key with its last value, so a long-running process does not accumulate dead keys and
 *   `size` counts the keys that hold something;
 * - `get` returns the live set, or `undefined` for a key with no values (never an empty set):
 *   read it, do not keep it across a change to the same key (copy it first if the loop body
 *   may add or delete under that key);
 * - iteration follows insertion order of keys, and of values within a key (`Map`/`Set` order).
 *
 * Adding a value already filed, or deleting one that is not, changes nothing.
 */
export class SetMap<K, V> implements Iterable<[K, ReadonlySet<V>]> {
  readonly #sets = new Map<K, Set<V>>();

  /** Files `value` under `key`. */
  add(key: K, value: V): void {
    let set = this.#sets.get(key);
    // Not `new Set([value])`: that goes through the iterator protocol on a hot path.
    if (set === undefined) this.#sets.set(key, (set = new Set()));
    set.add(value);
  }

  /** Removes `value` from under `key`, and `key` with its last value. True if it was there. */
  delete(key: K, value: V): boolean {
    const set = this.#sets.get(key);
    if (set === undefined || !set.delete(value)) return false;
    if (set.size === 0) this.#sets.delete(key);
    return true;
  }

  /** The values filed under `key`; `undefined` when there are none. */
  get(key: K): ReadonlySet<V> | undefined {
    return this.#sets.get(key);
  }

  /** Whether any value is filed under `key`. */
  has(key: K): boolean {
    return this.#sets.has(key);
  }

  /** How many keys hold at least one value. */
  get size(): number {
    return this.#sets.size;
  }

  keys(): MapIterator<K> {
    return this.#sets.keys();
  }

  /** The value sets, one per key. */
  values(): MapIterator<ReadonlySet<V>> {
    return this.#sets.values();
  }

  [Symbol.iterator](): MapIterator<[K, ReadonlySet<V>]> {
    return this.#sets.entries();
  }
}
