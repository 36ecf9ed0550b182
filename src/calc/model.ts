/**
 * The internal model the calculation graph indexes: Felix's v1 view of the v3 resources
 * (calico-semantics §3.8), produced by the update processors (update-processor.ts).
 *
 * Invariants, relied on by every graph node:
 * - selectors are already namespace-scoped and `pcns.`/`pcsa.`-prefixed, as strings that
 *   parse (the processors drop anything that does not);
 * - rules have lower-case actions (`Pass` → `next-tier`), parsed ports split into numeric
 *   ranges and names, normalised nets;
 * - policy `types` are resolved to two booleans (empty types = both, as in Felix);
 * - values are immutable once emitted: a change is a new value under the same key.
 */
import type { PolicyId, PortRange, QoSControls, RuleAction, RuleProtocol } from '../proto/index.ts';

/** One side (source or destination) of a model rule. */
export interface ModelEntity {
  /** Positive selector (namespace scope and service accounts folded in); '' = none. */
  readonly selector: string;
  /** Negated selector; '' = none. */
  readonly notSelector: string;
  readonly nets: readonly string[];
  readonly notNets: readonly string[];
  readonly ports: readonly PortRange[];
  readonly namedPorts: readonly string[];
  readonly notPorts: readonly PortRange[];
  readonly notNamedPorts: readonly string[];
  /**
   * `services`: the Service `<namespace>/<name>` whose endpoints this side must be ('' =
   * none). The namespace is already defaulted to the policy's.
   */
  readonly service: string;
}

export interface ModelRule {
  readonly action: RuleAction;
  readonly ipVersion?: 4 | 6;
  readonly protocol?: RuleProtocol;
  readonly notProtocol?: RuleProtocol;
  /** Protocol for named-port sets: the rule protocol when tcp/udp/sctp, else `any`. */
  readonly namedPortProtocol: 'tcp' | 'udp' | 'sctp' | 'any';
  readonly icmp?: { readonly type: number; readonly code?: number };
  readonly notIcmp?: { readonly type: number; readonly code?: number };
  readonly src: ModelEntity;
  readonly dst: ModelEntity;
}

export interface ModelPolicy {
  readonly id: PolicyId;
  /** `policyIdKey(id)`. */
  readonly key: string;
  /** Absent = +∞ (sorts last). */
  readonly order: number | undefined;
  /** The v1 selector of the endpoints the policy applies to. */
  readonly selector: string;
  readonly inboundRules: readonly ModelRule[];
  readonly outboundRules: readonly ModelRule[];
  readonly governsIngress: boolean;
  readonly governsEgress: boolean;
  readonly untracked: boolean;
  readonly preDnat: boolean;
  readonly applyOnForward: boolean;
}

export interface ModelProfile {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly inboundRules: readonly ModelRule[];
  readonly outboundRules: readonly ModelRule[];
}

export interface ModelTier {
  readonly name: string;
  readonly order: number | undefined;
  readonly defaultAction: 'Deny' | 'Pass';
}

export interface EndpointPort {
  readonly name: string;
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
}

/**
 * A WorkloadEndpoint or a HostEndpoint: one shape, because every node of the graph but the
 * policy resolver treats them alike (Felix's label index, ARC and named-port index key both).
 */
export interface ModelEndpoint {
  /** `<namespace>/<name>` for a workload; {@link hostEndpointModelKey} for a host endpoint. */
  readonly key: string;
  /**
   * `host`: a HostEndpoint — no namespace (`''`), no namespace label, so only
   * GlobalNetworkPolicies select it; `ipv4Nets`/`ipv6Nets` are its `expectedIPs` as host
   * networks (what selector and named-port IP sets hold for it); `interfaceName` is its
   * `spec.interfaceName` (`*`, a name, or `''`); `mac` is `''`.
   */
  readonly endpointType: 'workload' | 'host';
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  /** Own labels, with the implicit `projectcalico.org/namespace` (and orchestrator) labels. */
  readonly labels: Readonly<Record<string, string>>;
  readonly profileIds: readonly string[];
  readonly ipv4Nets: readonly string[];
  readonly ipv6Nets: readonly string[];
  readonly ports: readonly EndpointPort[];
  readonly interfaceName: string;
  readonly mac: string;
  /** `spec.qosControls` without its zero fields; absent when no limit is set. */
  readonly qosControls?: QoSControls;
}

/**
 * A NetworkSet or GlobalNetworkSet (Felix `model.NetworkSet`): a selectable holder of CIDRs. A
 * namespaced set carries the `projectcalico.org/namespace` label and inherits its namespace's
 * labels through the `kns.<namespace>` profile, so namespaced rule selectors and
 * `namespaceSelector`s see it exactly as they see that namespace's endpoints.
 */
export interface ModelNetworkSet {
  /** `<namespace>/<name>` for a NetworkSet, `<name>` for a GlobalNetworkSet. */
  readonly key: string;
  readonly kind: 'NetworkSet' | 'GlobalNetworkSet';
  readonly namespace: string | undefined;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly profileIds: readonly string[];
  /** Normalised CIDRs (host bits cleared), both families, duplicates removed. */
  readonly nets: readonly string[];
}

/** A slice port as a `services` ports set reads it: protocol defaulted, name dropped. */
export interface EndpointSlicePort {
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
}

/**
 * A `discovery.k8s.io/v1` EndpointSlice as the service index reads it (Felix
 * `membersFromEndpointSlice`): the Service it belongs to, its endpoints' addresses (canonical,
 * both families, FQDNs dropped) and its numeric ports (a port without a number dropped).
 * Endpoint conditions are not carried: Felix ignores them.
 */
export interface ModelEndpointSlice {
  /** `<namespace>/<name>` of the slice. */
  readonly key: string;
  /** `<slice namespace>/<label kubernetes.io/service-name>`. */
  readonly service: string;
  readonly addresses: readonly string[];
  readonly ports: readonly EndpointSlicePort[];
}

/**
 * The graph key of a HostEndpoint: never a workload's `<namespace>/<name>` (no namespace
 * starts with `:`), so both kinds share the label and named-port indexes.
 */
export function hostEndpointModelKey(name: string): string {
  return `:hep/${name}`;
}

/** An update of the internal model: `value === null` deletes `key`. */
export type ModelUpdate =
  | { readonly kind: 'policy'; readonly key: string; readonly value: ModelPolicy | null }
  | { readonly kind: 'profile'; readonly key: string; readonly value: ModelProfile | null }
  | { readonly kind: 'tier'; readonly key: string; readonly value: ModelTier | null }
  | { readonly kind: 'endpoint'; readonly key: string; readonly value: ModelEndpoint | null }
  | { readonly kind: 'networkset'; readonly key: string; readonly value: ModelNetworkSet | null }
  | { readonly kind: 'endpointslice'; readonly key: string; readonly value: ModelEndpointSlice | null };

export type ModelKind = ModelUpdate['kind'];
