/**
 * The cache interfaces of the informer stack (client-go `Store`, `KeyListerGetter`).
 */

/** What DeltaFIFO needs from the informer's cache to detect deletions and to resync. */
export interface KeyListerGetter<T> {
  listKeys(): string[];
  getByKey(key: string): T | undefined;
}

/** A keyed object cache. Implementations must be consistent after every call returns. */
export interface Store<T> extends KeyListerGetter<T> {
  add(obj: T): void;
  update(obj: T): void;
  delete(obj: T): void;
  list(): T[];
  get(obj: T): T | undefined;
  /** Replaces the whole contents atomically; `resourceVersion` is the list's RV. */
  replace(list: readonly T[], resourceVersion: string): void;
}
