/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
 * `tools/leaderelection` semantics, so two replicas never write at once:
 *
 * - A candidate takes the lease when it is free (no holder) or when the lease has not
 *   changed (same resourceVersion) for `leaseDurationMs` *as observed locally* (client-go
 *   likewise times from when it last saw the record change, never from the holder's
 *   clock: no skew issues).
 * - Every write is an optimistic-concurrency update on the lease's resourceVersion; a 409
 *   means someone else won this round.
 * - The leader renews every `retryPeriodMs`; when it has failed to renew for
 *   `renewDeadlineMs` it stops leading (its signal aborts) and `run` returns — the process
 *   should then exit, as client-go's callers do.
 * - On a clean stop the leader releases the lease (empty holder, 1 s duration) so a standby
 *   takes over at its next retry instead of after a full lease duration.
 *
 * Defaults are client-go's: 15 s lease, 10 s renew deadline, 2 s retry period.
 */
import { setMaxListeners } from 'node:events';

import { ApiException, CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';

import { realClock, sleep, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';

/** The Lease calls the elector makes (CoordinationV1Api's; a fake in unit tests). */
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
  /** @default 15_000 */
  leaseDurationMs?: number;
  /** @default 10_000 */
  renewDeadlineMs?: number;
  /** @default 2_000 */
  retryPeriodMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function status(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

export class LeaderElector {
  readonly identity: string;
  private readonly api: LeaseApi;
  private readonly namespace: string;
  private readonly name: string;
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
    this.identity = identity;
    this.leaseDurationMs = leaseDurationMs;
    this.renewDeadlineMs = renewDeadlineMs;
    this.retryPeriodMs = retryPeriodMs;
    this.clock = clock;
    this.log = logger.child({ component: 'leader-election', lease: `${namespace}/${name}`, identity });
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until `signal` aborts; while leading, runs `lead(leaderSignal)`. Resolves
   * when `signal` aborts (after releasing the lease) or when leadership is lost.
   * Returns 'lost' or 'stopped'.
   */
  async run(signal: AbortSignal, lead: (leaderSignal: AbortSignal) => Promise<void>): Promise<'lost' | 'stopped'> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await sleep(this.clock, this.retryPeriodMs, signal).catch(() => undefined);
    }
    if (signal.aborted) return 'stopped';

    this.leading = true;
    this.log.info('became leader');
    const leader = new AbortController();
    // Every worker, informer and timer listens on this one signal.
    setMaxListeners(0, leader.signal);
    const onStop = (): void => leader.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const work = lead(leader.signal).catch((err: unknown) => {
      this.log.error({ err }, 'leader work failed');
      leader.abort();
    });

    let lastRenew = this.clock.now();
    let outcome: 'lost' | 'stopped' = 'stopped';
    while (!leader.signal.aborted) {
      await sleep(this.clock, this.retryPeriodMs, leader.signal).catch(() => undefined);
      if (leader.signal.aborted) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = this.clock.now();
      } else if (this.clock.now() - lastRenew >= this.renewDeadlineMs) {
        this.log.error('failed to renew the lease within the renew deadline; stopping');
        outcome = 'lost';
        leader.abort();
      }
    }
    signal.removeEventListener('abort', onStop);
    await work;
    this.leading = false;
    if (outcome === 'stopped') await this.release();
    return outcome;
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (err) {
      if (status(err) !== 404) {
        this.log.warn({ err }, 'reading the lease failed');
        return false;
      }
      try {
        await this.api.createNamespacedLease({
          namespace: this.namespace,
          body: {
            metadata: { name: this.name, namespace: this.namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: microTime(now) as unknown as Date,
              renewTime: microTime(now) as unknown as Date,
              leaseTransitions: 0,
            },
          },
        });
        return true;
      } catch (createErr) {
        if (status(createErr) !== 409) this.log.warn({ err: createErr }, 'creating the lease failed');
        return false;
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
    const holderDurationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observedAt + holderDurationMs > this.clock.now()) return false;

    const acquiring = holder !== this.identity;
    const acquireRaw = spec.acquireTime as unknown;
    let stored: V1Lease;
    try {
      stored = await this.api.replaceNamespacedLease({
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
      });
    } catch (err) {
      if (status(err) !== 409) this.log.warn({ err }, 'updating the lease failed');
      return false;
    }
    this.observe(`${this.identity}@${stored.metadata?.resourceVersion ?? ''}`);
    if (acquiring) this.log.info({ previous: holder }, 'acquired the lease');
    return true;
  }

  private observe(record: string): void {
    this.observedRecord = record;
    this.observedAt = this.clock.now();
  }

  /** Gives the lease up so a standby need not wait out the lease duration. */
  private async release(): Promise<void> {
    try {
      const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
      if (lease.spec?.holderIdentity !== this.identity) return;
      const now = microTime(new Date());
      await this.api.replaceNamespacedLease({
        name: this.name,
        namespace: this.namespace,
        body: {
          metadata: lease.metadata ?? {},
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now as unknown as Date, acquireTime: now as unknown as Date },
        },
      });
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn({ err }, 'releasing the lease failed');
    }
  }
}
