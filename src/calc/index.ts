/**
 * The calculation graph: v3 resources and sync status in, this node's dataplane messages
 * (src/proto) out. Re-exports only.
 */
export { CalcGraph, type CalcGraphOptions } from './calc-graph.ts';
export { AsyncCalcGraph, type AsyncCalcGraphOptions } from './async-calc-graph.ts';
export type { InvalidResource } from './update-processor.ts';
export { comparePolicies, felixPolicyKey, type FelixPolicyKey } from './policy-sorter.ts';
export type { DataplaneMessage } from '../proto/index.ts';
export { describeMissingTierPolicy, missingTierMessage, policiesInMissingTiers, type MissingTierPolicy } from './missing-tier-index.ts';
