/**
 * The dataplane: proto messages → iptables chains and IP sets in the kernel. Re-exports only.
 * See `dataplane-driver.ts` for the apply loop and `../shared/reference/dataplane.md` for the
 * model it implements.
 *
 * Layout: the driver, the managers (manager.ts) and the rule renderer work on a backend-neutral
 * chain model (chain.ts, match.ts, action.ts) and program a `Table` (table.ts); the iptables and
 * ipset backend lives in `iptables/`. A second backend is a sibling folder.
 *
 * iptables backend: `nft` (`iptables-nft-restore` / `iptables-nft-save`) or `legacy`, never both.
 * The driver's default is nft; the agent picks the backend the node already uses
 * (`iptables/iptables-backend.ts`, Felix's detection), because mixing backends on a host is the classic
 * way to get two rule sets that each look fine while kube-proxy sees only one. Where nothing
 * holds rules yet nft wins: it is what `iptables` means on current distributions, and
 * incremental `--noflush` writes are O(delta) on nft but O(table) on legacy (the reference
 * measured 22 ms vs 424 ms for a one-rule change with 100k rules loaded).
 * The xtables lock: every restore passes `--wait 10 --wait-interval 50000` (Felix's defaults);
 * legacy takes the lock, iptables-nft accepts the flags and relies on nftables transactions.
 * The binaries are named explicitly (`iptables-nft-restore`), not via the `iptables`
 * alternative, so a host switching alternatives cannot silently move us to the other backend.
 */
export { DataplaneDriver, type DataplaneDriverOptions, type ApplyStats, type DataplaneHealth } from './dataplane-driver.ts';
export { DataplaneMetrics } from './dataplane-metrics.ts';
export type { ApplyPhases } from './apply-phases.ts';
export {
  RealCommandRunner,
  NetnsCommandRunner,
  RecordingCommandRunner,
  stdinText,
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
  hostEndpointChainName,
  ALL_INTERFACES_IFACE,
  MAX_CHAIN_NAME_LENGTH,
  CHAIN_PREFIX,
  type Direction,
} from './chain-names.ts';
export { ruleHashes, RULE_HASH_LENGTH } from './iptables/rule-hash.ts';
export type { Chain, ChainRule, ChainOwner, LazyChain, UpdateChainOptions } from './chain.ts';
/** The old name of `ChainRule`, from when rules were iptables text. */
export type { ChainRule as IptablesRule } from './chain.ts';
export type { Action } from './action.ts';
export type { Match, MatchCriterion } from './match.ts';
export { MatchBuilder } from './match-builder.ts';
export type { Table, TableApplyResult, ChainRejection, TaggedRuleCount } from './table.ts';
export type { Manager } from './manager.ts';
export { DataplaneApplyError } from './apply-error.ts';
export { sanitizeComment, ruleBody, ruleTail, matchText, actionText } from './iptables/rule-text.ts';
export { RuleRenderer, isValidInterfaceName, type RuleRendererOptions, type KernelHooks } from './rule-renderer.ts';
export { RuleRenderError, splitPortList, MULTIPORT_MAX_SLOTS } from './match-builder.ts';
export { parseSave } from './iptables/iptables-save.ts';
export { IptablesTable, IptablesApplyError, type IptablesBackend, type IptablesTableOptions } from './iptables/iptables-table.ts';
export { IpSets, IpSetsApplyError, parseIpsetSave, type IpSetsOptions } from './iptables/ipsets.ts';
export { IpSetsManager } from './ipsets-manager.ts';
export type { IpSetsDataplane, IpSetsApplyResult } from './ip-sets-dataplane.ts';
export { PolicyManager, type FamilyTables } from './policy-manager.ts';
export { EndpointManager } from './endpoint-manager.ts';
export { HostEndpointManager, type HostEndpointFamily, type HostEndpointManagerOptions } from './host-endpoint-manager.ts';
export { resolveHostEndpoints, parseIpAddrJson, HostInterfacesError } from './host-interfaces.ts';
export {
  parseFailsafePorts,
  FailsafePortsError,
  DEFAULT_FAILSAFE_INBOUND,
  FELIX_FAILSAFE_INBOUND,
  FELIX_FAILSAFE_OUTBOUND,
  TESSERA_FAILSAFE_INBOUND_ADDITIONS,
  DEFAULT_FAILSAFE_OUTBOUND,
  DEFAULT_FAILSAFES,
  type ProtoPort,
  type FailsafeConfig,
} from './failsafes.ts';
export { MARK_ACCEPT, MARK_PASS, MARK_SCRATCH0, MARK_SCRATCH1 } from './marks.ts';
export { RuleCounters, type RuleCount, type RuleCountersOptions } from './rule-counters.ts';
export { parseCounterLine } from './iptables/iptables-save.ts';
export {
  dropLogTarget,
  dropLogPrefix,
  parseDropLogPrefix,
  DEFAULT_DROP_LOG_GROUP,
  DEFAULT_DROP_LOG_RATE,
  DEFAULT_DROP_LOG_BURST,
  DROP_LOG_RATE_PATTERN,
  type DropLogOptions,
  type LoggedDrop,
  type DropLogRule,
  type RuleTag,
} from './drop-log.ts';
