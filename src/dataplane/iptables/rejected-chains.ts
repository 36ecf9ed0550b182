/**
 * Chains whose rules iptables-restore rejected, and what stands in for them meanwhile
 * (issue 12 point 6, issue 19 point 3).
 *
 * Felix answers a restore that fails ten times by panicking, so the process restarts and
 * rebuilds. In a cluster that turns one rule the kernel will not take into a crash loop on
 * every node, with the previous — possibly more permissive — rules left in force. Instead the
 * table narrows a failed transaction to the chains at fault, writes everything else, and
 * programs each rejected chain as its fail-closed stand-in until a retry is accepted.
 *
 * The stand-in (see {@link failClosedRules}) is a single DROP, and only for chains whose
 * dropping affects nothing but the traffic that chain decides:
 * - a policy or profile chain (`cali-pi-`, `cali-po-`, `cali-pri-`, `cali-pro-`): an endpoint
 *   chain jumps to it only for packets that no earlier policy of the tier accepted or passed
 *   (`-m mark --mark 0/<pass>` guards the jump, and an accept returns at once). Those packets
 *   keep exactly the verdict they had; every packet that would have reached the rejected
 *   policy — whatever it would have done with it (allow, deny, pass, or fall through to later
 *   policies and tiers) — is dropped. That is the tightest verdict that never allows more than
 *   the real policy, with tiers, Pass and profiles alike; dropping in the endpoint chains
 *   instead would also drop traffic earlier policies allow;
 * - an endpoint chain (`cali-tw-`, `cali-fw-`): that endpoint's traffic in that direction
 *   drops, established connections included (we cannot tell which of them its policy allows);
 * - the workload dispatch chains and `cali-wl-to-host`: all workload traffic through them
 *   drops, as for an unknown interface; host traffic is not touched;
 * - a host endpoint chain (`cali-th-`, `cali-fh-` in any table; `cali-thfw-`, `cali-fhfw-`):
 *   that interface's traffic in that direction drops — but `cali-th-`/`cali-fh-` first jump to
 *   their failsafe chain, so the node stays reachable on the failsafe ports.
 * The top-level chains (`cali-FORWARD`, `cali-INPUT`, `cali-OUTPUT`) carry host traffic: a
 * DROP there would cut the node off, so they — and any owned chain not named above — have no
 * stand-in, and a failure blamed on them is treated like an outage (the kernel keeps its
 * state, the apply is retried and reported), never narrowed.
 *
 * Each rejection is retried with capped exponential backoff (1 s doubling to 30 s by
 * default); a new desired version of the chain is tried at once.
 */
import { isStagedPolicy, type PolicyKind } from '../../proto/index.ts';
import type { Clock } from '../../runtime/clock.ts';
import { Backoff } from '../../runtime/backoff.ts';
import { DROP, jump } from '../action.ts';
import { ANY } from '../match.ts';
import type { ChainOwner, ChainRule } from '../chain.ts';
import type { ChainRejection } from '../table.ts';
import { CHAIN_FAILSAFE_IN, CHAIN_FAILSAFE_OUT, CHAIN_FROM_WL_DISPATCH, CHAIN_TO_WL_DISPATCH, CHAIN_WL_TO_HOST } from '../chain-names.ts';

/** Who a chain belongs to (the model's `ChainOwner`), for the log line that reports its rejection. */
export type { ChainOwner } from '../chain.ts';

/** Policy, profile and endpoint chains. */
const STAND_IN_PREFIXES = ['cali-pi-', 'cali-po-', 'cali-pri-', 'cali-pro-', 'cali-tw-', 'cali-fw-', 'cali-th-', 'cali-fh-', 'cali-thfw-', 'cali-fhfw-'];

/**
 * The fail-closed stand-in for `chain` (see the file comment), or undefined for a chain that
 * has none. `rule` (1-based) names the rejected iptables rule in the comment when known. A
 * staged policy's chain (by its `owner`; a long name is hashed, so never by name) stands in
 * as an empty chain: it only counts, so returning is its only outcome, and a DROP there would
 * enforce a policy that is not in force.
 */
export function failClosedRules(chain: string, rule?: number, owner?: ChainOwner): ChainRule[] | undefined {
  if (!hasStandIn(chain)) return undefined;
  if (owner !== undefined && isStagedPolicy(owner as { kind: PolicyKind })) return [];
  const which = rule === undefined ? 'this chain' : `rule ${rule} of this chain`;
  const drop: ChainRule = { match: ANY, action: DROP, comments: [`Tessera: iptables-restore rejected ${which}, fail closed`] };
  // A host endpoint's own chains keep their failsafe ports open: the node must stay reachable.
  if (chain.startsWith('cali-th-')) return [{ match: ANY, action: jump(CHAIN_FAILSAFE_OUT) }, drop];
  if (chain.startsWith('cali-fh-')) return [{ match: ANY, action: jump(CHAIN_FAILSAFE_IN) }, drop];
  return [drop];
}

function hasStandIn(chain: string): boolean {
  if (STAND_IN_PREFIXES.some((p) => chain.startsWith(p))) return true;
  return chain === CHAIN_WL_TO_HOST || chain.startsWith(CHAIN_FROM_WL_DISPATCH) || chain.startsWith(CHAIN_TO_WL_DISPATCH);
}

/** One rejected chain (the `Table` contract's `ChainRejection`). */
export type { ChainRejection } from '../table.ts';

export interface RejectedChainsOptions {
  readonly clock: Clock;
  /** First retry delay. @default 1_000 */
  readonly initialRetryMs?: number;
  /** Retry delay cap. @default 30_000 */
  readonly maxRetryMs?: number;
}

interface Entry extends ChainRejection {
  readonly backoff: Backoff;
}

/**
 * The rejection records of one table. Not thread-safe (the table is not re-entrant either).
 */
export class RejectedChains {
  private readonly clock: Clock;
  private readonly initialRetryMs: number;
  private readonly maxRetryMs: number;
  private readonly entries = new Map<string, Entry>();

  constructor(opts: RejectedChainsOptions) {
    const { clock, initialRetryMs = 1_000, maxRetryMs = 30_000 } = opts;
    if (!(initialRetryMs > 0)) throw new RangeError(`RejectedChains: initialRetryMs must be > 0, got ${initialRetryMs}`);
    if (!(maxRetryMs >= initialRetryMs)) throw new RangeError(`RejectedChains: maxRetryMs (${maxRetryMs}) must be >= initialRetryMs (${initialRetryMs})`);
    this.clock = clock;
    this.initialRetryMs = initialRetryMs;
    this.maxRetryMs = maxRetryMs;
  }

  get size(): number {
    return this.entries.size;
  }

  get(chain: string): ChainRejection | undefined {
    return this.entries.get(chain);
  }

  /**
   * Records that `version` of `chain` was rejected (again). Returns the record and whether it
   * is news — the first rejection of this version — which is when the caller logs it.
   */
  reject(chain: string, kind: ChainRejection['kind'], version: object | undefined, detail: { readonly rule: number | undefined; readonly error: string }): { rejection: ChainRejection; news: boolean } {
    const old = this.entries.get(chain);
    const news = old === undefined || old.kind !== kind || old.version !== version;
    const backoff = news ? new Backoff(this.clock, { initialMs: this.initialRetryMs, maxMs: this.maxRetryMs, jitter: 0, resetAfterMs: Infinity }) : old.backoff;
    const entry: Entry = {
      chain,
      kind,
      version,
      rule: detail.rule,
      error: detail.error,
      attempts: news ? 1 : old.attempts + 1,
      retryAt: this.clock.now() + backoff.next(),
      backoff,
    };
    this.entries.set(chain, entry);
    return { rejection: entry, news };
  }

  /** Forgets `chain` (accepted on retry, or no longer wanted); true if it was rejected. */
  delete(chain: string): boolean {
    return this.entries.delete(chain);
  }

  /** A new desired version of `chain`: it is retried on the next apply. */
  retryNow(chain: string): void {
    const e = this.entries.get(chain);
    if (e !== undefined) this.entries.set(chain, { ...e, retryAt: this.clock.now() });
  }

  /** Rejected chains whose retry is due, by name. */
  due(): string[] {
    const now = this.clock.now();
    return [...this.entries.values()].filter((e) => e.retryAt <= now).map((e) => e.chain).sort();
  }

  /** Clock ms of the earliest retry (Infinity when nothing is rejected). */
  nextRetryAt(): number {
    let at = Infinity;
    for (const e of this.entries.values()) at = Math.min(at, e.retryAt);
    return at;
  }

  [Symbol.iterator](): IterableIterator<ChainRejection> {
    return this.entries.values();
  }
}

/** Log fields naming a chain's owner and, when known, the owner's rule behind iptables rule `rule` (1-based). */
export function ownerFields(owner: ChainOwner | undefined, rule: number | undefined): Record<string, string | undefined> {
  if (owner === undefined) return {};
  return { kind: owner.kind, namespace: owner.namespace, name: owner.name, tier: owner.tier, ownerRule: rule === undefined ? undefined : owner.ruleOf?.(rule - 1) };
}

