/**
 * The `projectcalico.org/v3` resources Tessera reads, as they appear in YAML/JSON.
 *
 * Field names and meanings follow Calico's API (`projectcalico/api`,
 * `pkg/apis/projectcalico/v3`: networkpolicy.go, globalnetworkpolicy.go, policy_common.go,
 * tier.go, profile.go; WorkloadEndpoint from `libcalico-go/lib/apis/internalapi`). These are
 * wire shapes, not validated values: a value typed here may still be invalid (a port string
 * like "80-90", a selector that does not parse). Run `applyDefaults` then `validateResource`
 * before trusting one; after that, parse helpers (`parsePort`, `parseProtocol`,
 * `parseCidr`) give typed values.
 *
 * Optional fields are optional exactly where Calico's are (`omitempty`); after
 * `applyDefaults` a policy always has `spec.tier` and `spec.types`, and a Tier always has
 * `spec.defaultAction`.
 */

export const API_GROUP = 'projectcalico.org';
export const API_VERSION = 'projectcalico.org/v3';

export type V3Kind = 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'Tier' | 'Profile' | 'WorkloadEndpoint' | 'NetworkSet' | 'GlobalNetworkSet';

export const V3_KINDS: readonly V3Kind[] = [
  'NetworkPolicy',
  'GlobalNetworkPolicy',
  'Tier',
  'Profile',
  'WorkloadEndpoint',
  'NetworkSet',
  'GlobalNetworkSet',
];

/**
 * The profile carrying a namespace's labels, `kns.<namespace>` (kube-controllers'): workload
 * endpoints and namespaced network sets inherit the namespace's labels through it.
 */
export const NAMESPACE_PROFILE_PREFIX = 'kns.';

/** Kinds whose objects live in a namespace; the others are cluster-scoped. */
export const NAMESPACED_KINDS: ReadonlySet<V3Kind> = new Set<V3Kind>(['NetworkPolicy', 'WorkloadEndpoint', 'NetworkSet']);

/** The subset of Kubernetes ObjectMeta that Tessera reads or preserves. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** What a rule does when it matches (`felix/rules/policy.go`; see calico-semantics §4.6). */
export type Action = 'Allow' | 'Deny' | 'Log' | 'Pass';
export const ACTIONS: readonly Action[] = ['Allow', 'Deny', 'Log', 'Pass'];

export type PolicyType = 'Ingress' | 'Egress';
export const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

/** The only performance hint Calico defines. */
export type PolicyPerformanceHint = 'AssumeNeededOnEveryNode';

/** A port as written: `80`, `"80"`, `"8000:8080"` or a named port `"http"` (see port.ts). */
export type PortSpec = number | string;

/** A protocol as written: `TCP`, `UDP`, `ICMP`, `ICMPv6`, `SCTP`, `UDPLite`, or 1–255. */
export type ProtocolSpec = number | string;

/** ICMP match. `code` requires `type` (an iptables limitation). Type 0–254, code 0–255. */
export interface ICMPFields {
  type?: number;
  code?: number;
}

/** One HTTP path match: exactly one of `exact` and `prefix`. */
export interface HTTPPath {
  exact?: string;
  prefix?: string;
}

/**
 * Application-layer match. Calico enforces it only with its L7 proxy; Tessera accepts it
 * so existing manifests load, and reports it as unsupported (a validation warning).
 */
export interface HTTPMatch {
  methods?: string[];
  paths?: HTTPPath[];
}

/** Matches pods by service account: names and selector are AND-ed. */
export interface ServiceAccountMatch {
  names?: string[];
  selector?: string;
}

/** Matches the endpoints of a Kubernetes Service (`namespace` defaults to the policy's). */
export interface ServiceMatch {
  name?: string;
  namespace?: string;
}

/**
 * The source or destination half of a rule. Every criterion present must match; each
 * positive criterion has a negated `not*` twin.
 */
export interface EntityRule {
  nets?: string[];
  notNets?: string[];
  selector?: string;
  notSelector?: string;
  namespaceSelector?: string;
  ports?: PortSpec[];
  notPorts?: PortSpec[];
  serviceAccounts?: ServiceAccountMatch;
  services?: ServiceMatch;
}

export interface RuleMetadata {
  annotations?: Record<string, string>;
}

/** A match (all criteria AND-ed) and the action to take when it matches. */
export interface Rule {
  action: Action;
  ipVersion?: 4 | 6;
  protocol?: ProtocolSpec;
  notProtocol?: ProtocolSpec;
  icmp?: ICMPFields;
  notICMP?: ICMPFields;
  source?: EntityRule;
  destination?: EntityRule;
  http?: HTTPMatch;
  metadata?: RuleMetadata;
}

export interface NetworkPolicySpec {
  /** The tier the policy belongs to; `default` when absent. */
  tier?: string;
  /** Lower orders apply first; absent means +∞ (last). */
  order?: number;
  /** Endpoints the policy applies to; empty means all() in the namespace. */
  selector?: string;
  /** Directions the policy governs; defaulted from the rule lists (calico-semantics §4.3). */
  types?: PolicyType[];
  ingress?: Rule[];
  egress?: Rule[];
  serviceAccountSelector?: string;
  performanceHints?: PolicyPerformanceHint[];
}

export interface GlobalNetworkPolicySpec extends NetworkPolicySpec {
  /** Restricts the policy to endpoints in matching namespaces. */
  namespaceSelector?: string;
  /** Untracked policy (raw table); requires applyOnForward. */
  doNotTrack?: boolean;
  /** Applies before DNAT (mangle table); ingress only; requires applyOnForward. */
  preDNAT?: boolean;
  applyOnForward?: boolean;
}

export interface TierSpec {
  /** Lower orders apply first; absent means +∞ (last). */
  order?: number;
  /** What happens to traffic reaching the end of the tier unmatched; `Deny` when absent. */
  defaultAction?: 'Deny' | 'Pass';
}

export interface ProfileSpec {
  ingress?: Rule[];
  egress?: Rule[];
  /** Labels every endpoint using the profile inherits. */
  labelsToApply?: Record<string, string>;
}

export interface WorkloadEndpointPort {
  name?: string;
  protocol: ProtocolSpec;
  port: number;
  hostPort?: number;
  hostIP?: string;
}

export interface IPNAT {
  internalIP: string;
  externalIP: string;
}

export interface WorkloadEndpointSpec {
  orchestrator?: string;
  workload?: string;
  node?: string;
  containerID?: string;
  pod?: string;
  endpoint?: string;
  serviceAccountName?: string;
  /** The endpoint's addresses, each a single address (`/32` or `/128`). */
  ipNetworks?: string[];
  ipNATs?: IPNAT[];
  ipv4Gateway?: string;
  ipv6Gateway?: string;
  /** Profiles applied after all tiers, in order (e.g. `kns.<ns>`, `ksa.<ns>.<sa>`). */
  profiles?: string[];
  /** Host-side interface; empty or absent: the agent resolves it from the host route (Calico requires it). */
  interfaceName?: string;
  mac?: string;
  /** Named ports, which rules can match by name. */
  ports?: WorkloadEndpointPort[];
  allowSpoofedSourcePrefixes?: string[];
  /** Bandwidth/packet-rate controls; accepted and not interpreted by Tessera. */
  qosControls?: Record<string, unknown>;
}

/**
 * A NetworkSet's or GlobalNetworkSet's spec (`networkset.go`, `globalnetworkset.go`): addresses
 * outside the cluster, selected by the set's labels like endpoints are. Each entry is a CIDR or
 * a single address (a full-length prefix); host bits are cleared, as Calico's conversion does.
 */
export interface NetworkSetSpec {
  nets?: string[];
}

interface ResourceBase<K extends V3Kind, S> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: ObjectMeta;
  spec: S;
}

export type NetworkPolicy = ResourceBase<'NetworkPolicy', NetworkPolicySpec>;
export type GlobalNetworkPolicy = ResourceBase<'GlobalNetworkPolicy', GlobalNetworkPolicySpec>;
export type Tier = ResourceBase<'Tier', TierSpec>;
export type Profile = ResourceBase<'Profile', ProfileSpec>;
export type WorkloadEndpoint = ResourceBase<'WorkloadEndpoint', WorkloadEndpointSpec>;
export type NetworkSet = ResourceBase<'NetworkSet', NetworkSetSpec>;
export type GlobalNetworkSet = ResourceBase<'GlobalNetworkSet', NetworkSetSpec>;

export type V3Resource = NetworkPolicy | GlobalNetworkPolicy | Tier | Profile | WorkloadEndpoint | NetworkSet | GlobalNetworkSet;

/** The resource type of a kind: `ResourceOfKind<'Tier'>` is `Tier`. */
export type ResourceOfKind<K extends V3Kind> = Extract<V3Resource, { kind: K }>;

/** A policy of either scope. */
export type Policy = NetworkPolicy | GlobalNetworkPolicy;
