/**
 * One datastore update as Typha stores and sends it (typha.md §2.4): serialised ONCE by the
 * snapshot cache and shared, byte for byte, by every client's snapshot and delta messages.
 *
 * Invariants:
 * - `key` is `<kind>/<namespace>/<name>` (namespace empty for cluster-scoped kinds); it is the
 *   snapshot's map key, so a key names one object of one kind;
 * - `value` is the UTF-8 JSON of the resource (v3, or an EndpointSlice) with `metadata.resourceVersion` removed (it is
 *   carried in `resourceVersion` instead, §1.2), so two updates that differ only in their
 *   resourceVersion have equal bytes and the second is a no-op; `null` means deleted;
 * - `decodeUpdate(serializeUpdate(u))` equals `u` with the resourceVersion restored; a
 *   deletion of a kind outside projectcalico.org/v3 (an EndpointSlice) gets its `apiVersion`
 *   back from the kind table (the key carries the kind only, as it always has: an older agent
 *   still reads a newer Typha's keys, and Typha's kinds are unique by name).
 */
import { apiVersionOf, kindsWatchedBy } from '../api/kinds.ts';
import type { V3Kind } from '../api/types.ts';
import { DEFAULT_UPDATE_API_VERSION, type AnyUpdate, type SyncedObject, type Update } from '../syncer/update.ts';

/** kind → apiVersion of the kinds Typha carries that are not projectcalico.org/v3. */
const OTHER_GROUP_KINDS: ReadonlyMap<string, string> = new Map(
  kindsWatchedBy('typha')
    .map((r) => [r.kind, apiVersionOf(r)] as const)
    .filter(([, v]) => v !== DEFAULT_UPDATE_API_VERSION),
);

/** The sync status as the calc graph knows it (Calico's WaitForDatastore / ResyncInProgress / InSync). */

export type UpdateType = 'new' | 'updated' | 'deleted';

export interface SerializedUpdate {
  readonly key: string;
  /** JSON of the resource without `metadata.resourceVersion`; `null` for a deletion. */
  readonly value: string | null;
  /** The object's `metadata.resourceVersion` ('' for deletions and objects without one). */
  readonly resourceVersion: string;
  readonly updateType: UpdateType;
}

/** `<kind>/<namespace>/<name>`: the snapshot key of an object. */
export function updateKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

/** Splits a key made by {@link updateKey}; `undefined` for a malformed one. */
export function parseUpdateKey(key: string): { kind: V3Kind; namespace?: string; name: string } | undefined {
  const first = key.indexOf('/');
  const second = key.indexOf('/', first + 1);
  if (first <= 0 || second < 0 || second === key.length - 1) return undefined;
  const namespace = key.slice(first + 1, second);
  return { kind: key.slice(0, first) as V3Kind, name: key.slice(second + 1), ...(namespace === '' ? {} : { namespace }) };
}

/**
 * The delete of the object `key` names, with its `apiVersion` when the kind is not
 * projectcalico.org/v3 (an EndpointSlice's delete must say discovery.k8s.io/v1, or the calc
 * graph reads it as a v3 kind it does not know and keeps the slice's members); `undefined`
 * for a malformed key. Both a decoded deletion and a resync's synthesised one are made here.
 */
export function deleteForKey(key: string): Update | undefined {
  const k = parseUpdateKey(key);
  if (k === undefined) return undefined;
  const apiVersion = OTHER_GROUP_KINDS.get(k.kind);
  // `Update` is the feed's declared type; an EndpointSlice rides in it as every feed carries it (syncer/update.ts).
  return (apiVersion === undefined ? { op: 'delete', ...k } : { op: 'delete', apiVersion, ...k }) as Update;
}

/**
 * Serialises `update`. `previous` is the key's current entry in the snapshot (if any): an
 * upsert of a key that exists is `updated`, otherwise `new`.
 */
export function serializeUpdate(update: Update | AnyUpdate, previous?: SerializedUpdate): SerializedUpdate {
  if (update.op === 'delete') {
    return { key: updateKey(update.kind, update.namespace, update.name), value: null, resourceVersion: '', updateType: 'deleted' };
  }
  const r = update.resource;
  const { resourceVersion, ...metadata } = r.metadata;
  const key = updateKey(r.kind, metadata.namespace, metadata.name);
  const exists = previous !== undefined && previous.value !== null;
  return { key, value: JSON.stringify({ ...r, metadata }), resourceVersion: resourceVersion ?? '', updateType: exists ? 'updated' : 'new' };
}

/** The inverse of {@link serializeUpdate}; throws a `SyntaxError`/`TypeError` for a value it cannot parse. */
export function decodeUpdate(s: SerializedUpdate): Update {
  if (s.value === null) {
    const deletion = deleteForKey(s.key);
    if (deletion === undefined) throw new TypeError(`malformed Typha key ${JSON.stringify(s.key)}`);
    return deletion;
  }
  const resource = JSON.parse(s.value) as SyncedObject;
  if (typeof resource !== 'object' || resource === null || typeof resource.metadata !== 'object' || resource.metadata === null) {
    throw new TypeError(`Typha value for ${s.key} is not a resource with metadata`);
  }
  const withVersion = s.resourceVersion === '' ? resource : { ...resource, metadata: { ...resource.metadata, resourceVersion: s.resourceVersion } };
  return { op: 'upsert', resource: withVersion } as Update;
}

/**
 * Whether sending `next` after `previous` for the same key changes nothing (typha.md §1.2,
 * `WouldBeNoOp`): equal values, ignoring the resourceVersion, with `new` and `updated` alike.
 */
export function wouldBeNoOp(previous: SerializedUpdate | undefined, next: SerializedUpdate): boolean {
  if (previous === undefined) return next.value === null;
  return previous.value === next.value;
}
