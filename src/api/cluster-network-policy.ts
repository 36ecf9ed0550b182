/**
 * The SIG-Network `policy.networking.k8s.io` ClusterNetworkPolicy (network-policy-api v0.3.0,
 * `apis/v1beta1/clusternetworkpolicy_types.go`; v1alpha2 is served with the same schema), as
 * Tessera reads it, and the constants every layer shares: the group, the served versions, and
 * the Calico tier each `spec.tier` lands in (Calico 3.32: Admin → `kube-admin`, Baseline →
 * `kube-baseline`, api/tiers.ts).
 *
 * These are the wire types: every field optional where a decoder may meet an object written
 * against another CRD version (a newer peer kind, a missing list). What a field means, and what
 * an unknown one does (fail closed), is convert/cluster-network-policy-converter.ts's.
 */
import type { K8sLabelSelector } from '../selector/k8s-label-selector.ts';
import type { ObjectMeta } from './types.ts';

export const NETWORK_POLICY_API_GROUP = 'policy.networking.k8s.io';
/** The storage version (v0.3.0) — what Tessera lists and watches. */
export const CNP_STORAGE_VERSION = 'v1beta1';
/** Every version the v0.3.0 CRD serves; each has the same schema (no conversion webhook). */
export const CNP_SERVED_VERSIONS = ['v1beta1', 'v1alpha2'] as const;
export type CnpVersion = (typeof CNP_SERVED_VERSIONS)[number];
export const CNP_KIND = 'ClusterNetworkPolicy';
/** The upstream bundle the CRDs declare (`policy.networking.k8s.io/bundle-version`). */
export const CNP_BUNDLE_VERSION = 'v0.3.0';

export type CnpTier = 'Admin' | 'Baseline';
export type CnpAction = 'Accept' | 'Deny' | 'Pass';

/** The Calico tier a ClusterNetworkPolicy of `spec.tier` lives in (Calico 3.32's mapping). */
export const CNP_CALICO_TIER: Readonly<Record<CnpTier, string>> = { Admin: 'kube-admin', Baseline: 'kube-baseline' };

export interface CnpNamespacedPod {
  namespaceSelector?: K8sLabelSelector | null;
  podSelector?: K8sLabelSelector | null;
}

export interface CnpSubject {
  namespaces?: K8sLabelSelector | null;
  pods?: CnpNamespacedPod | null;
}

export interface CnpPort {
  number?: number;
  range?: { start?: number; end?: number } | null;
}

export interface CnpProtocol {
  tcp?: { destinationPort?: CnpPort | null } | null;
  udp?: { destinationPort?: CnpPort | null } | null;
  sctp?: { destinationPort?: CnpPort | null } | null;
  /** Experimental channel. */
  destinationNamedPort?: string;
}

export interface CnpIngressPeer {
  namespaces?: K8sLabelSelector | null;
  pods?: CnpNamespacedPod | null;
}

export interface CnpEgressPeer extends CnpIngressPeer {
  /** Canonical CIDRs; `0.0.0.0/0` matches pods too. */
  networks?: string[] | null;
  /** Experimental: the addresses (`status.addresses`) of the Nodes the selector picks. */
  nodes?: K8sLabelSelector | null;
  /** Experimental: Tessera fails such a peer closed (as Calico 3.32). */
  domainNames?: string[] | null;
}

export interface CnpIngressRule {
  name?: string;
  action?: CnpAction;
  from?: CnpIngressPeer[] | null;
  /** Absent: all traffic. */
  protocols?: CnpProtocol[] | null;
}

export interface CnpEgressRule {
  name?: string;
  action?: CnpAction;
  to?: CnpEgressPeer[] | null;
  protocols?: CnpProtocol[] | null;
}

export interface ClusterNetworkPolicySpec {
  tier?: CnpTier;
  /** 0..1000; lower runs first within the tier. */
  priority?: number;
  subject?: CnpSubject;
  ingress?: CnpIngressRule[] | null;
  egress?: CnpEgressRule[] | null;
}

export interface ClusterNetworkPolicy {
  apiVersion: `${typeof NETWORK_POLICY_API_GROUP}/${CnpVersion}`;
  kind: typeof CNP_KIND;
  metadata: ObjectMeta;
  spec: ClusterNetworkPolicySpec;
}

/** Whether (apiVersion, kind) is a ClusterNetworkPolicy of a version Tessera reads. */
export function isClusterNetworkPolicy(apiVersion: unknown, kind: unknown): boolean {
  return kind === CNP_KIND && typeof apiVersion === 'string' && CNP_SERVED_VERSIONS.some((v) => apiVersion === `${NETWORK_POLICY_API_GROUP}/${v}`);
}

/**
 * What the node side knows of a Node, for the experimental egress `nodes` peer: its name, its
 * labels and the IPs of `status.addresses` (every type: InternalIP and ExternalIP both; host
 * names are not IPs and are dropped).
 */
export interface NodePeerInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly addresses: readonly string[];
}
