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
 * - Apply order: resolve interfaces → IP set creates/updates → iptables tables (every family's
 *   filter, then every family's raw, then every family's mangle) → IP set
 *   deletions (at most one per apply; more applies are scheduled while any remain). A rule never
 *   references a missing set, and a set is never destroyed while referenced.
 * - Read-backs are scheduled: the loop wakes when a table's or the IP sets' next check is due.
 *   An iptables read-back that finds our rules changed behind our back also re-reads the IP
 *   sets before anything is repaired, and a failed restore resyncs them before its retry.
 * - The driver owns a list of managers (manager.ts: IP sets, policies, workload endpoints, host
 *   endpoints), and hands
 *   every message to each in turn; before each apply each completes its deferred work. They
 *   program `Table`s (table.ts), the backend seam; the driver builds the iptables ones.
 * - A rule iptables-restore rejects is contained by its table: the chains at fault are
 *   programmed as fail-closed DROPs, retried with backoff, and everything else is written
 *   (`IptablesTable`, `iptables/rejected-chains.ts`). The apply succeeds.
 * - An outage — a table or the IP sets failing every quick retry with nothing to narrow to
 *   (iptables-restore or ipset missing or broken, the xtables lock held) — never stops the loop,
 *   unlike Felix, whose restart would leave the previous, possibly more permissive, rules in
 *   force for as long as the restart loop lasts. The kernel keeps its last state, the apply is
 *   retried with capped exponential backoff (`retryInitialMs` doubling to `retryMaxMs`) for as
 *   long as it takes, and the first apply that works writes the whole desired state, including
 *   everything that arrived meanwhile. `flushed()` waits through it; `health()` and the
 *   `felix_int_dataplane_failures` / `tessera_dataplane_consecutive_apply_failures` metrics
 *   show it. Only an unexpected error (a bug, not a kernel answer) rejects `run()`.
 */
import type { DataplaneMessage } from '../proto/index.ts';
import { Backoff } from '../runtime/backoff.ts';
import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { DataplaneApplyError } from './apply-error.ts';
import { emptyPhases, timedAsync, type ApplyPhases, type PhaseTotals } from './apply-phases.ts';
import type { CommandRunner } from './command-runner.ts';
import { DataplaneMetrics } from './dataplane-metrics.ts';
import { EndpointManager } from './endpoint-manager.ts';
import type { FailsafeConfig } from './failsafes.ts';
import { HostEndpointManager, type HostEndpointFamily } from './host-endpoint-manager.ts';
import type { IpSetsDataplane } from './ip-sets-dataplane.ts';
import { IpSets } from './iptables/ipsets.ts';
import { IpSetsManager } from './ipsets-manager.ts';
import { IptablesTable, type IptablesBackend } from './iptables/iptables-table.ts';
import { ownerMarkerChain } from './iptables/ownership.ts';
import type { Manager } from './manager.ts';
import { PolicyManager, type FamilyTables } from './policy-manager.ts';
import { RuleRenderer, type RuleRendererOptions } from './rule-renderer.ts';
import type { Table } from './table.ts';

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
  /** Quick attempts per table / ipset write (Felix: 10 from 1 ms) before the apply counts as failed. @default 10 */
  readonly maxAttempts?: number;
  /** First retry of a failed apply (an outage), doubling. @default 1_000 */
  readonly retryInitialMs?: number;
  /** Cap of a failed apply's retry delay. @default 30_000 */
  readonly retryMaxMs?: number;
  /** First retry of a chain iptables-restore rejected, doubling. @default 1_000 */
  readonly rejectedRetryMs?: number;
  /** Cap of a rejected chain's retry delay. @default 30_000 */
  readonly rejectedRetryMaxMs?: number;
  readonly denyAction?: RuleRendererOptions['denyAction'];
  readonly logPrefix?: string;
  readonly interfacePrefixes?: readonly string[];
  readonly endpointToHostAction?: RuleRendererOptions['endpointToHostAction'];
  /** Log policy drops to NFLOG, rate-limited (drop-log.ts). @default undefined: no drop log */
  readonly dropLog?: RuleRendererOptions['dropLog'];
  /** Felix `FailsafeInboundHostPorts`/`FailsafeOutboundHostPorts` (failsafes.ts). @default Felix's */
  readonly failsafes?: FailsafeConfig;
  /** Felix `InterfaceExclude`: interfaces no HostEndpoint polices. @default ['kube-ipvs0'] */
  readonly excludeInterfaces?: readonly string[];
}

interface FlushWaiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

/**
 * Whether the driver is keeping the kernel up to date, for readiness and liveness. All times
 * are on the driver's clock.
 */
export interface DataplaneHealth {
  /** Applies that failed in a row; 0 after a success (and before the first apply). */
  readonly consecutiveFailures: number;
  /** When the last apply succeeded; undefined before the first. */
  readonly lastSuccessAt: number | undefined;
  /** When the apply in progress started; undefined while idle (waiting, or backing off). */
  readonly busySince: number | undefined;
  /** When the next attempt after a failure is due; undefined unless failing. */
  readonly retryAt: number | undefined;
  /** The last failure's message while failing. */
  readonly lastError: string | undefined;
  /** Chains iptables-restore rejected, programmed as fail-closed stand-ins (all tables). */
  readonly rejectedChains: number;
}

/** Summary of one apply, for tests and benchmarks. */
export interface ApplyStats {
  readonly ms: number;
  readonly iptablesBytes: number;
  readonly ipsetBytes: number;
  readonly chainsWritten: number;
  /** Where the time went (see `ApplyPhases`); `drainMs` is before `ms`, not part of it. */
  readonly phases: ApplyPhases;
}

export class DataplaneDriver {
  readonly metrics: DataplaneMetrics;
  readonly tables: readonly Table[];
  readonly ipsets: readonly IpSetsDataplane[];
  private readonly clock: Clock;
  private readonly log: Logger;
  /** Every message goes to each, in this order; so does each apply's deferred work. */
  private readonly managers: readonly Manager[];
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
  private readonly retryBackoff: Backoff;
  private consecutiveFailures = 0;
  private lastSuccessAt: number | undefined;
  private busySince: number | undefined;
  private retryAt: number | undefined;
  private lastError: string | undefined;
  /** Phase times of the apply being prepared (the drain) and run; reset after each apply. */
  private phases: PhaseTotals = emptyPhases();
  private readonly currentPhases = (): PhaseTotals => this.phases;
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
      retryInitialMs = 1_000,
      retryMaxMs = 30_000,
      rejectedRetryMs,
      rejectedRetryMaxMs,
      denyAction,
      logPrefix,
      interfacePrefixes,
      endpointToHostAction,
      dropLog,
      failsafes,
      excludeInterfaces,
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
    // No jitter: an outage is local to this node, so there is no herd of agents to spread.
    this.retryBackoff = new Backoff(clock, { initialMs: retryInitialMs, maxMs: retryMaxMs, jitter: 0, resetAfterMs: Infinity });

    const families: FamilyTables[] = [];
    const hostFamilies: HostEndpointFamily[] = [];
    const filters: Table[] = [];
    const raws: Table[] = [];
    const mangles: Table[] = [];
    const sets: IpSets[] = [];
    for (const ipVersion of [...new Set(ipVersions)]) {
      const renderer = new RuleRenderer({
        ipVersion,
        ...(denyAction && { denyAction }),
        ...(logPrefix && { logPrefix }),
        ...(interfacePrefixes && { interfacePrefixes }),
        ...(endpointToHostAction && { endpointToHostAction }),
        ...(dropLog && { dropLog }),
        ...(failsafes && { failsafes }),
      });
      // Policy chains in mangle and raw: deny is DROP (REJECT is filter-only), no drop log.
      const hostRenderer = new RuleRenderer({ ipVersion, ...(logPrefix && { logPrefix }), ...(interfacePrefixes && { interfacePrefixes }) });
      const tableOptions = {
        ipVersion,
        runner,
        clock,
        logger,
        metrics: this.metrics,
        backend,
        refreshIntervalMs: iptablesRefreshIntervalMs,
        postWriteCheckMs: iptablesPostWriteCheckMs,
        maxAttempts,
        ...(rejectedRetryMs === undefined ? {} : { rejectedRetryMs }),
        ...(rejectedRetryMaxMs === undefined ? {} : { rejectedRetryMaxMs }),
      };
      const filter = new IptablesTable({ ...tableOptions, beforeRetry: () => this.resyncIpSets() });
      filter.updateChains(renderer.staticChains());
      // Tessera's ownership mark: written with the first chains, in the same transaction.
      filter.updateChain(ownerMarkerChain());
      filter.updateChains(renderer.dispatchChains([]));
      filter.setKernelHooks(renderer.kernelHooks());
      // Anti-spoofing (anti-spoofing.ts). Applied after every filter table: it never reaches a
      // kernel whose filter table lacks the ownership mark, and a raw table the kernel refuses
      // (no `rpfilter` match) fails the apply — retried, reported — without holding back any
      // family's policy. It names no IP set.
      const raw = new IptablesTable({ ...tableOptions, table: 'raw' });
      raw.updateChains(renderer.rawChains());
      raw.setKernelHooks(renderer.rawKernelHooks());
      // Host endpoint policy: preDNAT, and the egress policy of DNAT'd host traffic. Applied
      // last, like raw; it names no IP set but through policy chains.
      const mangle = new IptablesTable({ ...tableOptions, table: 'mangle' });
      mangle.updateChains(renderer.mangleChains());
      mangle.setKernelHooks(renderer.mangleKernelHooks());
      families.push({ renderer, filter, host: { renderer: hostRenderer, mangle, raw } });
      hostFamilies.push({ renderer, filter, mangle, raw });
      filters.push(filter);
      raws.push(raw);
      mangles.push(mangle);
      sets.push(new IpSets({ ipVersion, runner, clock, logger, metrics: this.metrics, maxElem: maxIpsetSize, refreshIntervalMs: ipsetsRefreshIntervalMs, maxAttempts }));
    }
    this.tables = [...filters, ...raws, ...mangles];
    this.ipsets = sets;
    this.managers = [
      new IpSetsManager(sets),
      new PolicyManager(families, logger, this.currentPhases),
      new EndpointManager(families, runner, logger, this.metrics),
      new HostEndpointManager(hostFamilies, runner, logger, this.metrics, { ...(interfacePrefixes && { interfacePrefixes }), ...(excludeInterfaces && { excludeInterfaces }) }),
    ];
  }

  /** Whether `InSync` has been received (and so the driver writes). */
  get inSync(): boolean {
    return this.inSyncSeen;
  }

  /** A snapshot of the loop's health (see {@link DataplaneHealth}). */
  health(): DataplaneHealth {
    return {
      consecutiveFailures: this.consecutiveFailures,
      lastSuccessAt: this.lastSuccessAt,
      busySince: this.busySince,
      retryAt: this.retryAt,
      lastError: this.lastError,
      rejectedChains: this.tables.reduce((n, t) => n + t.rejectedChains().length, 0),
    };
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
   * needs `InSync`), however long an outage delays that; rejects only if `run()` does.
   */
  flushed(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const seq = this.sentSeq;
    if (seq <= this.appliedSeq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  /**
   * Runs the apply loop until `signal` aborts (resolves). Dataplane failures are retried, never
   * thrown (see the file comment); only an unexpected error rejects. One loop per driver.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new Error('DataplaneDriver: run() is already running');
    this.running = true;
    const onAbort = (): void => this.kick();
    signal?.addEventListener('abort', onAbort);
    try {
      while (signal?.aborted !== true) {
        // Reads due in the coming apply (iptables-save, ipset list) run while we render — not
        // while backing off, when they would be stale by the time the apply reads them.
        const backingOff = this.retryAt !== undefined && this.retryAt > this.clock.now();
        if (!backingOff && (this.inSyncSeen || this.queue.some((m) => m.type === 'InSync'))) {
          for (const t of this.tables) t.prefetch();
          for (const s of this.ipsets) s.prefetch();
        }
        this.drain();
        if (backingOff) {
          // After a failed apply: take in messages, but apply only when the backoff is over.
          await this.waitForWork(this.retryAt! - this.clock.now());
          continue;
        }
        if (!this.hasWork()) {
          await this.waitForWork();
          continue;
        }
        const wait = this.takeToken();
        if (wait > 0) {
          await this.waitForWork(wait);
          continue;
        }
        try {
          this.applied(await this.applyOnce());
        } catch (e) {
          if (!(e instanceof DataplaneApplyError)) throw e;
          this.failed(e);
        }
      }
    } catch (e) {
      this.failure = e;
      this.log.error({ err: (e as Error).message }, 'dataplane driver stopped by an unexpected error');
      for (const w of this.waiters) w.reject(e);
      this.waiters = [];
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.running = false;
    }
  }

  /** Bookkeeping after a successful apply up to `seq`; then the `flushed()` it satisfies resolve. */
  private applied(seq: number): void {
    if (this.consecutiveFailures > 0) this.log.info({ failures: this.consecutiveFailures, err: this.lastError }, 'dataplane apply succeeded again: the kernel holds the desired state');
    this.consecutiveFailures = 0;
    this.metrics.consecutiveApplyFailures.set(0);
    this.lastSuccessAt = this.clock.now();
    this.retryAt = undefined;
    this.lastError = undefined;
    this.retryBackoff.reset();
    this.appliedSeq = Math.max(this.appliedSeq, seq);
    const done = this.waiters.filter((w) => w.seq <= this.appliedSeq);
    this.waiters = this.waiters.filter((w) => w.seq > this.appliedSeq);
    for (const w of done) w.resolve();
  }

  private failed(e: DataplaneApplyError): void {
    this.consecutiveFailures++;
    this.metrics.applyFailures.inc();
    this.metrics.consecutiveApplyFailures.set(this.consecutiveFailures);
    const delay = this.retryBackoff.next();
    this.retryAt = this.clock.now() + delay;
    this.lastError = e.message;
    const fields = { err: e.message, failures: this.consecutiveFailures, retryInMs: delay };
    if (this.consecutiveFailures === 1) this.log.error(fields, 'dataplane apply failed: the kernel keeps its last state; retrying with backoff');
    else this.log.warn(fields, 'dataplane apply failed again; retrying with backoff');
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
    const t0 = performance.now();
    for (const msg of batch) {
      if (msg.type === 'InSync') {
        if (!this.inSyncSeen) this.log.info('in sync: programming the dataplane');
        this.inSyncSeen = true;
        continue;
      }
      for (const m of this.managers) m.onMessage(msg);
    }
    this.phases.drainMs += performance.now() - t0;
    this.pendingSeq = this.sentSeq;
  }
  private pendingSeq = 0;

  private hasWork(): boolean {
    if (!this.inSyncSeen) return false;
    if (this.pendingSeq > this.appliedSeq || this.consecutiveFailures > 0) return true;
    const now = this.clock.now();
    if (this.tables.some((t) => t.isDirty || now >= t.nextCheckAt())) return true;
    if (this.ipsets.some((s) => s.isDirty || s.hasPendingDeletions || now >= s.nextCheckAt())) return true;
    return this.wantsRetry && now >= this.nextRetryAt;
  }
  /** When a manager that wants a retry (an unresolved interface) gets its next apply. */
  private nextRetryAt = 0;

  private get wantsRetry(): boolean {
    return this.managers.some((m) => m.wantsRetry === true);
  }

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
      if (this.wantsRetry) due = Math.min(due, this.nextRetryAt - now);
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

  /** One apply; returns the send sequence number it applied up to. */
  private async applyOnce(): Promise<number> {
    const start = this.clock.now();
    this.busySince = start;
    try {
      return await this.applyPending(start);
    } finally {
      this.busySince = undefined;
      this.phases = emptyPhases();
    }
  }

  private async applyPending(start: number): Promise<number> {
    const seq = this.pendingSeq;
    const phases = this.phases;
    const t0 = performance.now();
    for (const m of this.managers) await m.completeDeferredWork(phases);
    if (this.wantsRetry) this.nextRetryAt = this.clock.now() + this.unresolvedRetryMs;
    let ipsetBytes = 0;
    let iptablesBytes = 0;
    let chainsWritten = 0;
    // A read-back that finds iptables tampered with re-reads the IP sets too, before either is
    // repaired: whoever changed one may have changed the other, and a rule naming a destroyed
    // set cannot be restored until the set is back.
    let tampered = false;
    for (const t of this.tables) if (await t.readBackIfDue(phases)) tampered = true;
    if (tampered) for (const s of this.ipsets) s.invalidate();
    for (const s of this.ipsets) ipsetBytes += (await timedAsync(phases, 'ipsetMs', () => s.applyUpdates())).bytes;
    for (const t of this.tables) {
      const r = await t.apply(phases);
      iptablesBytes += r.bytes;
      chainsWritten += r.chainsWritten;
    }
    for (const s of this.ipsets) await timedAsync(phases, 'ipsetDeleteMs', () => s.applyDeletions());
    const seconds = (performance.now() - t0) / 1000;
    this.metrics.applyTime.observe(seconds);
    this.applies++;
    this.lastApply = { ms: seconds * 1000, iptablesBytes, ipsetBytes, chainsWritten, phases };
    if (seconds > 1) this.log.warn({ seconds, startedAt: start }, 'dataplane apply took more than 1 s');
    return seq;
  }
}
