/**
 * The contract between Typha's snapshot cache (snapshot-cache.ts) and its sync server
 * (sync-server.ts): a singly linked list of breadcrumbs (typha.md §1.2).
 *
 * Invariants:
 * - `seq` increases by exactly 1 from a crumb to its `next`;
 * - a crumb never changes once published: `snapshot` is the whole state as of this crumb (an
 *   immutable map: taking it cost O(1)), `deltas` the updates applied since the previous
 *   crumb, in order, with no-ops already dropped (≤ the cache's batch size);
 * - applying every crumb's `deltas` in order to an earlier crumb's `snapshot` yields a later
 *   crumb's `snapshot`;
 * - there are no per-client queues: every client holds a pointer to its current crumb and walks
 *   the list at its own pace; a crumb no client points at is garbage.
 */
import type { SerializedUpdate } from './serialized-update.ts';
import type { SyncStatus } from '../syncer/index.ts';

/** The read side of an immutable map (the snapshot). Iteration is in key order. */
export interface SnapshotMap {
  readonly size: number;
  get(key: string): SerializedUpdate | undefined;
  /** Every live entry (never a deletion), in key order. */
  values(): Iterable<SerializedUpdate>;
}

export interface Breadcrumb {
  readonly seq: number;
  /** When it was published, on the cache's clock (ms). */
  readonly timestamp: number;
  readonly snapshot: SnapshotMap;
  readonly deltas: readonly SerializedUpdate[];
  readonly syncStatus: SyncStatus;
  /** The following crumb if it has been published (no waiting). */
  readonly nextIfPublished: Breadcrumb | undefined;
  /**
   * The following crumb: at once if published, else when the cache publishes it. Every waiter
   * is woken by one broadcast per published crumb. Rejects with the signal's reason on abort.
   */
  next(signal?: AbortSignal): Promise<Breadcrumb>;
}

/** What the sync server reads: the newest crumb, from which a new client starts. */
export interface BreadcrumbSource {
  latest(): Breadcrumb;
}
