/**
 * The contract every feed speaks (libcalico's `backend/api`: `Update`, `SyncStatus`,
 * `SyncerCallbacks`): the informer syncer, Typha's snapshot cache and client, and the files
 * the simulator reads all deliver `Update`s and a `SyncStatus` to `SyncerCallbacks`; the calc
 * graph and Typha consume them. Neither side imports the other — both import this.
 *
 * Guarantees a producer keeps:
 * - an upsert carries the whole object with its `apiVersion` and `kind` (any group/version:
 *   `projectcalico.org/v3`, or a Kubernetes kind the consumer converts);
 * - a delete names the object by (apiVersion, kind, namespace, name); `apiVersion` absent
 *   means `projectcalico.org/v3` (what every feed sent before other groups were carried, and
 *   what an older Typha still sends);
 * - the status goes `wait-for-datastore` → `resync-in-progress` → `in-sync`, and no consumer
 *   acts on a partial view before `in-sync`.
 */
import type { StagedKind, V3Kind, V3Resource } from '../api/index.ts';

/** A resource as a feed delivers it. */
export type Update =
  | { readonly op: 'upsert'; readonly resource: V3Resource }
  | {
      readonly op: 'delete';
      readonly kind: V3Kind | StagedKind;
      readonly name: string;
      readonly namespace?: string;
      /** @default 'projectcalico.org/v3' */
      readonly apiVersion?: string;
    };

/** Felix's `api.SyncStatus`. */
export type SyncStatus = 'wait-for-datastore' | 'resync-in-progress' | 'in-sync';

/** Where a feed delivers: the calc graph, or Typha's snapshot cache. */
export interface SyncerCallbacks {
  onUpdates(updates: readonly Update[]): void;
  onStatusUpdated(status: SyncStatus): void;
}
