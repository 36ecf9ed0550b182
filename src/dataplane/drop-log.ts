/**
 * Attributed drops: what the renderer tags and logs so a dropped packet can be traced to the
 * tier, policy or profile, and rule that dropped it (calico#2709: "which rule dropped this?",
 * also for plain Kubernetes NetworkPolicies).
 *
 * - Every rule that decides a packet's fate carries a {@link RuleTag} (never rendered, so it
 *   changes no hash): the final iptables rule of each Calico rule, each end-of-tier drop and
 *   each "no profile matched" drop. Rule counters (`rule-counters.ts`) read the kernel's
 *   packet and byte counts of exactly these rules.
 * - With {@link DropLogOptions}, every drop decision is preceded by the same match with an
 *   `NFLOG` target, rate-limited by one `hashlimit` bucket shared by all of them (so the limit
 *   is per node and IP family, not per rule). NFLOG never ends a packet's walk: whether anyone
 *   reads the log, and whether the limit is exhausted, changes no verdict.
 * - Each logged packet goes to user space at once (`--nflog-threshold 1`): without it the
 *   kernel batches log messages for up to a second.
 * - The NFLOG prefix is `<chain>|<position>|<digest>`: the position (0-based) of the drop rule
 *   it precedes, in the chain named, and 8 hex digits of a digest of that drop rule (its match,
 *   action and tag). The chain name is at most 28 characters, so the prefix fits NFLOG's 63.
 *   The reader resolves it against the rules the table holds now (`Table.ruleAt`) and
 *   accepts the answer only if the log rule there carries the very same prefix: a packet logged
 *   by an older ruleset, whose drop rule has since moved or changed, is not attributed at all.
 */
import { createHash } from 'node:crypto';
import type { PolicyId } from '../proto/index.ts';
import type { Action } from './action.ts';
import type { Match } from './match.ts';

/** Which decision an iptables rule carries (not rendered). */
export type RuleTag =
  /** The final rule of the owner's Calico rule `index` (in the chain's direction). */
  | { readonly kind: 'rule'; readonly index: number; readonly action: 'allow' | 'deny' | 'pass' | 'log' }
  /**
   * An endpoint chain's drop at the end of tier `tier` (no policy in it decided); `policies`
   * are the tier's policies that select the endpoint in this direction — the ones that isolate it.
   */
  | { readonly kind: 'end-of-tier'; readonly tier: string; readonly policies: readonly PolicyId[] }
  /** An endpoint chain's final drop: no profile accepted. */
  | { readonly kind: 'no-profile-matched' };

export interface DropLogOptions {
  /** NFLOG group the drops are logged to. @default 100 (kube-router's drop group) */
  readonly group?: number;
  /**
   * Sustained rate of logged packets per node and IP family, as Felix's `LogActionRateLimit`
   * writes it: `N/second|minute|hour|day`. @default '10/second'
   */
  readonly rate?: string;
  /** Packets logged at once before `rate` applies (Felix `LogActionRateLimitBurst`'s default). @default 5 */
  readonly burst?: number;
}

export const DEFAULT_DROP_LOG_GROUP = 100;
export const DEFAULT_DROP_LOG_RATE = '10/second';
export const DEFAULT_DROP_LOG_BURST = 5;
/**
 * The shared hashlimit bucket (one per network namespace and family): `tdrop-` and a digest
 * of the rate and burst. The kernel keeps a bucket's first configuration for as long as any
 * rule names it, so a new rate must come with a new name (hashlimit names are at most 15
 * characters).
 */
export function dropLogBucket(rate: string, burst: number): string {
  return `tdrop-${createHash('sha256').update(`${rate} ${burst}`).digest('hex').slice(0, 9)}`;
}
/** Bytes of each packet copied to the log: enough for IPv6 + TCP headers. */
export const DROP_LOG_COPY_BYTES = 128;

/** Felix's `LogActionRateLimit` form. */
export const DROP_LOG_RATE_PATTERN = /^([1-9][0-9]{0,6})\/(second|minute|hour|day)$/;

/**
 * The log rule before a drop: a match (the drop's criteria come first, then this) and the
 * NFLOG action, for the drop rule `drop` at `position` of `chain`.
 */
export type DropLogRule = (chain: string, position: number, drop: LoggedDrop) => { readonly match: Match; readonly action: Action };

/** Validates the options and returns the rule (rate-limit match, NFLOG action) that logs before a drop. */
export function dropLogTarget(opts: DropLogOptions): DropLogRule {
  const { group = DEFAULT_DROP_LOG_GROUP, rate = DEFAULT_DROP_LOG_RATE, burst = DEFAULT_DROP_LOG_BURST } = opts;
  if (!Number.isInteger(group) || group < 0 || group > 65535) throw new RangeError(`drop log: group must be an integer 0–65535, got ${group}`);
  if (!DROP_LOG_RATE_PATTERN.test(rate)) throw new RangeError(`drop log: rate '${rate}' must look like N/second, N/minute, N/hour or N/day`);
  if (!Number.isInteger(burst) || burst < 1 || burst > 10_000) throw new RangeError(`drop log: burst must be an integer 1–10000, got ${burst}`);
  const limit: Match = Object.freeze([{ kind: 'rate-limit', rate, burst, bucket: dropLogBucket(rate, burst) }]);
  return (chain, position, drop) => ({
    match: limit,
    action: { type: 'nflog', group, prefix: dropLogPrefix(chain, position, drop), size: DROP_LOG_COPY_BYTES, threshold: 1 },
  });
}

/**
 * The drop rule a log rule precedes: what its prefix's digest covers — its match and action as
 * the backend writes them (`iptables/rule-text.ts` `ruleDigestText`), so the digest of a rule
 * is what it has always been — and its tag.
 */
export interface LoggedDrop {
  readonly match: string;
  readonly action: string;
  readonly tag: RuleTag;
}

/** `<chain>|<position>|<8 hex digits of the drop rule's digest>`. */
export function dropLogPrefix(chain: string, position: number, drop: LoggedDrop): string {
  const digest = createHash('sha256').update(`${drop.match}\0${drop.action}\0${JSON.stringify(drop.tag)}`).digest('hex').slice(0, 8);
  return `${chain}|${position}|${digest}`;
}

/** The chain and rule position of a prefix; undefined for anything else. */
export function parseDropLogPrefix(prefix: string): { chain: string; position: number } | undefined {
  const m = /^(cali-[^|]+)\|(\d{1,6})\|[0-9a-f]{8}$/.exec(prefix);
  return m === null ? undefined : { chain: m[1]!, position: Number(m[2]) };
}
