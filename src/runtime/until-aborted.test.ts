import { describe, expect, it } from 'vitest';
import { untilAborted } from './until-aborted.ts';

describe('untilAborted', () => {
  it('stays pending until the signal aborts, then resolves', async () => {
    const c = new AbortController();
    let done = false;
    const waiting = untilAborted(c.signal).then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    c.abort(new Error('stop'));
    await waiting;
    expect(done).toBe(true);
  });

  it('resolves at once for a signal that has already aborted', async () => {
    await expect(untilAborted(AbortSignal.abort(new Error('stopped earlier')))).resolves.toBeUndefined();
  });
});
