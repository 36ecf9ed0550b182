import { ApiException, HttpMethod, RequestContext, type ConfigurationOptions, type V1Lease } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { untilAborted } from '../runtime/until-aborted.ts';
import { LeaderElector, type LeaseApi } from './leader-election.ts';

type Op = 'read' | 'create' | 'replace';

/** One call a fake client received: when, with which abort signal, and how it ended. */
interface Call {
  who: string;
  op: Op;
  at: number;
  signal: AbortSignal | undefined;
  outcome?: 'ok' | 'error' | 'aborted';
  endedAt?: number;
}

/** The signal `options` puts on a request, found by running its middleware on a real RequestContext. */
async function signalOf(options: ConfigurationOptions | undefined): Promise<AbortSignal | undefined> {
  const context = new RequestContext('https://127.0.0.1/apis/coordination.k8s.io/v1', HttpMethod.GET);
  let ctx = context;
  for (const m of options?.middleware ?? []) ctx = await m.pre(ctx).toPromise();
  return ctx.getSignal();
}

type FakeLeaseApi = LeaseApi & {
  /** Every call fails at once, as with a refused connection. */
  down: boolean;
  /** Calls of these kinds never answer; they settle only when their signal aborts. */
  hang: Set<Op>;
};

/** One Lease with resourceVersion conflicts, as the API server keeps it; every call is recorded. */
class LeaseStore {
  lease: V1Lease | undefined;
  readonly calls: Call[] = [];
  private rv = 0;

  constructor(private readonly clock: FakeClock) {}

  client(who: string): FakeLeaseApi {
    const clock = this.clock;
    const calls = this.calls;
    const current = (): V1Lease | undefined => this.lease;
    const write = (body: V1Lease): V1Lease => this.write(body);
    const c = {
      down: false,
      hang: new Set<Op>(),
      readNamespacedLease: (_: unknown, options?: ConfigurationOptions) =>
        call('read', options, () => {
          const lease = current();
          if (lease === undefined) throw new ApiException(404, 'not found', '', {});
          return structuredClone(lease);
        }),
      createNamespacedLease: ({ body }: { body: V1Lease }, options?: ConfigurationOptions) =>
        call('create', options, () => {
          if (current() !== undefined) throw new ApiException(409, 'exists', '', {});
          return write(body);
        }),
      replaceNamespacedLease: ({ body }: { body: V1Lease }, options?: ConfigurationOptions) =>
        call('replace', options, () => {
          if (current()?.metadata?.resourceVersion !== body.metadata?.resourceVersion) throw new ApiException(409, 'conflict', '', {});
          return write(body);
        }),
    };
    const call = async (op: Op, options: ConfigurationOptions | undefined, answer: () => V1Lease): Promise<V1Lease> => {
      const signal = await signalOf(options);
      const record: Call = { who, op, at: clock.now(), signal };
      calls.push(record);
      const end = (outcome: Call['outcome']): void => {
        record.outcome = outcome;
        record.endedAt = clock.now();
      };
      if (c.down) {
        end('error');
        throw new Error('connection refused');
      }
      if (c.hang.has(op)) {
        return new Promise<V1Lease>((_, reject) => {
          const abort = (): void => {
            end('aborted');
            reject(new Error('The operation was aborted.'));
          };
          if (signal?.aborted) abort();
          else signal?.addEventListener('abort', abort, { once: true });
        });
      }
      try {
        const result = answer();
        end('ok');
        return result;
      } catch (err) {
        end('error');
        throw err;
      }
    };
    return c as unknown as FakeLeaseApi;
  }

  private write(body: V1Lease): V1Lease {
    this.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity;
  }

  /** Writes by `who` that the store accepted, in order. */
  writes(who: string): Call[] {
    return this.calls.filter((c) => c.who === who && c.op !== 'read' && c.outcome === 'ok');
  }
}

const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** What happened, on the fake clock, in the order it happened. */
type Timeline = Array<{ at: number; what: string }>;

function candidate(store: LeaseStore, clock: FakeClock, identity: string, opts: { timeline?: Timeline; logLines?: Array<{ msg: string }>; ignoreSignal?: boolean } = {}) {
  const api = store.client(identity);
  const logger = pino({ level: 'debug' }, { write: (line: string) => opts.logLines?.push(JSON.parse(line) as { msg: string }) });
  const elector = new LeaderElector({ api, namespace: 'tessera-system', identity, clock, logger, ...TIMING });
  const stop = new AbortController();
  let leaderSignal: AbortSignal | undefined;
  const done = elector.run(stop.signal, async (s) => {
    leaderSignal = s;
    opts.timeline?.push({ at: clock.now(), what: `${identity} leads` });
    s.addEventListener('abort', () => opts.timeline?.push({ at: clock.now(), what: `${identity} stopped leading (isLeader=${elector.isLeader()})` }), { once: true });
    // A `lead` that ignores its signal stands for work stuck on a request that never answers.
    if (opts.ignoreSignal) await new Promise<void>(() => undefined);
    await untilAborted(s);
  });
  return { api, elector, stop, done, leaderSignal: () => leaderSignal };
}

/** The time the last attempt of `who` that the store accepted began (its read). */
function lastSuccessfulAttemptStart(store: LeaseStore, who: string): number {
  const last = store.writes(who).at(-1)!;
  const reads = store.calls.filter((c) => c.who === who && c.op === 'read' && c.at <= last.at);
  return reads.at(-1)!.at;
}

describe('LeaderElector', () => {
  it('one candidate leads; the other waits while the lease is renewed', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    const b = candidate(store, clock, 'b');
    await clock.advance(60_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(store.holder).toBe('a');
    a.stop.abort();
    b.stop.abort();
    await clock.advance(0);
    expect(await a.done).toBe('stopped');
    expect(await b.done).toBe('stopped');
  });

  it('MicroTime fields are written with six fractional digits', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    expect(String(store.lease?.spec?.renewTime)).toMatch(/\.\d{6}Z$/);
    a.stop.abort();
    await clock.advance(0);
    await a.done;
  });

  it('every Lease request carries an abort signal', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(10_000);
    a.stop.abort();
    await clock.advance(0);
    await a.done;
    expect(store.calls.length).toBeGreaterThan(3);
    expect(store.calls.every((c) => c.signal instanceof AbortSignal)).toBe(true);
  });

  it('a partitioned leader stops after the renew deadline; the standby takes over after the lease duration', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    const b = candidate(store, clock, 'b');
    await clock.advance(4_000);
    expect(a.elector.isLeader()).toBe(true);

    a.api.down = true;
    const cutAt = clock.now();
    await clock.advance(TIMING.renewDeadlineMs + TIMING.retryPeriodMs);
    expect(a.leaderSignal()?.aborted).toBe(true);
    expect(await a.done).toBe('lost');
    expect(b.elector.isLeader()).toBe(false); // the lease has not expired yet

    while (!b.elector.isLeader()) await clock.advance(100);
    const takeover = clock.now() - cutAt;
    expect(takeover).toBeGreaterThanOrEqual(TIMING.leaseDurationMs - TIMING.retryPeriodMs);
    expect(takeover).toBeLessThanOrEqual(TIMING.leaseDurationMs + TIMING.retryPeriodMs);
    expect(store.holder).toBe('b');
    expect(store.lease?.spec?.leaseTransitions).toBe(1);
    b.stop.abort();
    await clock.advance(0);
    await b.done;
  });

  it('a renew call that never answers: the leader steps down at the renew deadline, the call is aborted, and only then can the standby acquire', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const timeline: Timeline = [];
    const logLines: Array<{ msg: string }> = [];
    const a = candidate(store, clock, 'a', { timeline, logLines });
    await clock.advance(0);
    const b = candidate(store, clock, 'b', { timeline });
    await clock.advance(5_000); // a renewed at 2 s and 4 s
    expect(a.elector.isLeader()).toBe(true);

    a.api.hang.add('replace');
    const hungFrom = clock.now();
    while (!b.elector.isLeader() && clock.now() < hungFrom + 60_000) await clock.advance(100);
    expect(b.elector.isLeader()).toBe(true);

    // The term ended exactly renewDeadlineMs after the last successful renewal began.
    const termStart = lastSuccessfulAttemptStart(store, 'a');
    const steppedDown = timeline.find((e) => e.what.startsWith('a stopped leading'))!;
    expect(steppedDown).toEqual({ at: termStart + TIMING.renewDeadlineMs, what: 'a stopped leading (isLeader=false)' });
    expect(await a.done).toBe('lost');
    expect(a.elector.isLeader()).toBe(false);

    // The renew call still in flight at that moment was aborted then, and never answered otherwise.
    const hung = store.calls.filter((c) => c.who === 'a' && c.op === 'replace' && c.at >= hungFrom);
    expect(hung.length).toBeGreaterThan(0);
    const inFlight = hung.find((c) => c.at < steppedDown.at && c.endedAt !== undefined && c.endedAt >= steppedDown.at)!;
    expect(inFlight).toMatchObject({ outcome: 'aborted', endedAt: steppedDown.at });
    expect(inFlight.signal?.aborted).toBe(true);
    expect(hung.every((c) => c.outcome === 'aborted')).toBe(true);

    // The standby wrote the lease only after a stepped down, and a full lease duration after
    // a's last accepted write: the two terms do not overlap.
    const acquired = store.writes('b')[0]!;
    const order = timeline.map((e) => e.what);
    expect(order.indexOf('a stopped leading (isLeader=false)')).toBeLessThan(order.indexOf('b leads'));
    expect(acquired.at).toBeGreaterThan(steppedDown.at);
    expect(acquired.at - store.writes('a').at(-1)!.at).toBeGreaterThanOrEqual(TIMING.leaseDurationMs);
    expect(store.lease?.spec?.leaseTransitions).toBe(1);

    // Said once.
    expect(logLines.filter((l) => l.msg.startsWith('stopped leading')).map((l) => l.msg)).toEqual([
      'stopped leading: the lease was not renewed within renewDeadlineMs (10000 ms)',
    ]);
    b.stop.abort();
    await clock.advance(0);
    expect(await b.done).toBe('stopped');
  });

  it("'lost' resolves at the deadline even when the leader's work never returns", async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a', { ignoreSignal: true });
    await clock.advance(0);
    a.api.hang.add('read');
    let outcome: string | undefined;
    void a.done.then((o) => (outcome = o));
    await clock.advance(TIMING.renewDeadlineMs);
    expect(outcome).toBe('lost');
    expect(a.leaderSignal()?.aborted).toBe(true);
  });

  it('an acquire attempt that never answers is aborted at the renew deadline, and the candidate tries again', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    a.api.hang.add('read');
    await clock.advance(0);
    await clock.advance(TIMING.renewDeadlineMs);
    const first = store.calls[0]!;
    expect(first).toMatchObject({ op: 'read', at: 0, outcome: 'aborted', endedAt: TIMING.renewDeadlineMs });
    a.api.hang.clear();
    await clock.advance(TIMING.retryPeriodMs);
    expect(a.elector.isLeader()).toBe(true);
    a.stop.abort();
    await clock.advance(0);
    expect(await a.done).toBe('stopped');
  });

  it('a leader that reads another holder in the lease steps down at once', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    store.lease = { ...store.lease, spec: { ...store.lease?.spec, holderIdentity: 'intruder' }, metadata: { ...store.lease?.metadata, resourceVersion: '99' } };
    const changedAt = clock.now();
    await clock.advance(TIMING.retryPeriodMs);
    expect(a.elector.isLeader()).toBe(false);
    expect(await a.done).toBe('lost');
    expect(clock.now() - changedAt).toBeLessThan(TIMING.renewDeadlineMs);
    expect(store.holder).toBe('intruder');
  });

  it('a stopped leader releases the lease; the standby takes it at its next retry', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    const b = candidate(store, clock, 'b');
    await clock.advance(4_000);
    a.stop.abort();
    await clock.advance(0);
    expect(await a.done).toBe('stopped');
    expect(store.holder).toBe('');
    await clock.advance(TIMING.retryPeriodMs);
    expect(b.elector.isLeader()).toBe(true);
    b.stop.abort();
    await clock.advance(0);
    await b.done;
  });

  it('a release that never answers is aborted at the renew deadline; run still resolves', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore(clock);
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    a.api.hang.add('read');
    a.stop.abort();
    let outcome: string | undefined;
    void a.done.then((o) => (outcome = o));
    await clock.advance(TIMING.renewDeadlineMs);
    expect(outcome).toBe('stopped');
    expect(store.calls.at(-1)).toMatchObject({ op: 'read', outcome: 'aborted' });
  });

  it('rejects inconsistent timing', () => {
    expect(() => new LeaderElector({ api: new LeaseStore(new FakeClock()).client('x'), namespace: 'n', identity: 'x', leaseDurationMs: 5, renewDeadlineMs: 10 })).toThrow(RangeError);
  });
});
