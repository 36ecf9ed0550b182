/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
 * `tools/leaderelection` semantics, so two replicas never write at once:
 *
 * - A candidate takes the lease when it is free (no holder) or when the lease has not
 *   changed (same resourceVersion) for `leaseDurationMs` *as observed locally* (client-go
 *   likewise times from when it last saw the record change, never from the holder's
 *   clock: no skew issues, only the clocks' rates must agree).
 * - Every write is an optimistic-concurrency update on the lease's resourceVersion; a 409
 *   means someone else won this round.
 * - Every acquire or renew attempt is bounded: its HTTP requests are aborted (the socket
 *   destroyed, see `abortOn` in informers/kube-abort-on.ts) when the attempt outlives its deadline, so a request that never
 *   answers cannot hold the elector. client-node sets no request timeout of its own.
 * - A term lasts `renewDeadlineMs` from the *start* of the last successful attempt, and ends
 *   on a timer, whether or not a renew call is still in flight: `isLeader()` turns false, the
 *   leading signal aborts, one error is logged, and `run` resolves 'lost' at once.
 *
 * Why that keeps terms disjoint: the server stored the renewal after the attempt began, and a
 * standby starts timing the lease only once it has read that renewal, so it cannot take the
 * lease before `attemptStart + leaseDurationMs`; this replica stops leading at
 * `attemptStart + renewDeadlineMs`, earlier by `leaseDurationMs - renewDeadlineMs` — the time
 * a process has to stop writing (client-go's callers exit in OnStoppedLeading). client-go
 * starts each renew round's RenewDeadline after the previous success returned, which a slow
 * answer can push past the lease; timing from the attempt's start cannot.
 *
 * - On a clean stop the leader releases the lease (empty holder, 1 s duration) so a standby
 *   takes over at its next retry instead of after a full lease duration.
 *
 * Defaults are client-go's: 15 s lease, 10 s renew deadline, 2 s retry period.
 */
import { setMaxListeners } from 'node:events';

import { ApiException, CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';

import { abortOn } from '../informers/kube-abort-on.ts';
import { realClock, sleep, type Clock, type Timer } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';

/**
 * The Lease calls the elector makes: CoordinationV1Api's, so the real client fits as it is;
 * a fake in unit tests. The elector passes every call `abortOn(signal)` as its options.
 */
export type LeaseApi = Pick<CoordinationV1Api, 'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'>;

export interface LeaderElectorOptions {
  /** Required unless `api` is given. */
  kubeConfig?: KubeConfig;
  /** @default CoordinationV1Api on `kubeConfig` */
  api?: LeaseApi;
  namespace: string;
  /** Lease name. @default 'tessera-controllers' */
  name?: string;
  /** This candidate's identity (pod name + a random suffix, for example). */
  identity: string;
  /** Written to the Lease in whole seconds (rounded up). @default 15_000 */
  leaseDurationMs?: number;
  /** How long a term lasts without a successful renewal; also bounds every attempt. @default 10_000 */
  renewDeadlineMs?: number;
  /** @default 2_000 */
  retryPeriodMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The reason an attempt's requests were aborted: it outlived its deadline. */
export class LeaseDeadlineError extends Error {
  constructor(lease: string, attempt: string, deadlineMs: number) {
    super(`Lease ${lease}: ${attempt} did not finish within renewDeadlineMs (${deadlineMs} ms); its requests were aborted`);
    this.name = 'LeaseDeadlineError';
  }
}

/** The reason the leading signal aborts when the term ends without a stop being asked for. */
export class LeadershipLostError extends Error {
  constructor(lease: string, identity: string, why: string) {
    super(`Lease ${lease}: ${identity} stopped leading: ${why}`);
    this.name = 'LeadershipLostError';
  }
}

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function status(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** What one acquire-or-renew attempt found: done, not this time, or the lease is someone else's. */
type Attempt = 'ok' | 'failed' | 'taken';

const NEVER = new AbortController().signal;

export class LeaderElector {
  readonly identity: string;
  private readonly api: LeaseApi;
  private readonly namespace: string;
  private readonly name: string;
  private readonly lease: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private observedRecord = '';
  private observedAt = 0;
  private leading = false;

  constructor(opts: LeaderElectorOptions) {
    const {
      kubeConfig,
      namespace,
      name = 'tessera-controllers',
      identity,
      leaseDurationMs = 15_000,
      renewDeadlineMs = 10_000,
      retryPeriodMs = 2_000,
      clock = realClock,
      logger = silentLogger,
    } = opts;
    if (!(leaseDurationMs > renewDeadlineMs)) throw new RangeError('LeaderElector: leaseDurationMs must be greater than renewDeadlineMs');
    if (!(renewDeadlineMs > retryPeriodMs)) throw new RangeError('LeaderElector: renewDeadlineMs must be greater than retryPeriodMs');
    if (identity === '') throw new TypeError('LeaderElector: identity must not be empty');
    if (opts.api !== undefined) this.api = opts.api;
    else if (kubeConfig !== undefined) this.api = kubeConfig.makeApiClient(CoordinationV1Api);
    else throw new TypeError('LeaderElector: pass kubeConfig or api');
    this.namespace = namespace;
    this.name = name;
    this.lease = `${namespace}/${name}`;
    this.identity = identity;
    this.leaseDurationMs = leaseDurationMs;
    this.renewDeadlineMs = renewDeadlineMs;
    this.retryPeriodMs = retryPeriodMs;
    this.clock = clock;
    this.log = logger.child({ component: 'leader-election', lease: this.lease, identity });
  }

  /** True from acquiring the lease until the term ends (renew deadline, stop, or lost lease). */
  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until `signal` aborts; while leading, runs `lead(leaderSignal)`.
   *
   * - 'stopped': `signal` aborted; `lead` has returned and the lease was released.
   * - 'lost': the term ended (renew deadline passed, or another holder was found). Resolves
   *   as soon as that happens — like client-go's Run, it does not wait for `lead`, which was
   *   told through its aborted signal but may still be finishing a request. The process
   *   should exit now: that is what closes a write still in flight.
   */
  async run(signal: AbortSignal, lead: (leaderSignal: AbortSignal) => Promise<void>): Promise<'lost' | 'stopped'> {
    const won = await this.campaign(signal);
    if (won === undefined) return 'stopped';
    if (signal.aborted) {
      await this.release();
      return 'stopped';
    }

    this.leading = true;
    this.log.info('became leader');
    const leader = new AbortController();
    // Every worker, informer and timer listens on this one signal.
    setMaxListeners(0, leader.signal);
    let lost = false;
    const stepDown = (why: string): void => {
      if (!this.leading) return;
      this.leading = false;
      lost = !signal.aborted;
      this.log.error({ renewDeadlineMs: this.renewDeadlineMs }, `stopped leading: ${why}`);
      leader.abort(new LeadershipLostError(this.lease, this.identity, why));
    };
    // The term's end, moved forward by each successful renewal; it fires even while a
    // renew call hangs.
    let expiry: Timer | undefined;
    const extendTerm = (attemptStart: number): void => {
      expiry?.cancel();
      expiry = this.clock.setTimer(
        () => stepDown(`the lease was not renewed within renewDeadlineMs (${this.renewDeadlineMs} ms)`),
        attemptStart + this.renewDeadlineMs - this.clock.now(),
      );
    };
    extendTerm(won);

    const onStop = (): void => leader.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const work = lead(leader.signal).catch((err: unknown) => {
      this.log.error({ err }, 'leader work failed');
      leader.abort();
    });

    while (!leader.signal.aborted) {
      await sleep(this.clock, this.retryPeriodMs, leader.signal).catch(() => undefined);
      if (leader.signal.aborted) break;
      const started = this.clock.now();
      // Bounded by the term itself: the leading signal aborts when the term ends.
      const result = await this.tryAcquireOrRenew(leader.signal);
      if (leader.signal.aborted) break;
      if (result === 'ok') extendTerm(started);
      else if (result === 'taken') stepDown('the lease is held by another candidate');
    }
    signal.removeEventListener('abort', onStop);
    if (lost) {
      expiry?.cancel();
      return 'lost';
    }
    // A clean stop (or failed work): let the work finish before the lease is given up. The
    // term still ends on time if finishing takes longer than the lease allows.
    await work;
    expiry?.cancel();
    const stillLeading = this.leading;
    this.leading = false;
    if (stillLeading) await this.release();
    return 'stopped';
  }

  /** Tries every retry period until one attempt wins; returns when that attempt began. */
  private async campaign(signal: AbortSignal): Promise<number | undefined> {
    while (!signal.aborted) {
      const started = this.clock.now();
      const attempt = this.deadline(signal, 'acquiring');
      const result = await this.tryAcquireOrRenew(attempt.signal).finally(attempt.dispose);
      if (result === 'ok') return started;
      await sleep(this.clock, this.retryPeriodMs, signal).catch(() => undefined);
    }
    return undefined;
  }

  /** A signal that aborts when `parent` does or `renewDeadlineMs` passes on the clock. */
  private deadline(parent: AbortSignal, attempt: string): { signal: AbortSignal; dispose: () => void } {
    const c = new AbortController();
    const onParent = (): void => c.abort(parent.reason);
    const timer = this.clock.setTimer(() => c.abort(new LeaseDeadlineError(this.lease, attempt, this.renewDeadlineMs)), this.renewDeadlineMs);
    if (parent.aborted) onParent();
    else parent.addEventListener('abort', onParent, { once: true });
    return {
      signal: c.signal,
      dispose: () => {
        timer.cancel();
        parent.removeEventListener('abort', onParent);
      },
    };
  }

  private failed(err: unknown, signal: AbortSignal, what: string): 'failed' {
    if (signal.aborted) {
      // Ended on purpose. A missed deadline is worth a warning; a term that ended or a stop
      // has been logged already.
      const reason: unknown = signal.reason;
      if (reason instanceof LeaseDeadlineError) this.log.warn({ reason: reason.message }, `${what}: aborted`);
      else this.log.debug({ reason: reason instanceof Error ? reason.message : String(reason) }, `${what}: aborted`);
    } else if (status(err) !== 409) {
      this.log.warn({ err }, `${what} failed`);
    }
    return 'failed';
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const options = abortOn(signal);
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace }, options);
    } catch (err) {
      if (signal.aborted || status(err) !== 404) return this.failed(err, signal, 'reading the lease');
      const now = microTime(new Date());
      try {
        await this.api.createNamespacedLease(
          {
            namespace: this.namespace,
            body: {
              metadata: { name: this.name, namespace: this.namespace },
              spec: {
                holderIdentity: this.identity,
                leaseDurationSeconds: durationSeconds,
                acquireTime: now as unknown as Date,
                renewTime: now as unknown as Date,
                leaseTransitions: 0,
              },
            },
          },
          options,
        );
        return 'ok';
      } catch (createErr) {
        return this.failed(createErr, signal, 'creating the lease');
      }
    }

    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    // Any write to the lease (a renewal included) changes its resourceVersion, so it marks
    // "the record changed" even if two renewals carry the same timestamp (client-go compares
    // the raw record instead).
    const record = `${holder}@${lease.metadata?.resourceVersion ?? ''}`;
    if (record !== this.observedRecord) this.observe(record);
    const heldByOther = holder !== '' && holder !== this.identity;
    if (heldByOther && this.leading) return 'taken';
    const holderDurationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observedAt + holderDurationMs > this.clock.now()) return 'failed';

    // Stamped after the read: a standby that acquires writes an acquireTime no earlier than
    // the moment it judged the old lease expired.
    const now = new Date();
    const acquiring = holder !== this.identity;
    const acquireRaw = spec.acquireTime as unknown;
    let stored: V1Lease;
    try {
      stored = await this.api.replaceNamespacedLease(
        {
          name: this.name,
          namespace: this.namespace,
          body: {
            metadata: { ...lease.metadata, name: this.name, namespace: this.namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: (acquiring ? microTime(now) : acquireRaw instanceof Date ? microTime(acquireRaw) : acquireRaw) as Date,
              renewTime: microTime(now) as unknown as Date,
              leaseTransitions: (spec.leaseTransitions ?? 0) + (acquiring && holder !== '' ? 1 : 0),
            },
          },
        },
        options,
      );
    } catch (err) {
      return this.failed(err, signal, 'updating the lease');
    }
    this.observe(`${this.identity}@${stored.metadata?.resourceVersion ?? ''}`);
    if (acquiring) this.log.info({ previous: holder }, 'acquired the lease');
    return 'ok';
  }

  private observe(record: string): void {
    this.observedRecord = record;
    this.observedAt = this.clock.now();
  }

  /** Gives the lease up so a standby need not wait out the lease duration; bounded like an attempt. */
  private async release(): Promise<void> {
    const attempt = this.deadline(NEVER, 'releasing');
    const options = abortOn(attempt.signal);
    try {
      const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace }, options);
      if (lease.spec?.holderIdentity !== this.identity) return;
      const now = microTime(new Date());
      await this.api.replaceNamespacedLease(
        {
          name: this.name,
          namespace: this.namespace,
          body: {
            metadata: lease.metadata ?? {},
            spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now as unknown as Date, acquireTime: now as unknown as Date },
          },
        },
        options,
      );
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err, reason: (attempt.signal.reason as Error | undefined)?.message }, 'releasing the lease failed');
    } finally {
      attempt.dispose();
    }
  }
}
