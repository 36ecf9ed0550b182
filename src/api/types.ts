/**
 * The `projectcalico.org/v3` resources Tessera reads, as they appear in YAML/JSON: the static
 * side of the schema declared once in schema.ts (and schema-rule.ts), so a field added there
 * is a field here. Only the envelope — apiVersion, kind, ObjectMeta — is written out, because
 * the CRDs leave `metadata` to the apiserver.
 *
 * These are wire shapes, not validated values: a value typed here may still be invalid (a port
 * string like "80-90", a selector that does not parse). Run `applyDefaults` then
 * `validateResource` before trusting one; after that, parse helpers (`parsePort`,
 * `parseProtocol`, `parseCidr`) give typed values.
 *
 * Optional fields are optional exactly where Calico's are (`omitempty`); after
 * `applyDefaults` a policy always has `spec.tier` and `spec.types`, and a Tier always has
 * `spec.defaultAction`.
 */
import { KINDS } from './kinds.ts';
import type { KindRow } from './kinds.ts';
import { KIND_SCHEMAS } from './schema.ts';
import { unreadKind } from './unenforced-kinds.ts';
import type {
  GlobalNetworkPolicySpec,
  HostEndpointSpec,
  NetworkPolicySpec,
  NetworkSetSpec,
  ProfileSpec,
  TierSpec,
  WorkloadEndpointSpec,
} from './schema.ts';
import type { Rule } from './schema-rule.ts';

export type {
  GlobalNetworkPolicySpec,
  HostEndpointPort,
  HostEndpointSpec,
  NetworkPolicySpec,
  NetworkSetSpec,
  PolicyPerformanceHint,
  PolicyType,
  ProfileSpec,
  TierSpec,
  WorkloadEndpointPort,
  WorkloadEndpointSpec,
} from './schema.ts';
export { POLICY_TYPES } from './schema.ts';
export type { Action, EntityRule, ICMPFields, Rule } from './schema-rule.ts';
export { ACTIONS } from './schema-rule.ts';

export const API_GROUP = 'projectcalico.org';
export const API_VERSION = 'projectcalico.org/v3';

/** The v3 kinds the schema declares: their types, validation and CRDs. */
export type V3Kind = keyof typeof KIND_SCHEMAS;

/** Every declared kind, in declaration order (validation's "must be one of …" lists them so). */
export const DECLARED_V3_KINDS: readonly V3Kind[] = Object.keys(KIND_SCHEMAS) as V3Kind[];

/**
 * The declared kinds the tools, the agent and the simulator read as input (`kindOf`), in
 * declaration order: every declared kind but those api/unenforced-kinds.ts still lists as not
 * enforced (HostEndpoint, until the calc graph enforces it). Such a kind is validated and has
 * its CRD, while every tool keeps reporting its objects NOT ENFORCED; removing its row there is
 * all it takes for the tools to read it.
 */
export const V3_KINDS: readonly V3Kind[] = DECLARED_V3_KINDS.filter((k) => unreadKind(API_VERSION, k).status !== 'not-enforced');

/**
 * The profile carrying a namespace's labels, `kns.<namespace>` (kube-controllers'): workload
 * endpoints and namespaced network sets inherit the namespace's labels through it.
 */
export const NAMESPACE_PROFILE_PREFIX = 'kns.';

/**
 * The prefixes of the labels `kns.`/`ksa.` profiles give their endpoints (`pcns.<namespace
 * label>`, `pcsa.<service-account label>`, plus `<prefix>projectcalico.org/name`). Only those
 * profiles may carry them: an endpoint's own labels under these prefixes are dropped before
 * matching (calc/update-processor.ts), since own labels win over inherited ones.
 */
export const NAMESPACE_LABEL_PREFIX = 'pcns.';
export const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';

/** Kinds whose objects live in a namespace (from the kind table); the others are cluster-scoped. */
export const NAMESPACED_KINDS: ReadonlySet<V3Kind> = new Set<V3Kind>(
  KINDS.filter((r: KindRow) => r.group === API_GROUP && r.namespaced && r.kind in KIND_SCHEMAS).map((r: KindRow) => r.kind as V3Kind),
);

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

/** A port as written: `80`, `"80"`, `"8000:8080"` or a named port `"http"` (see port.ts). */
export type PortSpec = number | string;

/** A protocol as written: `TCP`, `UDP`, `ICMP`, `ICMPv6`, `SCTP`, `UDPLite`, or 1–255. */
export type ProtocolSpec = number | string;

/**
 * Application-layer match. Calico enforces it only with its L7 proxy; Tessera accepts it
 * so existing manifests load, and reports it as unsupported (a validation warning).
 */
export type HTTPMatch = NonNullable<Rule['http']>;
/** One HTTP path match: exactly one of `exact` and `prefix`. */
export type HTTPPath = NonNullable<HTTPMatch['paths']>[number];
export type RuleMetadata = NonNullable<Rule['metadata']>;
/** Matches pods by service account: names and selector are AND-ed. */
export type ServiceAccountMatch = NonNullable<NonNullable<Rule['source']>['serviceAccounts']>;
/** Matches the endpoints of a Kubernetes Service (`namespace` defaults to the policy's). */
export type ServiceMatch = NonNullable<NonNullable<Rule['source']>['services']>;
export type IPNAT = NonNullable<WorkloadEndpointSpec['ipNATs']>[number];

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
export type HostEndpoint = ResourceBase<'HostEndpoint', HostEndpointSpec>;
export type NetworkSet = ResourceBase<'NetworkSet', NetworkSetSpec>;
export type GlobalNetworkSet = ResourceBase<'GlobalNetworkSet', NetworkSetSpec>;

export type V3Resource = NetworkPolicy | GlobalNetworkPolicy | Tier | Profile | WorkloadEndpoint | NetworkSet | GlobalNetworkSet | HostEndpoint;

/** The resource type of a kind: `ResourceOfKind<'Tier'>` is `Tier`. */
export type ResourceOfKind<K extends V3Kind> = Extract<V3Resource, { kind: K }>;

/** A policy of either scope. */
export type Policy = NetworkPolicy | GlobalNetworkPolicy;
