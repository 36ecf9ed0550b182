/**
 * The backend-neutral chain model the renderer produces and a {@link Table} programs (Felix
 * `generictables`: `Rule`, `Chain`).
 *
 * - A rule is data: a {@link Match} (criteria, ANDed, in order), an {@link Action}, comments
 *   and a tag. Nothing here is a backend's text: the iptables backend renders it to exactly the
 *   `iptables-restore` fragments Tessera has always written (`iptables/rule-text.ts`), and a
 *   second backend renders the same data its own way.
 * - Rules are immutable and may be shared between chains (the renderer reuses constant rules),
 *   so a backend may cache what it derives from one by identity.
 */
import type { Action } from './action.ts';
import type { RuleTag } from './drop-log.ts';
import type { Match } from './match.ts';

/** One rule: `<match> <action>`, with comments. */
export interface ChainRule {
  /** Criteria a packet must all meet, in the order a backend writes them; empty: every packet. */
  readonly match: Match;
  readonly action: Action;
  /** Comments written with the rule (after the backend's own identity comment, if any). */
  readonly comments?: readonly string[];
  /** The decision this rule carries, for counters and the drop log (never rendered: no effect on the hash). */
  readonly tag?: RuleTag;
}

/** A chain Tessera owns: its name (`cali-…`, ≤ 28 characters) and rules in order. */
export interface Chain {
  readonly name: string;
  readonly rules: readonly ChainRule[];
}

/** A chain whose rules are rendered when a table first needs them (see `Table.updateChain`). */
export interface LazyChain {
  readonly name: string;
  /** Called as a method (the chain is kept, not the function), at most once. */
  render(): readonly ChainRule[];
}

/** What a chain was rendered for, named in the log line that reports it rejected. */
export interface ChainOwner {
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
  readonly tier?: string | undefined;
  /**
   * The owner's rule that the chain's rule `index` (0-based) was rendered from, e.g.
   * `ingress[2] (rule <id>)`; undefined when not known.
   */
  readonly ruleOf?: (index: number) => string | undefined;
}

export interface UpdateChainOptions {
  /**
   * Programmed only while a chain that is itself programmed jumps (`jump`/`goto`) to it — the
   * policy and profile chains: an active policy used in one direction only has one chain in
   * the kernel. @default false
   */
  readonly onDemand?: boolean;
  readonly owner?: ChainOwner;
}

/** A kernel chain's hook rules: inserted at the top (in order) and appended at the end. */
export interface KernelHooks {
  readonly chain: string;
  readonly inserts: readonly ChainRule[];
  readonly appends: readonly ChainRule[];
}
