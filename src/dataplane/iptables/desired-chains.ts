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
 * - An on-demand chain may be set as a `LazyChain`: rendered on first use of its rules — at the
 *   latest when a transaction writing it streams into iptables-restore, so rendering a large
 *   ruleset from scratch overlaps the kernel's parsing. A chain replacing one already rendered
 *   is rendered at once (the same rules again must change nothing). Until rendered, its rules
 *   are not in the rule count; `programmed` renders what is programmed before counting.
 */
import { actionTarget } from '../action.ts';
import type { Chain, ChainOwner, ChainRule, LazyChain, UpdateChainOptions } from '../chain.ts';
import { CHAIN_PREFIX } from '../chain-names.ts';
import { sameList } from '../../runtime/same-list.ts';
import { hashRuleTails } from './rule-hash.ts';
import { ruleTail } from './rule-text.ts';

export type { LazyChain, UpdateChainOptions } from '../chain.ts';

export interface DesiredChain {
  /** Replaced in place when only tags or the owner change (same texts, same version). Rendered on first read for a lazy chain. */
  rules: readonly ChainRule[];
  /** Programmed only while a programmed always-on chain jumps to it. */
  readonly onDemand: boolean;
  /** Owned chains this one jumps or goes to (counted only for always-on chains). */
  readonly targets: readonly string[];
  /**
   * Each rule without its hash comment (renders a lazy chain). Kept until `releaseTails()`,
   * then rendered again from `rules` if asked for.
   */
  readonly tails: readonly string[];
  /**
   * Drops the tails once the hashes are known (a write has streamed them): a programmed
   * chain keeps its rules and hashes, not a second copy of its text. Released while the
   * restore input is generated, the texts of a large program die young instead of being
   * copied into the old generation with everything the program keeps.
   */
  releaseTails(): void;
  /** False while a lazy chain's rules are not rendered yet. */
  readonly rendered: boolean;
  /** Whom to name when iptables-restore rejects the chain (replaced in place, as `rules`). */
  owner: ChainOwner | undefined;
  /**
   * Computed on first use (read-back comparison or write), not when the chain is set: a write
   * computes them while the transaction streams into iptables-restore, so hashing overlaps with
   * the kernel's parsing.
   */
  hashes: readonly string[] | undefined;
}

export class DesiredChains {
  private readonly chains = new Map<string, DesiredChain>();
  /** Owned chain → number of always-on desired chains jumping to it. */
  private readonly refCounts = new Map<string, number>();
  private programmedChains = 0;
  /** Rules of the programmed chains that are rendered. */
  private ruleCount = 0;
  /** Programmed chains not rendered yet (their rules are not in `ruleCount`). */
  private readonly unrendered = new Set<string>();

  constructor(private readonly onChange: (name: string) => void) {}

  /** Sets or replaces a chain; the same rules again change nothing. Only on-demand chains may be lazy. */
  update(chain: Chain | LazyChain, opts: UpdateChainOptions = {}): void {
    const onDemand = opts.onDemand ?? false;
    const old = this.chains.get(chain.name);
    if ('render' in chain) {
      if (!onDemand) throw new RangeError(`DesiredChains: chain '${chain.name}' is always on and cannot be rendered lazily`);
      // Nothing rendered to compare with (a chain never rendered was never written): replace.
      if (old === undefined || !old.rendered) {
        const name = chain.name;
        const next: Entry = new Entry(chain, () => this.onRendered(name, next), opts.owner);
        return this.replace(name, old, next);
      }
      chain = { name: chain.name, rules: chain.render() };
    }
    const tails = chain.rules.map(ruleTail);
    // Same name and same rule texts ⇔ same hashes.
    if (old !== undefined && old.onDemand === onDemand && sameList(old.tails, tails)) {
      // Same kernel state: the same version (a rejection is tracked by its identity), but with
      // the new rules' tags and owner (a rule's index may move while its text does not).
      old.rules = chain.rules;
      old.owner = opts.owner;
      old.releaseTails();
      return;
    }
    this.replace(chain.name, old, Entry.rendered(chain.rules, tails, onDemand, onDemand ? [] : jumpTargets(chain.rules), opts.owner));
  }

  private replace(name: string, old: DesiredChain | undefined, next: DesiredChain): void {
    if (old !== undefined && this.isProgrammed(name, old)) this.count(name, old, -1);
    this.chains.set(name, next);
    this.retarget(old?.targets ?? [], next.targets);
    if (this.isProgrammed(name, next)) this.count(name, next, +1);
    this.onChange(name);
  }

  /** A lazy chain was rendered: its rules count if it is still the programmed one. */
  private onRendered(name: string, d: DesiredChain): void {
    if (this.chains.get(name) !== d || !this.unrendered.delete(name)) return;
    this.ruleCount += d.rules.length;
  }

  remove(name: string): void {
    const old = this.chains.get(name);
    if (old === undefined) return;
    if (this.isProgrammed(name, old)) this.count(name, old, -1);
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

  /** Chains and rules that belong in the kernel now (renders the programmed lazy chains). */
  get programmed(): { readonly chains: number; readonly rules: number } {
    for (const name of [...this.unrendered]) void this.chains.get(name)?.rules;
    return { chains: this.programmedChains, rules: this.ruleCount };
  }

  private isProgrammed(name: string, d: DesiredChain): boolean {
    return !d.onDemand || (this.refCounts.get(name) ?? 0) > 0;
  }

  private count(name: string, d: DesiredChain, sign: 1 | -1): void {
    this.programmedChains += sign;
    if (d.rendered) this.ruleCount += sign * d.rules.length;
    else if (sign > 0) this.unrendered.add(name);
    else this.unrendered.delete(name);
  }

  /** Moves references from `before` to `after`; an on-demand chain crossing zero changes state. */
  private retarget(before: readonly string[], after: readonly string[]): void {
    for (const t of after) {
      const n = (this.refCounts.get(t) ?? 0) + 1;
      this.refCounts.set(t, n);
      const d = this.chains.get(t);
      if (n === 1 && d?.onDemand === true) {
        this.count(t, d, +1);
        this.onChange(t);
      }
    }
    for (const t of before) {
      const n = (this.refCounts.get(t) ?? 0) - 1;
      if (n > 0) this.refCounts.set(t, n);
      else this.refCounts.delete(t);
      const d = this.chains.get(t);
      if (n === 0 && d?.onDemand === true) {
        this.count(t, d, -1);
        this.onChange(t);
      }
    }
  }
}

/** A chain that is no one's desired state (a fail-closed stand-in): always on, no owner. */
export function detachedChain(rules: readonly ChainRule[]): DesiredChain {
  return Entry.rendered(rules, rules.map(ruleTail), false, [], undefined);
}

/** One desired chain, rendered at once or on first use of its rules. */
class Entry implements DesiredChain {
  owner: ChainOwner | undefined;
  hashes: readonly string[] | undefined = undefined;
  readonly targets: readonly string[];
  private rulesNow: readonly ChainRule[] | undefined;
  private tailsNow: readonly string[] | undefined;

  /** A lazy on-demand chain: `lazy.render()` once, then `onRendered`. */
  constructor(
    private lazy: LazyChain | undefined,
    private onRendered: (() => void) | undefined,
    owner: ChainOwner | undefined,
    readonly onDemand = true,
    targets: readonly string[] = [],
  ) {
    this.owner = owner;
    this.targets = targets;
  }

  static rendered(rules: readonly ChainRule[], tails: readonly string[], onDemand: boolean, targets: readonly string[], owner: ChainOwner | undefined): Entry {
    const e = new Entry(undefined, undefined, owner, onDemand, targets);
    e.rulesNow = rules;
    e.tailsNow = tails;
    return e;
  }

  get rendered(): boolean {
    return this.rulesNow !== undefined;
  }

  get rules(): readonly ChainRule[] {
    if (this.rulesNow === undefined) this.renderNow();
    return this.rulesNow!;
  }

  /** Same texts only (see `DesiredChains.update`): the tails stay. */
  set rules(rules: readonly ChainRule[]) {
    this.rulesNow = rules;
  }

  get tails(): readonly string[] {
    if (this.tailsNow === undefined) {
      if (this.rulesNow === undefined) this.renderNow();
      else this.tailsNow = this.rulesNow.map(ruleTail);
    }
    return this.tailsNow!;
  }

  releaseTails(): void {
    if (this.hashes !== undefined) this.tailsNow = undefined;
  }

  private renderNow(): void {
    const rules = this.lazy!.render();
    this.rulesNow = rules;
    this.tailsNow = rules.map(ruleTail);
    const done = this.onRendered;
    this.lazy = undefined;
    this.onRendered = undefined;
    done?.();
  }
}

/** The chain's rule hashes, computed once. */
export function hashesOf(name: string, chain: DesiredChain): readonly string[] {
  if (chain.hashes === undefined) chain.hashes = hashRuleTails(name, chain.tails);
  return chain.hashes;
}

/** The owned chains `rules` jump or go to. */
function jumpTargets(rules: readonly ChainRule[]): string[] {
  const out: string[] = [];
  for (const r of rules) {
    const target = actionTarget(r.action);
    if (target?.startsWith(CHAIN_PREFIX) === true) out.push(target);
  }
  return out;
}
