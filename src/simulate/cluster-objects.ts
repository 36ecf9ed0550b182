/**
 * The objects a simulation starts from, and their translation into what the calc graph
 * reads — through the builders the controllers use (convert/conversions.ts, one entry per
 * source kind), never a re-implementation:
 *
 * - Namespace → `kns.<ns>`, ServiceAccount → `ksa.<ns>.<sa>`; every namespace gets the
 *   `default` ServiceAccount the apiserver would create, and the `kubernetes.io/metadata.name`
 *   label it sets (to the name, whatever the namespace's own labels say);
 * - Pod → WorkloadEndpoint; pods without one (no node, no IP, host network…) are kept as
 *   notes;
 * - networking.k8s.io/v1 NetworkPolicy → `knp.default.<name>`, after the apiserver's
 *   `SetDefaults_NetworkPolicy` (calico-semantics §3.2);
 * - the default tiers every Calico cluster has (`defaultTiers`, what the controllers create);
 * - discovery.k8s.io/v1 EndpointSlices as given (what `services` rule matches read, as the
 *   agent reads them); core/v1 Services are carried for the slices derived from them and
 *   their pods where a cluster's slices are not in the input;
 * - policy.networking.k8s.io ClusterNetworkPolicies (any served version) and core/v1 Nodes as
 *   given: the calc graph converts them as the agent's does (calc/cluster-network-policy-
 *   processor.ts); a CNP is validated as the API server would (`validateClusterNetworkPolicy`,
 *   experimental channel), and a rule the converter fails closed (a `domainNames` peer…) is a
 *   note;
 * - projectcalico.org/v3 objects as given; a Calico object with the same key as a generated
 *   one (e.g. an explicit WorkloadEndpoint or Profile) replaces it;
 * - every resource, given or generated, is defaulted and validated as the agent's update
 *   processor does it. An invalid one is an `InputError` naming the object it came from
 *   and the field path, so a simulation never silently answers without a policy the user
 *   wrote; with `skipInvalid` it is a note, and left out (its key deleted, as the calc
 *   graph deletes it) unless it is a policy or profile, which is kept: the calc graph enforces
 *   it fail-closed, as the agent's does.
 */
import { API_VERSION, applyDefaults, isError, V3_KINDS, validateResource, type V3Resource } from '../api/index.ts';
import { isPreviewedAction, isStagedKind, readStaged, unpreviewedStagedNote, type StagedPolicy } from '../api/staged.ts';
import { unenforcedObject, type UnenforcedObject } from '../api/unenforced-kinds.ts';
import { isClusterNetworkPolicy, type ClusterNetworkPolicy } from '../api/cluster-network-policy.ts';
import { InputError, type ObjectProblem } from '../runtime/input-error.ts';
import type { K8sEndpointSlice, K8sNetworkPolicy, K8sPod, K8sService } from '../api/index.ts';
import { CONVERSIONS, defaultTiers, type Conversion, type Converted } from '../convert/index.ts';
import { validateClusterNetworkPolicy, type K8sNode } from '../api/index.ts';
import { convertClusterNetworkPolicy } from '../convert/cluster-network-policy-converter.ts';

export interface K8sNamespace {
  metadata?: { name?: string; labels?: Record<string, string> };
}

export interface K8sServiceAccount {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
}

/** Everything a simulation reads, by kind. */
export interface ClusterObjects {
  readonly namespaces: readonly K8sNamespace[];
  readonly serviceAccounts: readonly K8sServiceAccount[];
  readonly pods: readonly K8sPod[];
  readonly networkPolicies: readonly K8sNetworkPolicy[];
  /** Tier, NetworkPolicy, GlobalNetworkPolicy, Profile, WorkloadEndpoint (projectcalico.org/v3). */
  readonly calico: readonly V3Resource[];
  /** Staged policies (staged.ts): never enforced, read only to preview what they would change. */
  readonly staged?: readonly StagedPolicy[];
  /**
   * Objects of policy kinds Tessera does not enforce (api/unenforced-kinds.ts): left out of
   * every verdict, and named by every tool, which then exits `EXIT_UNENFORCED`.
   */
  readonly unenforced?: readonly UnenforcedObject[];
  /**
   * policy.networking.k8s.io ClusterNetworkPolicies, of any served version (v1beta1, v1alpha2):
   * the kube-admin and kube-baseline tiers' policies.
   */
  readonly clusterNetworkPolicies?: readonly ClusterNetworkPolicy[];
  /** core/v1 Services (`services` rule matches reach them through EndpointSlices). */
  readonly services?: readonly K8sService[];
  /**
   * discovery.k8s.io/v1 EndpointSlices: the members of `services` rule matches. The loaders
   * add those the EndpointSlice controller would make for each Service without any
   * (endpoint-slices.ts `withServiceEndpoints`).
   */
  readonly endpointSlices?: readonly K8sEndpointSlice[];
  /** core/v1 Nodes (what a CNP's egress `nodes` peer reads: labels and addresses). */
  readonly nodes?: readonly K8sNode[];
}

/** A ClusterNetworkPolicy as the calc graphs read it: named. */
export type SimClusterNetworkPolicy = ClusterNetworkPolicy & { readonly metadata: { readonly name: string; readonly namespace?: undefined } };

/** A Node as the calc graphs read it: typed and named. */
export type SimNode = K8sNode & { readonly apiVersion: 'v1'; readonly kind: 'Node'; readonly metadata: { readonly name: string; readonly namespace?: undefined; readonly labels?: Record<string, string> } };

/** An EndpointSlice as the calc graphs read it: typed and named. */
export type SimEndpointSlice = K8sEndpointSlice & {
  readonly apiVersion: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels?: Record<string, string> };
};

/** What a simulated node's calc graph is fed: the v3 resources, EndpointSlices, ClusterNetworkPolicies and Nodes. */
export type SimResource = V3Resource | SimEndpointSlice | SimClusterNetworkPolicy | SimNode;

export function isEndpointSlice(r: SimResource): r is SimEndpointSlice {
  return r.kind === 'EndpointSlice';
}

export function isSimClusterNetworkPolicy(r: SimResource): r is SimClusterNetworkPolicy {
  return r.kind === 'ClusterNetworkPolicy';
}

/** Whether `r` is read by the calc graph but is no projectcalico.org/v3 resource (deletes must name its apiVersion). */
export function isOtherGroup(r: SimResource): r is SimEndpointSlice | SimClusterNetworkPolicy | SimNode {
  return r.kind === 'EndpointSlice' || r.kind === 'ClusterNetworkPolicy' || r.kind === 'Node';
}

export interface TranslatedCluster {
  /** Keyed `<kind>/<namespace>/<name>`, in a stable order. */
  readonly resources: ReadonlyMap<string, SimResource>;
  /** Dropped rules, skipped invalid objects and pods without an endpoint, one line each. */
  readonly notes: readonly string[];
  /**
   * With `skipInvalid`: the invalid policies and profiles kept, which the calc graph enforces
   * fail-closed as the agent does (calc/fail-closed.ts), keyed as explanations name them
   * (`NetworkPolicy ns/name`, `GlobalNetworkPolicy name`, `Profile name`), each with its errors.
   */
  readonly failClosed: ReadonlyMap<string, string>;
  /**
   * What `tessera validate` warns about each resource (an `http` match not enforced, QoS
   * limits not enforced or not modelled…), `<object>: <path>: <message>`, one line each.
   */
  readonly warnings: readonly string[];
}

/** What a simulation cannot show of a workload endpoint's QoS limits that the agent does enforce. */
export const QOS_NOT_SIMULATED_MESSAGE =
  'enforced by the agent, but not modelled by the simulator: verdicts are per connection, without packet rates or connection counts';

export interface TranslateOptions {
  /** Leave invalid objects out, with a note each, instead of throwing an `InputError`. @default false */
  readonly skipInvalid?: boolean;
}

export function resourceKey(r: SimResource): string {
  return `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`;
}

/** The apiserver's `SetDefaults_NetworkPolicy`, for objects that never went through it. */
export function defaultNetworkPolicyTypes(np: K8sNetworkPolicy): K8sNetworkPolicy {
  const spec = np.spec ?? {};
  if ((spec.policyTypes ?? []).length > 0) return np;
  const policyTypes = ['Ingress', ...((spec.egress ?? []).length > 0 ? ['Egress'] : [])];
  return { ...np, spec: { ...spec, policyTypes } };
}

/** `Kind ns/name` of an input object (Kubernetes or Calico). */
function describeInput(kind: string, meta: { name?: unknown; namespace?: unknown } | undefined): string {
  const ns = typeof meta?.namespace === 'string' && meta.namespace !== '' ? `${meta.namespace}/` : '';
  const name = typeof meta?.name === 'string' && meta.name !== '' ? meta.name : '<unnamed>';
  return `${kind} ${ns}${name}`;
}

/**
 * Translates `objs` into the resources the calc graph reads.
 * @throws InputError listing every invalid object's errors, unless `skipInvalid`.
 */
export function translateCluster(objs: ClusterObjects, opts: TranslateOptions = {}): TranslatedCluster {
  const { skipInvalid = false } = opts;
  const resources = new Map<string, SimResource>();
  /** key → the input object a resource was made from, when it was generated. */
  const origins = new Map<string, string>();
  const notes: string[] = [];
  const put = (r: V3Resource, origin?: string): void => {
    const key = resourceKey(r);
    resources.set(key, r);
    if (origin === undefined) origins.delete(key);
    else origins.set(key, origin);
  };
  for (const t of defaultTiers()) put(t);

  /** Puts what `conversion` makes of `source`, if anything; returns its rule errors. */
  const convert = <S, T extends V3Resource>(conversion: Conversion<S, T>, source: S, origin: string): Converted<T>['errors'] => {
    const { resource, errors } = conversion.convert(source);
    if (resource !== undefined) put(resource, origin);
    return errors;
  };

  const saSeen = new Set<string>();
  for (const ns of objs.namespaces) {
    const name = ns.metadata?.name;
    if (!name) continue;
    // The apiserver sets this label to the name over whatever the namespace was given.
    const labels = { ...(ns.metadata?.labels ?? {}), 'kubernetes.io/metadata.name': name };
    convert(CONVERSIONS.namespaces, { metadata: { name, labels } }, describeInput('Namespace', ns.metadata));
  }
  for (const sa of objs.serviceAccounts) {
    saSeen.add(`${sa.metadata?.namespace ?? ''}/${sa.metadata?.name ?? ''}`);
    convert(CONVERSIONS.serviceaccounts, sa, describeInput('ServiceAccount', sa.metadata));
  }
  // The apiserver's ServiceAccount controller gives every namespace a `default` account,
  // and a pod's account must exist for it to be admitted.
  const implied = new Set<string>();
  for (const ns of objs.namespaces) if (ns.metadata?.name) implied.add(`${ns.metadata.name}/default`);
  for (const pod of objs.pods) implied.add(`${pod.metadata?.namespace ?? ''}/${pod.spec?.serviceAccountName ?? 'default'}`);
  for (const key of [...implied].sort()) {
    if (saSeen.has(key)) continue;
    const [namespace = '', name = ''] = key.split('/');
    convert(CONVERSIONS.serviceaccounts, { metadata: { name, namespace } }, `ServiceAccount ${namespace}/${name} (implied)`);
  }

  for (const pod of objs.pods) {
    const withSa: K8sPod = pod.spec?.serviceAccountName ? pod : { ...pod, spec: { ...pod.spec, serviceAccountName: 'default' } };
    const { resource: wep, warnings } = CONVERSIONS.pods.convert(withSa);
    for (const w of warnings) notes.push(`${describeInput('Pod', pod.metadata)}: ${w} (as Calico does, the endpoint is built anyway)`);
    if (wep === undefined) notes.push(`Pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}: no workload endpoint (no node, no IP, host network or finished); skipped`);
    else put(wep, describeInput('Pod', pod.metadata));
  }

  for (const np of objs.networkPolicies) {
    const errors = convert(CONVERSIONS['networkpolicies.networking.k8s.io'], defaultNetworkPolicyTypes(np), `networking.k8s.io/v1 ${describeInput('NetworkPolicy', np.metadata)}`);
    const id = `NetworkPolicy ${np.metadata?.namespace ?? ''}/${np.metadata?.name ?? ''}`;
    for (const e of errors) notes.push(`${id}: spec.${e.direction}[${e.index}]: ${e.reason} (rule dropped)`);
  }

  for (const r of objs.calico) put(r);

  const invalid: ObjectProblem[] = [];
  const failClosed = new Map<string, string>();
  const warnings: string[] = [];
  const nodes = (objs.nodes ?? []).flatMap((n): SimNode[] => {
    const name = n.metadata?.name;
    return typeof name === 'string' && name !== '' ? [{ ...n, apiVersion: 'v1', kind: 'Node', metadata: { ...n.metadata, name } } as SimNode] : [];
  });
  for (const n of nodes) resources.set(resourceKey(n), n);
  const peerInfo = nodes.map((n) => ({ name: n.metadata.name, labels: n.metadata.labels ?? {}, addresses: (n.status?.addresses ?? []).flatMap((a) => (typeof a?.address === 'string' ? [a.address] : [])) }));
  for (const c of objs.clusterNetworkPolicies ?? []) {
    const self = describeInput('ClusterNetworkPolicy', c.metadata);
    const errors = validateClusterNetworkPolicy(c).filter(isError);
    const reasons = errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)).join('; ');
    if (errors.length > 0 && !skipInvalid) {
      for (const e of errors) invalid.push({ type: 'object', object: `${c.apiVersion} ${self}`, path: e.path, reason: e.message });
      continue;
    }
    const name = c.metadata?.name;
    if (typeof name !== 'string' || name === '') continue;
    const converted = convertClusterNetworkPolicy(c, peerInfo);
    if (errors.length > 0) {
      notes.push(`${c.apiVersion} ${self}: invalid, its faulty rules enforced fail-closed as the agent would (Deny/Pass → Deny, Accept dropped): ${reasons}`);
      failClosed.set(self, reasons);
    } else if (converted.policy === null) {
      notes.push(`${c.apiVersion} ${self}: ${converted.problem ?? 'cannot be converted'}; not enforced (Calico skips it too)`);
    }
    for (const e of converted.errors) {
      notes.push(`${c.apiVersion} ${self}: ${e.reason} (${e.outcome === 'deny' ? 'enforced as a bare Deny' : 'rule dropped'})`);
      if (errors.length === 0) failClosed.set(self, [failClosed.get(self), e.reason].filter((x) => x !== undefined).join('; '));
    }
    resources.set(resourceKey({ ...c, metadata: { ...c.metadata, name } } as SimClusterNetworkPolicy), { ...c, metadata: { ...c.metadata, name } } as SimClusterNetworkPolicy);
  }
  for (const [key, r] of resources) {
    if (isOtherGroup(r)) continue;
    const findings = validateResource(applyDefaults(r));
    const errors = findings.filter(isError);
    const origin = origins.get(key);
    const self = describeInput(r.kind, r.metadata);
    const object = origin === undefined ? self : `${origin} (as ${self})`;
    for (const w of findings) if (!isError(w)) warnings.push(w.path === '' ? `${object}: ${w.message}` : `${object}: ${w.path}: ${w.message}`);
    if (errors.length === 0) warnings.push(...qosNotSimulated(r, object));
    if (errors.length === 0) continue;
    const reasons = errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)).join('; ');
    if (skipInvalid && (r.kind === 'NetworkPolicy' || r.kind === 'GlobalNetworkPolicy' || r.kind === 'Profile')) {
      // Kept: the calc graph enforces it fail-closed, as the agent's does.
      notes.push(`${object}: invalid, enforced fail-closed as the agent would (no rules: the endpoints it selects are denied in its directions): ${reasons}`);
      failClosed.set(self, reasons);
    } else if (skipInvalid) {
      notes.push(`${object}: invalid, skipped as the agent would: ${reasons}`);
      resources.delete(key);
    } else {
      for (const e of errors) invalid.push({ type: 'object', object, path: e.path, reason: e.message });
    }
  }
  if (invalid.length > 0) throw new InputError(invalid);
  // The loaders already added the slices the controller would make for Services without any
  // (endpoint-slices.ts `withServiceEndpoints`).
  for (const slice of objs.endpointSlices ?? []) {
    const name = slice.metadata?.name;
    if (typeof name !== 'string' || name === '') continue;
    const typed: SimEndpointSlice = { ...slice, apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { ...slice.metadata, name, namespace: slice.metadata?.namespace || 'default' } };
    resources.set(resourceKey(typed), typed);
  }
  return { resources, notes, failClosed, warnings };
}

/** A line per QoS limit of `r` that the agent enforces and the verdict engine cannot model. */
function qosNotSimulated(r: V3Resource, object: string): string[] {
  if (r.kind !== 'WorkloadEndpoint') return [];
  const qos = r.spec.qosControls ?? {};
  const fields = (['ingressPacketRate', 'egressPacketRate', 'ingressMaxConnections', 'egressMaxConnections'] as const).filter((f) => (qos[f] ?? 0) > 0);
  return fields.map((f) => `${object}: spec.qosControls.${f}: ${QOS_NOT_SIMULATED_MESSAGE}`);
}

/**
 * Sorts documents into a `ClusterObjects` by apiVersion/kind; a policy kind Tessera does not
 * enforce goes to `unenforced`, anything else is a note.
 */
export function classifyObjects(values: readonly unknown[], notes: string[]): ClusterObjects {
  const out = {
    namespaces: [] as K8sNamespace[],
    serviceAccounts: [] as K8sServiceAccount[],
    pods: [] as K8sPod[],
    networkPolicies: [] as K8sNetworkPolicy[],
    calico: [] as V3Resource[],
    staged: [] as StagedPolicy[],
    unenforced: [] as UnenforcedObject[],
    clusterNetworkPolicies: [] as ClusterNetworkPolicy[],
    services: [] as K8sService[],
    endpointSlices: [] as K8sEndpointSlice[],
    nodes: [] as K8sNode[],
  };
  for (const v of values) {
    const o = v as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } } | null;
    const kind = typeof o?.kind === 'string' ? o.kind : '';
    const api = typeof o?.apiVersion === 'string' ? o.apiVersion : '';
    if (api === 'v1' && kind === 'Namespace') out.namespaces.push(v as K8sNamespace);
    else if (api === 'v1' && kind === 'ServiceAccount') out.serviceAccounts.push(v as K8sServiceAccount);
    else if (api === 'v1' && kind === 'Pod') out.pods.push(v as K8sPod);
    else if (api === 'networking.k8s.io/v1' && kind === 'NetworkPolicy') out.networkPolicies.push(v as K8sNetworkPolicy);
    else if (api === 'v1' && kind === 'Service') out.services.push(v as K8sService);
    else if (api === 'discovery.k8s.io/v1' && kind === 'EndpointSlice') out.endpointSlices.push(v as K8sEndpointSlice);
    else if (api === 'v1' && kind === 'Node') out.nodes.push(v as K8sNode);
    else if (api === API_VERSION && (V3_KINDS as readonly string[]).includes(kind)) out.calico.push(v as V3Resource);
    else if (isClusterNetworkPolicy(api, kind)) out.clusterNetworkPolicies.push(v as ClusterNetworkPolicy);
    else if (api === API_VERSION && isStagedKind(kind)) {
      const staged = readStaged(v);
      if (!isPreviewedAction(staged.action)) notes.push(unpreviewedStagedNote(staged));
      out.staged.push(staged);
    } else {
      const unenforced = unenforcedObject(v);
      if (unenforced !== undefined) out.unenforced.push(unenforced);
      else notes.push(`${api || '?'} ${kind || '?'} ${String(o?.metadata?.name ?? '')}: not a policy kind; ignored`);
    }
  }
  return out;
}
