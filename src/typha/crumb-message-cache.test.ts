import { describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { CrumbMessageCache } from './crumb-message-cache.ts';
import { decodeMessage } from './messages.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';

describe('CrumbMessageCache', () => {
  it("encodes a crumb's deltas once, in messages of at most the limit, and hands every caller the same bytes", () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock);
    const crumb = crumbs.publish(workloadEndpointSnapshot(250));
    const cache = new CrumbMessageCache(100);
    const first = cache.kvsMessages(crumb);
    expect(first.map((m) => m.count)).toEqual([100, 100, 50]);
    expect(cache.kvsMessages(crumb)).toBe(first);
    const decoded = first.flatMap((m) => {
      const msg = decodeMessage(m.bytes);
      return msg.type === 'kvs' ? msg.kvs : [];
    });
    expect(decoded).toEqual(crumb.deltas);
    expect(cache.kvsMessages(crumbs.publish([]))).toEqual([]);
  });
});
