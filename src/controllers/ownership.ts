/**
 * How the controllers mark what they write. Every object they create carries the
 * `app.kubernetes.io/managed-by: tessera-controllers` label, is written with server-side
 * apply under the `tessera-controllers` field manager, and — where Kubernetes allows it
 * (owner in the same namespace, or a cluster-scoped owner) — an ownerReference to its
 * source, so a cluster with a garbage collector also cleans up after a lost delete.
 */
export const FIELD_MANAGER = 'tessera-controllers';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'tessera-controllers';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

/** A controller ownerReference, or none when the source has no uid (offline input). */
export function ownerReferenceTo(source: {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; uid?: string };
}): OwnerReference[] {
  const uid = source.metadata?.uid;
  const name = source.metadata?.name;
  if (uid === undefined || uid === '' || name === undefined) return [];
  return [{ apiVersion: source.apiVersion, kind: source.kind, name, uid, controller: true }];
}

/**
 * WorkloadEndpoints are marked with an annotation instead: their labels are what policy
 * selectors match, so a marker label would shadow a pod label of the same key.
 */
export const MANAGED_BY_ANNOTATION = 'tessera.io/managed-by';

export function isManaged(obj: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } }): boolean {
  return (
    obj.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE ||
    obj.metadata?.annotations?.[MANAGED_BY_ANNOTATION] === MANAGED_BY_VALUE
  );
}
