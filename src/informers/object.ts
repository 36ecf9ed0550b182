/**
 * The minimal shape informers need from a Kubernetes object, and the key functions that
 * name objects in stores and queues.
 *
 * Informers are generic over `T extends KubeObject`; they read only `metadata`, so the same
 * stack caches Calico CRDs, core objects and file-loaded YAML alike.
 */
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: unknown[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** Computes the store key of an object (or of a tombstone, which carries its key). */
export type KeyFunc<T> = (obj: T | DeletedFinalStateUnknown<T>) => string;

/** Thrown when an object cannot be keyed: it names what was missing. */
export class KeyError extends Error {
  constructor(
    message: string,
    readonly object: unknown,
  ) {
    super(message);
    this.name = 'KeyError';
  }
}

/**
 * client-go `MetaNamespaceKeyFunc` combined with `DeletionHandlingMetaNamespaceKeyFunc`:
 * `namespace/name` for namespaced objects, `name` for cluster-scoped ones, and a
 * tombstone's stored key for `DeletedFinalStateUnknown`.
 */
export function metaNamespaceKey<T extends KubeObject>(obj: T | DeletedFinalStateUnknown<T>): string {
  if (obj instanceof DeletedFinalStateUnknown) return obj.key;
  const name = obj.metadata?.name;
  if (typeof name !== 'string' || name === '') {
    throw new KeyError(`object has no metadata.name (kind ${obj.kind ?? 'unknown'})`, obj);
  }
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** Splits a `namespace/name` or `name` key. */
export function splitMetaNamespaceKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  if (slash < 0) return { name: key };
  if (key.indexOf('/', slash + 1) >= 0) throw new KeyError(`unexpected key format: '${key}'`, key);
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The resourceVersion of an object, or undefined. */
export function resourceVersionOf(obj: KubeObject): string | undefined {
  return obj.metadata?.resourceVersion;
}
