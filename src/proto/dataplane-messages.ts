/**
 * The message contract between the calculation graph and the dataplane (Felix's
 * `proto` dataplane protocol, as plain TypeScript data).
 *
 * Contract (enforced by the calc graph's event sequencer, relied on by the dataplane):
 * - messages are delivered in batches; within a batch, IP sets are added before anything
 *   references them, policies and profiles before endpoints that use them, and removals come
 *   after their last user is gone (calico-semantics §5.3, EventSequencer flush order);
 * - nothing is sent before the datastore is in sync; `InSync` follows the first complete
 *   flush;
 * - rules carry resolved IP-set ids, never selectors: the dataplane needs no selector engine;
 * - every message is a plain, JSON-serialisable object with a `type` discriminator named
 *   after the message, so batches can be logged, recorded for tests and sent over a wire.
 */

// ---- identities ---------------------------------------------------------------------------

/**
 * The staged kinds are never enforced: the calc graph files them apart (`TierInfo`'s staged
 * lists) and the dataplane renders them on chains that only count (a StagedKubernetesNetworkPolicy
 * arrives converted, as a StagedNetworkPolicy named `knp.default.<name>`).
 *
 * `KubernetesClusterNetworkPolicy` (Calico 3.32 `model.KindKubernetesClusterNetworkPolicy`,
 * Felix short kind `kcnp`): a SIG-Network ClusterNetworkPolicy, converted to a cluster-scoped
 * policy of the CNP's own name in `kube-admin` or `kube-baseline`
 * (convert/cluster-network-policy-converter.ts); enforced like a GlobalNetworkPolicy.
 */
export type PolicyKind = 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'StagedNetworkPolicy' | 'StagedGlobalNetworkPolicy' | 'KubernetesClusterNetworkPolicy';

/** Whether a policy is staged: evaluated for counting only, never enforced. */
export function isStagedPolicy(id: { readonly kind: PolicyKind }): boolean {
  return id.kind === 'StagedNetworkPolicy' || id.kind === 'StagedGlobalNetworkPolicy';
}

/** A policy's identity: (tier, namespace, name, kind) as in Felix at HEAD. */
export interface PolicyId {
  readonly tier: string;
  readonly name: string;
  /** Set for namespaced kinds. */
  readonly namespace?: string;
  readonly kind: PolicyKind;
}

export interface ProfileId {
  readonly name: string;
}

/** A WorkloadEndpoint's identity: its object key. */
export interface WorkloadEndpointId {
  readonly namespace: string;
  readonly name: string;
}

/** A stable string for maps and logs: `<kind>/<namespace>/<tier>/<name>` (`-` for no namespace). */
export function policyIdKey(id: PolicyId): string {
  return `${id.kind}/${id.namespace ?? '-'}/${id.tier}/${id.name}`;
}

/** `<namespace>/<name>`. */
export function workloadEndpointIdKey(id: WorkloadEndpointId): string {
  return `${id.namespace}/${id.name}`;
}

// ---- rules --------------------------------------------------------------------------------

/** Calico actions as Felix receives them: lower case, `Pass` as `next-tier`. */
export type RuleAction = 'allow' | 'deny' | 'log' | 'next-tier';

/** An inclusive port range; a single port has `first === last`. */
export interface PortRange {
  readonly first: number;
  readonly last: number;
}

/** A protocol by lower-case name (`tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, `udplite`) or number. */
export type RuleProtocol = string | number;

export interface IcmpMatch {
  readonly type: number;
  readonly code?: number;
}

/**
 * One parsed rule. Every list field is present (possibly empty), so the renderer never needs
 * to distinguish "absent" from "empty". Within a list the entries are OR-ed; across fields
 * they are AND-ed; a `not*` list excludes every entry.
 */
export interface Rule {
  readonly action: RuleAction;
  readonly ipVersion?: 4 | 6;
  readonly protocol?: RuleProtocol;
  readonly notProtocol?: RuleProtocol;
  readonly icmp?: IcmpMatch;
  readonly notIcmp?: IcmpMatch;

  readonly srcNets: readonly string[];
  readonly notSrcNets: readonly string[];
  readonly dstNets: readonly string[];
  readonly notDstNets: readonly string[];

  readonly srcPorts: readonly PortRange[];
  readonly notSrcPorts: readonly PortRange[];
  readonly dstPorts: readonly PortRange[];
  readonly notDstPorts: readonly PortRange[];

  /** Selector IP sets (`hash:net`): the source/destination must be in every listed set. */
  readonly srcIpSetIds: readonly string[];
  readonly notSrcIpSetIds: readonly string[];
  readonly dstIpSetIds: readonly string[];
  readonly notDstIpSetIds: readonly string[];

  /**
   * Named-port IP sets (`hash:ip,port`). A positive named-port set is OR-ed with the numeric
   * ports of the same side (the packet matches a numeric port or one of the sets).
   */
  readonly srcNamedPortIpSetIds: readonly string[];
  readonly notSrcNamedPortIpSetIds: readonly string[];
  readonly dstNamedPortIpSetIds: readonly string[];
  readonly notDstNamedPortIpSetIds: readonly string[];

  /**
   * Felix's `DstIpPortSetIds`: `services` destination sets (`hash:ip,port`, `svc:` ids). The
   * destination address AND port must be in every listed set (`--match-set <name> dst,dst`);
   * unlike named-port sets they are not alternatives to the numeric ports.
   */
  readonly dstIpPortSetIds: readonly string[];

  /** A stable id for logs, counters and chain comments (hash of the rule's content). */
  readonly ruleId: string;
}

/** What {@link makeRule} takes: an action and any fields; absent lists are empty. */
export type RuleInit = Partial<Omit<Rule, 'action'>> & { readonly action: RuleAction };

/**
 * A Rule with every field present, in one fixed order (absent optional fields are
 * `undefined`, absent lists empty; `ruleId` defaults to `''`). Build rules only through this:
 * the renderer reads some twenty fields of every rule, and rules assembled by spreading
 * objects end up in different shapes that make those reads several times slower (10,000
 * rules: 33 ms to render instead of 8 ms). JSON output is unaffected: it omits `undefined`.
 */
export function makeRule(init: RuleInit): Rule {
  return {
    action: init.action,
    ipVersion: init.ipVersion,
    protocol: init.protocol,
    notProtocol: init.notProtocol,
    icmp: init.icmp,
    notIcmp: init.notIcmp,
    srcNets: init.srcNets ?? [],
    notSrcNets: init.notSrcNets ?? [],
    dstNets: init.dstNets ?? [],
    notDstNets: init.notDstNets ?? [],
    srcPorts: init.srcPorts ?? [],
    notSrcPorts: init.notSrcPorts ?? [],
    dstPorts: init.dstPorts ?? [],
    notDstPorts: init.notDstPorts ?? [],
    srcIpSetIds: init.srcIpSetIds ?? [],
    notSrcIpSetIds: init.notSrcIpSetIds ?? [],
    dstIpSetIds: init.dstIpSetIds ?? [],
    notDstIpSetIds: init.notDstIpSetIds ?? [],
    srcNamedPortIpSetIds: init.srcNamedPortIpSetIds ?? [],
    notSrcNamedPortIpSetIds: init.notSrcNamedPortIpSetIds ?? [],
    dstNamedPortIpSetIds: init.dstNamedPortIpSetIds ?? [],
    notDstNamedPortIpSetIds: init.notDstNamedPortIpSetIds ?? [],
    dstIpPortSetIds: init.dstIpPortSetIds ?? [],
    ruleId: init.ruleId ?? '',
  };
}

export interface Policy {
  readonly inboundRules: readonly Rule[];
  readonly outboundRules: readonly Rule[];
  readonly untracked: boolean;
  readonly preDnat: boolean;
  readonly applyOnForward: boolean;
}

export interface Profile {
  readonly inboundRules: readonly Rule[];
  readonly outboundRules: readonly Rule[];
}

// ---- endpoints ----------------------------------------------------------------------------

export interface TierInfo {
  readonly name: string;
  /** What happens at the end of the tier when no policy decided. */
  readonly defaultAction: 'Deny' | 'Pass';
  /** Policies that govern ingress, in evaluation order. */
  readonly ingressPolicies: readonly PolicyId[];
  /** Policies that govern egress, in evaluation order. */
  readonly egressPolicies: readonly PolicyId[];
  /** Staged policies of this tier selecting the endpoint, ingress, in order: counted, never enforced. */
  readonly stagedIngressPolicies?: readonly PolicyId[];
  /** The same for egress. */
  readonly stagedEgressPolicies?: readonly PolicyId[];
}

/**
 * A workload endpoint's QoS limits (Felix proto `QoSControls`): every field a non-negative
 * integer, 0 (or absent) meaning "no limit". Packet rates and connection counts are enforced in
 * the endpoint's chains; bandwidth, burst, peak rate and minimum burst need `tc`, and DSCP the
 * mangle table, which Tessera does not program (dataplane/qos-controls.ts).
 */
export interface QoSControls {
  readonly ingressBandwidth?: number;
  readonly egressBandwidth?: number;
  readonly ingressBurst?: number;
  readonly egressBurst?: number;
  readonly ingressPeakrate?: number;
  readonly egressPeakrate?: number;
  readonly ingressMinburst?: number;
  readonly egressMinburst?: number;
  readonly ingressPacketRate?: number;
  readonly egressPacketRate?: number;
  readonly ingressPacketBurst?: number;
  readonly egressPacketBurst?: number;
  readonly ingressMaxConnections?: number;
  readonly egressMaxConnections?: number;
  /** DSCP for egress traffic (Felix carries it as a `QoSPolicy`; marked in the mangle table, which Tessera does not program). */
  readonly dscp?: number | string;
}

export interface WorkloadEndpoint {
  /** Host-side interface name (`cali…`); empty when the WEP did not say. */
  readonly interfaceName: string;
  readonly state: 'active' | 'inactive';
  readonly mac: string;
  readonly ipv4Nets: readonly string[];
  readonly ipv6Nets: readonly string[];
  /** Profiles in the endpoint's order (evaluated after the tiers). */
  readonly profileIds: readonly string[];
  readonly tiers: readonly TierInfo[];
  /** The endpoint's `spec.qosControls`, when it has any. */
  readonly qosControls?: QoSControls;
}

/** A HostEndpoint's identity: its object name (Felix `HostEndpointID.EndpointId`). */
export interface HostEndpointId {
  readonly name: string;
}

/**
 * A host endpoint on this node (Felix proto `HostEndpoint`; reference
 * host-endpoints-and-services §A.1–A.3). Every policy that selects it is filed into exactly
 * the lists Felix's `tierInfoToProtoTierInfo` files it into:
 * - `untrackedTiers`: doNotTrack policies (ingress and egress), tier default forced to Pass;
 * - `preDnatTiers`: preDNAT policies (ingress lists only), tier default forced to Pass;
 * - `forwardTiers` AND `tiers`: applyOnForward policies (neither of the above), tier default kept;
 * - `tiers`: every other policy.
 * A tier appears in a list only when that list's policies include one of it (either direction).
 */
export interface HostEndpoint {
  /**
   * `spec.interfaceName`: `*` (every host interface no other HostEndpoint claims), a Linux
   * interface name, or `''` (the interface that holds one of the expected IPs).
   */
  readonly name: string;
  /** `spec.expectedIPs` of IPv4, canonical addresses without a prefix length. */
  readonly expectedIpv4Addrs: readonly string[];
  /** `spec.expectedIPs` of IPv6, canonical addresses without a prefix length. */
  readonly expectedIpv6Addrs: readonly string[];
  /** Profiles in the endpoint's order (evaluated after the normal tiers only). */
  readonly profileIds: readonly string[];
  readonly tiers: readonly TierInfo[];
  readonly untrackedTiers: readonly TierInfo[];
  readonly preDnatTiers: readonly TierInfo[];
  readonly forwardTiers: readonly TierInfo[];
}

/** `HostEndpoint.name` of the catch-all endpoint. */
export const ALL_INTERFACES = '*';

/** `<name>` of a host endpoint, for maps and logs. */
export function hostEndpointIdKey(id: HostEndpointId): string {
  return id.name;
}

// ---- messages -----------------------------------------------------------------------------

export type IpSetType = 'hash:net' | 'hash:ip,port';

/** A full IP set: create it, or replace its members. */
export interface IPSetUpdate {
  readonly type: 'IPSetUpdate';
  readonly id: string;
  readonly ipsetType: IpSetType;
  /** `10.0.0.1/32` for hash:net; `10.0.0.1,tcp:8080` for hash:ip,port. */
  readonly members: readonly string[];
}

export interface IPSetDeltaUpdate {
  readonly type: 'IPSetDeltaUpdate';
  readonly id: string;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

export interface IPSetRemove {
  readonly type: 'IPSetRemove';
  readonly id: string;
}

export interface ActivePolicyUpdate {
  readonly type: 'ActivePolicyUpdate';
  readonly id: PolicyId;
  readonly policy: Policy;
}

export interface ActivePolicyRemove {
  readonly type: 'ActivePolicyRemove';
  readonly id: PolicyId;
}

export interface ActiveProfileUpdate {
  readonly type: 'ActiveProfileUpdate';
  readonly id: ProfileId;
  readonly profile: Profile;
}

export interface ActiveProfileRemove {
  readonly type: 'ActiveProfileRemove';
  readonly id: ProfileId;
}

export interface WorkloadEndpointUpdate {
  readonly type: 'WorkloadEndpointUpdate';
  readonly id: WorkloadEndpointId;
  readonly endpoint: WorkloadEndpoint;
}

export interface WorkloadEndpointRemove {
  readonly type: 'WorkloadEndpointRemove';
  readonly id: WorkloadEndpointId;
}

/** A local host endpoint was added or changed: replaces everything about it. */
export interface HostEndpointUpdate {
  readonly type: 'HostEndpointUpdate';
  readonly id: HostEndpointId;
  readonly endpoint: HostEndpoint;
}

export interface HostEndpointRemove {
  readonly type: 'HostEndpointRemove';
  readonly id: HostEndpointId;
}

/** The datastore is in sync and everything it implies has been sent. */
export interface InSync {
  readonly type: 'InSync';
}

export type DataplaneMessage =
  | IPSetUpdate
  | IPSetDeltaUpdate
  | IPSetRemove
  | ActivePolicyUpdate
  | ActivePolicyRemove
  | ActiveProfileUpdate
  | ActiveProfileRemove
  | WorkloadEndpointUpdate
  | WorkloadEndpointRemove
  | HostEndpointUpdate
  | HostEndpointRemove
  | InSync;

export type DataplaneMessageType = DataplaneMessage['type'];
