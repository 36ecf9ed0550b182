/**
 * The informer's list/watch loop as a liveness component (Reflector `loopProgressAt`,
 * `livenessTimeoutMs`; SharedIndexInformer `livenessProbe`), on a fake clock: a healthy idle
 * watch never looks stuck, a dead loop does, one timeout after it last turned.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { Liveness } from '../runtime/liveness.ts';
import type { ListOptions, ListResult, ListerWatcher, WatchEvent, WatchOptions } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { SharedIndexInformer } from './shared-index-informer.ts';

const controllers: AbortController[] = [];
afterEach(() => {
  for (const c of controllers.splice(0)) c.abort();
});

function start(lw: ListerWatcher<KubeObject>, clock: FakeClock, opts: { watchInactivityTimeoutMs?: number; random?: () => number } = {}) {
  const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: lw, clock, random: opts.random ?? (() => 0.5), ...opts });
  const liveness = new Liveness({ clock });
  liveness.register(`informer ${lw.resource}`, informer.livenessProbe);
  const ctrl = new AbortController();
  controllers.push(ctrl);
  void informer.run(ctrl.signal);
  return { informer, liveness };
}

/** A watch that never yields and ignores its abort signal: a loop stuck for good. */
class DeafWatchListerWatcher implements ListerWatcher<KubeObject> {
  readonly resource = 'deaf';
  watchesOpened = 0;
  list(_opts: ListOptions): Promise<ListResult<KubeObject>> {
    return Promise.resolve({ items: [], resourceVersion: '1' });
  }
  watch(_opts: WatchOptions): AsyncIterable<WatchEvent<KubeObject>> {
    this.watchesOpened++;
    return {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<WatchEvent<KubeObject>>>(() => undefined) }),
    };
  }
}

describe('informer liveness (Reflector loop progress)', () => {
  it('by default the bound is the largest watch inactivity timeout (2 × 300 s + 30 s) plus a minute', () => {
    const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: new ScriptedListerWatcher('x'), clock: new FakeClock() });
    expect(informer.livenessProbe.timeoutMs).toBe(690_000);
    const short = new SharedIndexInformer<KubeObject>({ listerWatcher: new ScriptedListerWatcher('y'), clock: new FakeClock(), watchInactivityTimeoutMs: 5_000 });
    expect(short.livenessProbe.timeoutMs).toBe(65_000);
  });

  it('a stopped informer is idle, not stuck', async () => {
    const clock = new FakeClock();
    const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: new ScriptedListerWatcher('x'), clock });
    await clock.advance(10_000_000);
    expect(informer.livenessProbe.pendingSince()).toBeUndefined();
  });

  it('a healthy idle watch — no events at all, closed by the server at its timeout and re-opened — is never stuck', async () => {
    const clock = new FakeClock();
    const lw = new ScriptedListerWatcher<KubeObject>('idle');
    // The largest server timeout the reflector picks: 599 s.
    const { liveness } = start(lw, clock, { random: () => 0.999 });
    lw.queueList({ items: [], resourceVersion: '5' });
    for (let i = 0; i < 5; i++) {
      const w = await lw.nextWatch();
      expect(w.options.timeoutSeconds).toBe(599);
      await clock.advance(599_000);
      expect(liveness.check().live).toBe(true);
      w.close();
    }
  });

  it('a list that never answers is stuck one bound after the loop last turned, and live again once it answers', async () => {
    const clock = new FakeClock();
    const lw = new ScriptedListerWatcher<KubeObject>('hung-list');
    const { informer, liveness } = start(lw, clock, { watchInactivityTimeoutMs: 5_000 });
    await flushMicrotasks();
    const bound = informer.livenessProbe.timeoutMs;
    await clock.advance(bound);
    expect(liveness.check().live).toBe(true);
    await clock.advance(1);
    expect(liveness.check()).toMatchObject({ live: false, components: [{ name: 'informer hung-list', live: false, pendingMs: bound + 1 }] });
    lw.queueList({ items: [], resourceVersion: '5' });
    await lw.nextWatch();
    expect(liveness.check().live).toBe(true);
  });

  it('watch events and bookmarks are progress: a busy watch stays live far past the bound', async () => {
    const clock = new FakeClock();
    const lw = new ScriptedListerWatcher<KubeObject>('busy');
    const { informer, liveness } = start(lw, clock, { watchInactivityTimeoutMs: 5_000 });
    lw.queueList({ items: [], resourceVersion: '5' });
    const w = await lw.nextWatch();
    for (let rv = 6; rv < 60; rv++) {
      await clock.advance(4_000);
      w.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(rv) } } });
      await flushMicrotasks();
      expect(liveness.check().live).toBe(true);
    }
    expect(clock.now()).toBeGreaterThan(3 * informer.livenessProbe.timeoutMs);
  });

  it('a stream that ignores its abort (the watchdog cannot end it) is stuck one bound after its last event', async () => {
    const clock = new FakeClock();
    const lw = new DeafWatchListerWatcher();
    const { informer, liveness } = start(lw, clock, { watchInactivityTimeoutMs: 5_000 });
    await flushMicrotasks();
    expect(lw.watchesOpened).toBe(1);
    const bound = informer.livenessProbe.timeoutMs;
    await clock.advance(bound);
    expect(liveness.check().live).toBe(true);
    await clock.advance(1);
    expect(liveness.check().live).toBe(false);
    // The watchdog fired and aborted, but the stream never returned: no second watch.
    expect(lw.watchesOpened).toBe(1);
  });

  it('while the loop sleeps in its own backoff after an error it is idle, not stuck', async () => {
    const clock = new FakeClock();
    const lw = new ScriptedListerWatcher<KubeObject>('failing');
    const { informer } = start(lw, clock, { watchInactivityTimeoutMs: 5_000 });
    lw.queueList(new Error('connection refused'));
    await flushMicrotasks();
    expect(lw.listCalls).toHaveLength(1);
    expect(informer.livenessProbe.pendingSince()).toBeUndefined();
    // The retry (after the backoff's delay) turns the loop again.
    lw.queueList({ items: [], resourceVersion: '5' });
    await clock.advance(30_000);
    await lw.nextWatch();
    expect(lw.listCalls).toHaveLength(2);
    expect(informer.livenessProbe.pendingSince()).toBeGreaterThan(0);
  });
});
