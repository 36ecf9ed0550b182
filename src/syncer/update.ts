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

/** `apiVersion` of a delete that carries none (see the guarantees above). */
export const DEFAULT_UPDATE_API_VERSION = 'projectcalico.org/v3';

/** Any object a feed can carry: a Kubernetes object of any group/version, typed. */
export interface SyncedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly resourceVersion?: string };
}

/**
 * A resource as a feed delivers it. The defaults are what every consumer reads today
 * (projectcalico.org/v3, the staged kinds included); a feed of other groups — EndpointSlices,
 * policy.networking.k8s.io — delivers `AnyUpdate`, and its consumer tells kinds apart by
 * `updateApiVersion` and `kind`.
 */
export type Update<R extends SyncedObject = V3Resource, K extends string = V3Kind | StagedKind> =
  | { readonly op: 'upsert'; readonly resource: R }
  | {
      readonly op: 'delete';
      readonly kind: K;
      readonly name: string;
      readonly namespace?: string;
      /** @default DEFAULT_UPDATE_API_VERSION */
      readonly apiVersion?: string;
    };

/** An update of any group, version and kind. */
export type AnyUpdate = Update<SyncedObject, string>;

/** The group/version an update is about: the resource's for an upsert, the delete's (defaulted) for a delete. */
export function updateApiVersion(update: AnyUpdate): string {
  return update.op === 'upsert' ? update.resource.apiVersion : (update.apiVersion ?? DEFAULT_UPDATE_API_VERSION);
}

/** Felix's `api.SyncStatus`. */
export type SyncStatus = 'wait-for-datastore' | 'resync-in-progress' | 'in-sync';

/** Where a feed delivers: the calc graph, or Typha's snapshot cache (both read `Update`, v3). */
export interface SyncerCallbacks<U extends AnyUpdate = Update> {
  onUpdates(updates: readonly U[]): void;
  onStatusUpdated(status: SyncStatus): void;
}
