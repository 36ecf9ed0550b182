/**
 * Our rules in the kernel's own chains (`FORWARD`, `INPUT`, `OUTPUT`): what one table wants
 * there vs. what a read-back found (dataplane.md §1, §5.2 step 4).
 *
 * - Ownership: a rule is ours when it carries our `cali:` hash comment; anything else in a
 *   kernel chain is foreign and never touched.
 * - A write deletes every rule of ours by its exact text as read back (never by index, which
 *   could hit a foreign rule), then inserts the desired inserts at the top (in reverse, so they
 *   end up in order) and appends the appends.
 * - Inserts and appends are hashed as one list: their relative order is what a read-back
 *   checks; and our inserts must be the chain's first rules, so a foreign rule inserted above
 *   them cannot pre-empt policy (Felix re-inserts them in that case too).
 */
import type { ChainRule, KernelHooks } from '../chain.ts';
import { hashCommentFragment, ruleBody } from './rule-text.ts';
import { sameList } from '../../runtime/same-list.ts';
import type { KernelChainState } from './iptables-save.ts';
import { ruleHashes } from './rule-hash.ts';

const KERNEL_CHAIN = /^[A-Z][A-Z0-9_-]{0,27}$/;

export class KernelHookRules {
  private readonly wanted = new Map<string, { readonly rules: readonly ChainRule[]; readonly hashes: string[]; readonly nInserts: number }>();
  private actual = new Map<string, KernelChainState>();
  /** Whether a write is needed (true until the first read-back or write says otherwise). */
  dirty = true;

  set(hooks: readonly KernelHooks[]): void {
    this.wanted.clear();
    for (const h of hooks) {
      if (!KERNEL_CHAIN.test(h.chain)) throw new RangeError(`KernelHookRules: '${h.chain}' is not a kernel chain name`);
      const rules = [...h.inserts, ...h.appends];
      this.wanted.set(h.chain, { rules, hashes: ruleHashes(h.chain, rules), nInserts: h.inserts.length });
    }
    this.dirty = true;
  }

  /** The kernel chains we hook, for the read-back's parser. */
  chains(): Set<string> {
    return new Set(this.wanted.keys());
  }

  /** Takes what a read-back found and decides whether a write is needed. */
  readBack(kernel: Map<string, KernelChainState>): void {
    this.actual = kernel;
    this.dirty = false;
    for (const [chain, h] of this.wanted) {
      const k = kernel.get(chain);
      if (!sameList(k?.hashes ?? [], h.hashes)) this.dirty = true;
      else for (let i = 0; i < h.nInserts; i++) if (k?.positions[i] !== i) this.dirty = true;
    }
    for (const [chain, k] of kernel) if (!this.wanted.has(chain) && k.hashes.length > 0) this.dirty = true;
  }

  /** The restore lines that rewrite our rules in every kernel chain. */
  ops(): string[] {
    const ops: string[] = [];
    for (const k of this.actual.values()) for (const line of k.lines) ops.push(`-D${line.slice(2)}`);
    for (const [chain, h] of this.wanted) {
      for (let i = h.nInserts - 1; i >= 0; i--) ops.push(`-I ${chain} 1 ${this.body(h, i)}`);
      for (let i = h.nInserts; i < h.rules.length; i++) ops.push(`-A ${chain} ${this.body(h, i)}`);
    }
    return ops;
  }

  /** Records that the lines from `ops()` were committed. */
  written(): void {
    const kernel = new Map<string, KernelChainState>();
    for (const [chain, h] of this.wanted) {
      kernel.set(chain, { lines: h.rules.map((_, i) => `-A ${chain} ${this.body(h, i)}`), hashes: [...h.hashes], positions: h.hashes.map((_, i) => i) });
    }
    this.actual = kernel;
    this.dirty = false;
  }

  private body(h: { readonly rules: readonly ChainRule[]; readonly hashes: readonly string[] }, i: number): string {
    return ruleBody(h.rules[i]!, hashCommentFragment(h.hashes[i]!));
  }
}

