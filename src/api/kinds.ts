/**
 * The kind table: every API kind Tessera reads, once — its group, version, plural, scope,
 * whether the API server may not serve it, and which processes watch it. The agent's and
 * Typha's informer lists, the simulator's readers, the controllers' informers, the CRDs
 * Tessera ships and the RBAC the manifests grant are all derived from these rows, so a new
 * kind is one row here (plus the code that gives it meaning).
 *
 * Invariants:
 * - `resourceName` (`<plural>.<group>`, or `<plural>` for the core group) is unique: it is how
 *   the API server names a resource, and how callers look a row up (`kindRow`);
 * - a row with `crd: true` is a `projectcalico.org` kind, or the network-policy-api's
 *   ClusterNetworkPolicy, whose CustomResourceDefinition is generated into crds/ and installed
 *   by manifests/;
 * - rows are in the order the simulator lists them (Kubernetes sources first, then tiers and
 *   policies, then what they select): its notes come out in this order.
 */

/** The processes that list and watch a kind. */
export type KindWatcher = 'agent' | 'typha' | 'controllers' | 'simulate';

/** A kind's REST resource, as a ListerWatcher addresses it. */
export interface KindResource {
  /** `''` for the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

export interface KindRow {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /**
   * The API server may not serve it (a CRD of a newer Calico than the cluster's): the agent
   * and Typha treat a 404 as an empty list, re-listed later (informers/optional-lister-watcher.ts).
   * @default false
   */
  readonly optional?: boolean;
  /**
   * Older versions the API server may serve instead of `version`, with the same schema: the
   * agent, Typha and the simulator read the first one served, preferring `version`
   * (informers/served-version-lister-watcher.ts), and carry objects as `version`.
   */
  readonly fallbackVersions?: readonly string[];
  /** Tessera ships its CustomResourceDefinition (crds/, manifests/01-crds.yaml). @default false */
  readonly crd?: boolean;
  readonly watchers: readonly KindWatcher[];
}

const CALICO = { group: 'projectcalico.org', version: 'v3' } as const;
const CORE = { group: '', version: 'v1' } as const;
const NETWORKING = { group: 'networking.k8s.io', version: 'v1' } as const;
const DISCOVERY = { group: 'discovery.k8s.io', version: 'v1' } as const;
/** network-policy-api v0.3.0's storage version; a cluster with an older CRD may serve only v1alpha2 (informers/served-version-lister-watcher.ts). */
const NETWORK_POLICY_API = { group: 'policy.networking.k8s.io', version: 'v1beta1' } as const;

const NODE_SIDE: readonly KindWatcher[] = ['agent', 'typha', 'simulate'];

/** Every kind, in the simulator's listing order (see the invariants above). */
export const KINDS = [
  { ...CORE, kind: 'Namespace', plural: 'namespaces', namespaced: false, watchers: ['controllers', 'simulate'] },
  { ...CORE, kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true, watchers: ['controllers', 'simulate'] },
  { ...CORE, kind: 'Pod', plural: 'pods', namespaced: true, watchers: ['controllers', 'simulate'] },
  { ...NETWORKING, kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true, watchers: ['controllers', 'simulate'] },
  // `services` rule matches: EndpointSlices are what Felix reads (reference §D.2); Services
  // only for the simulator, which derives slices from them where none are given. Never
  // optional: every API server Tessera supports serves discovery.k8s.io/v1.
  { ...CORE, kind: 'Service', plural: 'services', namespaced: true, watchers: ['simulate'] },
  { ...DISCOVERY, kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true, watchers: NODE_SIDE },
  // Automatic host endpoints: one HostEndpoint per Node (controllers/auto-host-endpoint-controller.ts);
  // on the node side, the addresses of a ClusterNetworkPolicy's egress `nodes` peer, projected to
  // name, labels and addresses (syncer/node-peer-projection.ts).
  { ...CORE, kind: 'Node', plural: 'nodes', namespaced: false, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'Tier', plural: 'tiers', namespaced: false, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'GlobalNetworkPolicy', plural: 'globalnetworkpolicies', namespaced: false, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'Profile', plural: 'profiles', namespaced: false, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'WorkloadEndpoint', plural: 'workloadendpoints', namespaced: true, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  { ...CALICO, kind: 'NetworkSet', plural: 'networksets', namespaced: true, crd: true, watchers: NODE_SIDE },
  { ...CALICO, kind: 'GlobalNetworkSet', plural: 'globalnetworksets', namespaced: false, crd: true, watchers: NODE_SIDE },
  // Policy for the nodes themselves (reference host-endpoints-and-services §A); the controllers
  // write the automatic ones (controllers/auto-host-endpoint-controller.ts).
  { ...CALICO, kind: 'HostEndpoint', plural: 'hostendpoints', namespaced: false, crd: true, watchers: ['agent', 'typha', 'controllers', 'simulate'] },
  // Calico 3.30's kinds: counted on side chains that never drop, never enforced. Optional, so
  // a cluster with older CRDs still gets its policy enforced.
  { ...CALICO, kind: 'StagedNetworkPolicy', plural: 'stagednetworkpolicies', namespaced: true, crd: true, optional: true, watchers: NODE_SIDE },
  { ...CALICO, kind: 'StagedGlobalNetworkPolicy', plural: 'stagedglobalnetworkpolicies', namespaced: false, crd: true, optional: true, watchers: NODE_SIDE },
  { ...CALICO, kind: 'StagedKubernetesNetworkPolicy', plural: 'stagedkubernetesnetworkpolicies', namespaced: true, crd: true, optional: true, watchers: NODE_SIDE },
  // Kubernetes' own cluster-admin policy (SIG-Network network-policy-api), in Calico 3.32's tiers
  // kube-admin and kube-baseline. Read at v1beta1, or at v1alpha2 where only that is served (Calico
  // 3.32's bundled v0.2.0 CRD); optional: empty only when the cluster has neither.
  { ...NETWORK_POLICY_API, kind: 'ClusterNetworkPolicy', plural: 'clusternetworkpolicies', namespaced: false, crd: true, optional: true, fallbackVersions: ['v1alpha2'], watchers: NODE_SIDE },
] as const satisfies readonly KindRow[];

/** `<plural>.<group>`, or `<plural>` for the core group: the API server's resource name. */
export type ResourceName = (typeof KINDS)[number] extends infer R
  ? R extends { plural: infer P extends string; group: infer G extends string }
    ? G extends ''
      ? P
      : `${P}.${G}`
    : never
  : never;

/** The API server's name for a resource: `networkpolicies.projectcalico.org`, `pods`. */
export function resourceName(r: { readonly group: string; readonly plural: string }): string {
  return r.group === '' ? r.plural : `${r.plural}.${r.group}`;
}

/** `apiVersion` as objects of the row carry it: `projectcalico.org/v3`, `v1`. */
export function apiVersionOf(r: { readonly group: string; readonly version: string }): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}

/** The REST resource of a row (at its preferred version; see `fallbackVersions`). */
export function resourceOf(r: KindRow): KindResource {
  return { group: r.group, version: r.version, plural: r.plural };
}

const BY_NAME: ReadonlyMap<string, KindRow> = new Map(KINDS.map((r) => [resourceName(r), r]));

/** The row named `name` (`tiers.projectcalico.org`, `namespaces`). */
export function kindRow(name: ResourceName): KindRow {
  const row = BY_NAME.get(name);
  if (row === undefined) throw new RangeError(`kindRow: no kind table row for resource ${name}`);
  return row;
}

/** The rows `watcher` lists and watches, in table order. */
export function kindsWatchedBy(watcher: KindWatcher): readonly KindRow[] {
  return KINDS.filter((r: KindRow) => r.watchers.includes(watcher));
}

/** The row of (apiVersion, kind), if Tessera reads that kind. */
export function kindRowOf(apiVersion: string, kind: string): KindRow | undefined {
  return KINDS.find((r: KindRow) => r.kind === kind && apiVersionOf(r) === apiVersion);
}
