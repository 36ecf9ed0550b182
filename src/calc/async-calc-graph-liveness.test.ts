/**
 * `AsyncCalcGraph.pendingSince()`: the liveness signal of the calc graph — since when input has
 * waited to be flushed; undefined when everything received is flushed.
 */
import { describe, expect, it } from 'vitest';

import { FakeClock, flushMicrotasks, type Clock } from '../runtime/clock.ts';
import { Liveness } from '../runtime/liveness.ts';
import { AsyncCalcGraph } from './async-calc-graph.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { policy1Order20, wep } from '../../test/calc/fixtures.ts';

const ep = (i: number) => wep('ep1', { labels: { n: String(i) }, ips: [`10.0.0.${(i % 250) + 1}/32`] });

function graph(clock: Clock, bucketSize = 10): AsyncCalcGraph {
  return new AsyncCalcGraph({ nodeName: LOCAL_NODE, clock, bucketSize, onMessages: () => undefined });
}

describe('AsyncCalcGraph liveness (pendingSince)', () => {
  it('idle until input arrives; the input time while it waits; idle again once flushed', async () => {
    const clock = new FakeClock(500);
    const g = graph(clock);
    expect(g.pendingSince()).toBeUndefined();
    g.onStatusUpdated('in-sync');
    g.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    expect(g.pendingSince()).toBe(500);
    await flushMicrotasks();
    expect(g.pendingSince()).toBeUndefined();
    await clock.advance(3_600_000);
    expect(g.pendingSince()).toBeUndefined();
    g.dispose();
  });

  it('input held back by the leaky bucket owes progress from its arrival until the tick that flushes it', async () => {
    const clock = new FakeClock();
    const g = graph(clock, 1);
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    await clock.advance(3);
    g.onUpdates([{ op: 'upsert', resource: ep(1) }]);
    await flushMicrotasks();
    // The one token went to the in-sync flush: this input waits for the next 10 ms tick.
    expect(g.pendingSince()).toBe(3);
    g.onUpdates([{ op: 'upsert', resource: ep(2) }]);
    await flushMicrotasks();
    expect(g.pendingSince()).toBe(3);
    await clock.advance(10);
    expect(g.pendingSince()).toBeUndefined();
    g.dispose();
  });

  it('input that is never flushed (its tick never comes) makes the calc graph stuck once past the timeout', async () => {
    const clock = new FakeClock();
    // A clock whose timers never fire: the held-back batch is never flushed.
    const lostTimers: Clock = { now: () => clock.now(), setTimer: () => ({ cancel: () => undefined }) };
    const g = graph(lostTimers, 1);
    const liveness = new Liveness({ clock });
    liveness.register('calc-graph', { timeoutMs: 30_000, pendingSince: () => g.pendingSince() });
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    g.onUpdates([{ op: 'upsert', resource: ep(1) }]);
    await flushMicrotasks();
    await clock.advance(30_000);
    expect(liveness.check().live).toBe(true);
    await clock.advance(1);
    expect(liveness.check().components).toEqual([{ name: 'calc-graph', live: false, pendingMs: 30_001, timeoutMs: 30_000 }]);
    g.dispose();
    expect(liveness.check().live).toBe(true);
  });
});
