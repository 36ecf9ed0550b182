import { describe, expect, it } from 'vitest';

import { serializeUpdate } from '../src/typha/serialized-update.ts';
import { STAMP_LABEL } from './typha-agent-protocol.ts';
import { fanoutWorkload, PODS_PER_SERVICE } from './typha-fanout-workload.ts';
import { stampsIn } from './typha-written-latency.ts';

describe('fanoutWorkload', () => {
  it('labels: the snapshot is the endpoints; each id relabels one existing endpoint with its stamp', () => {
    const w = fanoutWorkload('labels', 250);
    const keys = new Set(w.initial.flat().map((u) => serializeUpdate(u).key));
    expect([w.objects, keys.size, w.kvsPerId]).toEqual([250, 250, 1]);
    const [u] = w.batch(251);
    const s = serializeUpdate(u!);
    expect(keys.has(s.key)).toBe(true);
    expect(stampsIn(s.value ?? '').map(([id]) => id)).toEqual([251]);
  });

  it('churn: one projected slice per Service of ≤ 50 endpoints; a replacement deletes a live endpoint, adds a stamped one and writes its slice three times, the last a no-op', () => {
    const w = fanoutWorkload('churn', 500);
    const initial = w.initial.flat().map((u) => serializeUpdate(u));
    const live = new Map(initial.map((s) => [s.key, s.value]));
    const slices = initial.filter((s) => s.key.startsWith('EndpointSlice/'));
    expect(w.objects).toBe(initial.length);
    expect(live.size).toBe(initial.length);
    expect(slices.length).toBeGreaterThanOrEqual(500 / PODS_PER_SERVICE);
    for (const s of slices) expect((JSON.parse(s.value as string) as { endpoints: unknown[] }).endpoints.length).toBeLessThanOrEqual(PODS_PER_SERVICE);
    for (let id = 0; id < 2 * slices.length; id++) {
      const [del, add, without, withNew, ready] = w.batch(id).map((u) => serializeUpdate(u));
      expect(live.has(del!.key) && del!.value === null).toBe(true);
      live.delete(del!.key);
      expect(live.has(add!.key)).toBe(false);
      live.set(add!.key, add!.value);
      expect(add!.value).toContain(STAMP_LABEL);
      expect([without!.key, withNew!.key]).toEqual([ready!.key, ready!.key]);
      expect(without!.value).not.toBe(withNew!.value);
      expect(ready!.value).toBe(withNew!.value);
      live.set(ready!.key, ready!.value);
    }
    expect(live.size).toBe(initial.length);
  });
});
