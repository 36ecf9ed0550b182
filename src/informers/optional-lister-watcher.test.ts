import { describe, expect, it } from 'vitest';
import { StatusError, type ListerWatcher, type WatchEvent } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { OptionalListerWatcher } from './optional-lister-watcher.ts';
import { silentLogger } from '../runtime/logger.ts';

function inner(answers: Array<'404' | '403' | 'ok'>): ListerWatcher<KubeObject> & { watches: number } {
  const lw = {
    resource: 'projectcalico.org/v3/stagednetworkpolicies',
    watches: 0,
    async list() {
      const a = answers.shift();
      if (a === '404') throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
      if (a === '403') throw new StatusError(403, 'Forbidden', 'forbidden');
      return { items: [{ metadata: { name: 'p', namespace: 'shop', resourceVersion: '7' } }], resourceVersion: '7' };
    },
    watch(): AsyncIterable<WatchEvent<KubeObject>> {
      lw.watches++;
      return { async *[Symbol.asyncIterator]() {} };
    },
  };
  return lw;
}

describe('OptionalListerWatcher', () => {
  it('a resource the API server does not serve is an empty list; its watch waits, then asks for a relist with 410', async () => {
    const base = inner(['404', 'ok']);
    const lw = new OptionalListerWatcher(base, { logger: silentLogger, recheckMs: 20 });
    expect(await lw.list({})).toEqual({ items: [], resourceVersion: '' });
    const stop = new AbortController();
    const t0 = Date.now();
    await expect(
      (async () => {
        for await (const _ of lw.watch({ resourceVersion: '', allowWatchBookmarks: true, timeoutSeconds: 60, signal: stop.signal })) void _;
      })(),
    ).rejects.toMatchObject({ code: 410 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15);
    expect(base.watches).toBe(0);
    // Installed since: the real list and watch again.
    expect((await lw.list({})).items).toHaveLength(1);
    for await (const _ of lw.watch({ resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 60, signal: stop.signal })) void _;
    expect(base.watches).toBe(1);
  });

  it('any other error passes through, and aborting ends the waiting watch quietly', async () => {
    const lw = new OptionalListerWatcher(inner(['403', '404']), { logger: silentLogger, recheckMs: 60_000 });
    await expect(lw.list({})).rejects.toMatchObject({ code: 403 });
    await lw.list({});
    const stop = new AbortController();
    const done = (async () => {
      for await (const _ of lw.watch({ resourceVersion: '', allowWatchBookmarks: true, timeoutSeconds: 60, signal: stop.signal })) void _;
    })();
    stop.abort();
    await expect(done).resolves.toBeUndefined();
  });
});
