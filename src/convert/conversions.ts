/**
 * The source → builder table (libcalico's `k8s/conversion` `Converter`): for every Kubernetes
 * kind Tessera turns into a projectcalico.org/v3 object, the kind-table rows of the source and
 * the target, the one function that builds the target, and the inverse of its naming. The
 * controllers' mirror controllers (which write the results) and the simulator (which reads
 * them) both take their builders from here, so a source converts one way everywhere, and a
 * new source kind is one entry (plus its builder).
 *
 * Invariants:
 * - `convert` is a pure function of its source (and options): the same input gives an equal
 *   result, whoever calls it;
 * - `convert` returns at most one target, named by the entry's naming scheme
 *   (`kns.<ns>`, `ksa.<ns>.<sa>`, `<node>-k8s-<pod>-<endpoint>`, `knp.default.<name>`);
 *   `resource: undefined` means the source converts to nothing (a pod without an endpoint);
 * - `sourceKeyOf` inverts that naming: for a target this entry generates, the informer key of
 *   its source (`<namespace>/<name>`, or `<name>` for a cluster-scoped source); for any other
 *   target `undefined`. Who owns a target (labels, annotations) is the writer's concern, not
 *   this table's.
 */
import { kindRow, type KindRow } from '../api/kinds.ts';
import { KNP_NAME_PREFIX } from '../api/names.ts';
import type { K8sMetaObject, K8sNetworkPolicy, K8sPod } from '../api/kubernetes.ts';
import type { NetworkPolicy, Profile, V3Resource, WorkloadEndpoint } from '../api/types.ts';
import { convertNetworkPolicy, type RuleConversionError } from './policy-converter.ts';
import { namespaceToProfile, profileSource, serviceAccountToProfile } from './profile-builder.ts';
import { podToWorkloadEndpointWithWarnings, type WorkloadEndpointBuildOptions } from './workload-endpoint-builder.ts';

/** What a builder made of one source. */
export interface Converted<T extends V3Resource> {
  /** The target; `undefined` when the source converts to nothing. */
  readonly resource: T | undefined;
  /** Parts of the source that could not be converted and were left out (the rest is in `resource`). */
  readonly errors: readonly RuleConversionError[];
  /** Conversions that changed meaning slightly and were made anyway. */
  readonly warnings: readonly string[];
}

/** Options a builder may read; each reads only its own. */
export type ConvertOptions = WorkloadEndpointBuildOptions;

/** A target as a `sourceKeyOf` reads it: its name, namespace and spec. */
export interface TargetRef {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: unknown;
}

/** One row of the table: Kubernetes kind `S` → v3 kind `T`. */
export interface Conversion<S, T extends V3Resource> {
  /** The Kubernetes kind read. */
  readonly source: KindRow;
  /** The v3 kind written. */
  readonly target: KindRow;
  readonly convert: (source: S, opts?: ConvertOptions) => Converted<T>;
  readonly sourceKeyOf: (target: TargetRef) => string | undefined;
}

const converted = <T extends V3Resource>(resource: T | undefined): Converted<T> => ({ resource, errors: [], warnings: [] });

/** Namespace → Profile `kns.<ns>`. */
const NAMESPACE_PROFILE: Conversion<K8sMetaObject, Profile> = {
  source: kindRow('namespaces'),
  target: kindRow('profiles.projectcalico.org'),
  convert: (ns) => converted(namespaceToProfile(ns)),
  sourceKeyOf: (t) => {
    const s = profileSource(t.metadata?.name ?? '');
    return s?.kind === 'namespace' ? s.name : undefined;
  },
};

/** ServiceAccount → Profile `ksa.<ns>.<sa>`. */
const SERVICE_ACCOUNT_PROFILE: Conversion<K8sMetaObject, Profile> = {
  source: kindRow('serviceaccounts'),
  target: kindRow('profiles.projectcalico.org'),
  convert: (sa) => converted(serviceAccountToProfile(sa)),
  sourceKeyOf: (t) => {
    const s = profileSource(t.metadata?.name ?? '');
    return s?.kind === 'serviceaccount' ? `${s.namespace}/${s.name}` : undefined;
  },
};

/** Pod → WorkloadEndpoint (none for a pod without a node or IP, host-network, or finished). */
const POD_WORKLOAD_ENDPOINT: Conversion<K8sPod, WorkloadEndpoint> = {
  source: kindRow('pods'),
  target: kindRow('workloadendpoints.projectcalico.org'),
  convert: (pod, opts) => {
    const { endpoint, warnings } = podToWorkloadEndpointWithWarnings(pod, opts);
    return { resource: endpoint, errors: [], warnings };
  },
  sourceKeyOf: (t) => {
    const pod = (t.spec as { pod?: unknown } | undefined)?.pod;
    return typeof pod === 'string' ? `${t.metadata?.namespace ?? ''}/${pod}` : undefined;
  },
};

/**
 * networking.k8s.io NetworkPolicy → projectcalico.org NetworkPolicy `knp.default.<name>`
 * through `convert` (the controllers' tests inject one that fails on purpose; everyone else
 * uses `convertNetworkPolicy`, the table's entry).
 */
export function networkPolicyConversion(convert: typeof convertNetworkPolicy): Conversion<K8sNetworkPolicy, NetworkPolicy> {
  return {
    source: kindRow('networkpolicies.networking.k8s.io'),
    target: kindRow('networkpolicies.projectcalico.org'),
    convert: (np) => {
      const { policy, errors, warnings } = convert(np);
      return { resource: policy, errors, warnings };
    },
    sourceKeyOf: (t) => {
      const name = t.metadata?.name ?? '';
      return name.startsWith(KNP_NAME_PREFIX) ? `${t.metadata?.namespace ?? ''}/${name.slice(KNP_NAME_PREFIX.length)}` : undefined;
    },
  };
}

/** The table, keyed by the source's resource name (api/kinds.ts `resourceName`). */
export const CONVERSIONS = {
  namespaces: NAMESPACE_PROFILE,
  serviceaccounts: SERVICE_ACCOUNT_PROFILE,
  pods: POD_WORKLOAD_ENDPOINT,
  'networkpolicies.networking.k8s.io': networkPolicyConversion(convertNetworkPolicy),
} as const;
