import { describe, expect, it } from 'vitest';
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
import { DeltaFIFO, FIFOClosedError, RequeueError, type Delta } from './delta-fifo.ts';
import { Indexer } from './indexer.ts';
import type { KubeObject } from './object.ts';

interface Obj extends KubeObject {
  value?: number;
}

function obj(name: string, value = 0, namespace?: string): Obj {
  return { metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: String(value) }, value };
}

/** Pops one item and returns its deltas as `[type, name-or-tombstone-key, value]` triples. */
async function popSummary(f: DeltaFIFO<Obj>): Promise<Array<[string, string, number | undefined]>> {
  let out: Array<[string, string, number | undefined]> = [];
  await f.pop((deltas) => {
    out = deltas.map(describeDelta);
  });
  return out;
}

function describeDelta(d: Delta<Obj>): [string, string, number | undefined] {
  if (d.object instanceof DeletedFinalStateUnknown) return [d.type, `tombstone:${d.object.key}`, d.object.obj?.value];
  return [d.type, d.object.metadata!.name!, d.object.value];
}

describe('DeltaFIFO', () => {
  it('accumulates deltas per key and queues each key once, in first-seen order', async () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    f.add(obj('b', 1));
    f.update(obj('a', 2));
    expect(f.listKeys()).toEqual(['a', 'b']);
    expect(await popSummary(f)).toEqual([
      ['Added', 'a', 1],
      ['Updated', 'a', 2],
    ]);
    expect(await popSummary(f)).toEqual([['Added', 'b', 1]]);
    expect(f.length).toBe(0);
  });

  it('keys namespaced objects as namespace/name', () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('web', 1, 'shop'));
    expect(f.listKeys()).toEqual(['shop/web']);
  });

  it('drops a delete of a key that is neither pending nor known', () => {
    const known = new Indexer<Obj>();
    const f = new DeltaFIFO<Obj>({ knownObjects: known });
    f.delete(obj('ghost'));
    expect(f.length).toBe(0);
    known.add(obj('real', 1));
    f.delete(obj('real', 1));
    expect(f.listKeys()).toEqual(['real']);
  });

  it('without knownObjects, drops a delete unless the key is pending', () => {
    const f = new DeltaFIFO<Obj>();
    f.delete(obj('a'));
    expect(f.length).toBe(0);
    f.add(obj('a', 1));
    f.delete(obj('a', 1));
    expect(f.getByKey('a')?.map((d) => d.type)).toEqual(['Added', 'Deleted']);
  });

  it('collapses two consecutive deletions, keeping the one that is not a tombstone', () => {
    const known = new Indexer<Obj>();
    known.add(obj('a', 1));
    const f = new DeltaFIFO<Obj>({ knownObjects: known });
    f.delete(new DeletedFinalStateUnknown('a', obj('a', 0)));
    f.delete(obj('a', 1));
    const deltas = f.getByKey('a')!;
    expect(deltas).toHaveLength(1);
    expect(deltas[0]!.object).not.toBeInstanceOf(DeletedFinalStateUnknown);

    const g = new DeltaFIFO<Obj>({ knownObjects: known });
    g.delete(obj('a', 1));
    g.delete(new DeletedFinalStateUnknown('a', obj('a', 0)));
    expect(g.getByKey('a')!.map(describeDelta)).toEqual([['Deleted', 'a', 1]]);
  });

  it('replace() emits DeletedFinalStateUnknown for keys missing from the new list', async () => {
    const known = new Indexer<Obj>();
    known.add(obj('kept', 1));
    known.add(obj('gone-known', 7));
    const f = new DeltaFIFO<Obj>({ knownObjects: known, emitDeltaTypeReplaced: true });
    f.update(obj('gone-pending', 3));
    f.replace([obj('kept', 2)], '10');
    const popped: Array<Array<[string, string, number | undefined]>> = [];
    while (f.length > 0) popped.push(await popSummary(f));
    expect(popped).toEqual([
      [
        ['Updated', 'gone-pending', 3],
        ['Deleted', 'tombstone:gone-pending', 3],
      ],
      [['Replaced', 'kept', 2]],
      [['Deleted', 'tombstone:gone-known', 7]],
    ]);
  });

  it('replace() queues Sync deltas unless emitDeltaTypeReplaced is set', () => {
    const f = new DeltaFIFO<Obj>();
    f.replace([obj('a', 1)], '1');
    expect(f.getByKey('a')!.map((d) => d.type)).toEqual(['Sync']);
  });

  it('replace() then pop delivers the listed objects in list order', async () => {
    const f = new DeltaFIFO<Obj>({ emitDeltaTypeReplaced: true });
    f.replace([obj('c', 1), obj('a', 1), obj('b', 1)], '5');
    const names: string[] = [];
    while (f.length > 0) names.push((await popSummary(f))[0]![1]);
    expect(names).toEqual(['c', 'a', 'b']);
  });

  it('resync() queues Sync only for known keys with nothing pending', () => {
    const known = new Indexer<Obj>();
    known.add(obj('idle', 1));
    known.add(obj('busy', 1));
    const f = new DeltaFIFO<Obj>({ knownObjects: known });
    f.update(obj('busy', 2));
    f.resync();
    expect(f.getByKey('idle')!.map(describeDelta)).toEqual([['Sync', 'idle', 1]]);
    expect(f.getByKey('busy')!.map(describeDelta)).toEqual([['Updated', 'busy', 2]]);
  });

  it('hasSynced flips exactly after the initial population is popped and processed', async () => {
    const known = new Indexer<Obj>();
    known.add(obj('stale', 1));
    const f = new DeltaFIFO<Obj>({ knownObjects: known, emitDeltaTypeReplaced: true });
    expect(f.hasSynced()).toBe(false);
    f.replace([obj('a', 1), obj('b', 1)], '3');
    // Two listed objects plus one inferred deletion.
    const flags: boolean[] = [];
    const syncedDuring: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      expect(f.hasSynced()).toBe(false);
      await f.pop((_d, initial) => {
        flags.push(initial);
        syncedDuring.push(f.hasSynced());
      });
    }
    expect(flags).toEqual([true, true, true]);
    expect(syncedDuring).toEqual([false, false, false]);
    expect(f.hasSynced()).toBe(true);
    f.add(obj('later', 1));
    await f.pop((_d, initial) => {
      expect(initial).toBe(false);
    });
  });

  it('onSynced fires once: at once for an empty first list, else after the last initial item', async () => {
    let fired = 0;
    const empty = new DeltaFIFO<Obj>({ onSynced: () => void fired++ });
    empty.replace([], '1');
    expect(fired).toBe(1);
    empty.replace([], '2');
    expect(fired).toBe(1);

    let fired2 = 0;
    const f = new DeltaFIFO<Obj>({ onSynced: () => void fired2++ });
    f.replace([obj('a', 1)], '1');
    expect(fired2).toBe(0);
    await f.pop(() => undefined);
    expect(fired2).toBe(1);
  });

  it('an add before the first replace makes the queue populated with nothing initial', () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    expect(f.hasSynced()).toBe(true);
  });

  it('pop waits for an item', async () => {
    const f = new DeltaFIFO<Obj>();
    const seen: string[] = [];
    const p = f.pop((d) => {
      seen.push(describeDelta(d[0]!)[1]);
    });
    await Promise.resolve();
    expect(seen).toEqual([]);
    f.add(obj('late', 1));
    await p;
    expect(seen).toEqual(['late']);
  });

  it('RequeueError puts the deltas back unless newer ones arrived', async () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    await f.pop(() => {
      throw new RequeueError();
    });
    expect(f.getByKey('a')!.map(describeDelta)).toEqual([['Added', 'a', 1]]);

    await f.pop(() => {
      f.update(obj('a', 2));
      throw new RequeueError();
    });
    expect(f.getByKey('a')!.map(describeDelta)).toEqual([['Updated', 'a', 2]]);
  });

  it('RequeueError with a cause requeues and rethrows the cause', async () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    const cause = new Error('handler failed');
    await expect(f.pop(() => Promise.reject(new RequeueError({ cause })))).rejects.toBe(cause);
    expect(f.listKeys()).toEqual(['a']);
  });

  it('close() drains remaining items, then rejects with FIFOClosedError', async () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    f.close();
    await f.pop(() => undefined);
    await expect(f.pop(() => undefined)).rejects.toBeInstanceOf(FIFOClosedError);
  });

  it('close() wakes a waiting pop', async () => {
    const f = new DeltaFIFO<Obj>();
    const p = f.pop(() => undefined);
    f.close();
    await expect(p).rejects.toBeInstanceOf(FIFOClosedError);
  });

  it('serialises concurrent pops so process functions never overlap', async () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    f.add(obj('b', 1));
    let running = 0;
    let maxRunning = 0;
    const process = async (): Promise<void> => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setImmediate(r));
      running--;
    };
    await Promise.all([f.pop(process), f.pop(process)]);
    expect(maxRunning).toBe(1);
  });

  it('list() returns the newest pending object per key', () => {
    const f = new DeltaFIFO<Obj>();
    f.add(obj('a', 1));
    f.update(obj('a', 2));
    expect(f.list().map((o) => (o as Obj).value)).toEqual([2]);
  });
});
