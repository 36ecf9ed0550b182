/**
 * Kernel IP sets of one IP family: desired vs. dataplane (dataplane.md §6; Felix
 * `ipsets/ipsets.go`).
 *
 * Guarantees:
 * - `applyUpdates()` writes every pending create and member change in ONE `ipset restore`:
 *   `create` only for absent sets, `del … --exist` / `add … --exist` for member deltas into the
 *   live set (no flush, so matching traffic never sees an empty set). A temp set + `swap` is
 *   used only when a set's metadata (type, family, `maxelem`) differs from the kernel's.
 * - `applyDeletions()` destroys sets no longer wanted — the driver calls it only after the
 *   iptables tables stopped referencing them — at most `maxDeletionsPerApply` per call.
 * - Ownership: only sets named `cali4…`/`cali6…` (and legacy `felix-4…`/`felix-6…`) of this
 *   family are read, changed or destroyed; unknown owned sets are destroyed, foreign sets are
 *   never touched.
 * - Resync: a full `ipset list -o save` at the first apply, every `refreshIntervalMs` (Felix
 *   `IpsetsRefreshInterval` 90 s), and after any failure; differences are repaired by the same
 *   apply. (Felix spreads content checks over applies with a time budget; a full list is
 *   simpler and, at 100k members, well under a second.)
 * - Failures: `ipset restore` is not atomic, so a failure triggers a resync and a retry with
 *   backoff; after `maxAttempts` `applyUpdates()` rejects with `IpSetsApplyError`, with the
 *   desired state intact. That is an outage to the driver, which retries the whole apply with
 *   capped backoff for as long as it lasts (issue 19 point 3): the next `applyUpdates()` starts
 *   with a resync, so whatever the failed attempts wrote or not, it writes exactly the
 *   difference.
 */
import type { IpSetType } from '../../proto/index.ts';
import { DataplaneApplyError } from '../apply-error.ts';
import type { IpSetsApplyResult, IpSetsDataplane } from '../ip-sets-dataplane.ts';
import { ipSetName } from '../../selector/index.ts';
import type { Logger } from '../../runtime/logger.ts';
import { sleep, type Clock } from '../../runtime/clock.ts';
import type { CommandResult, CommandRunner } from '../command-runner.ts';
import type { DataplaneMetrics } from '../dataplane-metrics.ts';
import { canonicalMember, memberFamily } from './ip-members.ts';
import { flat } from '../../runtime/flat-string.ts';

export interface IpSetsOptions {
  readonly ipVersion: 4 | 6;
  readonly runner: CommandRunner;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: DataplaneMetrics;
  /** Felix `MaxIpsetSize`. @default 1_048_576 */
  readonly maxElem?: number;
  /** Felix `IpsetsRefreshInterval`. @default 90_000 */
  readonly refreshIntervalMs?: number;
  /** Felix `MaxIPSetDeletionsPerIteration`. @default 1 */
  readonly maxDeletionsPerApply?: number;
  /** @default 10 */
  readonly maxAttempts?: number;
  /** @default 1 */
  readonly initialRetryMs?: number;
}

export class IpSetsApplyError extends DataplaneApplyError {
  override readonly name = 'IpSetsApplyError';
}

interface SetMeta {
  readonly type: IpSetType;
  readonly family: 'inet' | 'inet6';
  readonly maxElem: number;
}

interface ActualSet {
  meta: SetMeta;
  members: Set<string>;
}

interface DesiredSet {
  readonly meta: SetMeta;
  readonly members: Set<string>;
}

export type { IpSetsApplyResult } from '../ip-sets-dataplane.ts';

/** The `ipset` implementation of the `IpSetsDataplane` seam (see `../ip-sets-dataplane.ts`). */
export class IpSets implements IpSetsDataplane {
  readonly ipVersion: 4 | 6;
  private readonly runner: CommandRunner;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: DataplaneMetrics;
  private readonly maxElem: number;
  private readonly refreshIntervalMs: number;
  private readonly maxDeletionsPerApply: number;
  private readonly maxAttempts: number;
  private readonly initialRetryMs: number;
  private readonly ownedPrefixes: readonly string[];

  private readonly desired = new Map<string, DesiredSet>();
  private actual = new Map<string, ActualSet>();
  /** Per set: member → true (add) / false (delete), relative to `actual`. */
  private readonly pending = new Map<string, Map<string, boolean>>();
  /** Sets needing create or a metadata swap. */
  private readonly structural = new Set<string>();
  private readonly toDelete = new Set<string>();
  private loaded = false;
  private nextResyncAt = 0;
  private tempCounter = 0;
  private nextDeletionAt = 0;
  /** Felix: the dataplane retry ticker after failures, 10 s. */
  private readonly deletionRetryMs = 10_000;

  constructor(opts: IpSetsOptions) {
    const { ipVersion, runner, clock, logger, metrics, maxElem = 1_048_576, refreshIntervalMs = 90_000, maxDeletionsPerApply = 1, maxAttempts = 10, initialRetryMs = 1 } = opts;
    if (ipVersion !== 4 && ipVersion !== 6) throw new RangeError(`IpSets: ipVersion must be 4 or 6, got ${String(ipVersion)}`);
    if (!(maxElem > 0)) throw new RangeError(`IpSets: maxElem must be > 0, got ${maxElem}`);
    if (!(maxDeletionsPerApply >= 1)) throw new RangeError(`IpSets: maxDeletionsPerApply must be >= 1, got ${maxDeletionsPerApply}`);
    this.ipVersion = ipVersion;
    this.runner = runner;
    this.clock = clock;
    this.log = logger.child({ component: 'ipsets', ipVersion });
    this.metrics = metrics;
    this.maxElem = maxElem;
    this.refreshIntervalMs = refreshIntervalMs;
    this.maxDeletionsPerApply = maxDeletionsPerApply;
    this.maxAttempts = maxAttempts;
    this.initialRetryMs = initialRetryMs;
    this.ownedPrefixes = [`cali${ipVersion}`, `felix-${ipVersion}`];
  }

  /** The kernel name of `setId` in this family. */
  nameOf(setId: string): string {
    return ipSetName(setId, this.ipVersion);
  }

  // ---- desired state ------------------------------------------------------------------------

  /** Creates the set or replaces its members; members of the other family are ignored. */
  replaceMembers(setId: string, type: IpSetType, members: Iterable<string>): void {
    const name = this.nameOf(setId);
    const meta: SetMeta = { type, family: this.ipVersion === 4 ? 'inet' : 'inet6', maxElem: this.maxElem };
    const set = new Set<string>();
    for (const m of members) {
      const c = this.canonical(name, type, m);
      if (c !== undefined) set.add(c);
    }
    this.desired.set(name, { meta, members: set });
    this.toDelete.delete(name);
    this.recompute(name);
  }

  addMembers(setId: string, members: Iterable<string>): void {
    const name = this.nameOf(setId);
    const d = this.desired.get(name);
    if (d === undefined) return;
    const a = this.actual.get(name);
    for (const m of members) {
      const c = this.canonical(name, d.meta.type, m);
      if (c === undefined || d.members.has(c)) continue;
      d.members.add(c);
      this.mark(name, c, a?.members.has(c) === true ? undefined : true);
    }
  }

  removeMembers(setId: string, members: Iterable<string>): void {
    const name = this.nameOf(setId);
    const d = this.desired.get(name);
    if (d === undefined) return;
    const a = this.actual.get(name);
    for (const m of members) {
      const c = this.canonical(name, d.meta.type, m);
      if (c === undefined || !d.members.delete(c)) continue;
      this.mark(name, c, a?.members.has(c) === true ? false : undefined);
    }
  }

  /** Forgets the set; it is destroyed by a later `applyDeletions()`. */
  removeSet(setId: string): void {
    const name = this.nameOf(setId);
    if (!this.desired.delete(name)) return;
    this.pending.delete(name);
    this.structural.delete(name);
    if (this.actual.has(name) || !this.loaded) this.toDelete.add(name);
  }

  hasSet(setId: string): boolean {
    return this.desired.has(this.nameOf(setId));
  }

  /** Desired members (canonical), for tests and diagnostics. */
  members(setId: string): ReadonlySet<string> | undefined {
    return this.desired.get(this.nameOf(setId))?.members;
  }

  /** Whether `applyDeletions()` has work now (failed deletions wait `deletionRetryMs`). */
  get hasPendingDeletions(): boolean {
    return this.toDelete.size > 0 && this.clock.now() >= this.nextDeletionAt;
  }

  get isDirty(): boolean {
    return this.pending.size > 0 || this.structural.size > 0;
  }

  nextCheckAt(): number {
    return this.toDelete.size > 0 ? Math.min(this.nextResyncAt, this.nextDeletionAt) : this.nextResyncAt;
  }

  invalidate(): void {
    this.nextResyncAt = 0;
  }

  private canonical(name: string, type: IpSetType, m: string): string | undefined {
    // A member of the other family belongs to that family's set. Decided by parsing the
    // address, not by looking for ':' — an IPv4 named-port member (`10.0.0.1,tcp:80`) has one.
    const family = memberFamily(m);
    if (family !== undefined && family !== this.ipVersion) return undefined;
    const c = canonicalMember(m, type, this.ipVersion);
    if (c === undefined) this.log.warn({ set: name, member: m }, 'ignoring IP set member that does not parse');
    // Held for as long as the set: the caller's string when it is already canonical (a
    // named-port member, shared with the calc graph), else flat — the canonical spelling is
    // built by templates, and 200k members held as ropes were 10 MB of cons cells.
    return c === undefined ? undefined : c === m ? m : flat(c);
  }

  private mark(name: string, member: string, op: boolean | undefined): void {
    let p = this.pending.get(name);
    if (op === undefined) {
      p?.delete(member);
      if (p !== undefined && p.size === 0) this.pending.delete(name);
      return;
    }
    if (p === undefined) this.pending.set(name, (p = new Map()));
    p.set(member, op);
  }

  /** Recomputes the full delta of one set against the dataplane. */
  private recompute(name: string): void {
    const d = this.desired.get(name);
    this.pending.delete(name);
    this.structural.delete(name);
    if (d === undefined) return;
    const a = this.actual.get(name);
    if (a === undefined || !sameMeta(a.meta, d.meta)) {
      this.structural.add(name);
      return;
    }
    const p = new Map<string, boolean>();
    for (const m of d.members) if (!a.members.has(m)) p.set(m, true);
    for (const m of a.members) if (!d.members.has(m)) p.set(m, false);
    if (p.size > 0) this.pending.set(name, p);
  }

  // ---- dataplane ----------------------------------------------------------------------------

  /** Reads every owned set of this family back and recomputes all deltas. */
  async resync(): Promise<void> {
    const pending = this.prefetched;
    this.prefetched = undefined;
    const res = await (pending ?? this.fetchList());
    if (res.code !== 0) {
      this.metrics.ipsetErrors.inc();
      throw new IpSetsApplyError(`ipset list failed (${res.code}): ${res.stderr.trim()}`);
    }
    this.actual = parseIpsetSave(res.stdout, (n) => this.owns(n));
    for (const name of this.actual.keys()) if (!this.desired.has(name)) this.toDelete.add(name);
    for (const name of this.toDelete) if (!this.actual.has(name)) this.toDelete.delete(name);
    for (const name of this.desired.keys()) this.recompute(name);
    this.loaded = true;
    this.nextResyncAt = this.clock.now() + this.refreshIntervalMs;
  }

  /** Starts the resync read the next `applyUpdates()` will need (if due), to overlap it with rendering. */
  prefetch(): void {
    if (this.prefetched !== undefined) return;
    if (this.loaded && this.clock.now() < this.nextResyncAt) return;
    this.prefetched = this.fetchList();
  }
  private prefetched: Promise<CommandResult> | undefined;

  private fetchList(): Promise<CommandResult> {
    this.metrics.ipsetCalls.inc();
    return this.runner.run('ipset', ['list', '-o', 'save']);
  }

  private owns(name: string): boolean {
    return this.ownedPrefixes.some((p) => name.startsWith(p));
  }

  /** Creates sets and writes member deltas (one `ipset restore`). */
  async applyUpdates(): Promise<IpSetsApplyResult> {
    let delay = this.initialRetryMs;
    let lastError = '';
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      try {
        if (!this.loaded || this.clock.now() >= this.nextResyncAt) await this.resync();
      } catch (e) {
        lastError = (e as Error).message;
        this.log.warn({ attempt, err: lastError }, 'ipset resync failed; retrying');
        if (attempt < this.maxAttempts) await sleep(this.clock, delay);
        delay *= 2;
        continue;
      }
      if (!this.isDirty) return { wrote: false, bytes: 0, lines: 0 };
      const { lines, after } = this.buildRestore();
      const input = lines.join('\n') + '\n';
      this.metrics.ipsetCalls.inc();
      const res = await this.runner.run('ipset', ['restore'], { stdin: input });
      if (res.code === 0) {
        after();
        return { wrote: true, bytes: Buffer.byteLength(input), lines: lines.length - 1 };
      }
      this.metrics.ipsetErrors.inc();
      lastError = res.stderr.trim();
      this.log.warn({ attempt, code: res.code, stderr: lastError }, 'ipset restore failed; resyncing and retrying');
      this.loaded = false;
      this.prefetched = undefined;
      if (attempt < this.maxAttempts) await sleep(this.clock, delay);
      delay *= 2;
    }
    throw new IpSetsApplyError(`ipset restore failed ${this.maxAttempts} times: ${lastError}`);
  }

  private buildRestore(): { lines: string[]; after: () => void } {
    const lines: string[] = [];
    const commits: Array<() => void> = [];
    for (const name of [...this.structural].sort()) {
      const d = this.desired.get(name)!;
      const a = this.actual.get(name);
      const create = (n: string) => `create ${n} ${d.meta.type} family ${d.meta.family} maxelem ${d.meta.maxElem}`;
      if (a === undefined) {
        lines.push(create(name));
        for (const m of d.members) lines.push(`add ${name} ${m} --exist`);
      } else {
        // Metadata changed: fill a temp set, swap it in, destroy the old contents.
        const temp = `cali${this.ipVersion}t${this.tempCounter++}`;
        lines.push(create(temp));
        for (const m of d.members) lines.push(`add ${temp} ${m} --exist`);
        lines.push(`swap ${temp} ${name}`, `destroy ${temp}`);
      }
      const members = new Set(d.members);
      commits.push(() => this.actual.set(name, { meta: d.meta, members }));
    }
    for (const [name, p] of [...this.pending].sort(([x], [y]) => (x < y ? -1 : 1))) {
      for (const [m, add] of p) if (!add) lines.push(`del ${name} ${m} --exist`);
      for (const [m, add] of p) if (add) lines.push(`add ${name} ${m} --exist`);
      commits.push(() => {
        const a = this.actual.get(name);
        if (a === undefined) return;
        for (const [m, add] of p) {
          if (add) a.members.add(m);
          else a.members.delete(m);
        }
      });
    }
    lines.push('COMMIT');
    return {
      lines,
      after: () => {
        for (const c of commits) c();
        this.structural.clear();
        this.pending.clear();
      },
    };
  }

  /**
   * Destroys up to `maxDeletionsPerApply` sets that are no longer wanted. Call only after the
   * iptables apply that stopped referencing them. Returns whether deletions remain.
   */
  async applyDeletions(): Promise<boolean> {
    if (!this.hasPendingDeletions) return false;
    const batch = [...this.toDelete].sort().slice(0, this.maxDeletionsPerApply);
    if (batch.length === 0) return false;
    this.metrics.ipsetCalls.inc();
    const res = await this.runner.run('ipset', ['restore'], { stdin: batch.map((n) => `destroy ${n}`).join('\n') + '\nCOMMIT\n' });
    if (res.code !== 0) {
      // Most likely still referenced by a rule we do not own, or a racing write: resync later.
      this.metrics.ipsetErrors.inc();
      this.log.warn({ sets: batch, stderr: res.stderr.trim() }, 'ipset destroy failed; will retry after a resync');
      this.loaded = false;
      this.nextDeletionAt = this.clock.now() + this.deletionRetryMs;
      return false;
    }
    for (const n of batch) {
      this.toDelete.delete(n);
      this.actual.delete(n);
    }
    return this.toDelete.size > 0;
  }
}

function sameMeta(a: SetMeta, b: SetMeta): boolean {
  return a.type === b.type && a.family === b.family && a.maxElem === b.maxElem;
}

/** Parses `ipset list -o save` (= `ipset save`) for the sets `owned` accepts. */
export function parseIpsetSave(text: string, owned: (name: string) => boolean): Map<string, ActualSet> {
  const sets = new Map<string, ActualSet>();
  for (const line of text.split('\n')) {
    if (line.startsWith('create ')) {
      const parts = line.split(' ');
      const name = parts[1]!;
      if (!owned(name)) continue;
      const opt = (k: string): string | undefined => {
        const i = parts.indexOf(k);
        return i < 0 ? undefined : parts[i + 1];
      };
      sets.set(name, {
        meta: { type: parts[2] as IpSetType, family: opt('family') === 'inet6' ? 'inet6' : 'inet', maxElem: Number(opt('maxelem') ?? 65536) },
        members: new Set(),
      });
    } else if (line.startsWith('add ')) {
      const sp = line.indexOf(' ', 4);
      const s = sets.get(line.slice(4, sp));
      if (s === undefined) continue;
      const rest = line.slice(sp + 1);
      const end = rest.indexOf(' ');
      s.members.add(end < 0 ? rest : rest.slice(0, end));
    }
  }
  return sets;
}
