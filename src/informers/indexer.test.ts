import { describe, expect, it } from 'vitest';
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
import { IndexError, Indexer, NAMESPACE_INDEX, namespaceIndexFunc } from './indexer.ts';
import type { KubeObject } from './object.ts';

function pod(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return { metadata: { namespace, name, labels } };
}

const byApp = (o: KubeObject): readonly string[] => (o.metadata?.labels?.['app'] ? [o.metadata.labels['app']] : []);

describe('Indexer', () => {
  it('stores by namespace/name and finds by key', () => {
    const ix = new Indexer();
    ix.add(pod('shop', 'web'));
    ix.add({ metadata: { name: 'global-thing' } });
    expect(ix.listKeys().sort()).toEqual(['global-thing', 'shop/web']);
    expect(ix.getByKey('shop/web')?.metadata?.name).toBe('web');
  });

  it('maintains the namespace index across add, update and delete', () => {
    const ix = new Indexer({ indexers: { [NAMESPACE_INDEX]: namespaceIndexFunc } });
    ix.add(pod('a', 'p1'));
    ix.add(pod('a', 'p2'));
    ix.add(pod('b', 'p1'));
    expect(ix.indexKeys(NAMESPACE_INDEX, 'a').sort()).toEqual(['a/p1', 'a/p2']);
    ix.delete(pod('a', 'p1'));
    expect(ix.byIndex(NAMESPACE_INDEX, 'a').map((o) => o.metadata?.name)).toEqual(['p2']);
    ix.delete(pod('a', 'p2'));
    expect(ix.listIndexFuncValues(NAMESPACE_INDEX)).toEqual(['b']);
  });

  it('moves an object between index values when an update changes them', () => {
    const ix = new Indexer({ indexers: { app: byApp } });
    ix.add(pod('x', 'p', { app: 'web' }));
    ix.update(pod('x', 'p', { app: 'db' }));
    expect(ix.indexKeys('app', 'web')).toEqual([]);
    expect(ix.indexKeys('app', 'db')).toEqual(['x/p']);
    ix.update(pod('x', 'p'));
    expect(ix.listIndexFuncValues('app')).toEqual([]);
  });

  it('replace() swaps contents and rebuilds indexes', () => {
    const ix = new Indexer({ indexers: { app: byApp } });
    ix.add(pod('x', 'old', { app: 'web' }));
    ix.replace([pod('x', 'new', { app: 'db' })], '42');
    expect(ix.listKeys()).toEqual(['x/new']);
    expect(ix.indexKeys('app', 'web')).toEqual([]);
    expect(ix.indexKeys('app', 'db')).toEqual(['x/new']);
    expect(ix.resourceVersion).toBe('42');
  });

  it('deletes by tombstone key', () => {
    const ix = new Indexer();
    ix.add(pod('x', 'p'));
    ix.delete(new DeletedFinalStateUnknown<KubeObject>('x/p', undefined));
    expect(ix.size).toBe(0);
  });

  it('indexes existing objects when an indexer is added later', () => {
    const ix = new Indexer();
    ix.add(pod('x', 'p', { app: 'web' }));
    ix.addIndexers({ app: byApp });
    expect(ix.indexKeys('app', 'web')).toEqual(['x/p']);
    expect(() => ix.addIndexers({ app: byApp })).toThrow(IndexError);
  });

  it('rejects lookups on an unknown index with a named error', () => {
    const ix = new Indexer();
    expect(() => ix.byIndex('nope', 'v')).toThrow("index 'nope' does not exist");
  });
});
