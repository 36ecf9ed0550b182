/**
 * The dataplane driver: proto messages in, kernel state out (dataplane.md §7; Felix
 * `dataplane/linux/int_dataplane.go`).
 *
 * - `send()` queues messages; the loop drains everything queued into the managers' desired
 *   state before each apply (batching), and applies on a leaky-bucket throttle (Felix: 10
 *   tokens, one per 100 ms).
 * - Nothing is written before `InSync`: until then messages only build desired state, so on a
 *   restart the previous agent's rules keep enforcing. The first apply after `InSync` reads the
 *   kernel back and rewrites only chains whose hashes differ — rules that are still right are
 *   never flushed, and no packet sees a gap.
 * - Apply order: resolve interfaces → IP set creates/updates → iptables tables → IP set
 *   deletions (at most one per apply; more applies are scheduled while any remain). A rule never
 *   references a missing set, and a set is never destroyed while referenced.
 * - Read-backs are scheduled: the loop wakes when a table's or the IP sets' next check is due.
 *   An iptables read-back that finds our rules changed behind our back also re-reads the IP
 *   sets before anything is repaired, and a failed restore resyncs them before its retry.
 * - Failure: when a table or the IP sets fail every retry, `run()` rejects with that error
 *   (fail closed: the kernel keeps its last state) after logging it; the caller exits the
 *   process so it restarts and rebuilds, as Felix does.
 */
import type { DataplaneMessage } from '../proto/index.ts';
import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import type { CommandRunner } from './command-runner.ts';
import { DataplaneMetrics } from './dataplane-metrics.ts';
import { EndpointManager } from './endpoint-manager.ts';
import { IpSets } from './ipsets.ts';
import { IpSetsManager } from './ipsets-manager.ts';
import { IptablesTable, type IptablesBackend } from './iptables-table.ts';
import { PolicyManager, type FamilyTables } from './policy-manager.ts';
import { RuleRenderer, type RuleRendererOptions } from './rule-renderer.ts';

export interface DataplaneDriverOptions {
  readonly runner: CommandRunner;
  /** @default realClock */
  readonly clock?: Clock;
  /** @default silentLogger */
  readonly logger?: Logger;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** IP families to program. @default [4] */
  readonly ipVersions?: ReadonlyArray<4 | 6>;
  /** @default 'nft' (see README of this package: the host default on current distributions) */
  readonly backend?: IptablesBackend;
  /** Felix `IptablesRefreshInterval`. @default 180_000 */
  readonly iptablesRefreshIntervalMs?: number;
  /** Felix `IptablesPostWriteCheckInterval`. @default 5_000 */
  readonly iptablesPostWriteCheckMs?: number;
  /** Felix `IpsetsRefreshInterval`. @default 90_000 */
  readonly ipsetsRefreshIntervalMs?: number;
  /** Felix `MaxIpsetSize`. @default 1_048_576 */
  readonly maxIpsetSize?: number;
  /** Leaky bucket size. @default 10 */
  readonly throttleBurst?: number;
  /** One token per this many ms. @default 100 */
  readonly throttleRefillMs?: number;
  /** Retry interval for endpoints whose interface is not resolvable yet. @default 1_000 */
  readonly unresolvedRetryMs?: number;
  /** Attempts per table / ipset write before failing closed. @default 10 */
  readonly maxAttempts?: number;
  readonly denyAction?: RuleRendererOptions['denyAction'];
  readonly logPrefix?: string;
  readonly interfacePrefixes?: readonly string[];
  readonly endpointToHostAction?: RuleRendererOptions['endpointToHostAction'];
}

interface FlushWaiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

/** Summary of one apply, for tests and benchmarks. */
export interface ApplyStats {
  readonly ms: number;
  readonly iptablesBytes: number;
  readonly ipsetBytes: number;
  readonly chainsWritten: number;
}

export class DataplaneDriver {
  readonly metrics: DataplaneMetrics;
  readonly tables: readonly IptablesTable[];
  readonly ipsets: readonly IpSets[];
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly ipsetsManager: IpSetsManager;
  private readonly policyManager: PolicyManager;
  private readonly endpointManager: EndpointManager;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly unresolvedRetryMs: number;

  private queue: DataplaneMessage[] = [];
  private sentSeq = 0;
  private appliedSeq = 0;
  private waiters: FlushWaiter[] = [];
  private wake: (() => void) | undefined;
  private inSyncSeen = false;
  private tokens: number;
  private lastRefill: number;
  private running = false;
  private failure: unknown;
  /** Stats of the last apply. */
  lastApply: ApplyStats | undefined;
  /** Number of applies that wrote or checked the dataplane. */
  applies = 0;

  constructor(opts: DataplaneDriverOptions) {
    const {
      runner,
      clock = realClock,
      logger = silentLogger,
      registry = newRegistry(),
      ipVersions = [4],
      backend = 'nft',
      iptablesRefreshIntervalMs = 180_000,
      iptablesPostWriteCheckMs = 5_000,
      ipsetsRefreshIntervalMs = 90_000,
      maxIpsetSize = 1_048_576,
      throttleBurst = 10,
      throttleRefillMs = 100,
      unresolvedRetryMs = 1_000,
      maxAttempts = 10,
      denyAction,
      logPrefix,
      interfacePrefixes,
      endpointToHostAction,
    } = opts;
    if (ipVersions.length === 0 || ipVersions.some((v) => v !== 4 && v !== 6)) {
      throw new RangeError(`DataplaneDriver: ipVersions must be a non-empty list of 4 and/or 6, got [${ipVersions.join(',')}]`);
    }
    if (!(throttleBurst >= 1)) throw new RangeError(`DataplaneDriver: throttleBurst must be >= 1, got ${throttleBurst}`);
    this.clock = clock;
    this.log = logger.child({ component: 'dataplane-driver' });
    this.metrics = new DataplaneMetrics(registry);
    this.burst = throttleBurst;
    this.refillMs = throttleRefillMs;
    this.unresolvedRetryMs = unresolvedRetryMs;
    this.tokens = throttleBurst;
    this.lastRefill = clock.now();

    const families: FamilyTables[] = [];
    const sets: IpSets[] = [];
    for (const ipVersion of [...new Set(ipVersions)]) {
      const renderer = new RuleRenderer({
        ipVersion,
        ...(denyAction && { denyAction }),
        ...(logPrefix && { logPrefix }),
        ...(interfacePrefixes && { interfacePrefixes }),
        ...(endpointToHostAction && { endpointToHostAction }),
      });
      const filter = new IptablesTable({
        ipVersion,
        runner,
        clock,
        logger,
        metrics: this.metrics,
        backend,
        refreshIntervalMs: iptablesRefreshIntervalMs,
        postWriteCheckMs: iptablesPostWriteCheckMs,
        maxAttempts,
        beforeRetry: () => this.resyncIpSets(),
      });
      filter.updateChains(renderer.staticChains());
      filter.updateChains(renderer.dispatchChains([]));
      filter.setKernelHooks(renderer.kernelHooks());
      families.push({ renderer, filter });
      sets.push(new IpSets({ ipVersion, runner, clock, logger, metrics: this.metrics, maxElem: maxIpsetSize, refreshIntervalMs: ipsetsRefreshIntervalMs, maxAttempts }));
    }
    this.tables = families.map((f) => f.filter);
    this.ipsets = sets;
    this.ipsetsManager = new IpSetsManager(sets);
    this.policyManager = new PolicyManager(families, logger);
    this.endpointManager = new EndpointManager(families, runner, logger);
  }

  /** Whether `InSync` has been received (and so the driver writes). */
  get inSync(): boolean {
    return this.inSyncSeen;
  }

  /** Queues messages for the next apply. */
  send(msgs: DataplaneMessage | readonly DataplaneMessage[]): void {
    const list = Array.isArray(msgs) ? (msgs as readonly DataplaneMessage[]) : [msgs as DataplaneMessage];
    if (list.length === 0) return;
    this.queue.push(...list);
    this.sentSeq++;
    this.kick();
  }

  /**
   * Resolves once every message sent before the call has been applied to the kernel (which
   * needs `InSync`); rejects if the driver fails first.
   */
  flushed(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const seq = this.sentSeq;
    if (seq <= this.appliedSeq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  /**
   * Runs the apply loop until `signal` aborts (resolves) or a write fails every retry
   * (rejects). One loop per driver.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new Error('DataplaneDriver: run() is already running');
    this.running = true;
    const onAbort = (): void => this.kick();
    signal?.addEventListener('abort', onAbort);
    try {
      while (signal?.aborted !== true) {
        // Reads due in the coming apply (iptables-save, ipset list) run while we render.
        if (this.inSyncSeen || this.queue.some((m) => m.type === 'InSync')) {
          for (const t of this.tables) t.prefetch();
          for (const s of this.ipsets) s.prefetch();
        }
        this.drain();
        if (!this.hasWork()) {
          await this.waitForWork();
          continue;
        }
        const wait = this.takeToken();
        if (wait > 0) {
          await this.waitForWork(wait);
          continue;
        }
        await this.applyOnce();
      }
    } catch (e) {
      this.failure = e;
      this.log.error({ err: (e as Error).message }, 'dataplane apply failed on every retry; failing closed');
      for (const w of this.waiters) w.reject(e);
      this.waiters = [];
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.running = false;
    }
  }

  private kick(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private drain(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    for (const msg of batch) {
      if (msg.type === 'InSync') {
        if (!this.inSyncSeen) this.log.info('in sync: programming the dataplane');
        this.inSyncSeen = true;
        continue;
      }
      if (this.ipsetsManager.onMessage(msg) || this.policyManager.onMessage(msg) || this.endpointManager.onMessage(msg)) continue;
    }
    this.pendingSeq = this.sentSeq;
  }
  private pendingSeq = 0;

  private hasWork(): boolean {
    if (!this.inSyncSeen) return false;
    if (this.pendingSeq > this.appliedSeq) return true;
    const now = this.clock.now();
    if (this.tables.some((t) => t.isDirty || now >= t.nextCheckAt())) return true;
    if (this.ipsets.some((s) => s.isDirty || s.hasPendingDeletions || now >= s.nextCheckAt())) return true;
    return this.endpointManager.hasUnresolved && now >= this.nextUnresolvedAt;
  }
  private nextUnresolvedAt = 0;

  /** Leaky bucket: 0 if a token was taken, else ms until the next token. */
  private takeToken(): number {
    const now = this.clock.now();
    const refills = Math.floor((now - this.lastRefill) / this.refillMs);
    if (refills > 0) {
      this.tokens = Math.min(this.burst, this.tokens + refills);
      this.lastRefill = this.tokens === this.burst ? now : this.lastRefill + refills * this.refillMs;
    }
    if (this.tokens >= 1) {
      this.tokens--;
      return 0;
    }
    return Math.max(1, this.lastRefill + this.refillMs - now);
  }

  /** Sleeps until `send()`, abort, the next scheduled check, or `maxMs`. */
  private waitForWork(maxMs?: number): Promise<void> {
    let due = maxMs ?? Infinity;
    if (this.inSyncSeen && maxMs === undefined) {
      const now = this.clock.now();
      for (const t of this.tables) due = Math.min(due, t.nextCheckAt() - now);
      for (const s of this.ipsets) due = Math.min(due, s.nextCheckAt() - now);
      if (this.endpointManager.hasUnresolved) due = Math.min(due, this.nextUnresolvedAt - now);
    }
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      this.wake = () => {
        timer?.cancel();
        resolve();
      };
      if (due !== Infinity) {
        timer = this.clock.setTimer(() => {
          this.wake = undefined;
          resolve();
        }, Math.max(0, due));
      }
    });
  }

  /** Re-reads the IP sets and writes whatever differs (e.g. a set destroyed behind our back). */
  private async resyncIpSets(): Promise<void> {
    for (const s of this.ipsets) {
      s.invalidate();
      await s.applyUpdates();
    }
  }

  private async applyOnce(): Promise<void> {
    const seq = this.pendingSeq;
    const start = this.clock.now();
    const t0 = performance.now();
    await this.endpointManager.resolveInterfaces();
    if (this.endpointManager.hasUnresolved) this.nextUnresolvedAt = this.clock.now() + this.unresolvedRetryMs;
    this.endpointManager.render();
    let ipsetBytes = 0;
    let iptablesBytes = 0;
    let chainsWritten = 0;
    // A read-back that finds iptables tampered with re-reads the IP sets too, before either is
    // repaired: whoever changed one may have changed the other, and a rule naming a destroyed
    // set cannot be restored until the set is back.
    let tampered = false;
    for (const t of this.tables) if (await t.readBackIfDue()) tampered = true;
    if (tampered) for (const s of this.ipsets) s.invalidate();
    for (const s of this.ipsets) ipsetBytes += (await s.applyUpdates()).bytes;
    for (const t of this.tables) {
      const r = await t.apply();
      iptablesBytes += r.bytes;
      chainsWritten += r.chainsWritten;
    }
    for (const s of this.ipsets) await s.applyDeletions();
    const seconds = (performance.now() - t0) / 1000;
    this.metrics.applyTime.observe(seconds);
    this.applies++;
    this.lastApply = { ms: seconds * 1000, iptablesBytes, ipsetBytes, chainsWritten };
    if (seconds > 1) this.log.warn({ seconds, startedAt: start }, 'dataplane apply took more than 1 s');
    this.appliedSeq = Math.max(this.appliedSeq, seq);
    const done = this.waiters.filter((w) => w.seq <= this.appliedSeq);
    this.waiters = this.waiters.filter((w) => w.seq > this.appliedSeq);
    for (const w of done) w.resolve();
  }
}
