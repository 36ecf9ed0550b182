import { describe, expect, it } from 'vitest';

import type { ListerWatcher, WatchEvent } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { ProjectingListerWatcher } from './projecting-lister-watcher.ts';

const obj = (name: string): KubeObject => ({ metadata: { name, resourceVersion: '5', labels: { big: 'x' } } });
const nameOnly = (o: KubeObject): KubeObject => ({ metadata: { name: o.metadata?.name ?? '' } });

function source(events: readonly WatchEvent<KubeObject>[]): ListerWatcher<KubeObject> {
  return {
    resource: 'v1/pods',
    list: async () => ({ items: [obj('a'), obj('b')], resourceVersion: '7', continue: 'next' }),
    watch: async function* () {
      yield* events;
    },
  };
}

describe('ProjectingListerWatcher', () => {
  it('projects every listed item, keeping the list\'s resourceVersion and continue token', async () => {
    const lw = new ProjectingListerWatcher(source([]), nameOnly);
    expect(lw.resource).toBe('v1/pods');
    expect(await lw.list({})).toEqual({ items: [{ metadata: { name: 'a' } }, { metadata: { name: 'b' } }], resourceVersion: '7', continue: 'next' });
  });

  it('projects ADDED, MODIFIED and DELETED objects and passes BOOKMARK and ERROR through unchanged', async () => {
    const bookmark: WatchEvent<KubeObject> = { type: 'BOOKMARK', object: { metadata: { name: '', resourceVersion: '9' } } };
    const error: WatchEvent<KubeObject> = { type: 'ERROR', object: { code: 410, reason: 'Expired', message: 'too old' } };
    const lw = new ProjectingListerWatcher(
      source([{ type: 'ADDED', object: obj('a') }, { type: 'MODIFIED', object: obj('a') }, bookmark, { type: 'DELETED', object: obj('a') }, error]),
      nameOnly,
    );
    const seen: WatchEvent<KubeObject>[] = [];
    for await (const e of lw.watch({ resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 1, signal: new AbortController().signal })) seen.push(e);
    expect(seen).toEqual([
      { type: 'ADDED', object: { metadata: { name: 'a' } } },
      { type: 'MODIFIED', object: { metadata: { name: 'a' } } },
      bookmark,
      { type: 'DELETED', object: { metadata: { name: 'a' } } },
      error,
    ]);
  });
});
