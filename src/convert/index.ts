/**
 * The Kubernetes → projectcalico.org/v3 conversion, as a library (libcalico's
 * `k8s/conversion`): NetworkPolicy → `knp.default.<name>`, Namespace / ServiceAccount →
 * Profile, Pod → WorkloadEndpoint, Node → its automatic HostEndpoint. Pure functions of their input; the controllers (which
 * write the results) and the simulator, the calc graph and the CLI (which read them) all call
 * this one copy, and the controllers and the simulator find each source's builder in one
 * table (conversions.ts). Re-exports only.
 */
export { convertNetworkPolicy, convertedPolicyName, KNP_ORDER, simplifyPorts } from './policy-converter.ts';
export type { ConversionResult, RuleConversionError } from './policy-converter.ts';
export {
  namespaceProfileName,
  namespaceToProfile,
  profileSource,
  serviceAccountProfileName,
  serviceAccountToProfile,
  NAMESPACE_PROFILE_PREFIX,
  SERVICE_ACCOUNT_PROFILE_PREFIX,
} from './profile-builder.ts';
export {
  DEFAULT_INTERFACE_PREFIX,
  podIsFinished,
  podToWorkloadEndpoint,
  workloadEndpointName,
  workloadInterfaceName,
  WORKLOAD_INTERFACE_NAMINGS,
} from './workload-endpoint-builder.ts';
export type { WorkloadEndpointBuildOptions, WorkloadInterfaceNaming } from './workload-endpoint-builder.ts';
export { projectPod } from './pod-projection.ts';
export { projectNode } from './node-projection.ts';
export {
  autoHostEndpointExpectedIPs,
  autoHostEndpointName,
  autoHostEndpointNode,
  CREATED_BY_LABEL,
  CREATED_BY_VALUE,
  DEFAULT_ALLOW_PROFILE,
  isAutoHostEndpoint,
  nodeToAutoHostEndpoint,
} from './auto-host-endpoint-builder.ts';
export { CONVERSIONS, networkPolicyConversion } from './conversions.ts';
export { defaultTiers } from './default-tiers.ts';
export type { Conversion, ConvertOptions, Converted, TargetRef } from './conversions.ts';
