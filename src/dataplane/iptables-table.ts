/**
 * One iptables table in one IP family: desired chains vs. what the kernel has
 * (dataplane.md §5; Felix `iptables/table.go`).
 *
 * Guarantees:
 * - `apply()` writes with ONE `iptables-restore --noflush` transaction, containing only the
 *   chains whose hash lists differ from the kernel's: `-R`/`-A`/`-D` by index from the hash
 *   diff, forward references for new chains, hook rules in kernel chains, and `-X` of removed
 *   chains last. Nothing is written when nothing differs.
 * - Ownership: it creates, rewrites and deletes only `cali-` chains, and in kernel chains only
 *   rules carrying its `cali:` hash comment (deleted by their exact text as read back). Foreign
 *   chains and rules are never touched, also not when they sit next to ours.
 * - Read-back: `iptables-save -t <table>` on the first apply, every `refreshIntervalMs`, and
 *   after writes (`postWriteCheckMs`, doubling up to the refresh interval). Anything owned that
 *   differs — a flushed or deleted chain, a tampered rule, a missing hook, an unexpected
 *   `cali-` chain — is repaired by the next apply.
 * - Failure: a failed restore re-reads the kernel and retries with exponential backoff
 *   (Felix: 10 attempts from 1 ms); when every attempt fails `apply()` rejects with
 *   `IptablesApplyError`, leaving the kernel's last state in place (fail closed), and the
 *   caller reports it.
 * - The xtables lock is honoured with `--wait <s> --wait-interval <µs>` on every restore.
 *
 * Not re-entrant: one `apply()` at a time (the driver's loop guarantees it).
 */
import type { Logger } from '../runtime/logger.ts';
import { sleep, type Clock } from '../runtime/clock.ts';
import { CHAIN_PREFIX } from './chain-names.ts';
import { hashCommentFragment, ruleBody, ruleTail, type Chain, type IptablesRule } from './chain.ts';
import type { CommandResult, CommandRunner } from './command-runner.ts';
import type { DataplaneMetrics } from './dataplane-metrics.ts';
import { hashRuleTails, ruleHashes } from './rule-hash.ts';
import { parseSave, type KernelChainState } from './iptables-save.ts';
import type { KernelHooks } from './rule-renderer.ts';

/**
 * Which iptables implementation to drive. Both write through the same `iptables-restore`
 * language; they must not be mixed on one host (each sees only its own rules).
 */
export type IptablesBackend = 'nft' | 'legacy';

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
  /** Restore attempts before giving up. @default 10 */
  readonly maxAttempts?: number;
  /** First retry delay, doubling. @default 1 */
  readonly initialRetryMs?: number;
  /**
   * Runs after a failed restore, before the next attempt. The driver resyncs the IP sets here:
   * one rule naming a set someone destroyed fails the whole transaction until the set is back,
   * and the sets' own refresh may be far off.
   */
  readonly beforeRetry?: () => Promise<void>;
}

export class IptablesApplyError extends Error {
  override readonly name = 'IptablesApplyError';
}

/** What the last `apply()` did. */
export interface TableApplyResult {
  readonly wrote: boolean;
  readonly bytes: number;
  readonly chainsWritten: number;
}

interface DesiredChain {
  readonly rules: readonly IptablesRule[];
  /** Programmed only while a programmed always-on chain jumps to it (see `updateChain`). */
  readonly onDemand: boolean;
  /** Owned chains this one jumps or goes to (counted only for always-on chains). */
  readonly targets: readonly string[];
  /** Each rule rendered once, without its hash comment. */
  readonly tails: readonly string[];
  /**
   * Computed on first use (read-back comparison or write), not when the chain is set: a write
   * computes them while the transaction streams into iptables-restore, so hashing overlaps with
   * the kernel's parsing.
   */
  hashes: readonly string[] | undefined;
}


export class IptablesTable {
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

  private readonly desired = new Map<string, DesiredChain>();
  private readonly hooks = new Map<string, { inserts: readonly IptablesRule[]; hashes: string[] }>();
  private readonly hooksByChain = new Map<string, { nInserts: number }>();
  /** Owned chains as last read or written: name → hashes ('' for an unhashed rule). */
  private actual = new Map<string, string[]>();
  private actualKernel = new Map<string, KernelChainState>();
  private readonly dirty = new Set<string>();
  private hooksDirty = true;
  private loaded = false;
  private nextRefreshAt = 0;
  private postWriteAt = Infinity;
  private postWriteDelay: number;
  private ruleCount = 0;
  private programmedChains = 0;
  /** Owned chain → number of always-on desired chains jumping to it. */
  private readonly refCounts = new Map<string, number>();

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
  }

  // ---- desired state ------------------------------------------------------------------------

  /**
   * Sets (or replaces) an owned chain; a chain whose rules did not change stays clean.
   *
   * An `onDemand` chain (policy and profile chains) is programmed only while an always-on chain
   * jumps to it, as Felix programs only referenced chains: the egress chain of an
   * ingress-only policy, say, never reaches the kernel. References are counted from always-on
   * chains only, so an on-demand chain must not be the sole referrer of another.
   */
  updateChain(chain: Chain, opts: { readonly onDemand?: boolean } = {}): void {
    if (!chain.name.startsWith(CHAIN_PREFIX)) throw new RangeError(`IptablesTable: chain '${chain.name}' is not owned (needs prefix '${CHAIN_PREFIX}')`);
    const onDemand = opts.onDemand ?? false;
    const tails = chain.rules.map(ruleTail);
    const old = this.desired.get(chain.name);
    // Same name and same rule texts ⇔ same hashes.
    if (old !== undefined && old.onDemand === onDemand && sameList(old.tails, tails)) return;
    if (old !== undefined && this.isProgrammed(chain.name, old)) this.count(old, -1);
    const next: DesiredChain = { rules: chain.rules, onDemand, targets: onDemand ? [] : jumpTargets(chain.rules), tails, hashes: undefined };
    this.desired.set(chain.name, next);
    this.retarget(old?.targets ?? [], next.targets);
    if (this.isProgrammed(chain.name, next)) this.count(next, +1);
    this.dirty.add(chain.name);
    this.updateGauges();
  }

  updateChains(chains: Iterable<Chain>, opts: { readonly onDemand?: boolean } = {}): void {
    for (const c of chains) this.updateChain(c, opts);
  }

  removeChain(name: string): void {
    const old = this.desired.get(name);
    if (old === undefined) return;
    if (this.isProgrammed(name, old)) this.count(old, -1);
    this.desired.delete(name);
    this.retarget(old.targets, []);
    this.dirty.add(name);
    this.updateGauges();
  }

  private isProgrammed(name: string, d: DesiredChain): boolean {
    return !d.onDemand || (this.refCounts.get(name) ?? 0) > 0;
  }

  /** The desired chain if it belongs in the kernel now. */
  private effective(name: string): DesiredChain | undefined {
    const d = this.desired.get(name);
    return d !== undefined && this.isProgrammed(name, d) ? d : undefined;
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
      const d = this.desired.get(t);
      if (n === 1 && d?.onDemand === true) {
        this.count(d, +1);
        this.dirty.add(t);
      }
    }
    for (const t of before) {
      const n = (this.refCounts.get(t) ?? 0) - 1;
      if (n > 0) this.refCounts.set(t, n);
      else this.refCounts.delete(t);
      const d = this.desired.get(t);
      if (n === 0 && d?.onDemand === true) {
        this.count(d, -1);
        this.dirty.add(t);
      }
    }
  }

  /** The rules of ours that belong in kernel chains (`FORWARD`, …). */
  setKernelHooks(hooks: readonly KernelHooks[]): void {
    this.hooks.clear();
    for (const h of hooks) {
      const inserts = [...h.inserts, ...h.appends];
      // Inserts and appends are hashed as one list: their relative order is what we check.
      if (!/^[A-Z][A-Z0-9_-]{0,27}$/.test(h.chain)) throw new RangeError(`IptablesTable: '${h.chain}' is not a kernel chain name`);
      this.hooks.set(h.chain, { inserts, hashes: ruleHashes(h.chain, inserts) });
      this.hooksByChain.set(h.chain, { nInserts: h.inserts.length });
    }
    this.hooksDirty = true;
  }

  hasChain(name: string): boolean {
    return this.desired.has(name);
  }

  /** The rules this table wants in `name`. */
  desiredRules(name: string): readonly IptablesRule[] | undefined {
    return this.desired.get(name)?.rules;
  }

  /** The chains this table wants in the kernel (on-demand chains only while referenced). */
  get desiredChainNames(): string[] {
    return [...this.desired.keys()].filter((name) => this.effective(name) !== undefined);
  }

  /** Forces a read-back on the next apply (e.g. after a suspected external change). */
  invalidate(): void {
    this.nextRefreshAt = 0;
  }

  /** When the next read-back is due (clock ms); the driver schedules an apply for it. */
  nextCheckAt(): number {
    return Math.min(this.nextRefreshAt, this.postWriteAt);
  }

  /** Whether an apply would write (as far as known without a read-back). */
  get isDirty(): boolean {
    return this.dirty.size > 0 || this.hooksDirty;
  }

  // ---- apply --------------------------------------------------------------------------------

  async apply(): Promise<TableApplyResult> {
    let delay = this.initialRetryMs;
    let lastError = '';
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const now = this.clock.now();
      if (!this.loaded || now >= this.nextCheckAt()) {
        try {
          await this.load();
        } catch (e) {
          lastError = (e as Error).message;
          this.log.warn({ attempt, err: lastError }, 'reading iptables state failed; retrying');
          if (attempt < this.maxAttempts) await sleep(this.clock, delay);
          delay *= 2;
          continue;
        }
      }
      this.pruneUnchanged();
      if (!this.isDirty) return { wrote: false, bytes: 0, chainsWritten: 0 };
      const chains: string[] = [];
      const counter = { bytes: 0 };
      this.metrics.restoreCalls.inc(this.labels);
      const res = await this.runner.run(this.restoreCmd, ['--noflush', ...this.lockArgs], { stdin: this.restoreInput(chains, counter) });
      if (res.code === 0) {
        this.commitWritten(chains);
        return { wrote: true, bytes: counter.bytes, chainsWritten: chains.length };
      }
      this.metrics.restoreErrors.inc(this.labels);
      lastError = res.stderr.trim();
      this.log.warn({ attempt, code: res.code, stderr: lastError }, 'iptables-restore failed; re-reading the table and retrying');
      this.loaded = false;
      this.prefetched = undefined;
      if (attempt < this.maxAttempts) {
        await sleep(this.clock, delay);
        delay *= 2;
        await this.beforeRetry?.();
      }
    }
    this.log.error({ stderr: lastError }, 'iptables-restore failed on every attempt; leaving the kernel state as it is');
    throw new IptablesApplyError(`${this.restoreCmd} (table ${this.table}) failed ${this.maxAttempts} times: ${lastError}`);
  }

  /**
   * Reads the table back now if a read-back is due (the next `apply()` then does not read
   * again). True when it found owned state changed behind our back — a difference beyond the
   * updates not yet written — so the caller can check what else may have been tampered with.
   * The first read-back describes the starting state, not damage; a failed one returns false
   * and `apply()` retries it.
   */
  async readBackIfDue(): Promise<boolean> {
    if (this.loaded && this.clock.now() < this.nextCheckAt()) return false;
    const wasLoaded = this.loaded;
    const pending = new Set(this.dirty);
    const hooksPending = this.hooksDirty;
    try {
      await this.load();
    } catch {
      return false;
    }
    if (!wasLoaded) return false;
    if (this.hooksDirty && !hooksPending) return true;
    for (const name of this.dirty) if (!pending.has(name)) return true;
    return false;
  }

  /**
   * Starts the read-back the next `apply()` will need (if one is due), so the driver can
   * overlap it with rendering. The next `apply()` consumes it; no write happens in between.
   */
  prefetch(): void {
    if (this.prefetched !== undefined) return;
    if (this.loaded && this.clock.now() < this.nextCheckAt()) return;
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
    const res = await (pending ?? this.fetchSave());
    if (res.code !== 0) throw new IptablesApplyError(`${this.saveCmd} -t ${this.table} failed (${res.code}): ${res.stderr.trim()}`);
    const { owned, kernel } = parseSave(res.stdout, new Set(this.hooks.keys()));
    this.actual = owned;
    this.actualKernel = kernel;
    // Dirtiness is relative to the kernel: recompute it from scratch against what we just read.
    this.dirty.clear();
    this.hooksDirty = false;
    for (const [name, d] of this.desired) {
      if (!this.isProgrammed(name, d)) continue;
      const a = owned.get(name);
      if (a === undefined || !sameList(a, hashesOf(name, d))) this.dirty.add(name);
    }
    for (const name of owned.keys()) if (this.effective(name) === undefined) this.dirty.add(name);
    for (const [chain, h] of this.hooks) {
      if (!sameList(kernel.get(chain)?.hashes ?? [], h.hashes)) this.hooksDirty = true;
      else {
        // Insert mode: our inserts must be the chain's first rules, so a foreign rule inserted
        // above them cannot pre-empt policy (Felix re-inserts them in that case too).
        const positions = kernel.get(chain)?.positions ?? [];
        const nInserts = this.hooksByChain.get(chain)?.nInserts ?? 0;
        for (let i = 0; i < nInserts; i++) if (positions[i] !== i) this.hooksDirty = true;
      }
    }
    for (const [chain, k] of kernel) if (!this.hooks.has(chain) && k.hashes.length > 0) this.hooksDirty = true;
    this.loaded = true;
    const now = this.clock.now();
    this.nextRefreshAt = now + this.refreshIntervalMs;
    if (now >= this.postWriteAt) {
      // Felix: the post-write check interval doubles after each check.
      this.postWriteDelay *= 2;
      this.postWriteAt = this.postWriteDelay >= this.refreshIntervalMs ? Infinity : now + this.postWriteDelay;
    }
    if (this.isDirty) this.log.info({ dirtyChains: this.dirty.size, hooksDirty: this.hooksDirty }, 'read back iptables state: repairing differences');
  }

  /**
   * The restore transaction for everything dirty, as chunks of lines, generated as the runner
   * pulls them (so hashing and rendering overlap with the kernel parsing what came before).
   * Chain declarations come first so every jump target exists; `-X` comes last. Fills
   * `written` with the owned chains it writes and `counter.bytes` with the size.
   */
  private *restoreInput(written: string[], counter: { bytes: number }): Generator<string> {
    const dirty = [...this.dirty].sort();
    const head: string[] = [`*${this.table}`];
    const deletes: string[] = [];
    for (const name of dirty) {
      const want = this.effective(name);
      const have = this.actual.get(name);
      if (want === undefined && have === undefined) continue;
      written.push(name);
      // A new chain is declared; a doomed one is flushed by its declaration and deleted at the end.
      if (have === undefined || want === undefined) head.push(`:${name} - [0:0]`);
      if (want === undefined) deletes.push(`-X ${name}`);
    }
    const emit = (text: string): string => {
      counter.bytes += Buffer.byteLength(text);
      return text;
    };
    yield emit(head.join('\n') + '\n');
    let ops: string[] = [];
    const CHUNK_LINES = 512;
    for (const name of dirty) {
      const want = this.effective(name);
      if (want === undefined) continue;
      const have = this.actual.get(name) ?? [];
      const hashes = hashesOf(name, want);
      const common = Math.min(have.length, hashes.length);
      for (let i = 0; i < common; i++) {
        if (have[i] !== hashes[i]) ops.push(`-R ${name} ${i + 1} ${ruleLine(want, hashes, i)}`);
      }
      for (let i = common; i < hashes.length; i++) {
        ops.push(`-A ${name} ${ruleLine(want, hashes, i)}`);
        if (ops.length >= CHUNK_LINES) {
          yield emit(ops.join('\n') + '\n');
          ops = [];
        }
      }
      for (let i = have.length; i > hashes.length; i--) ops.push(`-D ${name} ${i}`);
    }
    if (this.hooksDirty) {
      for (const k of this.actualKernel.values()) {
        // Delete by exact text as read back: never by index, which could hit a foreign rule.
        for (const line of k.lines) ops.push(`-D${line.slice(2)}`);
      }
      for (const [chain, h] of this.hooks) {
        const nInserts = this.hooksByChain.get(chain)?.nInserts ?? 0;
        for (let i = nInserts - 1; i >= 0; i--) ops.push(`-I ${chain} 1 ${ruleBody(h.inserts[i]!, hashCommentFragment(h.hashes[i]!))}`);
        for (let i = nInserts; i < h.inserts.length; i++) ops.push(`-A ${chain} ${ruleBody(h.inserts[i]!, hashCommentFragment(h.hashes[i]!))}`);
      }
    }
    ops.push(...deletes, 'COMMIT', '');
    yield emit(ops.join('\n'));
  }


  private commitWritten(chains: readonly string[]): void {
    for (const name of chains) {
      const want = this.effective(name);
      if (want === undefined) this.actual.delete(name);
      else this.actual.set(name, [...hashesOf(name, want)]);
    }
    if (this.hooksDirty) {
      const kernel = new Map<string, KernelChainState>();
      for (const [chain, h] of this.hooks) {
        kernel.set(chain, {
          lines: h.inserts.map((r, i) => `-A ${chain} ${ruleBody(r, hashCommentFragment(h.hashes[i]!))}`),
          hashes: [...h.hashes],
          positions: h.hashes.map((_, i) => i),
        });
      }
      this.actualKernel = kernel;
    }
    this.dirty.clear();
    this.hooksDirty = false;
    this.postWriteDelay = this.postWriteCheckMs;
    this.postWriteAt = this.clock.now() + this.postWriteCheckMs;
  }

  /**
   * Drops from `dirty` the chains whose desired hashes equal the kernel's (an update undone
   * before the apply, A → B → A), so nothing is written when nothing differs.
   */
  private pruneUnchanged(): void {
    for (const name of this.dirty) {
      const want = this.effective(name);
      const have = this.actual.get(name);
      if (want !== undefined && have !== undefined && sameList(have, hashesOf(name, want))) this.dirty.delete(name);
    }
  }

  private updateGauges(): void {
    this.metrics.chains.set(this.labels, this.programmedChains);
    this.metrics.rules.set(this.labels, this.ruleCount);
  }
}

/** The chain's rule hashes, computed once. */
function hashesOf(name: string, chain: DesiredChain): readonly string[] {
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

function ruleLine(chain: DesiredChain, hashes: readonly string[], i: number): string {
  const tail = chain.tails[i]!;
  const hash = hashCommentFragment(hashes[i]!);
  return tail === '' ? hash : `${hash} ${tail}`;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
