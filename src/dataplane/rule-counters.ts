/**
 * Per-rule packet and byte counters from the kernel (`Table.readRuleCounts`: `iptables-save -c`
 * for the iptables backend), attributed to
 * tier / policy or profile / direction / rule index through the tags the renderer puts on
 * every deciding rule (drop-log.ts), and exported as Prometheus counters.
 *
 * Invariants:
 * - Attribution is exact: a kernel rule is counted only when its hash comment is the hash of a
 *   tagged rule the table wants now (the hash covers the chain, the rule and every rule before
 *   it), so a rule left from an older ruleset is never credited to the current one.
 * - Cardinality is bounded: one series per (tier, policy or profile, direction, rule) used on
 *   this node — policy chains are shared by all local endpoints, and the endpoints' own drops
 *   (end of tier, no profile matched) are summed per tier and direction, never per endpoint.
 *   Past `maxSeries` the rest is summed into one `name="_other"` series per direction.
 * - Counters follow the kernel: when a rule is rewritten (its hash changes) its count starts
 *   again from zero, which Prometheus' `rate()` treats as a counter reset.
 * - Reading is bounded too: a scrape reuses a read younger than `minIntervalMs`, so scrapes
 *   cannot make the agent read the kernel's counters back to back.
 */
import { Counter } from 'prom-client';
import type { Clock } from '../runtime/clock.ts';
import { realClock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { getOrCreate, type Registry } from '../runtime/metrics.ts';
import { chainDirection } from './chain-names.ts';
import type { Table } from './table.ts';

/** One counted decision on this node, summed over IP families (and endpoints, for endpoint drops). */
export interface RuleCount {
  readonly tier: string;
  /** `NetworkPolicy`, `GlobalNetworkPolicy`, `StagedNetworkPolicy`, `StagedGlobalNetworkPolicy`, `KubernetesClusterNetworkPolicy`, `Profile`; '' for an end-of-tier drop. */
  readonly kind: string;
  readonly namespace: string;
  /** Policy or profile name; '' for endpoint drops. */
  readonly name: string;
  readonly direction: 'ingress' | 'egress';
  /** The rule's index in the owner's rules of that direction, or `end-of-tier`, `no-profile-matched`. */
  readonly rule: string;
  readonly action: 'allow' | 'deny' | 'pass' | 'log';
  readonly packets: number;
  readonly bytes: number;
}

export interface RuleCountersOptions {
  readonly tables: readonly Table[];
  readonly registry?: Registry;
  readonly logger: Logger;
  /** @default realClock */
  readonly clock?: Clock;
  /** A scrape reuses a read younger than this. @default 5_000 */
  readonly minIntervalMs?: number;
  /** Series per metric before the rest is summed into `name="_other"`. @default 2_000 */
  readonly maxSeries?: number;
}

/** `_other` series at most: two directions × four actions. */
const OTHER_SERIES = 8;
const LABELS = ['tier', 'kind', 'namespace', 'name', 'direction', 'rule', 'action'] as const;

export class RuleCounters {
  readonly #tables: readonly Table[];
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #minIntervalMs: number;
  readonly #maxSeries: number;
  #last: { at: number; counts: Promise<RuleCount[]> } | undefined;
  #lastGood: RuleCount[] = [];

  constructor(opts: RuleCountersOptions) {
    const { tables, registry, logger, clock = realClock, minIntervalMs = 5_000, maxSeries = 2_000 } = opts;
    if (!(maxSeries >= 2 * OTHER_SERIES)) throw new RangeError(`RuleCounters: maxSeries must be >= ${2 * OTHER_SERIES}, got ${maxSeries}`);
    this.#tables = tables;
    this.#log = logger.child({ component: 'rule-counters' });
    this.#clock = clock;
    this.#minIntervalMs = minIntervalMs;
    this.#maxSeries = maxSeries;
    if (registry === undefined) return;
    const recent = (): Promise<RuleCount[]> => this.recent();
    const bounded = (counts: readonly RuleCount[]): RuleCount[] => this.bounded(counts);
    const log = this.#log;
    const lastGood = (): RuleCount[] => this.#lastGood;
    const register = (name: string, help: string, field: 'packets' | 'bytes'): void => {
      getOrCreate(
        registry,
        name,
        () =>
          new Counter({
            name,
            help,
            labelNames: LABELS,
            registers: [registry],
            async collect(this: Counter<(typeof LABELS)[number]>) {
              let counts: RuleCount[];
              try {
                counts = await recent();
              } catch (e) {
                // The last good read, so a failed iptables-save does not make every series vanish.
                log.warn({ err: (e as Error).message }, 'cannot read rule counters; this scrape repeats the last read');
                counts = lastGood();
              }
              this.reset();
              for (const c of bounded(counts)) {
                if (c[field] > 0) this.inc({ tier: c.tier, kind: c.kind, namespace: c.namespace, name: c.name, direction: c.direction, rule: c.rule, action: c.action }, c[field]);
              }
            },
          }),
      );
    };
    register('tessera_rule_packets_total', 'Packets that matched a deciding policy or profile rule, or an end-of-tier / no-profile drop, on this node (kernel counters).', 'packets');
    register('tessera_rule_bytes_total', 'Bytes of those packets (kernel counters).', 'bytes');
  }

  /** A read no older than `minIntervalMs` (shared by concurrent callers). */
  recent(): Promise<RuleCount[]> {
    const now = this.#clock.now();
    if (this.#last === undefined || now - this.#last.at >= this.#minIntervalMs) {
      const counts = this.read();
      this.#last = { at: now, counts };
      counts.then(
        (c) => {
          this.#lastGood = c;
        },
        () => {
          if (this.#last?.counts === counts) this.#last = undefined;
        },
      );
    }
    return this.#last.counts;
  }

  /** Reads every table's counters now and attributes them (zero counts included). */
  async read(): Promise<RuleCount[]> {
    const sums = new Map<string, { -readonly [K in keyof RuleCount]: RuleCount[K] }>();
    for (const table of this.#tables) {
      for (const t of await table.readRuleCounts()) {
        const direction = chainDirection(t.chain);
        const tag = t.rule.tag!;
        if (direction === undefined) continue;
        const owner = t.owner;
        const base =
          tag.kind === 'rule'
            ? { tier: owner?.tier ?? '', kind: owner?.kind ?? '', namespace: owner?.namespace ?? '', name: owner?.name ?? '', rule: String(tag.index), action: tag.action }
            : tag.kind === 'end-of-tier'
              ? { tier: tag.tier, kind: '', namespace: '', name: '', rule: 'end-of-tier', action: 'deny' as const }
              : { tier: '', kind: 'Profile', namespace: '', name: '', rule: 'no-profile-matched', action: 'deny' as const };
        const key = `${base.tier}\0${base.kind}\0${base.namespace}\0${base.name}\0${direction}\0${base.rule}\0${base.action}`;
        const sum = sums.get(key);
        if (sum === undefined) sums.set(key, { ...base, direction, packets: t.packets, bytes: t.bytes });
        else {
          sum.packets += t.packets;
          sum.bytes += t.bytes;
        }
      }
    }
    return [...sums.values()];
  }

  /**
   * At most `maxSeries` counts: the first in tier/kind/namespace/name/direction/rule order, the
   * rest summed into one `name="_other"` count per direction and action (at most eight).
   */
  bounded(counts: readonly RuleCount[]): RuleCount[] {
    if (counts.length <= this.#maxSeries) return [...counts];
    const sorted = [...counts].sort(compareCounts);
    const cut = this.#maxSeries - OTHER_SERIES;
    const other = new Map<string, { -readonly [K in keyof RuleCount]: RuleCount[K] }>();
    for (const c of sorted.slice(cut)) {
      const key = `${c.direction}\0${c.action}`;
      const o = other.get(key);
      if (o === undefined) other.set(key, { tier: '', kind: '', namespace: '', name: '_other', direction: c.direction, rule: '_other', action: c.action, packets: c.packets, bytes: c.bytes });
      else {
        o.packets += c.packets;
        o.bytes += c.bytes;
      }
    }
    return [...sorted.slice(0, cut), ...other.values()];
  }
}

function compareCounts(a: RuleCount, b: RuleCount): number {
  for (const k of ['tier', 'kind', 'namespace', 'name', 'direction'] as const) {
    if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  }
  const ai = Number(a.rule);
  const bi = Number(b.rule);
  if (Number.isNaN(ai) || Number.isNaN(bi)) return a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0;
  return ai - bi;
}
