/**
 * The dataplane: proto messages → iptables chains and IP sets in the kernel. Re-exports only.
 * See `dataplane-driver.ts` for the apply loop and `../shared/reference/dataplane.md` for the
 * model it implements.
 */
export { DataplaneDriver, type DataplaneDriverOptions, type ApplyStats } from './dataplane-driver.ts';
export { DataplaneMetrics } from './dataplane-metrics.ts';
export {
  RealCommandRunner,
  NetnsCommandRunner,
  RecordingCommandRunner,
  type CommandRunner,
  type CommandResult,
  type RunOptions,
  type RecordedCommand,
  type CommandHandler,
} from './command-runner.ts';
export {
  getLengthLimitedId,
  chainName,
  policyChainName,
  policyChainSuffix,
  profileChainName,
  endpointChainName,
  MAX_CHAIN_NAME_LENGTH,
  CHAIN_PREFIX,
  type Direction,
} from './chain-names.ts';
export { ruleHashes, RULE_HASH_LENGTH } from './rule-hash.ts';
export { sanitizeComment, type Chain, type IptablesRule } from './chain.ts';
export { RuleRenderer, isValidInterfaceName, type RuleRendererOptions, type KernelHooks } from './rule-renderer.ts';
export { RuleRenderError, splitPortList, MULTIPORT_MAX_SLOTS } from './match-builder.ts';
export { IptablesTable, IptablesApplyError, parseSave, type IptablesBackend, type IptablesTableOptions, type TableApplyResult } from './iptables-table.ts';
export { IpSets, IpSetsApplyError, parseIpsetSave, type IpSetsOptions } from './ipsets.ts';
export { IpSetsManager } from './ipsets-manager.ts';
export { PolicyManager, type FamilyTables } from './policy-manager.ts';
export { EndpointManager } from './endpoint-manager.ts';
export { MARK_ACCEPT, MARK_PASS, MARK_SCRATCH0, MARK_SCRATCH1 } from './marks.ts';
