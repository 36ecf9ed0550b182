import { describe, expect, it } from 'vitest';

import { PollAbort, pollUntil } from './poll-until.ts';

describe('pollUntil', () => {
  it('returns the first value other than undefined', async () => {
    let calls = 0;
    const value = await pollUntil(() => (++calls === 3 ? 'ready' : undefined), { description: 'x', intervalMs: 1 });
    expect(value).toBe('ready');
    expect(calls).toBe(3);
  });

  it('treats a throwing probe as "not yet" and quotes its last error on timeout', async () => {
    await expect(
      pollUntil(
        () => {
          throw new Error('connection refused');
        },
        { description: 'etcd /health', timeoutMs: 20, intervalMs: 1 },
      ),
    ).rejects.toThrow(/timed out after 20 ms waiting for etcd \/health; last error: connection refused/);
  });

  it('stops at once with the cause of a PollAbort', async () => {
    let calls = 0;
    const cause = new Error('process exited');
    await expect(
      pollUntil(
        () => {
          calls++;
          throw new PollAbort(cause);
        },
        { description: 'x', timeoutMs: 10_000, intervalMs: 1 },
      ),
    ).rejects.toBe(cause);
    expect(calls).toBe(1);
  });

  it('rejects with the abort reason when the signal fires', async () => {
    const controller = new AbortController();
    const waiting = pollUntil(() => undefined, { description: 'x', signal: controller.signal, intervalMs: 5 });
    controller.abort(new Error('test over'));
    await expect(waiting).rejects.toThrow('test over');
  });
});
