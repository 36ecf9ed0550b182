/**
 * The seam between the dataplane's managers and a backend (Felix `generictables.Table`): one
 * table of one IP family, holding the chains Tessera wants and making the kernel hold them.
 * `iptables/iptables-table.ts` implements it; a second backend (nftables) is a sibling folder
 * with its own implementation, and nothing above this interface changes.
 *
 * Contract:
 * - Desired state only changes in memory (`updateChain`, `removeChain`, `setKernelHooks`);
 *   nothing reaches the kernel before `apply()`, which writes only what differs.
 * - Chains are the neutral model (chain.ts); the backend renders them. Owned chain names start
 *   with `cali-`; anything else in the kernel is never touched.
 * - An on-demand chain is programmed only while a programmed chain jumps or goes to it; a lazy
 *   one is rendered when first needed.
 * - A chain the kernel refuses is contained: programmed as its fail-closed stand-in, listed by
 *   `rejectedChains()`, and retried; `apply()` still succeeds. An outage rejects `apply()` with a
 *   `DataplaneApplyError` and leaves the kernel's last state in force.
 * - Single-threaded: one `apply()` or `readBackIfDue()` at a time (the driver's loop).
 */
import type { PhaseTotals } from './apply-phases.ts';
import type { Chain, ChainOwner, ChainRule, KernelHooks, LazyChain, UpdateChainOptions } from './chain.ts';

/** What the last `apply()` did. */
export interface TableApplyResult {
  readonly wrote: boolean;
  readonly bytes: number;
  readonly chainsWritten: number;
}

/** One chain the kernel refused, programmed as its stand-in (or kept) until a retry takes it. */
export interface ChainRejection {
  readonly chain: string;
  /** `rules`: its desired rules were rejected (a stand-in is programmed); `delete`: its deletion was. */
  readonly kind: 'rules' | 'delete';
  /** The desired version that was rejected (identity; undefined for a deletion). */
  readonly version: object | undefined;
  /** The rejected rule, 1-based, when the backend named it. */
  readonly rule: number | undefined;
  /** The backend's message. */
  readonly error: string;
  /** Rejections of this version so far. */
  readonly attempts: number;
  /** Clock ms of the next retry. */
  readonly retryAt: number;
}

/** A desired rule and the owner of its chain. */
export interface OwnedRule {
  readonly rule: ChainRule;
  readonly owner: ChainOwner | undefined;
}

/** The kernel's packet and byte count of one tagged rule the table wants. */
export interface TaggedRuleCount extends OwnedRule {
  readonly chain: string;
  readonly packets: number;
  readonly bytes: number;
}

export interface Table {
  /** The kernel table (`filter`). */
  readonly table: string;
  readonly ipVersion: 4 | 6;

  // ---- desired state ----
  /** Sets (or replaces) an owned chain; the same rules again change nothing. */
  updateChain(chain: Chain | LazyChain, opts?: UpdateChainOptions): void;
  updateChains(chains: Iterable<Chain>, opts?: UpdateChainOptions): void;
  removeChain(name: string): void;
  /** The rules of ours that belong in the kernel's own chains (`FORWARD`, …). */
  setKernelHooks(hooks: readonly KernelHooks[]): void;
  hasChain(name: string): boolean;
  /** The rules this table wants in `name`. */
  desiredRules(name: string): readonly ChainRule[] | undefined;
  /** Rule `position` (0-based) of desired chain `chain`, with the chain's owner. */
  ruleAt(chain: string, position: number): OwnedRule | undefined;
  /** The chains this table wants in the kernel (on-demand chains only while referenced). */
  readonly desiredChainNames: string[];
  /**
   * The kernel's counts of the tagged rules this table wants now, in kernel order. A rule
   * left from an older ruleset is not among them.
   */
  readRuleCounts(): Promise<TaggedRuleCount[]>;

  // ---- the driver's loop ----
  /** Whether an apply would write (as far as known without a read-back). */
  readonly isDirty: boolean;
  /** When the next read-back or retry is due (clock ms). */
  nextCheckAt(): number;
  /** Starts a read-back due in the coming apply, so it overlaps rendering. */
  prefetch(): void;
  /** Reads the kernel back if due; true when it found our state changed behind our back. */
  readBackIfDue(phases?: PhaseTotals): Promise<boolean>;
  /** Writes what differs. */
  apply(phases?: PhaseTotals): Promise<TableApplyResult>;
  /** Forces a read-back on the next apply. */
  invalidate(): void;
  rejectedChains(): ChainRejection[];
}
