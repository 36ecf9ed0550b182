/**
 * The simulator: cluster objects → the controllers' builders → one calc graph per node →
 * node states → verdicts with a trace (`tessera simulate`, `explain`, the HTML report).
 * Re-exports only.
 */
export { NodeState } from './node-state.ts';
export { evaluateDirection, makePacket, ruleMismatch } from './verdict-engine.ts';
export type { ChainKind, Decision, Direction, DirectionVerdict, EndpointToHostAction, Packet, PolicedEndpoint, PolicyTrace, ProbeProtocol, ProfileTrace, RuleTrace, TierTrace } from './verdict-engine.ts';
export { classifyObjects, defaultNetworkPolicyTypes, isEndpointSlice, isOtherGroup, isSimClusterNetworkPolicy, resourceKey, translateCluster } from './cluster-objects.ts';
export type { ClusterObjects, K8sNamespace, K8sServiceAccount, SimClusterNetworkPolicy, SimEndpointSlice, SimNode, SimResource, TranslateOptions, TranslatedCluster } from './cluster-objects.ts';
export { deriveEndpointSlices, withDerivedEndpointSlices, withServiceEndpoints } from './endpoint-slices.ts';
export type { DerivedEndpoint, DerivedEndpointPort, DerivedEndpointSlice } from './endpoint-slices.ts';
export { endpointInFamily, isEndpoint, isHost, Simulation } from './simulation.ts';
export type { NetworkSetHit, SimAddress, SimEndpoint, SimHost, SimHostSpec, SimPeer, SimulationOptions, Verdict } from './simulation.ts';
export { decideFlow } from './host-flow.ts';
export type { FlowOptions, FlowPeer, FlowResult, FlowStage, FlowTable } from './host-flow.ts';
export { ANY_INTERFACE, failsafeEntry, FELIX_DEFAULT_FAILSAFES, hostChainName, hostEndpointFor } from './host-endpoints.ts';
export type { HostInterface, ResolvedHostEndpoint } from './host-endpoints.ts';
export { IpSetNames } from './ipset-names.ts';
export { describeDecision, describeDroppingStage, describeNetworkSets, describeStages, describeVerdict, describeWalk, policyName } from './explanation.ts';
export { loadFromCluster, loadFromFiles, loadFromListers, SIMULATED_KINDS } from './load-objects.ts';
export type { KindSource } from './load-objects.ts';
export { applyStep, initialState, parseScenarioFile, ScenarioFormatError, stateObjects } from './scenario-file.ts';
export type { Scenario, ScenarioFile, ScenarioProbe, ScenarioState, ScenarioStep } from './scenario-file.ts';
export { isNodeEndpoint, nodeAddress, nodeProblems, nodesByName, probeNodeProblem, servesHostPort } from './scenario-nodes.ts';
export type { HostPortProtocol, NodeProbeFields, ScenarioHostPort, ScenarioNode } from './scenario-nodes.ts';
export { commitStaged, describeStagedDiff, previewedStaged, stagedDiff } from './staged.ts';
export type { StagedChange, StagedDiff } from './staged.ts';
export { isStagedKind, readStaged, STAGED_KINDS } from '../api/staged.ts';
export type { StagedAction, StagedKind, StagedPolicy } from '../api/staged.ts';
