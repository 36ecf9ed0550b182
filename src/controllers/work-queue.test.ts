import { describe, expect, it } from 'vitest';

import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { Controller, TerminalError } from './controller.ts';
import { BucketRateLimiter, defaultControllerRateLimiter, ItemExponentialFailureRateLimiter } from './rate-limiter.ts';
import { WorkQueue } from './work-queue.ts';

function queue(clock = new FakeClock()): WorkQueue<string> {
  return new WorkQueue<string>({ name: 'test', clock });
}

describe('WorkQueue', () => {
  it('de-duplicates: N adds before a get produce one processing', async () => {
    const q = queue();
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.len()).toBe(0);
  });

  it('hands keys out in FIFO order of their first add', async () => {
    const q = queue();
    for (const k of ['c', 'a', 'b', 'a', 'c']) q.add(k);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['c', 'a', 'b']);
  });

  it('never hands a processing key to a second worker; a re-add is queued after done()', async () => {
    const q = queue();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0); // dirty, not queued while processing
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await flushMicrotasks();
    expect(second).toBeUndefined();
    q.done('a');
    await flushMicrotasks();
    expect(second).toBe('a');
  });

  it('a blocked get() resolves on the next add', async () => {
    const q = queue();
    const got = q.get();
    q.add('x');
    expect(await got).toBe('x');
  });

  it('addAfter adds after the delay, and a second addAfter only moves the deadline earlier', async () => {
    const clock = new FakeClock();
    const q = queue(clock);
    q.addAfter('a', 100);
    q.addAfter('a', 500); // later: ignored
    q.addAfter('b', 50);
    expect(q.len()).toBe(0);
    await clock.advance(49);
    expect(q.len()).toBe(0);
    await clock.advance(1);
    expect(q.len()).toBe(1);
    q.addAfter('c', 200);
    q.addAfter('c', 10); // earlier: wins
    await clock.advance(10);
    expect(q.len()).toBe(2);
    await clock.advance(40);
    expect(q.len()).toBe(3);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['b', 'c', 'a']);
    await clock.advance(1000);
    expect(q.len()).toBe(0); // the stale 'c' and 'a' deadlines add nothing
  });

  it('addAfter with a delay ≤ 0 adds immediately', () => {
    const q = queue();
    q.addAfter('a', 0);
    q.addAfter('b', -5);
    expect(q.len()).toBe(2);
  });

  it('addRateLimited backs off exponentially per key from 5 ms, and forget() resets it', async () => {
    const clock = new FakeClock();
    const q = queue(clock);
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const start = clock.now();
      q.addRateLimited('k');
      while (q.len() === 0) await clock.advance(1);
      delays.push(clock.now() - start);
      expect(await q.get()).toBe('k');
      q.done('k');
    }
    expect(delays).toEqual([5, 10, 20, 40]);
    expect(q.numRequeues('k')).toBe(4);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
  });

  it('shutDown: no new adds, queued keys still drain, then get() resolves undefined', async () => {
    const q = queue();
    q.add('a');
    q.shutDown();
    q.add('b');
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBeUndefined();
  });

  it('shutDown wakes idle getters with undefined', async () => {
    const q = queue();
    const pending = [q.get(), q.get()];
    q.shutDown();
    expect(await Promise.all(pending)).toEqual([undefined, undefined]);
  });

  it('shutDown cancels keys still waiting on a delay', async () => {
    const clock = new FakeClock();
    const q = queue(clock);
    q.addAfter('a', 10);
    q.shutDown();
    await clock.advance(100);
    expect(q.len()).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('shutDownWithDrain waits until in-flight keys are done', async () => {
    const q = queue();
    q.add('a');
    await q.get();
    let drained = false;
    const d = q.shutDownWithDrain().then(() => (drained = true));
    await flushMicrotasks();
    expect(drained).toBe(false);
    q.done('a');
    await d;
    expect(drained).toBe(true);
  });

  it('reports the upstream workqueue_* metrics', async () => {
    const registry = newRegistry();
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ name: 'np', clock, registry });
    q.add('a');
    q.add('b');
    await clock.advance(2000);
    await q.get();
    q.addRateLimited('x');
    const text = await registry.metrics();
    expect(text).toContain('workqueue_depth{name="np"} 1');
    expect(text).toContain('workqueue_adds_total{name="np"} 2');
    expect(text).toContain('workqueue_retries_total{name="np"} 1');
    expect(text).toContain('workqueue_queue_duration_seconds_count{name="np"} 1');
    expect(text).toContain('workqueue_unfinished_work_seconds{name="np"} 0');
    expect(text).toContain('workqueue_longest_running_processor_seconds');
    q.shutDown();
  });
});

describe('rate limiters', () => {
  it('ItemExponentialFailureRateLimiter: base × 2^n, capped', () => {
    const l = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
    const d = Array.from({ length: 20 }, () => l.when('k'));
    expect(d.slice(0, 4)).toEqual([5, 10, 20, 40]);
    expect(d[17]).toBe(5 * 2 ** 17);
    expect(d[18]).toBe(1_000_000); // 5 ms × 2^18 ≈ 1311 s > the 1000 s cap
    expect(l.when('other')).toBe(5);
  });

  it('BucketRateLimiter: burst free, then 1/qps apart, refilling with time', async () => {
    const clock = new FakeClock();
    const l = new BucketRateLimiter<string>(10, 100, clock);
    for (let i = 0; i < 100; i++) expect(l.when(`k${i}`)).toBe(0);
    expect(l.when('x')).toBeCloseTo(100);
    expect(l.when('y')).toBeCloseTo(200);
    await clock.advance(10_000);
    expect(l.when('z')).toBe(0);
  });

  it('the default limiter is the max of both', () => {
    const l = defaultControllerRateLimiter<string>(new FakeClock());
    expect(l.when('a')).toBe(5);
    expect(l.when('a')).toBe(10);
    expect(l.numRequeues('a')).toBe(2);
  });

  it('rejects nonsensical arguments with a RangeError naming them', () => {
    expect(() => new ItemExponentialFailureRateLimiter(0, 10)).toThrow(/baseMs/);
    expect(() => new BucketRateLimiter(0, 10, new FakeClock())).toThrow(/qps/);
  });
});

describe('Controller', () => {
  it('maps reconcile results to queue actions and reconcile metrics', async () => {
    const clock = new FakeClock();
    const registry = newRegistry();
    const calls: string[] = [];
    let failures = 0;
    const c = new Controller({
      name: 'demo',
      clock,
      registry,
      reconcile: async (key) => {
        calls.push(key);
        if (key === 'flaky' && failures++ < 2) throw new Error('boom');
        if (key === 'terminal') throw new TerminalError('never');
        if (key === 'later' && calls.filter((k) => k === 'later').length === 1) return { requeueAfterMs: 1000 };
        return {};
      },
    });
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('flaky');
    c.queue.add('terminal');
    c.queue.add('later');
    await clock.advance(2000);
    expect(calls.filter((k) => k === 'flaky')).toHaveLength(3);
    expect(calls.filter((k) => k === 'terminal')).toHaveLength(1);
    expect(calls.filter((k) => k === 'later')).toHaveLength(2);
    ac.abort();
    await run;
    const text = await registry.metrics();
    expect(text).toContain('controller_runtime_reconcile_total{controller="demo",result="error"} 3');
    expect(text).toContain('controller_runtime_reconcile_total{controller="demo",result="requeue_after"} 1');
    expect(text).toContain('controller_runtime_reconcile_total{controller="demo",result="success"} 2');
    expect(text).toContain('controller_runtime_reconcile_errors_total{controller="demo"} 3');
    expect(text).toContain('controller_runtime_max_concurrent_reconciles{controller="demo"} 1');
  });

  it('with several workers, one key is never reconciled concurrently', async () => {
    let inFlight = new Set<string>();
    let overlap = false;
    let count = 0;
    const c = new Controller({
      name: 'excl',
      workers: 4,
      reconcile: async (key) => {
        if (inFlight.has(key)) overlap = true;
        inFlight.add(key);
        count++;
        await new Promise((r) => setImmediate(r));
        inFlight.delete(key);
      },
    });
    const ac = new AbortController();
    const run = c.run(ac.signal);
    for (let i = 0; i < 50; i++) {
      c.queue.add(`k${i % 3}`);
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 20));
    ac.abort();
    await run;
    inFlight = new Set();
    expect(overlap).toBe(false);
    expect(count).toBeGreaterThanOrEqual(3);
  });

  it('after abort, keys still queued are dropped, not reconciled', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const c = new Controller({
      name: 'drop',
      reconcile: async (key) => {
        seen.push(key);
        if (key === 'a') await new Promise<void>((r) => (release = r));
      },
    });
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('a');
    await flushMicrotasks();
    c.queue.add('b');
    c.queue.add('c');
    ac.abort();
    release();
    await run;
    expect(seen).toEqual(['a']);
  });

  it('run() returns after abort once in-flight reconciles finish', async () => {
    let release!: () => void;
    const c = new Controller({
      name: 'drain',
      reconcile: () => new Promise<void>((r) => (release = r)),
    });
    const ac = new AbortController();
    const run = c.run(ac.signal);
    c.queue.add('a');
    await flushMicrotasks();
    let finished = false;
    void run.then(() => (finished = true));
    ac.abort();
    await flushMicrotasks();
    expect(finished).toBe(false);
    release();
    await run;
    expect(finished).toBe(true);
  });
});
