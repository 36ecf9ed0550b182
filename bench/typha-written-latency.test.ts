import { describe, expect, it } from 'vitest';

import { FakeClock } from '../src/runtime/clock.ts';
import { TestBreadcrumbs } from '../test/typha/test-breadcrumbs.ts';
import { STAMP_LABEL } from './typha-agent-protocol.ts';
import { stampsIn, WrittenLatency } from './typha-written-latency.ts';
import type { Update } from '../src/syncer/index.ts';

const stamped = (name: string, stamp: string): Update => ({
  op: 'upsert',
  resource: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkSet', metadata: { name, namespace: 'ns', labels: { [STAMP_LABEL]: stamp } }, spec: {} },
});

describe('stampsIn', () => {
  it('reads every stamp of a serialized value, and none of a value without one', () => {
    expect(stampsIn(`{"labels":{"a":"b","${STAMP_LABEL}":"12_1000.5"},"x":{"${STAMP_LABEL}":"3_7"}}`)).toEqual([
      [12, 1000.5],
      [3, 7],
    ]);
    expect(stampsIn('{"labels":{"a":"b"}}')).toEqual([]);
  });
});

describe('WrittenLatency', () => {
  it('an update counts as written to all only once every connection wrote its crumb; the latency is the last write minus the stamp', () => {
    const crumbs = new TestBreadcrumbs(new FakeClock());
    const base = crumbs.latest();
    crumbs.publish([stamped('a', '0_100'), stamped('b', '1_105')]);
    crumbs.publish([stamped('c', '2_110')]);
    const one = base.nextIfPublished!;
    const two = one.nextIfPublished!;
    let now = 120;
    const w = new WrittenLatency(() => now);
    w.onCrumbsWritten(1, one, two); // connection 1 writes both crumbs at once
    now = 130;
    w.onCrumbsWritten(2, one, one);
    let f = w.figures(2, 3);
    // Crumb one is at both connections (last at 130); crumb two at one of them.
    expect([f.updatesWrittenToAll, f.unwritten, f.writtenToAllMaxMs]).toEqual([2, 1, 30]);
    now = 150;
    w.onCrumbsWritten(2, two, two);
    f = w.figures(2, 3);
    expect([f.updatesWrittenToAll, f.unwritten, f.writtenToAllP50Ms, f.writtenToAllMaxMs]).toEqual([3, 0, 30, 40]);
  });

  it('an update never seen in a written crumb counts as unwritten at every connection', () => {
    const w = new WrittenLatency(() => 0);
    expect(w.figures(1000, 2)).toMatchObject({ updatesWrittenToAll: 0, unwritten: 2000 });
    expect(Number.isNaN(w.figures(1000, 2).writtenToAllP99Ms)).toBe(true);
  });
});
