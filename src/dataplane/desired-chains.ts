/**
 * The owned chains one table wants, and which of them belong in the kernel now
 * (dataplane.md §1.4; Felix `iptables/table.go` reference counting, PR #2323).
 *
 * - An always-on chain (static, dispatch and endpoint chains) is programmed while desired.
 * - An `onDemand` chain (policy and profile chains) is programmed only while an always-on chain
 *   jumps (`-j`) or goes (`-g`) to it, as Felix programs only referenced chains: the egress
 *   chain of an ingress-only policy never reaches the kernel. References are counted from
 *   always-on chains only, so an on-demand chain must not be the sole referrer of another.
 * - Every change that can alter what a chain should hold in the kernel — its rules, its
 *   on-demand flag, its reference count crossing zero — is reported through `onChange`, after
 *   the state is updated; an update with the same rules reports nothing.
 * - The programmed chain and rule counts are kept incrementally (the `felix_iptables_chains`
 *   and `felix_iptables_rules` gauges), never by walking the set.
 */
import { ruleTail, type Chain, type IptablesRule } from './chain.ts';
import type { ChainOwner } from './rejected-chains.ts';
import { hashRuleTails } from './rule-hash.ts';

export interface DesiredChain {
  /** Replaced in place when only tags or the owner change (same texts, same version). */
  rules: readonly IptablesRule[];
  /** Programmed only while a programmed always-on chain jumps to it. */
  readonly onDemand: boolean;
  /** Owned chains this one jumps or goes to (counted only for always-on chains). */
  readonly targets: readonly string[];
  /** Each rule rendered once, without its hash comment. */
  readonly tails: readonly string[];
  /** Whom to name when iptables-restore rejects the chain (replaced in place, as `rules`). */
  owner: ChainOwner | undefined;
  /**
   * Computed on first use (read-back comparison or write), not when the chain is set: a write
   * computes them while the transaction streams into iptables-restore, so hashing overlaps with
   * the kernel's parsing.
   */
  hashes: readonly string[] | undefined;
}

export interface UpdateChainOptions {
  /** @default false */
  readonly onDemand?: boolean;
  /** Named in the log line if iptables-restore rejects the chain. @default undefined */
  readonly owner?: ChainOwner;
}

export class DesiredChains {
  private readonly chains = new Map<string, DesiredChain>();
  /** Owned chain → number of always-on desired chains jumping to it. */
  private readonly refCounts = new Map<string, number>();
  private programmedChains = 0;
  private ruleCount = 0;

  constructor(private readonly onChange: (name: string) => void) {}

  /** Sets or replaces a chain; the same rules again change nothing. */
  update(chain: Chain, opts: UpdateChainOptions = {}): void {
    const onDemand = opts.onDemand ?? false;
    const tails = chain.rules.map(ruleTail);
    const old = this.chains.get(chain.name);
    // Same name and same rule texts ⇔ same hashes.
    if (old !== undefined && old.onDemand === onDemand && sameList(old.tails, tails)) {
      // Same kernel state: the same version (a rejection is tracked by its identity), but with
      // the new rules' tags and owner (a rule's index may move while its text does not).
      old.rules = chain.rules;
      old.owner = opts.owner;
      return;
    }
    if (old !== undefined && this.isProgrammed(chain.name, old)) this.count(old, -1);
    const next: DesiredChain = { rules: chain.rules, onDemand, targets: onDemand ? [] : jumpTargets(chain.rules), tails, owner: opts.owner, hashes: undefined };
    this.chains.set(chain.name, next);
    this.retarget(old?.targets ?? [], next.targets);
    if (this.isProgrammed(chain.name, next)) this.count(next, +1);
    this.onChange(chain.name);
  }

  remove(name: string): void {
    const old = this.chains.get(name);
    if (old === undefined) return;
    if (this.isProgrammed(name, old)) this.count(old, -1);
    this.chains.delete(name);
    this.retarget(old.targets, []);
    this.onChange(name);
  }

  has(name: string): boolean {
    return this.chains.has(name);
  }

  get(name: string): DesiredChain | undefined {
    return this.chains.get(name);
  }

  /** The desired chain if it belongs in the kernel now. */
  effective(name: string): DesiredChain | undefined {
    const d = this.chains.get(name);
    return d !== undefined && this.isProgrammed(name, d) ? d : undefined;
  }

  names(): IterableIterator<string> {
    return this.chains.keys();
  }

  /** Chains and rules that belong in the kernel now. */
  get programmed(): { readonly chains: number; readonly rules: number } {
    return { chains: this.programmedChains, rules: this.ruleCount };
  }

  private isProgrammed(name: string, d: DesiredChain): boolean {
    return !d.onDemand || (this.refCounts.get(name) ?? 0) > 0;
  }

  private count(d: DesiredChain, sign: 1 | -1): void {
    this.programmedChains += sign;
    this.ruleCount += sign * d.rules.length;
  }

  /** Moves references from `before` to `after`; an on-demand chain crossing zero changes state. */
  private retarget(before: readonly string[], after: readonly string[]): void {
    for (const t of after) {
      const n = (this.refCounts.get(t) ?? 0) + 1;
      this.refCounts.set(t, n);
      const d = this.chains.get(t);
      if (n === 1 && d?.onDemand === true) {
        this.count(d, +1);
        this.onChange(t);
      }
    }
    for (const t of before) {
      const n = (this.refCounts.get(t) ?? 0) - 1;
      if (n > 0) this.refCounts.set(t, n);
      else this.refCounts.delete(t);
      const d = this.chains.get(t);
      if (n === 0 && d?.onDemand === true) {
        this.count(d, -1);
        this.onChange(t);
      }
    }
  }
}

/** A chain that is no one's desired state (a fail-closed stand-in): always on, no owner. */
export function detachedChain(rules: readonly IptablesRule[]): DesiredChain {
  return { rules, onDemand: false, targets: [], tails: rules.map(ruleTail), owner: undefined, hashes: undefined };
}

/** The chain's rule hashes, computed once. */
export function hashesOf(name: string, chain: DesiredChain): readonly string[] {
  if (chain.hashes === undefined) chain.hashes = hashRuleTails(name, chain.tails);
  return chain.hashes;
}

/** The owned chains `rules` jump (`-j`) or go (`-g`) to. */
function jumpTargets(rules: readonly IptablesRule[]): string[] {
  const out: string[] = [];
  for (const r of rules) {
    const m = /^-[jg] (cali-\S+)/.exec(r.action);
    if (m !== null) out.push(m[1]!);
  }
  return out;
}

export function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
