/**
 * One iptables table in one IP family: desired chains vs. what the kernel has
 * (dataplane.md §5; Felix `iptables/table.go`).
 *
 * Guarantees:
 * - `apply()` writes with ONE `iptables-restore --noflush` transaction (`RestoreTransaction`)
 *   unless something is rejected, containing only the chains whose hash lists differ from the
 *   kernel's: `-R`/`-A`/`-D` by index from the hash diff, forward references for new chains,
 *   hook rules in kernel chains (`KernelHookRules`), and `-X` of removed chains last. Nothing is
 *   written when nothing differs. Which chains are wanted, and which of them belong in the
 *   kernel now (policy chains only while referenced), is `DesiredChains`.
 * - Ownership: it creates, rewrites and deletes only `cali-` chains, and in kernel chains only
 *   rules carrying its `cali:` hash comment (deleted by their exact text as read back). Foreign
 *   chains and rules are never touched, also not when they sit next to ours.
 * - Read-back: `iptables-save -t <table>` on the first apply, every `refreshIntervalMs`, and
 *   after writes (`postWriteCheckMs`, doubling up to the refresh interval). Anything owned that
 *   differs — a flushed or deleted chain, a tampered rule, a missing hook, an unexpected
 *   `cali-` chain — is repaired by the next apply.
 * - Failure is contained (issue 12 point 6): a restore iptables-restore rejects is narrowed to
 *   the chains at fault — from the input line it names (`RestoreTransaction.blame`), else by
 *   bisecting the dirty chains (`findRejectedChain`) — and everything else is written. A
 *   rejected chain is programmed as its fail-closed stand-in (a DROP; `failClosedRules` says
 *   which chains have one and why that is safe with tiers and Pass), logged once per desired
 *   version with its owner (policy, profile or endpoint), rule and iptables-restore's message,
 *   counted, and retried with capped exponential backoff; a new desired version is tried at
 *   once. A chain is blamed only when it fails twice in a row, the second time after a fresh
 *   read-back and `beforeRetry` (a stale index or a set destroyed behind our back fails the
 *   same way, and is not the chain's fault).
 * - A failure no chain is to blame for (iptables-restore missing, the xtables lock held, a hook
 *   rule refused) is retried after re-reading the kernel with exponential backoff (Felix: 10
 *   attempts from 1 ms); then `apply()` rejects with `IptablesApplyError`, leaving the kernel
 *   as it was, and the driver retries later. Every chain written on the way holds its desired
 *   rules or its DROP stand-in, never anything more permissive.
 * - The xtables lock is honoured with `--wait <s> --wait-interval <µs>` on every restore.
 *
 * Not re-entrant: one `apply()` at a time (the driver's loop guarantees it).
 */
import type { Logger } from '../../runtime/logger.ts';
import { sleep, type Clock } from '../../runtime/clock.ts';
import { emptyPhases, timed, type PhaseTotals } from '../apply-phases.ts';
import { findRejectedChain, type TrialOutcome } from './chain-bisect.ts';
import { CHAIN_PREFIX } from '../chain-names.ts';
import { DataplaneApplyError } from '../apply-error.ts';
import type { Chain, ChainRule, KernelHooks } from '../chain.ts';
import type { CommandResult, CommandRunner } from '../command-runner.ts';
import type { DataplaneMetrics } from '../dataplane-metrics.ts';
import { sameList } from '../../runtime/same-list.ts';
import { DesiredChains, detachedChain, hashesOf, type DesiredChain, type LazyChain, type UpdateChainOptions } from './desired-chains.ts';
import { parseCounterLine, parseSave } from './iptables-save.ts';
import { KernelHookRules } from './kernel-hook-rules.ts';
import { RejectedChains, failClosedRules, ownerFields, type ChainOwner, type ChainRejection } from './rejected-chains.ts';
import { RestoreTransaction, restoreErrorLine, restoreErrorMessage, streamRestore, type ChainWrite } from './restore-transaction.ts';
import type { IptablesBackend } from './iptables-backend.ts';
import type { Table, TableApplyResult, TaggedRuleCount } from '../table.ts';

export type { IptablesBackend } from './iptables-backend.ts';

export interface IptablesTableOptions {
  /** @default 'filter' */
  readonly table?: string;
  readonly ipVersion: 4 | 6;
  readonly runner: CommandRunner;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: DataplaneMetrics;
  /** @default 'nft' */
  readonly backend?: IptablesBackend;
  /** Felix `IptablesRefreshInterval`. @default 180_000 */
  readonly refreshIntervalMs?: number;
  /** Felix `IptablesPostWriteCheckInterval` (doubles after each check). @default 5_000 */
  readonly postWriteCheckMs?: number;
  /** xtables lock wait (`--wait`), seconds. @default 10 */
  readonly lockTimeoutSeconds?: number;
  /** Felix `IptablesLockProbeInterval`. @default 50 */
  readonly lockProbeIntervalMs?: number;
  /** Attempts at a restore that fails with no chain to blame, before `apply()` rejects. @default 10 */
  readonly maxAttempts?: number;
  /** First retry delay of those attempts, doubling. @default 1 */
  readonly initialRetryMs?: number;
  /** First retry of a rejected chain, doubling. @default 1_000 */
  readonly rejectedRetryMs?: number;
  /** Cap of a rejected chain's retry delay. @default 30_000 */
  readonly rejectedRetryMaxMs?: number;
  /**
   * Runs after a failed restore, before the next attempt. The driver resyncs the IP sets here:
   * one rule naming a set someone destroyed fails the whole transaction until the set is back,
   * and the sets' own refresh may be far off.
   */
  readonly beforeRetry?: () => Promise<void>;
}

export class IptablesApplyError extends DataplaneApplyError {
  override readonly name = 'IptablesApplyError';
}

export type { TableApplyResult } from '../table.ts';

/**
 * How one transaction writes a chain: `desired` (its rules, or its deletion), `stand-in` (its
 * fail-closed stand-in; a doomed chain is left alone), `keep` (not touched). Without an entry a
 * chain is written as it should be now: rejected chains as their stand-ins.
 */
type WriteMode = 'desired' | 'stand-in' | 'keep';

/** What a chain is written as: a chain, its deletion, or nothing. */
type Target = DesiredChain | 'delete' | 'keep';

/** The iptables implementation of the `Table` seam (see `../table.ts` for the contract). */
export class IptablesTable implements Table {
  readonly table: string;
  readonly ipVersion: 4 | 6;
  private readonly runner: CommandRunner;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: DataplaneMetrics;
  private readonly restoreCmd: string;
  private readonly saveCmd: string;
  private readonly refreshIntervalMs: number;
  private readonly postWriteCheckMs: number;
  private readonly lockArgs: string[];
  private readonly maxAttempts: number;
  private readonly initialRetryMs: number;
  private readonly beforeRetry: (() => Promise<void>) | undefined;
  private readonly labels: { ip_version: string; table: string };

  private readonly desired = new DesiredChains((name) => {
    this.dirty.add(name);
    this.settleRejection(name);
  });
  private readonly hooks = new KernelHookRules();
  /** Owned chains as last read or written: name → hashes ('' for an unhashed rule). */
  private actual = new Map<string, string[]>();
  private readonly dirty = new Set<string>();
  private loaded = false;
  private nextRefreshAt = 0;
  private postWriteAt = Infinity;
  private postWriteDelay: number;
  private readonly rejected: RejectedChains;
  /** Where the current `apply()` / `readBackIfDue()` adds its phase times. */
  private phases: PhaseTotals = emptyPhases();

  constructor(opts: IptablesTableOptions) {
    const {
      table = 'filter',
      ipVersion,
      runner,
      clock,
      logger,
      metrics,
      backend = 'nft',
      refreshIntervalMs = 180_000,
      postWriteCheckMs = 5_000,
      lockTimeoutSeconds = 10,
      lockProbeIntervalMs = 50,
      maxAttempts = 10,
      initialRetryMs = 1,
      rejectedRetryMs = 1_000,
      rejectedRetryMaxMs = 30_000,
      beforeRetry,
    } = opts;
    if (ipVersion !== 4 && ipVersion !== 6) throw new RangeError(`IptablesTable: ipVersion must be 4 or 6, got ${String(ipVersion)}`);
    if (backend !== 'nft' && backend !== 'legacy') throw new RangeError(`IptablesTable: backend must be 'nft' or 'legacy', got '${String(backend)}'`);
    if (!(refreshIntervalMs > 0)) throw new RangeError(`IptablesTable: refreshIntervalMs must be > 0, got ${refreshIntervalMs}`);
    if (!(maxAttempts >= 1)) throw new RangeError(`IptablesTable: maxAttempts must be >= 1, got ${maxAttempts}`);
    this.table = table;
    this.ipVersion = ipVersion;
    this.runner = runner;
    this.clock = clock;
    this.metrics = metrics;
    this.log = logger.child({ component: 'iptables-table', table, ipVersion });
    const base = ipVersion === 4 ? 'iptables' : 'ip6tables';
    this.restoreCmd = `${base}-${backend}-restore`;
    this.saveCmd = `${base}-${backend}-save`;
    this.refreshIntervalMs = refreshIntervalMs;
    this.postWriteCheckMs = postWriteCheckMs;
    this.postWriteDelay = postWriteCheckMs;
    this.lockArgs = ['--wait', String(lockTimeoutSeconds), '--wait-interval', String(lockProbeIntervalMs * 1000)];
    this.maxAttempts = maxAttempts;
    this.initialRetryMs = initialRetryMs;
    this.beforeRetry = beforeRetry;
    this.labels = { ip_version: String(ipVersion), table };
    this.rejected = new RejectedChains({ clock, initialRetryMs: rejectedRetryMs, maxRetryMs: rejectedRetryMaxMs });
    this.metrics.rejectedChains.set(this.labels, 0);
  }

  // ---- desired state ------------------------------------------------------------------------

  /**
   * Sets (or replaces) an owned chain; a chain whose rules did not change stays clean. See
   * `DesiredChains` for `onDemand` (policy and profile chains: programmed only while an
   * always-on chain jumps to them). `owner` names the policy, profile or endpoint the chain was
   * rendered for, in the log line that reports it rejected. An on-demand chain may be lazy: its
   * rules are rendered when first needed, at the latest while the restore writing it streams.
   * The chain and rule gauges are updated by `apply()`.
   */
  updateChain(chain: Chain | LazyChain, opts: UpdateChainOptions = {}): void {
    if (!chain.name.startsWith(CHAIN_PREFIX)) throw new RangeError(`IptablesTable: chain '${chain.name}' is not owned (needs prefix '${CHAIN_PREFIX}')`);
    this.desired.update(chain, opts);
  }

  updateChains(chains: Iterable<Chain>, opts: UpdateChainOptions = {}): void {
    for (const c of chains) this.updateChain(c, opts);
  }

  removeChain(name: string): void {
    this.desired.remove(name);
  }

  /** The rules of ours that belong in kernel chains (`FORWARD`, …). */
  setKernelHooks(hooks: readonly KernelHooks[]): void {
    try {
      this.hooks.set(hooks);
    } catch (e) {
      throw new RangeError(`IptablesTable: ${(e as Error).message}`);
    }
  }

  hasChain(name: string): boolean {
    return this.desired.has(name);
  }

  /** The rules this table wants in `name`. */
  desiredRules(name: string): readonly ChainRule[] | undefined {
    return this.desired.get(name)?.rules;
  }

  /** Rule `position` (0-based) of desired chain `chain`, with the chain's owner; undefined if there is none. */
  ruleAt(chain: string, position: number): { rule: ChainRule; owner: ChainOwner | undefined } | undefined {
    const d = this.desired.get(chain);
    const rule = d?.rules[position];
    return rule === undefined ? undefined : { rule, owner: d!.owner };
  }

  /** Every tagged rule of the chains this table wants in the kernel, by rule hash. */
  taggedRules(): Map<string, { chain: string; rule: ChainRule; owner: ChainOwner | undefined }> {
    const out = new Map<string, { chain: string; rule: ChainRule; owner: ChainOwner | undefined }>();
    for (const chain of this.desired.names()) {
      const d = this.desired.effective(chain);
      if (d === undefined || !d.rules.some((r) => r.tag !== undefined)) continue;
      const hashes = hashesOf(chain, d);
      d.rules.forEach((rule, i) => {
        if (rule.tag !== undefined) out.set(hashes[i]!, { chain, rule, owner: d.owner });
      });
    }
    return out;
  }

  async readRuleCounts(): Promise<TaggedRuleCount[]> {
    const tagged = this.taggedRules();
    // No tagged rule (the raw table): nothing to count, no iptables-save to run.
    if (tagged.size === 0) return [];
    const text = await this.saveWithCounters();
    const out: TaggedRuleCount[] = [];
    for (const line of text.split('\n')) {
      if (!line.startsWith('[')) continue;
      const parsed = parseCounterLine(line);
      const t = parsed === undefined ? undefined : tagged.get(parsed.hash);
      if (t === undefined || t.chain !== parsed!.chain) continue;
      out.push({ ...t, packets: parsed!.packets, bytes: parsed!.bytes });
    }
    return out;
  }

  /** `iptables-save -c -t <table>`: the kernel's rules with their packet and byte counters. */
  async saveWithCounters(): Promise<string> {
    const res = await this.runner.run(this.saveCmd, ['-c', '-t', this.table]);
    if (res.code !== 0) throw new IptablesApplyError(`${this.saveCmd} -c -t ${this.table} failed (${res.code}): ${res.stderr.trim()}`);
    return res.stdout;
  }

  /** The chains this table wants in the kernel (on-demand chains only while referenced). */
  get desiredChainNames(): string[] {
    return [...this.desired.names()].filter((name) => this.desired.effective(name) !== undefined);
  }

  /** The chains iptables-restore rejected and that are programmed as their stand-ins (or kept). */
  rejectedChains(): ChainRejection[] {
    return [...this.rejected];
  }

  /** Forces a read-back on the next apply (e.g. after a suspected external change). */
  invalidate(): void {
    this.nextRefreshAt = 0;
  }

  /** When the next read-back or retry of a rejected chain is due (clock ms); the driver schedules an apply for it. */
  nextCheckAt(): number {
    return Math.min(this.nextReadBackAt(), this.rejected.nextRetryAt());
  }

  private nextReadBackAt(): number {
    return Math.min(this.nextRefreshAt, this.postWriteAt);
  }

  /** Whether an apply would write (as far as known without a read-back). */
  get isDirty(): boolean {
    return this.dirty.size > 0 || this.hooks.dirty;
  }

  // ---- rejected chains ----------------------------------------------------------------------

  /**
   * What `name` is written as. A rejected chain is its stand-in until a retry writes it
   * `desired`; a chain whose deletion was rejected is kept until then.
   */
  private targetOf(name: string, mode?: WriteMode): Target {
    if (mode === 'keep') return 'keep';
    const want = this.desired.effective(name);
    const r = this.rejected.get(name);
    if (want === undefined) {
      if (mode === 'stand-in' || (mode === undefined && r?.kind === 'delete')) return 'keep';
      return 'delete';
    }
    if (mode === 'stand-in' || (mode === undefined && r?.kind === 'rules')) return this.standIn(name, mode === undefined ? r?.rule : undefined) ?? want;
    return want;
  }

  private standIn(name: string, rule: number | undefined): DesiredChain | undefined {
    const rules = failClosedRules(name, rule, this.desired.get(name)?.owner);
    return rules === undefined ? undefined : detachedChain(rules);
  }

  /**
   * Whether `name` may be blamed for a failed write: written as desired (its rules or its
   * deletion), not as a stand-in, and — for rules — with a stand-in to fall back on.
   */
  private blameable(name: string, modes: ReadonlyMap<string, WriteMode>): boolean {
    const t = this.targetOf(name, modes.get(name));
    if (t === 'delete') return true;
    return t !== 'keep' && t === this.desired.effective(name) && failClosedRules(name, undefined, this.desired.get(name)?.owner) !== undefined;
  }

  /** Keeps a rejection in step with the desired state: a new version is retried at once, a chain no longer wanted (or wanted again) is forgotten. */
  private settleRejection(name: string): void {
    const r = this.rejected.get(name);
    if (r === undefined) return;
    const want = this.desired.effective(name);
    if (r.kind === 'rules' && want !== undefined && r.version !== want) this.rejected.retryNow(name);
    else if ((r.kind === 'rules') !== (want !== undefined)) {
      this.rejected.delete(name);
      this.metrics.rejectedChains.set(this.labels, this.rejected.size);
    }
  }

  private reject(name: string, rule: number | undefined, error: string): void {
    const want = this.desired.effective(name);
    const kind = want === undefined ? 'delete' : 'rules';
    const { rejection, news } = this.rejected.reject(name, kind, want, { rule, error });
    this.dirty.add(name);
    this.metrics.rejectedChains.set(this.labels, this.rejected.size);
    const fields = { chain: name, ...ownerFields(want?.owner, rule), rule, attempts: rejection.attempts, retryInMs: rejection.retryAt - this.clock.now(), err: error };
    if (!news) {
      this.log.debug(fields, 'iptables-restore rejected the chain again');
      return;
    }
    this.metrics.chainRejections.inc(this.labels);
    if (kind === 'rules') this.log.error(fields, 'iptables-restore rejected a chain: it drops all the traffic it decides (fail closed) until a retry is accepted');
    else this.log.error(fields, 'iptables-restore rejected deleting a chain: it stays until a retry is accepted');
  }

  // ---- apply --------------------------------------------------------------------------------

  /** Writes what differs; adds its `saveMs`, `restoreMs`, `generateMs` and `hashMs` to `phases`. */
  async apply(phases: PhaseTotals = emptyPhases()): Promise<TableApplyResult> {
    this.phases = phases;
    const result = { wrote: false, bytes: 0, chainsWritten: 0 };
    try {
      await this.writeDirty(result);
      await this.retryRejected(result);
    } finally {
      // `felix_iptables_chains` / `_rules`: what the kernel should hold now (renders lazy chains
      // left) — also when the apply failed, so the gauges follow the desired state in an outage.
      const { chains, rules } = this.desired.programmed;
      this.metrics.chains.set(this.labels, chains);
      this.metrics.rules.set(this.labels, rules);
    }
    return result;
  }

  /** Writes every dirty chain (rejected ones as their stand-ins), narrowing any rejection. */
  private async writeDirty(result: { wrote: boolean; bytes: number; chainsWritten: number }): Promise<void> {
    let delay = this.initialRetryMs;
    let failures = 0;
    let lastError = '';
    let probed = false;
    /** Chains blamed once in this apply: blamed again after a fresh read, they are rejected. */
    const struck = new Set<string>();
    const retry = async (what: string, err: string): Promise<void> => {
      failures++;
      lastError = err;
      if (failures >= this.maxAttempts) return;
      this.log.warn({ attempt: failures, err }, `${what} failed; re-reading the table and retrying`);
      await sleep(this.clock, delay);
      delay *= 2;
    };
    for (;;) {
      if (!this.loaded || this.clock.now() >= this.nextReadBackAt()) {
        try {
          await this.load();
        } catch (e) {
          await retry('reading iptables state', (e as Error).message);
          if (failures >= this.maxAttempts) throw new IptablesApplyError(`${this.saveCmd} -t ${this.table} failed ${failures} times: ${lastError}`);
          continue;
        }
      }
      this.pruneUnchanged();
      if (!this.isDirty) return;
      const modes = new Map<string, WriteMode>();
      const { tx, res } = await this.write([...this.dirty].sort(), modes, true);
      if (res.code === 0) {
        addWrite(result, tx);
        return;
      }
      const err = restoreErrorMessage(res.stderr);
      const blamed = this.blame(tx, res.stderr, modes);
      if (blamed !== undefined) {
        if (struck.has(blamed.chain)) this.reject(blamed.chain, blamed.rule, err);
        else {
          struck.add(blamed.chain);
          this.log.warn({ chain: blamed.chain, rule: blamed.rule, err }, 'iptables-restore failed on one chain; re-reading the table before blaming it');
          await this.beforeRetry?.();
        }
        continue;
      }
      await retry('iptables-restore', err);
      if (failures < this.maxAttempts) {
        await this.beforeRetry?.();
        continue;
      }
      if (!probed) {
        probed = true;
        if (!(await this.probe())) {
          throw new IptablesApplyError(`${this.restoreCmd} (table ${this.table}) failed ${failures} times, an empty transaction too: ${lastError}`);
        }
      }
      const found = await this.bisect(result);
      if (found === undefined) throw new IptablesApplyError(`${this.restoreCmd} (table ${this.table}) failed ${failures} times, and no chain of ours is to blame: ${lastError}`);
      this.reject(found.chain, found.rule, lastError);
    }
  }

  /** Retries the rejected chains whose backoff is over, each alone, as desired. */
  private async retryRejected(result: { wrote: boolean; bytes: number; chainsWritten: number }): Promise<void> {
    for (const name of this.rejected.due()) {
      const modes = new Map<string, WriteMode>([[name, 'desired']]);
      const { tx, res } = await this.write([name], modes, false);
      if (res.code === 0) {
        addWrite(result, tx);
        const want = this.desired.effective(name);
        this.rejected.delete(name);
        if (!this.needsWrite(name)) this.dirty.delete(name);
        this.metrics.rejectedChains.set(this.labels, this.rejected.size);
        this.log.info({ chain: name, ...ownerFields(want?.owner, undefined) }, 'iptables-restore accepted a chain it rejected before');
        continue;
      }
      this.reject(name, this.blame(tx, res.stderr, modes)?.rule, restoreErrorMessage(res.stderr));
    }
  }

  /** One restore of `names` (and the hooks, if `hooks` and they are dirty), committed on success. */
  private async write(names: readonly string[], modes: ReadonlyMap<string, WriteMode>, hooks: boolean): Promise<{ tx: RestoreTransaction; res: CommandResult }> {
    const writes: ChainWrite[] = [];
    const targets = new Map<string, DesiredChain | undefined>();
    for (const name of names) {
      const t = this.targetOf(name, modes.get(name));
      if (t === 'keep') continue;
      const want = t === 'delete' ? undefined : t;
      targets.set(name, want);
      // Read while the input streams (`tails` renders a lazy chain); the texts are dropped once written.
      const hashes = (): readonly string[] => timed(this.phases, 'hashMs', () => hashesOf(name, want!));
      writes.push({ name, want: want === undefined ? undefined : { get tails() { return want.tails; }, hashes, written: () => want.releaseTails() }, have: this.actual.get(name) });
    }
    const withHooks = hooks && this.hooks.dirty;
    const tx = new RestoreTransaction(this.table, writes, () => (withHooks ? this.hooks.ops() : []));
    this.metrics.restoreCalls.inc(this.labels);
    const res = await streamRestore(this.runner, this.restoreCmd, ['--noflush', ...this.lockArgs], tx, this.phases);
    if (res.code !== 0) {
      this.metrics.restoreErrors.inc(this.labels);
      this.loaded = false;
      this.prefetched = undefined;
      return { tx, res };
    }
    for (const [name, want] of targets) {
      if (want === undefined) this.actual.delete(name);
      else this.actual.set(name, [...hashesOf(name, want)]);
      // Written as something else than it should be now (a stand-in in a bisect trial): still dirty.
      if (this.needsWrite(name)) this.dirty.add(name);
      else this.dirty.delete(name);
    }
    if (withHooks) this.hooks.written();
    this.postWriteDelay = this.postWriteCheckMs;
    this.postWriteAt = this.clock.now() + this.postWriteCheckMs;
    return { tx, res };
  }

  /** The chain a failed `tx` names, if it may be blamed (see `blameable`). */
  private blame(tx: RestoreTransaction, stderr: string, modes: ReadonlyMap<string, WriteMode>): { chain: string; rule: number | undefined } | undefined {
    const line = restoreErrorLine(stderr);
    const b = line === undefined ? undefined : tx.blame(line);
    if (b === undefined || !this.blameable(b.chain, modes)) return undefined;
    return { chain: b.chain, rule: b.rule };
  }

  /** Whether iptables-restore works at all: an empty transaction. */
  private async probe(): Promise<boolean> {
    this.metrics.restoreCalls.inc(this.labels);
    const res = await this.runner.run(this.restoreCmd, ['--noflush', ...this.lockArgs], { stdin: `*${this.table}\nCOMMIT\n` });
    if (res.code !== 0) this.metrics.restoreErrors.inc(this.labels);
    return res.code === 0;
  }

  /** Bisects the dirty chains that may be blamed (`findRejectedChain`); what it proves good stays written. */
  private async bisect(result: { wrote: boolean; bytes: number; chainsWritten: number }): Promise<{ chain: string; rule: number | undefined } | undefined> {
    const suspects = [...this.dirty].filter((name) => this.blameable(name, new Map())).sort();
    return findRejectedChain(suspects, async (standIns): Promise<TrialOutcome> => {
      if (!this.loaded) await this.load();
      const modes = new Map<string, WriteMode>([...standIns].map((n) => [n, 'stand-in']));
      const { tx, res } = await this.write([...this.dirty].sort(), modes, true);
      if (res.code === 0) {
        addWrite(result, tx);
        return { ok: true };
      }
      const blamed = this.blame(tx, res.stderr, modes);
      return blamed === undefined ? { ok: false } : { ok: false, blamed };
    });
  }

  /**
   * Reads the table back now if a read-back is due (the next `apply()` then does not read
   * again). True when it found owned state changed behind our back — a difference beyond the
   * updates not yet written — so the caller can check what else may have been tampered with.
   * The first read-back describes the starting state, not damage; a failed one returns false
   * and `apply()` retries it.
   */
  async readBackIfDue(phases: PhaseTotals = emptyPhases()): Promise<boolean> {
    this.phases = phases;
    if (this.loaded && this.clock.now() < this.nextReadBackAt()) return false;
    const wasLoaded = this.loaded;
    const pending = new Set(this.dirty);
    const hooksPending = this.hooks.dirty;
    try {
      await this.load();
    } catch {
      return false;
    }
    if (!wasLoaded) return false;
    if (this.hooks.dirty && !hooksPending) return true;
    for (const name of this.dirty) if (!pending.has(name)) return true;
    return false;
  }

  /**
   * Starts the read-back the next `apply()` will need (if one is due), so the driver can
   * overlap it with rendering. The next `apply()` consumes it; no write happens in between.
   */
  prefetch(): void {
    if (this.prefetched !== undefined) return;
    if (this.loaded && this.clock.now() < this.nextReadBackAt()) return;
    this.prefetched = this.fetchSave();
  }
  private prefetched: Promise<CommandResult> | undefined;

  private fetchSave(): Promise<CommandResult> {
    this.metrics.saveCalls.inc(this.labels);
    return this.runner.run(this.saveCmd, ['-t', this.table]);
  }

  private async load(): Promise<void> {
    const pending = this.prefetched;
    this.prefetched = undefined;
    const t0 = performance.now();
    const res = await (pending ?? this.fetchSave());
    if (res.code !== 0) throw new IptablesApplyError(`${this.saveCmd} -t ${this.table} failed (${res.code}): ${res.stderr.trim()}`);
    const { owned, kernel } = parseSave(res.stdout, this.hooks.chains());
    this.phases.saveMs += performance.now() - t0;
    this.actual = owned;
    this.hooks.readBack(kernel);
    // Dirtiness is relative to the kernel: recompute it from scratch against what we just read.
    this.dirty.clear();
    for (const name of this.desired.names()) if (this.needsWrite(name)) this.dirty.add(name);
    for (const name of owned.keys()) if (this.needsWrite(name)) this.dirty.add(name);
    this.loaded = true;
    const now = this.clock.now();
    this.nextRefreshAt = now + this.refreshIntervalMs;
    if (now >= this.postWriteAt) {
      // Felix: the post-write check interval doubles after each check.
      this.postWriteDelay *= 2;
      this.postWriteAt = this.postWriteDelay >= this.refreshIntervalMs ? Infinity : now + this.postWriteDelay;
    }
    if (this.isDirty) this.log.info({ dirtyChains: this.dirty.size, hooksDirty: this.hooks.dirty }, 'read back iptables state: repairing differences');
  }

  /**
   * Drops from `dirty` the chains whose target equals the kernel's (an update undone before
   * the apply, A → B → A), and those with nothing to write, so nothing is written when nothing
   * differs.
   */
  private pruneUnchanged(): void {
    for (const name of this.dirty) if (!this.needsWrite(name)) this.dirty.delete(name);
  }

  /** Whether the kernel's `name` (as last read or written) differs from what it should be now. */
  private needsWrite(name: string): boolean {
    const t = this.targetOf(name);
    const have = this.actual.get(name);
    if (t === 'keep') return false;
    if (t === 'delete') return have !== undefined;
    return have === undefined || !sameList(have, hashesOf(name, t));
  }
}

function addWrite(result: { wrote: boolean; bytes: number; chainsWritten: number }, tx: RestoreTransaction): void {
  result.wrote = true;
  result.bytes += tx.bytes;
  result.chainsWritten += tx.chains.length;
}
