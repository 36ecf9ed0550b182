/**
 * Naming objects: which v3 kind an object is, its store key, and how to print it.
 *
 * `kindOf` is the gate between "some YAML" and a `V3Resource`: it accepts exactly
 * `apiVersion: projectcalico.org/v3` with one of the kinds Tessera models, and throws
 * an `UnsupportedResourceError` whose `reason` lets callers tell a typo (unknown kind) from
 * a real Calico kind Tessera does not read yet (which a tool may skip with a note).
 */
import { API_GROUP, API_VERSION, NAMESPACED_KINDS, V3_KINDS } from './types.ts';
import type { V3Kind } from './types.ts';

/**
 * Other kinds of Calico's v3 API (projectcalico/api, libcalico-go internal kinds). Tessera
 * does not model them; they are recognised so they can be skipped rather than reported as
 * unknown.
 */
export const OTHER_CALICO_V3_KINDS: readonly string[] = [
  'BGPConfiguration',
  'BGPFilter',
  'BGPPeer',
  'BlockAffinity',
  'CalicoNodeStatus',
  'ClusterInformation',
  'FelixConfiguration',
  'IPAMConfiguration',
  'IPPool',
  'IPReservation',
  'KubeControllersConfiguration',
  'Node',
  'StagedGlobalNetworkPolicy',
  'StagedKubernetesNetworkPolicy',
  'StagedNetworkPolicy',
];

export type UnsupportedReason =
  /** Not an object with string `apiVersion` and `kind`. */
  | 'not-an-object'
  /** A Calico group, but not `projectcalico.org/v3` (e.g. `crd.projectcalico.org/v1`). */
  | 'unsupported-api-version'
  /** Not a Calico group at all (`networking.k8s.io/v1`, `v1`…). */
  | 'not-calico'
  /** A real Calico v3 kind that Tessera does not model (IPPool, BGPPeer…). */
  | 'unsupported-kind'
  /** `projectcalico.org/v3` with a kind Calico does not have (a typo). */
  | 'unknown-kind';

/** Thrown by `kindOf` for anything that is not one of the five v3 kinds Tessera reads. */
export class UnsupportedResourceError extends TypeError {
  override readonly name = 'UnsupportedResourceError';

  constructor(
    message: string,
    readonly reason: UnsupportedReason,
    readonly apiVersion: string | undefined,
    readonly kind: string | undefined,
  ) {
    super(message);
  }
}

/** True for `projectcalico.org/...` and `*.projectcalico.org/...` API versions. */
export function isCalicoApiVersion(apiVersion: unknown): boolean {
  if (typeof apiVersion !== 'string') return false;
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return group === API_GROUP || group.endsWith(`.${API_GROUP}`);
}

function isV3Kind(kind: string): kind is V3Kind {
  return (V3_KINDS as readonly string[]).includes(kind);
}

/** The v3 kind of `obj`, from its `apiVersion` and `kind`; throws `UnsupportedResourceError`. */
export function kindOf(obj: unknown): V3Kind {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new UnsupportedResourceError('not a Kubernetes object (expected a map with apiVersion and kind)', 'not-an-object', undefined, undefined);
  }
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== 'string' || apiVersion === '') {
    throw new UnsupportedResourceError(`apiVersion is missing (expected ${API_VERSION})`, 'not-an-object', undefined, typeof kind === 'string' ? kind : undefined);
  }
  if (typeof kind !== 'string' || kind === '') {
    throw new UnsupportedResourceError(`kind is missing (apiVersion ${apiVersion})`, 'not-an-object', apiVersion, undefined);
  }
  if (!isCalicoApiVersion(apiVersion)) {
    throw new UnsupportedResourceError(
      `${apiVersion} ${kind} is not a ${API_GROUP} resource`,
      'not-calico',
      apiVersion,
      kind,
    );
  }
  if (apiVersion !== API_VERSION) {
    const hint = apiVersion.startsWith('crd.')
      ? `; that is Calico's internal storage form — write ${API_VERSION} objects`
      : `; Tessera reads ${API_VERSION}`;
    throw new UnsupportedResourceError(`unsupported apiVersion ${JSON.stringify(apiVersion)}${hint}`, 'unsupported-api-version', apiVersion, kind);
  }
  if (isV3Kind(kind)) return kind;
  if (OTHER_CALICO_V3_KINDS.includes(kind)) {
    throw new UnsupportedResourceError(
      `${API_VERSION} ${kind} is not supported by Tessera (it reads ${V3_KINDS.join(', ')})`,
      'unsupported-kind',
      apiVersion,
      kind,
    );
  }
  const folded = V3_KINDS.find((k) => k.toLowerCase() === kind.toLowerCase());
  const hint = folded !== undefined ? ` (did you mean ${folded}?)` : ` (Tessera reads ${V3_KINDS.join(', ')})`;
  throw new UnsupportedResourceError(`unknown kind ${JSON.stringify(kind)} in ${API_VERSION}${hint}`, 'unknown-kind', apiVersion, kind);
}

export function isNamespacedKind(kind: V3Kind): boolean {
  return NAMESPACED_KINDS.has(kind);
}

interface Named {
  metadata?: { name?: unknown; namespace?: unknown } | null;
}

/** Thrown by `objectKey` for an object without a usable `metadata.name`. */
export class ObjectKeyError extends TypeError {
  override readonly name = 'ObjectKeyError';
}

/**
 * The store key: `namespace/name` for namespaced objects, `name` for cluster-scoped ones
 * (client-go `MetaNamespaceKeyFunc`). The namespace is used whenever one is set.
 */
export function objectKey(obj: Named): string {
  const name = obj.metadata?.name;
  if (typeof name !== 'string' || name === '') throw new ObjectKeyError('object has no metadata.name');
  const namespace = obj.metadata?.namespace;
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}/${name}` : name;
}

/** `Kind ns/name` for messages; never throws (`<unnamed>` when the name is missing). */
export function describeObject(obj: Named & { kind?: unknown }): string {
  const kind = typeof obj.kind === 'string' && obj.kind !== '' ? obj.kind : 'object';
  let key: string;
  try {
    key = objectKey(obj);
  } catch {
    const namespace = obj.metadata?.namespace;
    key = typeof namespace === 'string' && namespace !== '' ? `${namespace}/<unnamed>` : '<unnamed>';
  }
  return `${kind} ${key}`;
}
