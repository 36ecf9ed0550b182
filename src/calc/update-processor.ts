/**
 * Update processors and the validation filter: v3 resources → the v1 model (model.ts).
 *
 * Felix: `libcalico-go/lib/backend/syncersv1/updateprocessors` (networkpolicyprocessor.go,
 * rules.go) and `calc/validation_filter.go`. Guarantees:
 * - an invalid object (defaulting, then `validateResource` errors, or anything the
 *   conversion cannot parse) is logged and counted, and never throws. A NetworkPolicy,
 *   GlobalNetworkPolicy or Profile is replaced by its fail-closed stand-in (fail-closed.ts:
 *   same selector, tier, order and directions, no rules), so an invalid policy denies rather
 *   than lifts; any other kind becomes a delete of its key, so the graph never holds a
 *   half-understood object;
 * - deletes name (kind, namespace, name) only; the processor remembers which tier each
 *   policy is in, so a delete (or a tier move) removes the right policy id;
 * - selectors are namespace-scoped and prefixed exactly as calico-semantics §3.8 says, and
 *   re-printed canonically, so equal meanings share IP sets;
 * - staged policies (`stagedAction: Set`) become policies of a staged kind (a
 *   StagedKubernetesNetworkPolicy converted as the controllers convert its enforced
 *   counterpart, to `knp.default.<name>`), validated as their counterparts are; the policy
 *   sorter files them apart so they are counted, never enforced. `stagedAction: Delete`
 *   removes nothing and counts nothing: it holds no policy here;
 * - a `discovery.k8s.io/v1` EndpointSlice becomes an `endpointslice` model update
 *   (endpoint-slice-model.ts); one that names no Service is held as deleted;
 * - a ClusterNetworkPolicy of any served version, and a core v1 Node (for its egress `nodes`
 *   peer), go to cluster-network-policy-processor.ts: a model policy of kind
 *   `KubernetesClusterNetworkPolicy` in kube-admin/kube-baseline, failing closed per rule;
 * - a `services` match names `<namespace>/<name>`, an empty namespace meaning the policy's
 *   own (Calico's API documents it; Felix would look up `/<name>` and match nothing, reference
 *   §D.1). A GlobalNetworkPolicy must give one (validation).
 */
import {
  DEFAULT_ALLOW_PROFILE,
  isCanonicalIPv4HostCidr,
  isError,
  NAMESPACE_LABEL_PREFIX,
  NAMESPACE_PROFILE_PREFIX,
  NAMESPACED_KINDS,
  normaliseCidr,
  parsePort,
  parseProtocol,
  SERVICE_ACCOUNT_LABEL_PREFIX,
  validateResource,
  type EntityRule,
  type Rule as V3Rule,
  type V3Kind,
  type V3Resource,
  DECLARED_V3_KINDS,
  isStagedKind,
  readStaged,
  type StagedKind,
  validateClusterNetworkPolicy,
  withDefaults,
} from '../api/index.ts';
import { convertNetworkPolicy } from '../convert/policy-converter.ts';
import { policyIdKey, type PolicyId, type PortRange, type QoSControls, type RuleAction } from '../proto/index.ts';
import { makeGroup, parseSelector, parseSelectorNode, prefixLabels, toCanonicalString, toRoundTripString, type Selector, type SelectorNode } from '../selector/index.ts';
import { flat } from '../runtime/flat-string.ts';
import { failClosedPolicy, failClosedProfile, type PolicySelectorFields } from './fail-closed.ts';
import { Interner } from './interner.ts';
import { hostEndpointModelKey, type EndpointPort, type ModelEndpoint, type ModelEntity, type ModelPolicy, type ModelRule, type ModelUpdate } from './model.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';
import { updateApiVersion, type AnyUpdate, type Update } from '../syncer/update.ts';
import type { K8sEndpointSlice } from '../api/index.ts';
import { ENDPOINT_SLICE_API_VERSION, ENDPOINT_SLICE_KIND, endpointSliceKey, endpointSliceModel } from './endpoint-slice-model.ts';
import { isClusterNetworkPolicy } from '../api/cluster-network-policy.ts';
import type { GlobalNetworkPolicy } from '../api/types.ts';
import { ClusterNetworkPolicyProcessor, type CnpFinding } from './cluster-network-policy-processor.ts';

export const NAMESPACE_LABEL = 'projectcalico.org/namespace';
export const ORCHESTRATOR_LABEL = 'projectcalico.org/orchestrator';
/**
 * The endpoint label `serviceAccounts.names` matches (Calico `apiv3.LabelServiceAccount`).
 * Never the profile label `pcsa.projectcalico.org/name`: a profile label is inherited, and an
 * endpoint's own label of the same key wins over it (§2.3), so only a label the processor
 * stamps on the endpoint itself, over the pod's, proves the account.
 */
export const SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';

/**
 * Calico's built-in profile (`libcalico-go/lib/resources/static.go`): allow everything both
 * ways. The datastore backends synthesise it on every get, list and watch, never storing it;
 * automatic host endpoints name it so that a node with no policy stays open (reference §C).
 */
export { DEFAULT_ALLOW_PROFILE } from '../api/index.ts';

/** Why an object was dropped or replaced; passed to `onInvalid`. */
export interface InvalidResource {
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly reason: string;
  /**
   * Set for a policy or profile: it is enforced fail-closed (fail-closed.ts), not deleted.
   * `selectorFallback` is set when its own selector could not be read.
   */
  readonly failClosed?: { readonly selectorFallback?: string };
}

export interface UpdateProcessorOptions {
  /** Called for every invalid object, dropped or enforced fail-closed (the graph logs and counts it). */
  readonly onInvalid: (invalid: InvalidResource) => void;
  /** Called with the count of fail-closed objects by kind whenever it changes. */
  readonly onFailClosedCount?: (byKind: ReadonlyMap<string, number>) => void;
  /**
   * The API validation of a raw ClusterNetworkPolicy: rules it faults fail closed.
   * @default the errors of `validateClusterNetworkPolicy` (api/, experimental channel: the CRD admitted it)
   */
  readonly validateClusterNetworkPolicy?: (raw: unknown) => readonly CnpFinding[];
}

/** Thrown internally for a value that passed validation but cannot be converted. */
class ConversionError extends Error {}

/** Converts datastore updates to model updates; stateful only for policy tiers. */
export class UpdateProcessor {
  readonly #onInvalid: (invalid: InvalidResource) => void;
  /** `<kind>/<ns>/<name>` → the policy key currently held for it. */
  readonly #policyKeys = new Map<string, string>();
  readonly #intern = new Interner();
  readonly #onFailClosedCount: ((byKind: ReadonlyMap<string, number>) => void) | undefined;
  /** `<kind>/<ns>/<name>` → kind, for every object currently enforced fail-closed. */
  readonly #failClosed = new Map<string, string>();

  readonly #cnp: ClusterNetworkPolicyProcessor;

  constructor(opts: UpdateProcessorOptions) {
    this.#onInvalid = opts.onInvalid;
    this.#onFailClosedCount = opts.onFailClosedCount;
    this.#cnp = new ClusterNetworkPolicyProcessor({
      toModel: clusterNetworkPolicyModel,
      setPolicy: (rk, policy) => this.#setPolicy(rk, policy),
      deletePolicy: (rk) => this.#deletePolicy(rk),
      onInvalid: (invalid) => this.#onInvalid(invalid),
      markFailClosed: (rk, kind) => this.#markFailClosed(rk, kind),
      validate: opts.validateClusterNetworkPolicy ?? ((raw) => validateClusterNetworkPolicy(raw).filter(isError)),
    });
  }

  /** Records whether the object `rk` is held fail-closed; reports the counts when they change. */
  #markFailClosed(rk: string, kind: string | undefined): void {
    if (kind === undefined ? !this.#failClosed.delete(rk) : this.#failClosed.get(rk) === kind) return;
    if (kind !== undefined) this.#failClosed.set(rk, kind);
    if (this.#onFailClosedCount === undefined) return;
    const counts = new Map<string, number>();
    for (const k of this.#failClosed.values()) counts.set(k, (counts.get(k) ?? 0) + 1);
    this.#onFailClosedCount(counts);
  }

  /** The fail-closed stand-in for an invalid policy or profile (fail-closed.ts). */
  #standIn(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'Profile', name: string, ns: string, raw: unknown, reason: string): ModelUpdate[] {
    if (kind === 'Profile') {
      this.#onInvalid({ kind, name, reason, failClosed: {} });
      this.#markFailClosed(`Profile//${name}`, kind);
      return [{ kind: 'profile', key: name, value: failClosedProfile(name, raw) }];
    }
    const namespace = kind === 'NetworkPolicy' ? ns : undefined;
    const { policy, selectorFallback } = failClosedPolicy(kind, name, namespace, raw, (fields) => policySelector(namespace, fields));
    this.#onInvalid({ kind, name, ...(namespace === undefined ? {} : { namespace }), reason, failClosed: selectorFallback === undefined ? {} : { selectorFallback } });
    const rk = `${kind}/${namespace ?? ''}/${name}`;
    this.#markFailClosed(rk, kind);
    return this.#setPolicy(rk, policy);
  }

  /**
   * The updates deferred until now: ClusterNetworkPolicies with an egress `nodes` peer whose
   * Nodes changed, re-converted once (cluster-network-policy-processor.ts). The calc graph
   * calls it on every flush; any other user calls it after its last `process`.
   */
  flushDeferred(): ModelUpdate[] {
    return this.#cnp.flushDeferred();
  }

  /** The converted policy held for the ClusterNetworkPolicy `name` (rules 1:1 with its model's, annotated with the CNP rule each came from). */
  convertedClusterNetworkPolicy(name: string): GlobalNetworkPolicy | undefined {
    return this.#cnp.converted(name);
  }

  /** The objects that exist without a datastore object: {@link DEFAULT_ALLOW_PROFILE}. */
  builtIns(): ModelUpdate[] {
    const allowAll = convertRule({ action: 'Allow' }, undefined);
    return [{ kind: 'profile', key: DEFAULT_ALLOW_PROFILE, value: { name: DEFAULT_ALLOW_PROFILE, labels: {}, inboundRules: [allowAll], outboundRules: [allowAll] } }];
  }

  process(update: Update | AnyUpdate): ModelUpdate[] {
    const updateKind = update.op === 'delete' ? update.kind : (update.resource as { kind?: unknown } | null)?.kind;
    if (updateKind === 'Profile') {
      const name = update.op === 'delete' ? update.name : (update.resource as { metadata?: { name?: unknown } }).metadata?.name;
      if (name === DEFAULT_ALLOW_PROFILE) {
        // A stored object cannot replace or delete the built-in one (Calico's backends never
        // read one either: they answer with the static profile).
        this.#onInvalid({ kind: 'Profile', name, reason: `${DEFAULT_ALLOW_PROFILE} is Calico's built-in allow-all profile: a stored Profile of that name is ignored, the built-in one stays` });
        return [];
      }
    }
    const updateGroupVersion = update.op === 'delete' ? updateApiVersion(update) : (update.resource as { apiVersion?: unknown } | null)?.apiVersion;
    if (isClusterNetworkPolicy(updateGroupVersion, updateKind)) return this.#cnp.process(update, 'cnp');
    if (updateKind === 'Node' && updateGroupVersion === 'v1') return this.#cnp.process(update, 'node');
    if (updateKind === ENDPOINT_SLICE_KIND && updateGroupVersion === ENDPOINT_SLICE_API_VERSION) return this.#endpointSlice(update);
    if (update.op === 'delete' && !isKind(update.kind) && !isStagedKind(update.kind)) {
      this.#onInvalid({ kind: update.kind, name: update.name, reason: `not a kind the calc graph reads (${updateApiVersion(update)})` });
      return [];
    }
    if (update.op === 'delete') return isStagedKind(update.kind) ? this.#deleteStaged(update.kind, update.name, update.namespace ?? '') : this.#delete(update.kind as V3Kind, update.name, update.namespace ?? '');
    const raw = update.resource as unknown as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } | null } | null;
    const kind = raw?.kind;
    const name = raw?.metadata?.name;
    if (isStagedKind(kind) && typeof name === 'string' && name !== '') return this.#staged(kind, name, update.resource);
    if (typeof kind !== 'string' || typeof name !== 'string' || name === '' || !isKind(kind)) {
      this.#onInvalid({ kind: String(kind), name: String(name), reason: 'not a keyable v3 object' });
      return [];
    }
    let resource: V3Resource;
    try {
      resource = defaulted(update.resource as V3Resource);
      const findings = validateResource(resource);
      // Most objects have no findings at all: no filtered copy for them.
      const errors = findings.length === 0 ? findings : findings.filter(isError);
      if (errors.length > 0) {
        throw new ConversionError(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
      }
      return this.#convert(resource);
    } catch (err) {
      const rawNs = raw?.metadata?.namespace;
      const ns = typeof rawNs === 'string' && rawNs !== '' ? rawNs : NAMESPACED_KINDS.has(kind) ? 'default' : '';
      const reason = err instanceof Error ? err.message : String(err);
      // A policy or profile fails closed: deleting it would lift what it denied.
      if (kind === 'NetworkPolicy' || kind === 'GlobalNetworkPolicy' || kind === 'Profile') return this.#standIn(kind, name, ns, update.resource, reason);
      this.#onInvalid({ kind, name, ...(ns === '' ? {} : { namespace: ns }), reason });
      return this.#delete(kind, name, ns);
    }
  }

  /** An EndpointSlice: its Service's members (service-index.ts); held as deleted when it names no Service. */
  #endpointSlice(update: AnyUpdate): ModelUpdate[] {
    if (update.op === 'delete') return [{ kind: 'endpointslice', key: endpointSliceKey(update.namespace, update.name), value: null }];
    const raw = update.resource as unknown as K8sEndpointSlice;
    const name = raw.metadata?.name;
    if (typeof name !== 'string' || name === '') {
      this.#onInvalid({ kind: ENDPOINT_SLICE_KIND, name: String(name), reason: 'not a keyable object' });
      return [];
    }
    const key = endpointSliceKey(raw.metadata?.namespace, name);
    return [{ kind: 'endpointslice', key, value: endpointSliceModel(raw) ?? null }];
  }

  /** A staged object: its counterpart validated and converted, filed under the staged kind. */
  #staged(kind: StagedKind, name: string, raw: unknown): ModelUpdate[] {
    const rawNs = (raw as { metadata?: { namespace?: unknown } }).metadata?.namespace;
    const ns = kind === 'StagedGlobalNetworkPolicy' ? '' : typeof rawNs === 'string' && rawNs !== '' ? rawNs : 'default';
    try {
      const staged = readStaged(raw);
      if (staged.action === 'Delete') return this.#deleteStaged(kind, name, ns);
      let counterpart: V3Resource;
      if (staged.kind === 'StagedKubernetesNetworkPolicy') {
        // As the controllers write its enforced counterpart: rules that cannot be converted are left out.
        counterpart = defaulted(convertNetworkPolicy(staged.counterpart as K8sNetworkPolicy).policy);
      } else counterpart = defaulted(staged.counterpart as V3Resource);
      const errors = validateResource(counterpart).filter(isError);
      if (errors.length > 0) throw new ConversionError(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
      const enforced = convertPolicy(counterpart as Extract<V3Resource, { kind: 'NetworkPolicy' | 'GlobalNetworkPolicy' }>);
      const id: PolicyId = { ...enforced.id, kind: kind === 'StagedGlobalNetworkPolicy' ? 'StagedGlobalNetworkPolicy' : 'StagedNetworkPolicy' };
      return this.#setPolicy(`${kind}/${ns}/${name}`, { ...enforced, id, key: policyIdKey(id) });
    } catch (err) {
      this.#onInvalid({ kind, name, ...(ns === '' ? {} : { namespace: ns }), reason: err instanceof Error ? err.message : String(err) });
      return this.#deleteStaged(kind, name, ns);
    }
  }

  #deleteStaged(kind: StagedKind, name: string, namespace: string): ModelUpdate[] {
    return this.#deletePolicy(`${kind}/${kind === 'StagedGlobalNetworkPolicy' ? '' : namespace || 'default'}/${name}`);
  }

  /** Holds `policy` for the object `rk` (`<kind>/<ns>/<name>`), removing the key it held before if that changed (a tier move). */
  #setPolicy(rk: string, policy: ModelPolicy): ModelUpdate[] {
    const out: ModelUpdate[] = [];
    const old = this.#policyKeys.get(rk);
    if (old !== undefined && old !== policy.key) out.push({ kind: 'policy', key: old, value: null });
    this.#policyKeys.set(rk, policy.key);
    out.push({ kind: 'policy', key: policy.key, value: policy });
    return out;
  }

  #deletePolicy(rk: string): ModelUpdate[] {
    const key = this.#policyKeys.get(rk);
    if (key === undefined) return [];
    this.#policyKeys.delete(rk);
    return [{ kind: 'policy', key, value: null }];
  }

  #delete(kind: V3Kind, name: string, namespace: string): ModelUpdate[] {
    switch (kind) {
      case 'NetworkPolicy':
      case 'GlobalNetworkPolicy': {
        const rk = `${kind}/${kind === 'NetworkPolicy' ? namespace || 'default' : ''}/${name}`;
        this.#markFailClosed(rk, undefined);
        return this.#deletePolicy(rk);
      }
      case 'Tier':
        return [{ kind: 'tier', key: name, value: null }];
      case 'Profile':
        this.#markFailClosed(`Profile//${name}`, undefined);
        return [{ kind: 'profile', key: name, value: null }];
      case 'WorkloadEndpoint':
        return [{ kind: 'endpoint', key: `${namespace || 'default'}/${name}`, value: null }];
      case 'NetworkSet':
        return [{ kind: 'networkset', key: `${namespace || 'default'}/${name}`, value: null }];
      case 'GlobalNetworkSet':
        return [{ kind: 'networkset', key: name, value: null }];
      case 'HostEndpoint':
        return [{ kind: 'endpoint', key: hostEndpointModelKey(name), value: null }];
    }
  }

  #convert(r: V3Resource): ModelUpdate[] {
    switch (r.kind) {
      case 'NetworkPolicy':
      case 'GlobalNetworkPolicy': {
        const policy = convertPolicy(r);
        const rk = `${r.kind}/${policy.id.namespace ?? ''}/${r.metadata.name}`;
        this.#markFailClosed(rk, undefined);
        return this.#setPolicy(rk, policy);
      }
      case 'Tier':
        return [
          {
            kind: 'tier',
            key: r.metadata.name,
            value: { name: r.metadata.name, order: r.spec.order, defaultAction: r.spec.defaultAction ?? 'Deny' },
          },
        ];
      case 'Profile': {
        const value = {
          name: r.metadata.name,
          labels: { ...(r.spec.labelsToApply ?? {}) },
          inboundRules: (r.spec.ingress ?? []).map((rule) => convertRule(rule, undefined)),
          outboundRules: (r.spec.egress ?? []).map((rule) => convertRule(rule, undefined)),
        };
        this.#markFailClosed(`Profile//${r.metadata.name}`, undefined);
        return [{ kind: 'profile', key: r.metadata.name, value }];
      }
      case 'WorkloadEndpoint': {
        // Every remote endpoint's model stays in the graph: what endpoints share (labels,
        // profiles, ports, the namespace and node names) is interned, see interner.ts.
        const intern = this.#intern;
        const ns = intern.string(r.metadata.namespace ?? 'default');
        const nets = r.spec.ipNetworks ?? [];
        let ipv4Nets: string[];
        let ipv6Nets: string[] = NO_NETS;
        const only = nets.length === 1 ? (nets[0] as string) : undefined;
        // The usual endpoint: one canonical IPv4 address, held in a list of exactly one (a list
        // grown by push reserves room for 16 more, for as long as the endpoint lives).
        if (only !== undefined && isCanonicalIPv4HostCidr(only)) ipv4Nets = [only];
        else {
          ipv4Nets = [];
          ipv6Nets = [];
          for (const net of nets) {
            const n = normaliseNet(net);
            (n.includes(':') ? ipv6Nets : ipv4Nets).push(n);
          }
        }
        // Held by the graph's indexes for as long as the endpoint lives: flat, not a rope.
        const key = flat(`${ns}/${r.metadata.name}`);
        // One literal of one shape (no spread: that copies through the runtime); the rare
        // QoS limits are added after.
        const value: { -readonly [K in keyof ModelEndpoint]: ModelEndpoint[K] } = {
          key,
          endpointType: 'workload',
          namespace: ns,
          name: r.metadata.name,
          node: intern.string(r.spec.node ?? ''),
          labels: endpointLabels(intern, r, ns),
          profileIds: intern.strings(r.spec.profiles ?? []),
          ipv4Nets,
          ipv6Nets: ipv6Nets.length === 0 ? intern.strings(ipv6Nets) : ipv6Nets,
          ports: endpointPorts(intern, r.spec.ports ?? []),
          interfaceName: r.spec.interfaceName ?? '',
          mac: r.spec.mac ?? '',
        };
        const qosControls = qosControlsOf(r.spec.qosControls);
        if (qosControls !== undefined) value.qosControls = qosControls;
        return [{ kind: 'endpoint', key, value }];
      }
      case 'NetworkSet':
      case 'GlobalNetworkSet': {
        const namespace = r.kind === 'NetworkSet' ? (r.metadata.namespace ?? 'default') : undefined;
        const labels: Record<string, string> = { ...(r.metadata.labels ?? {}) };
        // libcalico-go's NetworkSet processor: the namespace label, and the namespace's profile
        // so that its labels are inherited (namespaceSelector).
        if (namespace !== undefined) labels[NAMESPACE_LABEL] = namespace;
        const key = namespace === undefined ? r.metadata.name : `${namespace}/${r.metadata.name}`;
        return [
          {
            kind: 'networkset',
            key,
            value: {
              key,
              kind: r.kind,
              namespace,
              name: r.metadata.name,
              labels,
              profileIds: namespace === undefined ? [] : [`${NAMESPACE_PROFILE_PREFIX}${namespace}`],
              nets: [...new Set((r.spec.nets ?? []).map(normaliseCidr))],
            },
          },
        ];
      }
      case 'HostEndpoint': {
        const value = hostEndpointModel(this.#intern, r);
        return [{ kind: 'endpoint', key: value.key, value }];
      }
    }
  }
}

/**
 * A WorkloadEndpoint's labels as Felix gets them, interned: named by a key first, so an
 * endpoint whose labels are already held builds nothing.
 *
 * Every label that proves where an endpoint is or who runs it is the processor's, never the
 * object's own (a pod's labels are written by whoever can create the pod):
 * - own labels prefixed `pcns.` or `pcsa.` are dropped (libcalico-go's WorkloadEndpoint
 *   update processor), so an endpoint cannot shadow the namespace or service-account labels
 *   its `kns.`/`ksa.` profiles give it (own labels win over inherited ones, §2.3);
 * - `projectcalico.org/namespace` and `projectcalico.org/orchestrator` are the object's
 *   namespace and `spec.orchestrator` (clientv3 `updateLabelsForStorage` stamps both on
 *   every endpoint it stores, an empty orchestrator included);
 * - `projectcalico.org/serviceaccount` is `spec.serviceAccountName` whenever that is set,
 *   whatever its length (the update processor again: the stored endpoint omits the label
 *   for a name of 63 characters or more, which is no valid label value). With no service
 *   account the object's own label stays, as in Calico.
 */
function endpointLabels(intern: Interner, r: Extract<V3Resource, { kind: 'WorkloadEndpoint' }>, ns: string): Readonly<Record<string, string>> {
  const own = r.metadata.labels;
  const orchestrator = r.spec.orchestrator ?? '';
  const sa = r.spec.serviceAccountName ?? '';
  const stamped = (k: string): boolean =>
    k === NAMESPACE_LABEL || k === ORCHESTRATOR_LABEL || (sa !== '' && k === SERVICE_ACCOUNT_LABEL) || k.startsWith(NAMESPACE_LABEL_PREFIX) || k.startsWith(SERVICE_ACCOUNT_LABEL_PREFIX);
  // NUL cannot appear in a label key or value (validation), so it separates unambiguously:
  // `k\0v\0…k\0v\0\0ns\0orchestrator\0sa`. Joined from a reused list, so the key is one flat
  // string, not a rope of a dozen pieces flattened again to be hashed.
  const parts = KEY_PARTS;
  parts.length = 0;
  if (own !== undefined) {
    for (const k in own) {
      if (!Object.prototype.hasOwnProperty.call(own, k) || stamped(k)) continue;
      parts.push(k, own[k] as string);
    }
  }
  parts.push('', ns, orchestrator, sa);
  const key = parts.join('\u0000');
  const held = intern.held<Readonly<Record<string, string>>>('wep-labels', key);
  if (held !== undefined) return held;
  const labels: Record<string, string> = {};
  if (own !== undefined) for (const k in own) if (Object.prototype.hasOwnProperty.call(own, k) && !stamped(k)) labels[intern.string(k)] = intern.string(own[k] as string);
  labels[NAMESPACE_LABEL] = ns;
  labels[ORCHESTRATOR_LABEL] = intern.string(orchestrator);
  if (sa !== '') labels[SERVICE_ACCOUNT_LABEL] = intern.string(sa);
  return intern.hold('wep-labels', key, labels);
}

/** The empty address list (never pushed to: a list with addresses is a new one). */
const NO_NETS: string[] = [];

/** Scratch list the interning keys are joined from (never held: joined and emptied per use). */
const KEY_PARTS: string[] = [];

const NO_PORTS: readonly EndpointPort[] = Object.freeze([]);

/**
 * The named TCP/UDP/SCTP ports of an endpoint (Felix ignores the rest), interned under their
 * text as written, so a known list is not converted again.
 */
function endpointPorts(intern: Interner, raw: readonly { name?: string; protocol?: unknown; port: number }[]): readonly EndpointPort[] {
  if (raw.length === 0) return NO_PORTS;
  // `name\0protocol\0port\0` per port, joined flat as the label keys are.
  const parts = KEY_PARTS;
  parts.length = 0;
  for (const p of raw) parts.push(p.name ?? '', String(p.protocol), String(p.port));
  parts.push('');
  const key = parts.join('\u0000');
  const held = intern.held<readonly EndpointPort[]>('wep-ports', key);
  if (held !== undefined) return held;
  const ports: EndpointPort[] = [];
  for (const p of raw) {
    if (p.name === undefined || p.name === '') continue;
    const proto = parseProtocol(p.protocol);
    if (!proto.ok) throw new ConversionError(proto.message);
    const name = proto.value.number === 6 ? 'tcp' : proto.value.number === 17 ? 'udp' : proto.value.number === 132 ? 'sctp' : undefined;
    if (name === undefined) continue;
    ports.push(Object.freeze({ name: intern.string(p.name), protocol: name, port: p.port }));
  }
  return intern.hold('wep-ports', key, ports);
}

/** `applyDefaults` by value, without its deep copy (the input is never mutated either way). */
function defaulted(r: V3Resource): V3Resource {
  return withDefaults(r);
}

/** Canonical IPv4 host CIDRs (`10.0.0.1/32`, no leading zeros) need no re-normalising. */
function normaliseNet(net: string): string {
  return isCanonicalIPv4HostCidr(net) ? net : normaliseCidr(net);
}

/** What {@link hostEndpointModel} reads of a HostEndpoint (validated). */
interface HostEndpointFields {
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec: {
    readonly node?: string;
    readonly interfaceName?: string;
    readonly expectedIPs?: readonly string[];
    readonly profiles?: readonly string[];
    readonly ports?: readonly { name?: string; protocol?: unknown; port: number }[];
  };
}

/**
 * A HostEndpoint as the graph holds it (libcalico-go `hostendpointprocessor.go`): its own labels
 * as they are (no namespace label: only GlobalNetworkPolicies select it), its expectedIPs as
 * host networks split by family (what selector and named-port sets hold for it), its profiles
 * and named ports.
 */
function hostEndpointModel(intern: Interner, r: HostEndpointFields): ModelEndpoint {
  const ipv4Nets: string[] = [];
  const ipv6Nets: string[] = [];
  for (const ip of r.spec.expectedIPs ?? []) {
    const n = normaliseCidr(ip);
    const list = n.includes(':') ? ipv6Nets : ipv4Nets;
    if (!list.includes(n)) list.push(n);
  }
  const name = r.metadata.name;
  return {
    key: hostEndpointModelKey(name),
    endpointType: 'host',
    namespace: '',
    name,
    node: intern.string(r.spec.node ?? ''),
    labels: { ...(r.metadata.labels ?? {}) },
    profileIds: intern.strings(r.spec.profiles ?? []),
    ipv4Nets,
    ipv6Nets,
    ports: endpointPorts(intern, r.spec.ports ?? []),
    interfaceName: r.spec.interfaceName ?? '',
    mac: '',
  };
}

/**
 * Every declared kind, HostEndpoint included: whether the agent and the tools read a kind is
 * decided where they list it (api/kinds.ts watchers, api/unenforced-kinds.ts), not here.
 */
function isKind(kind: string): kind is V3Kind {
  return (DECLARED_V3_KINDS as readonly string[]).includes(kind);
}

/** `rules`, when given, are the spec's rules already converted (in order), not converted again. */
function convertPolicy(r: Extract<V3Resource, { kind: 'NetworkPolicy' | 'GlobalNetworkPolicy' }>, rules?: { inbound: ModelRule[]; outbound: ModelRule[] }): ModelPolicy {
  const spec = r.spec;
  const namespace = r.kind === 'NetworkPolicy' ? (r.metadata.namespace ?? 'default') : undefined;
  const id: PolicyId = {
    tier: spec.tier ?? 'default',
    name: r.metadata.name,
    ...(namespace === undefined ? {} : { namespace }),
    kind: r.kind,
  };
  const selector = policySelector(namespace, {
    ...(spec.selector === undefined ? {} : { selector: spec.selector }),
    ...(r.kind === 'GlobalNetworkPolicy' && r.spec.namespaceSelector !== undefined ? { namespaceSelector: r.spec.namespaceSelector } : {}),
    ...(spec.serviceAccountSelector === undefined ? {} : { serviceAccountSelector: spec.serviceAccountSelector }),
  });
  const types = spec.types ?? [];
  const gnp = r.kind === 'GlobalNetworkPolicy' ? r.spec : undefined;
  return {
    id,
    key: flat(policyIdKey(id)),
    order: spec.order,
    selector: flat(selector),
    inboundRules: rules?.inbound ?? (spec.ingress ?? []).map((rule) => convertRule(rule, namespace)),
    outboundRules: rules?.outbound ?? (spec.egress ?? []).map((rule) => convertRule(rule, namespace)),
    // Felix: empty types means both directions (back-compatibility).
    governsIngress: types.length === 0 || types.some((t) => t.toLowerCase() === 'ingress'),
    governsEgress: types.length === 0 || types.some((t) => t.toLowerCase() === 'egress'),
    untracked: gnp?.doNotTrack ?? false,
    preDnat: gnp?.preDNAT ?? false,
    applyOnForward: gnp?.applyOnForward ?? false,
  };
}

/**
 * A converted ClusterNetworkPolicy's model: as a GlobalNetworkPolicy's, of kind
 * `KubernetesClusterNetworkPolicy`. A rule the model cannot read (none should reach here: the
 * converter checks what it writes) fails closed as the converter's do: Allow dropped, any
 * other action a bare Deny.
 */
function clusterNetworkPolicyModel(gnp: GlobalNetworkPolicy): { model: ModelPolicy; converted: GlobalNetworkPolicy } {
  /** Each rule with its model, converted once; an unreadable one replaced by its fail-closed form. */
  const readable = (rules: readonly V3Rule[] | undefined): { rules: V3Rule[]; models: ModelRule[] } | undefined => {
    if (rules === undefined) return undefined;
    const out: { rules: V3Rule[]; models: ModelRule[] } = { rules: [], models: [] };
    for (const rule of rules) {
      try {
        const model = convertRule(rule, undefined);
        out.rules.push(rule);
        out.models.push(model);
      } catch {
        if (rule.action === 'Allow') continue;
        const deny: V3Rule = { action: 'Deny', ...(rule.metadata === undefined ? {} : { metadata: rule.metadata }) };
        out.rules.push(deny);
        out.models.push(convertRule(deny, undefined));
      }
    }
    return out;
  };
  const ingress = readable(gnp.spec.ingress);
  const egress = readable(gnp.spec.egress);
  const converted: GlobalNetworkPolicy = {
    ...gnp,
    spec: { ...gnp.spec, ...(ingress === undefined ? {} : { ingress: ingress.rules }), ...(egress === undefined ? {} : { egress: egress.rules }) },
  };
  const base = convertPolicy(converted, { inbound: ingress?.models ?? [], outbound: egress?.models ?? [] });
  const id: PolicyId = { ...base.id, kind: 'KubernetesClusterNetworkPolicy' };
  return { model: { ...base, id, key: policyIdKey(id) }, converted };
}

/**
 * The v1 selector of a policy (§3.8), built as libcalico-go's processors build it: a
 * NetworkPolicy's by `namespacedPolicySelector`, a GlobalNetworkPolicy's by
 * `globalPolicySelector`. Throws a ConversionError for a selector that cannot be parsed.
 */
function policySelector(namespace: string | undefined, fields: PolicySelectorFields): string {
  return namespace === undefined ? globalPolicySelector(fields) : namespacedPolicySelector(fields, namespace);
}

/**
 * A NetworkPolicy's selector (libcalico-go `ConvertNetworkPolicyV3ToV1Value`):
 * `(<selector>) && projectcalico.org/namespace == '<ns>'`, then `&& <pcsa. serviceAccountSelector>`.
 * No `all()` is rewritten here: a NetworkPolicy's `serviceAccountSelector: all()` selects every
 * endpoint of its namespace, service account or not, as in Calico.
 */
function namespacedPolicySelector(spec: { selector?: string; serviceAccountSelector?: string }, namespace: string): string {
  const sel = spec.selector?.trim() ?? '';
  const inNamespace = `${NAMESPACE_LABEL} == '${namespace}'`;
  if (sel !== '' && (spec.serviceAccountSelector === undefined || spec.serviceAccountSelector.trim() === '')) return canonicalAnd(canonical(sel), inNamespace);
  let text = sel === '' ? inNamespace : `(${canonical(sel)}) && ${inNamespace}`;
  text = appendPrefixed(text, spec.serviceAccountSelector, SERVICE_ACCOUNT_LABEL_PREFIX);
  return canonical(text);
}

/**
 * A GlobalNetworkPolicy's selector (libcalico-go `ConvertGlobalNetworkPolicyV3ToV1Value`): its
 * `namespaceSelector`, `pcns.`-prefixed, is AND-ed in and then every `all()` of the text so far
 * becomes `has(projectcalico.org/namespace)`; then its `serviceAccountSelector`, `pcsa.`-prefixed,
 * and every `all()` so far becomes `has(projectcalico.org/serviceaccount)`. So
 * `serviceAccountSelector: all()` selects only endpoints with a service account, never a host
 * endpoint, and an `all()` in the policy's own selector narrows the same way. The rewrite is
 * Calico's textual one (the selector as written, the prefixed parts as printed), so a value
 * that spells `all()` is rewritten too, as Felix gets it.
 */
function globalPolicySelector(spec: { selector?: string; namespaceSelector?: string; serviceAccountSelector?: string }): string {
  let text = spec.selector ?? '';
  if ((spec.namespaceSelector ?? '') !== '') {
    text = appendPrefixed(text, spec.namespaceSelector, NAMESPACE_LABEL_PREFIX).replaceAll('all()', `has(${NAMESPACE_LABEL})`);
  }
  if ((spec.serviceAccountSelector ?? '') !== '') {
    text = appendPrefixed(text, spec.serviceAccountSelector, SERVICE_ACCOUNT_LABEL_PREFIX).replaceAll('all()', `has(${SERVICE_ACCOUNT_LABEL})`);
  }
  return text.trim() === '' ? 'all()' : canonical(text);
}

/** libcalico-go `prefixAndAppendSelector`: `(<current>) && <prefixed>`, or `<prefixed>` alone. */
function appendPrefixed(current: string, selector: string | undefined, prefix: string): string {
  if (selector === undefined || selector.trim() === '') return current;
  const prefixed = prefixLabels(parse(selector), prefix).toString();
  return current.trim() === '' ? prefixed : `(${current}) && ${prefixed}`;
}

function parse(text: string): Selector {
  try {
    return parseSelector(text.trim());
  } catch (err) {
    throw new ConversionError(`selector ${JSON.stringify(text)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The selector's text for combining and re-parsing downstream: canonical, except that a
 * negated negation keeps its parentheses, so the tree the rule scanner parses — and so the IP
 * set's ID — is the one Calico gets from the text as written (`!(!has(a))` → `!!has(a)`).
 *
 * A pure function of `text`, so remembered (bounded, like the validator's parse cache): policies
 * repeat their rules' selectors across namespaces. Only the tree is built, not the matcher a
 * `Selector` compiles (the graph compiles what it evaluates); a parser tree needs no
 * normalising, so the text is the `Selector`'s. A text that does not parse is never remembered.
 */
function canonical(text: string): string {
  let out = CANONICAL.get(text);
  if (out === undefined) {
    out = toRoundTripString(parseNode(text));
    if (CANONICAL.size >= CANONICAL_MAX) CANONICAL.clear();
    CANONICAL.set(text, out);
  }
  return out;
}

const CANONICAL = new Map<string, string>();
const CANONICAL_MAX = 4096;

/**
 * `canonical(`(${a}) && (${b})`)` without parsing the joined text, which is new for nearly every
 * policy (it names the policy's namespace): the parser reads a parenthesised text as that
 * text's own tree and `x && y` as a two-operand `and` (it never flattens a nested one), so the
 * tree is built from the trees of `a` and `b`, each parsed once and remembered. Both are texts
 * the processor printed, which parse; joined they nest one level deeper, far inside the
 * parser's limit for a selector the CRD's length admits. `b` may be given bare when it is one
 * comparison (`(a) && k == 'v'` parses the same).
 */
function canonicalAnd(a: string, b: string): string {
  return toRoundTripString(makeGroup('and', [tree(a), tree(b)]));
}

function tree(text: string): SelectorNode {
  let node = TREES.get(text);
  if (node === undefined) {
    node = parseNode(text);
    if (TREES.size >= CANONICAL_MAX) TREES.clear();
    TREES.set(text, node);
  }
  return node;
}

/** Parsed trees by text (immutable, never leave this module but as printed text). */
const TREES = new Map<string, SelectorNode>();

function parseNode(text: string): SelectorNode {
  try {
    return parseSelectorNode(text.trim());
  } catch (err) {
    throw new ConversionError(`selector ${JSON.stringify(text)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * A rule's `namespaceSelector` as libcalico-go's `getEndpointSelector` makes it: `pcns.`-prefixed
 * and printed, then `all()` → `has(projectcalico.org/namespace)` and `global()` →
 * `!has(projectcalico.org/namespace)`, textually (§3.8).
 */
function namespaceSelector(text: string): string {
  return prefixLabels(parse(text), NAMESPACE_LABEL_PREFIX)
    .toString()
    .replaceAll('all()', `has(${NAMESPACE_LABEL})`)
    .replaceAll('global()', `!has(${NAMESPACE_LABEL})`);
}

/**
 * A rule's `serviceAccounts` (libcalico-go `parseServiceAccounts`): the `pcsa.`-prefixed
 * selector AND-ed with `projectcalico.org/serviceaccount in {<names>}` — the endpoint's own,
 * stamped label (`endpointLabels`), which a pod label can never override; '' for neither.
 */
function serviceAccountSelector(sa: { names?: readonly string[]; selector?: string } | undefined): string {
  const sel = sa?.selector ?? '';
  const prefixed = sel.trim() === '' ? '' : prefixLabels(parse(sel), SERVICE_ACCOUNT_LABEL_PREFIX).toString();
  const names = sa?.names ?? [];
  if (names.length === 0) return prefixed;
  const byName = toCanonicalString(parseNode(`${SERVICE_ACCOUNT_LABEL} in { '${names.join("', '")}' }`));
  return prefixed === '' ? byName : `(${prefixed}) && (${byName})`;
}

const ACTION: Readonly<Record<string, RuleAction>> = { Allow: 'allow', Deny: 'deny', Log: 'log', Pass: 'next-tier' };

function convertRule(rule: V3Rule, namespace: string | undefined): ModelRule {
  const action = ACTION[rule.action];
  if (action === undefined) throw new ConversionError(`unknown action ${JSON.stringify(rule.action)}`);
  const proto = rule.protocol === undefined ? undefined : protocolValue(rule.protocol);
  const notProto = rule.notProtocol === undefined ? undefined : protocolValue(rule.notProtocol);
  const npp = proto === 'tcp' || proto === 'udp' || proto === 'sctp' ? proto : 'any';
  // Built field by field in the model's key order, not from conditional spreads: each spread
  // of an object literal is a clone through the runtime, and this runs for every rule of a sync.
  const out: { -readonly [K in keyof ModelRule]: ModelRule[K] } = { action } as ModelRule;
  if (rule.ipVersion !== undefined) out.ipVersion = rule.ipVersion;
  if (proto !== undefined) out.protocol = proto;
  if (notProto !== undefined) out.notProtocol = notProto;
  out.namedPortProtocol = npp;
  if (rule.icmp?.type !== undefined) out.icmp = rule.icmp.code === undefined ? { type: rule.icmp.type } : { type: rule.icmp.type, code: rule.icmp.code };
  if (rule.notICMP?.type !== undefined) out.notIcmp = rule.notICMP.code === undefined ? { type: rule.notICMP.type } : { type: rule.notICMP.type, code: rule.notICMP.code };
  out.src = convertEntity(rule.source, namespace);
  out.dst = convertEntity(rule.destination, namespace);
  return out;
}

const PROTOCOL_BY_NUMBER: Readonly<Record<number, string>> = { 6: 'tcp', 17: 'udp', 1: 'icmp', 58: 'icmpv6', 132: 'sctp', 136: 'udplite' };

function protocolValue(spec: string | number): string | number {
  const p = parseProtocol(spec);
  if (!p.ok) throw new ConversionError(p.message);
  return p.value.name?.toLowerCase() ?? PROTOCOL_BY_NUMBER[p.value.number] ?? p.value.number;
}

/**
 * An entity's selector as libcalico-go's `getEndpointSelector` builds it: the service-account
 * part, then the entity's selector, AND-ed; scoped by the namespace part (its namespaceSelector,
 * else the policy's namespace) whenever the entity selects endpoints at all (§3.8 step 2).
 * Built in Calico's order and shape, so the canonical text — and the IP set's ID — is Calico's.
 */
function convertEntity(e: EntityRule | undefined, namespace: string | undefined): ModelEntity {
  const sel = e?.selector?.trim() ?? '';
  const notSel = e?.notSelector?.trim() ?? '';
  const nsSelText = e?.namespaceSelector?.trim() ?? '';
  const saSel = serviceAccountSelector(e?.serviceAccounts);
  const selPart = sel === '' ? '' : canonical(sel);
  let selector = saSel === '' ? selPart : selPart === '' ? saSel : `(${saSel}) && (${selPart})`;
  const nsSel = nsSelText !== '' ? namespaceSelector(nsSelText) : namespace !== undefined ? `${NAMESPACE_LABEL} == '${namespace}'` : '';
  // The scoped selector's canonical text, built from its two parts' trees (canonicalAnd).
  let scoped: string | undefined;
  if (nsSel !== '' && (selector !== '' || notSel !== '' || nsSelText !== '')) {
    if (selector === '') selector = nsSel;
    else scoped = canonicalAnd(nsSel, selector);
  }
  const svcName = e?.services?.name ?? '';
  const svcNs = e?.services?.namespace ?? '';
  const ports: PortRange[] = [];
  const namedPorts: string[] = [];
  const notPorts: PortRange[] = [];
  const notNamedPorts: string[] = [];
  splitPorts(e?.ports ?? [], ports, namedPorts);
  splitPorts(e?.notPorts ?? [], notPorts, notNamedPorts);
  return {
    selector: flat(scoped ?? (selector === '' ? '' : canonical(selector))),
    notSelector: notSel === '' ? '' : flat(canonical(notSel)),
    nets: orNone((e?.nets ?? []).map(normaliseCidr)),
    notNets: orNone((e?.notNets ?? []).map(normaliseCidr)),
    ports: orNone(ports),
    namedPorts: orNone(namedPorts),
    notPorts: orNone(notPorts),
    notNamedPorts: orNone(notNamedPorts),
    service: svcName === '' ? '' : `${svcNs !== '' ? svcNs : (namespace ?? '')}/${svcName}`,
  };
}

/**
 * `list`, or the one shared frozen empty list when it is empty: most rules' entities leave
 * most lists empty (10,000 policies' rules held ~12 MB of empty arrays, each its own object).
 */
function orNone<T>(list: readonly T[]): readonly T[] {
  return list.length === 0 ? (NONE as readonly T[]) : list;
}

const NONE: readonly never[] = Object.freeze([]);

function splitPorts(specs: readonly (string | number)[], ranges: PortRange[], names: string[]): void {
  for (const spec of specs) {
    const p = parsePort(spec);
    if (!p.ok) throw new ConversionError(p.message);
    if (p.value.kind === 'named') names.push(p.value.name);
    else ranges.push({ first: p.value.min, last: p.value.max });
  }
}

/** The numeric QoS fields Felix's proto carries (`ModelWorkloadEndpointToProto`; DSCP too, as a `QoSPolicy`). */
const QOS_FIELDS = [
  'ingressBandwidth',
  'egressBandwidth',
  'ingressBurst',
  'egressBurst',
  'ingressPeakrate',
  'egressPeakrate',
  'ingressMinburst',
  'egressMinburst',
  'ingressPacketRate',
  'egressPacketRate',
  'ingressPacketBurst',
  'egressPacketBurst',
  'ingressMaxConnections',
  'egressMaxConnections',
] as const satisfies readonly (keyof QoSControls)[];

/**
 * The non-zero limits of `spec.qosControls`, or `undefined` when there are none: a zero field
 * means "no limit" in Felix, so it is left out rather than carried.
 */
function qosControlsOf(qos: Readonly<Record<string, unknown>> | undefined): QoSControls | undefined {
  if (qos === undefined) return undefined;
  const out: Record<string, number | string> = {};
  let any = false;
  const dscp = qos['dscp'];
  if (typeof dscp === 'number' || typeof dscp === 'string') {
    out['dscp'] = dscp;
    any = true;
  }
  for (const f of QOS_FIELDS) {
    const v = qos[f];
    if (typeof v === 'number' && v > 0) {
      out[f] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}
