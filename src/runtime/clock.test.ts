import { describe, expect, it } from 'vitest';

import { every, FakeClock, sleep } from './clock.ts';

describe('every', () => {
  it('calls fn once per interval, first after one interval, until cancelled', async () => {
    const clock = new FakeClock();
    const calls: number[] = [];
    const t = every(clock, 100, () => calls.push(clock.now()));
    await clock.advance(99);
    expect(calls).toEqual([]);
    await clock.advance(251);
    expect(calls).toEqual([100, 200, 300]);
    t.cancel();
    await clock.advance(1_000);
    expect(calls).toEqual([100, 200, 300]);
  });

  it('cancelling from inside fn stops the series', async () => {
    const clock = new FakeClock();
    let n = 0;
    const t = every(clock, 10, () => {
      n += 1;
      if (n === 2) t.cancel();
    });
    await clock.advance(100);
    expect(n).toBe(2);
  });
});

describe('sleep', () => {
  it('resolves after ms, and rejects with the reason when aborted first', async () => {
    const clock = new FakeClock();
    let done = false;
    const p = sleep(clock, 50).then(() => (done = true));
    await clock.advance(49);
    await Promise.resolve();
    expect(done).toBe(false);
    await clock.advance(1);
    await p;
    expect(done).toBe(true);
    const c = new AbortController();
    const q = sleep(clock, 50, c.signal);
    c.abort(new Error('stop'));
    await expect(q).rejects.toThrow('stop');
  });
});
