import { ApiException, type V1Lease } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { LeaderElector, type LeaseApi } from './leader-election.ts';

/** One Lease with resourceVersion conflicts, as the API server keeps it. */
class LeaseStore {
  lease: V1Lease | undefined;
  private rv = 0;

  client(): LeaseApi & { down: boolean } {
    return makeClient(this);
  }

  nextResourceVersion(): string {
    return String(++this.rv);
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity;
  }
}

function makeClient(store: LeaseStore): LeaseApi & { down: boolean } {
  {
    const check = (c: { down: boolean }): void => {
      if (c.down) throw new Error('connection refused');
    };
    const c = {
      down: false,
      async readNamespacedLease() {
        check(c);
        if (store.lease === undefined) throw new ApiException(404, 'not found', '', {});
        return structuredClone(store.lease);
      },
      async createNamespacedLease({ body }: { body: V1Lease }) {
        check(c);
        if (store.lease !== undefined) throw new ApiException(409, 'exists', '', {});
        store.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: store.nextResourceVersion() } };
        return structuredClone(store.lease);
      },
      async replaceNamespacedLease({ body }: { body: V1Lease }) {
        check(c);
        if (store.lease?.metadata?.resourceVersion !== body.metadata?.resourceVersion) throw new ApiException(409, 'conflict', '', {});
        store.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: store.nextResourceVersion() } };
        return structuredClone(store.lease);
      },
    };
    return c as unknown as LeaseApi & { down: boolean };
  }
}

const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

function candidate(store: LeaseStore, clock: FakeClock, identity: string) {
  const api = store.client();
  const elector = new LeaderElector({ api, namespace: 'tessera-system', identity, clock, ...TIMING });
  const stop = new AbortController();
  let leaderSignal: AbortSignal | undefined;
  const done = elector.run(stop.signal, async (s) => {
    leaderSignal = s;
    await new Promise<void>((resolve) => s.addEventListener('abort', () => resolve(), { once: true }));
  });
  return { api, elector, stop, done, leaderSignal: () => leaderSignal };
}

describe('LeaderElector', () => {
  it('one candidate leads; the other waits while the lease is renewed', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore();
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
    const store = new LeaseStore();
    const a = candidate(store, clock, 'a');
    await clock.advance(0);
    expect(String(store.lease?.spec?.renewTime)).toMatch(/\.\d{6}Z$/);
    a.stop.abort();
    await clock.advance(0);
    await a.done;
  });

  it('a partitioned leader stops after the renew deadline; the standby takes over after the lease duration', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore();
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

  it('a stopped leader releases the lease; the standby takes it at its next retry', async () => {
    const clock = new FakeClock();
    const store = new LeaseStore();
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

  it('rejects inconsistent timing', () => {
    expect(() => new LeaderElector({ api: new LeaseStore().client(), namespace: 'n', identity: 'x', leaseDurationMs: 5, renewDeadlineMs: 10 })).toThrow(RangeError);
  });
});
