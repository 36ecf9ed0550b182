/**
 * Tessera's model of Calico's `projectcalico.org/v3` API: resource types, defaulting,
 * validation with field-path errors, key functions, and parsers for ports, protocols and
 * CIDRs. Re-exports only.
 */
export type {
  Action,
  EntityRule,
  GlobalNetworkPolicy,
  GlobalNetworkPolicySpec,
  HTTPMatch,
  HTTPPath,
  ICMPFields,
  IPNAT,
  GlobalNetworkSet,
  HostEndpoint,
  HostEndpointPort,
  HostEndpointSpec,
  NetworkPolicy,
  NetworkPolicySpec,
  NetworkSet,
  NetworkSetSpec,
  ObjectMeta,
  Policy,
  PolicyPerformanceHint,
  PolicyType,
  PortSpec,
  Profile,
  ProfileSpec,
  ProtocolSpec,
  ResourceOfKind,
  Rule,
  RuleMetadata,
  ServiceAccountMatch,
  ServiceMatch,
  Tier,
  TierSpec,
  V3Kind,
  V3Resource,
  WorkloadEndpoint,
  WorkloadEndpointPort,
  WorkloadEndpointSpec,
} from './types.ts';
export { ACTIONS, API_GROUP, API_VERSION, DECLARED_V3_KINDS, NAMESPACE_LABEL_PREFIX, NAMESPACE_PROFILE_PREFIX, NAMESPACED_KINDS, POLICY_TYPES, SERVICE_ACCOUNT_LABEL_PREFIX, V3_KINDS } from './types.ts';

export type { ParseResult } from './parse-result.ts';
export { formatPort, isNumericPort, MAX_PORT, MIN_PORT, parsePort } from './port.ts';
export type { Port } from './port.ts';
export {
  formatProtocol,
  isICMPv4,
  isICMPv6,
  parseProtocol,
  PROTOCOL_NAMES,
  PROTOCOL_NUMBERS,
  supportsPorts,
} from './protocol.ts';
export type { Protocol, ProtocolName } from './protocol.ts';
export { CidrParseError, cidrContains, formatIP, isCanonicalIPv4HostCidr, normaliseCidr, parseCidr, parseIP } from './cidr.ts';
export type { IPVersion, ParsedCidr, ParsedIP } from './cidr.ts';

export {
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  isDns1123Label,
  isDns1123Subdomain,
  isGlobalNetworkPolicyName,
  isNetworkPolicyName,
  isReservedPolicyName,
  isValidEndpointPortName,
  isValidInterfaceName,
  isValidLabelValue,
  DEFAULT_ALLOW_PROFILE,
  KNP_NAME_PREFIX,
  NAMESPACE_LABEL,
  OSSG_NAME_PREFIX,
  qualifiedNameProblems,
} from './names.ts';
export { DEFAULT_TIER_NAME, WELL_KNOWN_TIERS, wellKnownTier } from './tiers.ts';
export type { WellKnownTier } from './tiers.ts';
export { applyDefaults, defaultPolicyTypes, withDefaults } from './defaults.ts';

export { fieldPath, indexPath, isError, severityOf } from './field-error.ts';
export type { FieldError, Severity } from './field-error.ts';
export { HTTP_UNSUPPORTED_MESSAGE } from './http.ts';
export {
  assertValid,
  checkReservedName,
  formatFinding,
  validateResource,
  ValidationError,
} from './validation.ts';

export {
  describeObject,
  isCalicoApiVersion,
  isNamespacedKind,
  kindOf,
  objectKey,
  ObjectKeyError,
  OTHER_CALICO_V3_KINDS,
  UnsupportedResourceError,
} from './keys.ts';
export type { UnsupportedReason } from './keys.ts';
export { STAGED_ACTIONS, STAGED_KINDS, DELETE_WITH_SPEC, isPreviewedAction, isStagedKind, readStaged, type StagedKind, type StagedAction, type StagedPolicy } from './staged.ts';
export type { K8sContainerPort, K8sEndpointSlice, K8sMetaObject, K8sNetworkPolicy, K8sNetworkPolicySpec, K8sNode, K8sPeer, K8sPort, K8sPod, K8sService } from './kubernetes.ts';
export { SERVICE_NAME_LABEL } from './kubernetes.ts';
export { apiVersionOf, kindRow, kindRowOf, KINDS, kindsWatchedBy, resourceName, resourceOf } from './kinds.ts';
export type { KindResource, KindRow, KindWatcher, ResourceName } from './kinds.ts';
export type {
  ClusterNetworkPolicy,
  ClusterNetworkPolicySpec,
  CnpAction,
  CnpEgressPeer,
  CnpEgressRule,
  CnpIngressPeer,
  CnpIngressRule,
  CnpNamespacedPod,
  CnpPort,
  CnpProtocol,
  CnpSubject,
  CnpTier,
  CnpVersion,
  NodePeerInfo,
} from './cluster-network-policy.ts';
export {
  CNP_BUNDLE_VERSION,
  CNP_CALICO_TIER,
  CNP_KIND,
  CNP_SERVED_VERSIONS,
  CNP_STORAGE_VERSION,
  NETWORK_POLICY_API_GROUP,
  isClusterNetworkPolicy,
} from './cluster-network-policy.ts';

export { validateClusterNetworkPolicy } from './cluster-network-policy-validation.ts';
export type { ClusterNetworkPolicyValidationOptions } from './cluster-network-policy-validation.ts';
export { CNP_CHANNELS, clusterNetworkPolicySchema } from './cluster-network-policy-schema.ts';
export type { CnpChannel } from './cluster-network-policy-schema.ts';
