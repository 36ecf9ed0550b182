/**
 * A keyed object cache with named secondary indexes (client-go `cache.Indexer`, backed by
 * `threadSafeStore` + `storeIndex`).
 *
 * Invariants:
 * - every stored object is reachable by its key (`getByKey`) and, for every index function,
 *   by each value that function returns for it (`byIndex`);
 * - index entries are maintained incrementally on add/update/delete; an update whose index
 *   values did not change touches no index;
 * - `replace()` swaps the whole contents and rebuilds the indexes, so readers never observe a
 *   half-replaced cache (JavaScript is single-threaded; every method runs to completion).
 *
 * Objects are stored as given, not copied: callers must treat them as immutable.
 */
import { sameList } from '../runtime/same-list.ts';
import { SetMap } from '../runtime/set-map.ts';
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
import { metaNamespaceKey, type KeyFunc, type KubeObject } from './object.ts';
import type { Store } from './store.ts';

/** Returns the values under which an object is indexed (may be empty). */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** Index functions by index name. */
export type Indexers<T> = Record<string, IndexFunc<T>>;

/** The conventional namespace index name (client-go `NamespaceIndex`). */
export const NAMESPACE_INDEX = 'namespace';

/** Indexes an object by its namespace ("" for cluster-scoped objects). */
export function namespaceIndexFunc(obj: KubeObject): readonly string[] {
  return [obj.metadata?.namespace ?? ''];
}

export interface IndexerOptions<T> {
  /** @default metaNamespaceKey (`namespace/name` or `name`) */
  keyFunc?: KeyFunc<T>;
  /** Named index functions. @default {} */
  indexers?: Indexers<T>;
}

export class IndexError extends Error {
  override name = 'IndexError';
}

const NO_VALUES: readonly string[] = [];

export class Indexer<T extends KubeObject> implements Store<T> {
  private readonly keyFunc: KeyFunc<T>;
  private readonly indexers = new Map<string, IndexFunc<T>>();
  /** index name → indexed value → keys (a value with no keys is dropped, so a long-running process does not accumulate dead index values) */
  private readonly indices = new Map<string, SetMap<string, string>>();
  private items = new Map<string, T>();
  private lastResourceVersion = '';

  constructor(opts: IndexerOptions<T> = {}) {
    const { keyFunc = metaNamespaceKey, indexers = {} } = opts;
    this.keyFunc = keyFunc;
    this.addIndexers(indexers);
  }

  /**
   * Adds index functions. Allowed at any time; existing objects are indexed immediately.
   * Throws `IndexError` for a name that already exists.
   */
  addIndexers(indexers: Indexers<T>): void {
    for (const [name, fn] of Object.entries(indexers)) {
      if (this.indexers.has(name)) throw new IndexError(`indexer '${name}' already exists`);
      this.indexers.set(name, fn);
      const index = new SetMap<string, string>();
      this.indices.set(name, index);
      for (const [key, obj] of this.items) addToIndex(index, fn(obj), key);
    }
  }

  add(obj: T): void {
    this.put(this.keyFunc(obj), obj);
  }

  update(obj: T): void {
    this.put(this.keyFunc(obj), obj);
  }

  /** Deletes by the object's key; a tombstone is accepted too. Deleting an absent key is a no-op. */
  delete(obj: T | DeletedFinalStateUnknown<T>): void {
    this.deleteByKey(this.keyFunc(obj));
  }

  deleteByKey(key: string): void {
    const old = this.items.get(key);
    if (old === undefined) return;
    this.items.delete(key);
    for (const [name, fn] of this.indexers) removeFromIndex(this.indices.get(name)!, fn(old), key);
  }

  get(obj: T): T | undefined {
    return this.items.get(this.keyFunc(obj));
  }

  getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  listKeys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  /** The resourceVersion passed to the last `replace()` ("" before the first). */
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }

  replace(list: readonly T[], resourceVersion: string): void {
    const items = new Map<string, T>();
    for (const obj of list) items.set(this.keyFunc(obj), obj);
    this.items = items;
    this.lastResourceVersion = resourceVersion;
    for (const [name, fn] of this.indexers) {
      const index = new SetMap<string, string>();
      for (const [key, obj] of items) addToIndex(index, fn(obj), key);
      this.indices.set(name, index);
    }
  }

  /** Objects whose index function `indexName` returned `value`. */
  byIndex(indexName: string, value: string): T[] {
    const keys = this.index(indexName).get(value);
    if (keys === undefined) return [];
    const out: T[] = [];
    for (const key of keys) out.push(this.items.get(key)!);
    return out;
  }

  /** Keys of the objects whose index function `indexName` returned `value`. */
  indexKeys(indexName: string, value: string): string[] {
    const keys = this.index(indexName).get(value);
    return keys === undefined ? [] : [...keys];
  }

  /** Every value currently present in index `indexName`. */
  listIndexFuncValues(indexName: string): string[] {
    return [...this.index(indexName).keys()];
  }

  /** The names of the configured index functions. */
  indexerNames(): string[] {
    return [...this.indexers.keys()];
  }

  private index(indexName: string): SetMap<string, string> {
    const index = this.indices.get(indexName);
    if (index === undefined) throw new IndexError(`index '${indexName}' does not exist`);
    return index;
  }

  private put(key: string, obj: T): void {
    const old = this.items.get(key);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      const oldValues = old === undefined ? NO_VALUES : fn(old);
      const newValues = fn(obj);
      // The common update (labels unchanged) costs no Set writes.
      if (sameList(oldValues, newValues)) continue;
      removeFromIndex(index, oldValues, key);
      addToIndex(index, newValues, key);
    }
  }
}

function addToIndex(index: SetMap<string, string>, values: readonly string[], key: string): void {
  for (const value of values) index.add(value, key);
}

function removeFromIndex(index: SetMap<string, string>, values: readonly string[], key: string): void {
  for (const value of values) index.delete(value, key);
}
