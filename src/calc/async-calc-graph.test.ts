import { describe, expect, it } from 'vitest';
import type { DataplaneMessage } from '../proto/index.ts';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { AsyncCalcGraph } from './async-calc-graph.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { localWlEp1, policy1Order20, wep } from '../../test/calc/fixtures.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';

function setup(): { clock: FakeClock; g: AsyncCalcGraph; batches: DataplaneMessage[][]; dp: MockDataplane } {
  const clock = new FakeClock();
  const batches: DataplaneMessage[][] = [];
  const dp = new MockDataplane();
  const g = new AsyncCalcGraph({
    nodeName: LOCAL_NODE,
    clock,
    onMessages: (m) => {
      batches.push(m);
      dp.apply(m);
    },
  });
  return { clock, g, batches, dp };
}

const epWithLabel = (i: number) => wep('ep1', { labels: { a: 'a', b: 'b', n: String(i) }, ips: [`10.0.0.${(i % 250) + 1}/32`] });

describe('AsyncCalcGraph', () => {
  it('emits nothing before in-sync, then one batch with the full state ending in InSync', async () => {
    const { clock, g, batches, dp } = setup();
    g.onStatusUpdated('resync-in-progress');
    g.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    g.onUpdates([{ op: 'upsert', resource: localWlEp1 }]);
    await clock.advance(100);
    expect(batches).toEqual([]);
    dp.graphInSync = true;
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    expect(batches).toHaveLength(1);
    expect(batches[0]?.at(-1)).toEqual({ type: 'InSync' });
    expect(dp.policies.size).toBe(1);
    g.dispose();
  });

  it('batches inputs that arrive together into one flush', async () => {
    const { clock, g, batches, dp } = setup();
    dp.graphInSync = true;
    g.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    const before = g.flushCount;
    for (let i = 0; i < 100; i++) g.onUpdates([{ op: 'upsert', resource: epWithLabel(i) }]);
    await flushMicrotasks();
    expect(g.flushCount - before).toBe(1);
    expect(batches.at(-1)?.filter((m) => m.type === 'WorkloadEndpointUpdate')).toHaveLength(1);
    await clock.advance(1000);
    g.dispose();
  });

  it('paces flushes with a leaky bucket: bursts of 10, then one per 10 ms tick', async () => {
    const { clock, g, dp } = setup();
    dp.graphInSync = true;
    g.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    // The forced in-sync flush took a token; 9 remain.
    const start = g.flushCount;
    for (let i = 0; i < 30; i++) {
      g.onUpdates([{ op: 'upsert', resource: epWithLabel(i) }]);
      await flushMicrotasks();
    }
    expect(g.flushCount - start).toBe(9);
    await clock.advance(10);
    expect(g.flushCount - start).toBe(10);
    // Everything pending went out in that one flush; the endpoint state is the latest.
    expect(dp.endpoints.get('default/ep1')?.ipv4Nets).toEqual(['10.0.0.30/32']);
    await clock.advance(10);
    expect(g.flushCount - start).toBe(10);
    // The bucket refills: after 100 ms a new burst of 10 is allowed.
    await clock.advance(100);
    const refilled = g.flushCount;
    for (let i = 0; i < 15; i++) {
      g.onUpdates([{ op: 'upsert', resource: epWithLabel(100 + i) }]);
      await flushMicrotasks();
    }
    expect(g.flushCount - refilled).toBe(10);
    g.dispose();
  });

  it('leaves no timer behind after dispose, and none while idle with a full bucket', async () => {
    const { clock, g, dp } = setup();
    dp.graphInSync = true;
    g.onStatusUpdated('in-sync');
    await flushMicrotasks();
    await clock.advance(50);
    expect(clock.pending).toBe(0);
    g.onUpdates([{ op: 'upsert', resource: policy1Order20 }]);
    await flushMicrotasks();
    expect(clock.pending).toBe(1);
    g.dispose();
    expect(clock.pending).toBe(0);
  });

  it('rejects bad options with RangeError/TypeError naming the argument', () => {
    expect(() => new AsyncCalcGraph({ nodeName: 'n', onMessages: () => {}, bucketSize: 0 })).toThrow(/bucketSize/);
    expect(() => new AsyncCalcGraph({ nodeName: 'n', onMessages: () => {}, tickIntervalMs: 0 })).toThrow(/tickIntervalMs/);
  });
});
