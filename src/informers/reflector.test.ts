import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
import { InformerMetrics } from './informer-metrics.ts';
import { StatusError } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { Reflector, type ReflectorStore } from './reflector.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { SharedIndexInformer } from './shared-index-informer.ts';

interface Obj extends KubeObject {
  spec?: { v: number };
}

function obj(name: string, rv: number, v = rv): Obj {
  return { metadata: { name, resourceVersion: String(rv) }, spec: { v } };
}

/** Records every store call as a short string. */
class RecordingStore implements ReflectorStore<Obj> {
  readonly calls: string[] = [];
  add(o: Obj): void {
    this.calls.push(`add ${o.metadata!.name}@${o.metadata!.resourceVersion}`);
  }
  update(o: Obj): void {
    this.calls.push(`update ${o.metadata!.name}@${o.metadata!.resourceVersion}`);
  }
  delete(o: Obj): void {
    this.calls.push(`delete ${o.metadata!.name}@${o.metadata!.resourceVersion}`);
  }
  replace(list: readonly Obj[], rv: string): void {
    this.calls.push(`replace [${list.map((o) => o.metadata!.name).join(',')}]@${rv}`);
  }
  resync(): void {
    this.calls.push('resync');
  }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await flushMicrotasks();
  }
  throw new Error(`condition never held: ${what}`);
}

const controllers: AbortController[] = [];
afterEach(() => {
  for (const c of controllers.splice(0)) c.abort();
});

function setup(opts: { resyncPeriodMs?: number; pageSize?: number } = {}) {
  const lw = new ScriptedListerWatcher<Obj>('things');
  const store = new RecordingStore();
  const clock = new FakeClock();
  const registry = new Registry();
  const reflector = new Reflector<Obj>({
    listerWatcher: lw,
    store,
    clock,
    random: () => 0.5,
    watchInactivityTimeoutMs: 60_000,
    metrics: new InformerMetrics(registry),
    ...opts,
  });
  const ctrl = new AbortController();
  controllers.push(ctrl);
  const done = reflector.run(ctrl.signal);
  return { lw, store, clock, reflector, ctrl, done, registry };
}

async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const m = await registry.getSingleMetric(name)!.get();
  const v = m.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

describe('Reflector', () => {
  it('lists from "0" in pages, replaces once, then watches from the list resourceVersion', async () => {
    const { lw, store } = setup({ pageSize: 2 });
    lw.queueList({ items: [obj('a', 1), obj('b', 2)], resourceVersion: '10', continue: 'tok' });
    lw.queueList({ items: [obj('c', 3)], resourceVersion: '10' });
    const w = await lw.nextWatch();
    expect(lw.listCalls).toEqual([
      { resourceVersion: '0', limit: 2, signal: undefined },
      { continue: 'tok', limit: 2, signal: undefined },
    ]);
    expect(store.calls).toEqual(['replace [a,b,c]@10']);
    expect(w.options.resourceVersion).toBe('10');
    expect(w.options.allowWatchBookmarks).toBe(true);
    expect(w.options.timeoutSeconds).toBeGreaterThanOrEqual(300);
    expect(w.options.timeoutSeconds).toBeLessThan(600);
  });

  it('applies watch events in order and advances the resourceVersion, bookmarks included', async () => {
    const { lw, store, reflector } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w = await lw.nextWatch();
    w.send(
      { type: 'ADDED', object: obj('a', 6) },
      { type: 'MODIFIED', object: obj('a', 7) },
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } },
      { type: 'DELETED', object: obj('a', 10) },
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } },
    );
    await until(() => reflector.lastResourceVersion === '12', 'rv 12');
    expect(store.calls).toEqual(['replace []@5', 'add a@6', 'update a@7', 'delete a@10']);
  });

  it('resumes from the last resourceVersion after a clean close, without relisting', async () => {
    const { lw, store, clock } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.send({ type: 'ADDED', object: obj('a', 6) });
    await clock.advance(2000);
    w1.close();
    const w2 = await lw.nextWatch();
    expect(w2.options.resourceVersion).toBe('6');
    expect(lw.listCalls).toHaveLength(1);
    expect(store.calls).toEqual(['replace []@5', 'add a@6']);
  });

  it('relists with a consistent read after a 410 ERROR event', async () => {
    const { lw, store, registry } = setup();
    lw.queueList({ items: [obj('a', 1), obj('b', 2)], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.send({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 5 (50)' } });
    lw.queueList({ items: [obj('a', 51)], resourceVersion: '60' });
    const w2 = await lw.nextWatch();
    expect(lw.listCalls[1]).toEqual({ resourceVersion: '', limit: 500, signal: undefined });
    expect(store.calls).toEqual(['replace [a,b]@5', 'replace [a]@60']);
    expect(w2.options.resourceVersion).toBe('60');
    expect(await metricValue(registry, 'tessera_informer_relists_total', { resource: 'things' })).toBe(1);
    expect(await metricValue(registry, 'tessera_informer_watch_restarts_total', { reason: 'expired' })).toBe(1);
  });

  it('relists after the watch request itself fails with 410 Gone', async () => {
    const { lw, store } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.fail(new StatusError(410, 'Gone', 'resource version too old'));
    lw.queueList({ items: [obj('z', 70)], resourceVersion: '70' });
    await lw.nextWatch();
    expect(store.calls).toEqual(['replace []@5', 'replace [z]@70']);
  });

  it('detects a stalled stream and re-opens the watch from the same resourceVersion', async () => {
    const { lw, clock, registry } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.send({ type: 'ADDED', object: obj('a', 6) });
    await clock.advance(59_000);
    expect(w1.ended).toBe(false);
    await clock.advance(2_000);
    await until(() => w1.ended, 'stalled watch aborted');
    const w2 = await lw.nextWatch();
    expect(w2.options.resourceVersion).toBe('6');
    expect(lw.listCalls).toHaveLength(1);
    expect(await metricValue(registry, 'tessera_informer_watch_restarts_total', { reason: 'stalled' })).toBe(1);
  });

  it('by default waits for the server timeout plus 30 s before calling a silent watch stalled', async () => {
    const lw = new ScriptedListerWatcher<Obj>('things');
    const clock = new FakeClock();
    const ctrl = new AbortController();
    controllers.push(ctrl);
    void new Reflector<Obj>({ listerWatcher: lw, store: new RecordingStore(), clock, random: () => 0.5 }).run(ctrl.signal);
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    // random() = 0.5 → timeoutSeconds = 450, so the watchdog fires at 480 s.
    expect(w1.options.timeoutSeconds).toBe(450);
    await clock.advance(479_000);
    expect(w1.ended).toBe(false);
    await clock.advance(1_000);
    await until(() => w1.ended, 'silent watch aborted');
  });

  it('backs off after a list error and retries the list', async () => {
    const { lw, clock } = setup();
    lw.queueList(new Error('connection refused'));
    await until(() => lw.listCalls.length === 1, 'first list');
    lw.queueList({ items: [], resourceVersion: '1' });
    await flushMicrotasks();
    expect(lw.listCalls).toHaveLength(1);
    // random() = 0.5 → first delay 800 ms + 0.5 × 800 ms jitter.
    await clock.advance(1199);
    expect(lw.listCalls).toHaveLength(1);
    await clock.advance(1);
    await until(() => lw.listCalls.length === 2, 'second list');
  });

  it('backs off after a very short watch instead of spinning', async () => {
    const { lw, clock, registry } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.close();
    await until(() => w1.ended, 'w1 ended');
    await flushMicrotasks();
    expect(lw.watches).toHaveLength(1);
    await clock.advance(1200);
    await lw.nextWatch();
    expect(await metricValue(registry, 'tessera_informer_watch_restarts_total', { reason: 'very_short' })).toBe(1);
  });

  it('re-watches after a network error mid-stream, without relisting', async () => {
    const { lw, clock } = setup();
    lw.queueList({ items: [], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    w1.send({ type: 'ADDED', object: obj('a', 8) });
    w1.fail(new Error('ECONNRESET'));
    await until(() => w1.ended, 'w1 ended');
    await clock.advance(1200);
    const w2 = await lw.nextWatch();
    expect(w2.options.resourceVersion).toBe('8');
    expect(lw.listCalls).toHaveLength(1);
  });

  it('strips managedFields before objects reach the store', async () => {
    const lw = new ScriptedListerWatcher<Obj>('things');
    const seen: Obj[] = [];
    const store: ReflectorStore<Obj> = {
      add: (o) => void seen.push(o),
      update: () => undefined,
      delete: () => undefined,
      replace: (l) => void seen.push(...l),
      resync: () => undefined,
    };
    const ctrl = new AbortController();
    controllers.push(ctrl);
    void new Reflector<Obj>({ listerWatcher: lw, store, clock: new FakeClock() }).run(ctrl.signal);
    lw.queueList({ items: [{ metadata: { name: 'a', resourceVersion: '1', managedFields: [{ manager: 'kubectl' }] } }], resourceVersion: '1' });
    const w = await lw.nextWatch();
    w.send({ type: 'ADDED', object: { metadata: { name: 'b', resourceVersion: '2', managedFields: [{}] } } });
    await until(() => seen.length === 2, 'two objects');
    expect(seen.every((o) => o.metadata!.managedFields === undefined)).toBe(true);
  });

  it('calls store.resync() every resync period', async () => {
    const { lw, store, clock } = setup({ resyncPeriodMs: 30_000 });
    lw.queueList({ items: [], resourceVersion: '1' });
    await lw.nextWatch();
    await clock.advance(30_000);
    await clock.advance(30_000);
    expect(store.calls.filter((c) => c === 'resync')).toHaveLength(2);
  });

  it('run() resolves when the signal aborts', async () => {
    const { lw, ctrl, done } = setup();
    lw.queueList({ items: [], resourceVersion: '1' });
    const w = await lw.nextWatch();
    ctrl.abort();
    await done;
    expect(w.ended).toBe(true);
  });
});

describe('SharedIndexInformer over a scripted source', () => {
  function informerSetup() {
    const lw = new ScriptedListerWatcher<Obj>('things');
    const clock = new FakeClock();
    const informer = new SharedIndexInformer<Obj>({ listerWatcher: lw, clock, random: () => 0.5, watchInactivityTimeoutMs: 60_000 });
    const events: string[] = [];
    const reg = informer.addEventHandler({
      onAdd: (o, initial) => void events.push(`add ${o.metadata!.name}@${o.metadata!.resourceVersion}${initial ? ' (initial)' : ''}`),
      onUpdate: (o, n) => void events.push(`update ${n.metadata!.name} ${o.metadata!.resourceVersion}->${n.metadata!.resourceVersion}`),
      onDelete: (o) =>
        void events.push(o instanceof DeletedFinalStateUnknown ? `delete tombstone ${o.key}@${o.obj?.metadata?.resourceVersion}` : `delete ${o.metadata!.name}`),
    });
    const ctrl = new AbortController();
    controllers.push(ctrl);
    const done = informer.run(ctrl.signal);
    return { lw, clock, informer, events, reg, ctrl, done };
  }

  it('410 during a watch → relist → objects gone from the new list come out as deletes carrying DeletedFinalStateUnknown', async () => {
    const { lw, informer, events } = informerSetup();
    lw.queueList({ items: [obj('a', 1), obj('b', 2), obj('c', 3)], resourceVersion: '5' });
    const w1 = await lw.nextWatch();
    await informer.whenHandlersIdle();
    w1.send({ type: 'ERROR', object: { code: 410, reason: 'Expired', message: 'gone' } });
    lw.queueList({ items: [obj('a', 1), obj('c', 40)], resourceVersion: '50' });
    await lw.nextWatch();
    await until(() => events.length === 5, 'five events');
    await informer.whenHandlersIdle();
    expect(events).toEqual([
      'add a@1 (initial)',
      'add b@2 (initial)',
      'add c@3 (initial)',
      'update c 3->40',
      'delete tombstone b@2',
    ]);
    expect(informer.indexer.listKeys().sort()).toEqual(['a', 'c']);
  });

  it('hasSynced flips after the initial list is in the cache; handler registration after its notifications', async () => {
    const lw = new ScriptedListerWatcher<Obj>('things');
    const informer = new SharedIndexInformer<Obj>({ listerWatcher: lw, clock: new FakeClock() });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const reg = informer.addEventHandler({ onAdd: () => gate });
    const ctrl = new AbortController();
    controllers.push(ctrl);
    void informer.run(ctrl.signal);
    expect(informer.hasSynced()).toBe(false);
    const synced = informer.waitForCacheSync();
    lw.queueList({ items: [obj('a', 1)], resourceVersion: '1' });
    expect(await synced).toBe(true);
    expect(informer.hasSynced()).toBe(true);
    expect(reg.hasSynced()).toBe(false);
    release();
    await informer.whenHandlersIdle();
    expect(reg.hasSynced()).toBe(true);
  });

  it('replays the cache to a handler added late', async () => {
    const { lw, informer } = informerSetup();
    lw.queueList({ items: [obj('a', 1), obj('b', 1)], resourceVersion: '1' });
    await informer.waitForCacheSync();
    const late: string[] = [];
    informer.addEventHandler({ onAdd: (o, initial) => void late.push(`${o.metadata!.name}:${initial}`) });
    await informer.whenHandlersIdle();
    expect(late).toEqual(['a:true', 'b:true']);
  });

  it('duplicated and out-of-order events leave the cache at the last event', async () => {
    const { lw, informer, events } = informerSetup();
    lw.queueList({ items: [], resourceVersion: '1' });
    const w = await lw.nextWatch();
    w.send(
      { type: 'ADDED', object: obj('a', 2) },
      { type: 'ADDED', object: obj('a', 2) },
      { type: 'MODIFIED', object: obj('a', 4) },
      { type: 'MODIFIED', object: obj('a', 3) },
      { type: 'DELETED', object: obj('b', 5) },
    );
    await until(() => informer.lastSyncResourceVersion === '5', 'rv 5');
    await until(() => events.length >= 4, 'events');
    await informer.whenHandlersIdle();
    expect(informer.indexer.getByKey('a')?.metadata?.resourceVersion).toBe('3');
    expect(informer.indexer.getByKey('b')).toBeUndefined();
    // The delete of a never-seen object is dropped by the DeltaFIFO.
    expect(events).toEqual(['add a@2', 'update a 2->2', 'update a 2->4', 'update a 4->3']);
  });

  it('a throwing handler is logged and counted, and later notifications still arrive', async () => {
    const lw = new ScriptedListerWatcher<Obj>('things');
    const registry = new Registry();
    const informer = new SharedIndexInformer<Obj>({ listerWatcher: lw, clock: new FakeClock(), registry });
    const seen: string[] = [];
    informer.addEventHandler({
      onAdd: (o) => {
        seen.push(o.metadata!.name!);
        if (o.metadata!.name === 'bad') throw new Error('boom');
      },
    });
    const ctrl = new AbortController();
    controllers.push(ctrl);
    void informer.run(ctrl.signal);
    lw.queueList({ items: [obj('bad', 1), obj('good', 1)], resourceVersion: '1' });
    await informer.waitForCacheSync();
    await informer.whenHandlersIdle();
    expect(seen).toEqual(['bad', 'good']);
    expect(await metricValue(registry, 'tessera_informer_handler_errors_total', { resource: 'things' })).toBe(1);
    expect(await metricValue(registry, 'tessera_informer_items', { resource: 'things' })).toBe(2);
  });

  it('a slow handler does not delay another handler', async () => {
    const { lw, informer } = informerSetup();
    const fast: string[] = [];
    informer.addEventHandler({ onAdd: () => new Promise<void>(() => undefined) });
    informer.addEventHandler({ onAdd: (o) => void fast.push(o.metadata!.name!) });
    lw.queueList({ items: [obj('a', 1), obj('b', 1)], resourceVersion: '1' });
    await until(() => fast.length === 2, 'fast handler got both');
  });

  it('unchanged objects in a relist reach only resync handlers', async () => {
    const { lw, informer, events } = informerSetup();
    const resyncSeen: string[] = [];
    informer.addEventHandler({ onUpdate: (_o, n) => void resyncSeen.push(n.metadata!.name!) }, { resync: true });
    lw.queueList({ items: [obj('a', 1)], resourceVersion: '1' });
    const w = await lw.nextWatch();
    w.send({ type: 'ERROR', object: { code: 410, message: 'gone' } });
    lw.queueList({ items: [obj('a', 1)], resourceVersion: '9' });
    await until(() => lw.watches.length === 2, 'second watch');
    await informer.whenHandlersIdle();
    expect(events).toEqual(['add a@1 (initial)']);
    expect(resyncSeen).toEqual(['a']);
  });
});
