import { describe, expect, it } from 'vitest';
import { Deferred } from './deferred.ts';

describe('Deferred', () => {
  it('resolve settles promise with the value', async () => {
    const d = new Deferred<number>();
    d.resolve(7);
    await expect(d.promise).resolves.toBe(7);
  });

  it('reject settles promise with the reason', async () => {
    const d = new Deferred<number>();
    d.reject(new Error('closed'));
    await expect(d.promise).rejects.toThrow('closed');
  });

  it('settles once: a later resolve or reject changes nothing', async () => {
    const d = new Deferred<string>();
    d.resolve('first');
    d.resolve('second');
    d.reject(new Error('late'));
    await expect(d.promise).resolves.toBe('first');
  });

  it('a rejection nobody awaits is not reported as unhandled', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      new Deferred<void>().reject(new Error('nobody waits'));
      // Unhandled rejections are reported after the microtask queue drains.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
