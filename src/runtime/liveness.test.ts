import { describe, expect, it } from 'vitest';

import { FakeClock } from './clock.ts';
import { HealthServer } from './health-server.ts';
import { describeLiveness, Liveness } from './liveness.ts';
import { newRegistry } from './metrics.ts';

/** A component driven by hand: `busy()` starts work now, `progress()` finishes a step, `idle()` has nothing to do. */
class Component {
  since: number | undefined;
  constructor(private readonly clock: FakeClock) {}
  busy(): void {
    this.since ??= this.clock.now();
  }
  progress(): void {
    this.since = this.clock.now();
  }
  idle(): void {
    this.since = undefined;
  }
  probe(timeoutMs: number): { timeoutMs: number; pendingSince: () => number | undefined } {
    return { timeoutMs, pendingSince: () => this.since };
  }
}

describe('Liveness', () => {
  it('a component busy for longer than its timeout is stuck; exactly at the timeout it is not', async () => {
    const clock = new FakeClock(1_000);
    const liveness = new Liveness({ clock });
    const dataplane = new Component(clock);
    liveness.register('dataplane', dataplane.probe(60_000));
    dataplane.busy();
    await clock.advance(60_000);
    expect(liveness.check()).toEqual({ live: true, components: [{ name: 'dataplane', live: true, pendingMs: 60_000, timeoutMs: 60_000 }] });
    await clock.advance(1);
    expect(liveness.check()).toEqual({ live: false, components: [{ name: 'dataplane', live: false, pendingMs: 60_001, timeoutMs: 60_000 }] });
  });

  it('idle is not stuck, however long it lasts', async () => {
    const clock = new FakeClock();
    const liveness = new Liveness({ clock });
    const calc = new Component(clock);
    liveness.register('calc-graph', calc.probe(30_000));
    calc.idle();
    await clock.advance(24 * 3_600_000);
    expect(liveness.check().live).toBe(true);
    expect(liveness.check().components[0]?.pendingMs).toBeUndefined();
  });

  it('progress within the timeout keeps a busy component live; when it stops reporting, it is stuck one timeout after its last progress', async () => {
    const clock = new FakeClock();
    const liveness = new Liveness({ clock });
    const informer = new Component(clock);
    liveness.register('informer pods', informer.probe(10_000));
    informer.progress();
    for (let i = 0; i < 20; i++) {
      await clock.advance(9_000);
      expect(liveness.check().live).toBe(true);
      informer.progress();
    }
    await clock.advance(10_001);
    expect(liveness.check().live).toBe(false);
    informer.progress();
    expect(liveness.check().live).toBe(true);
  });

  it('one stuck component makes the process not live and is the only one named', async () => {
    const clock = new FakeClock();
    const liveness = new Liveness({ clock });
    const [a, b, c] = [new Component(clock), new Component(clock), new Component(clock)];
    liveness.register('dataplane', a.probe(5_000));
    liveness.register('calc-graph', b.probe(5_000));
    liveness.register('informer tiers', c.probe(50_000));
    a.busy();
    c.busy();
    await clock.advance(7_500);
    const report = liveness.check();
    expect(report.live).toBe(false);
    expect(report.components.map((x) => [x.name, x.live])).toEqual([
      ['dataplane', false],
      ['calc-graph', true],
      ['informer tiers', true],
    ]);
    expect(describeLiveness(report)).toBe('stuck: dataplane: no progress for 7.5 s (timeout 5 s)');
    expect(describeLiveness({ live: true, components: [] })).toBe('ok');
  });

  it('a disposed component is no longer asked (a stopped loop is not a stuck one)', async () => {
    const clock = new FakeClock();
    const liveness = new Liveness({ clock });
    const a = new Component(clock);
    const registration = liveness.register('dataplane', a.probe(1_000));
    a.busy();
    await clock.advance(2_000);
    expect(liveness.check().live).toBe(false);
    registration[Symbol.dispose]();
    expect(liveness.check()).toEqual({ live: true, components: [] });
    // The name is free again.
    liveness.register('dataplane', a.probe(1_000))[Symbol.dispose]();
  });

  it('rejects an empty name, a duplicate name and a timeout that is not positive, naming the component', () => {
    const liveness = new Liveness({ clock: new FakeClock() });
    const probe = { timeoutMs: 1, pendingSince: () => undefined };
    expect(() => liveness.register('', probe)).toThrow(TypeError);
    liveness.register('x', probe);
    expect(() => liveness.register('x', probe)).toThrow(/x: a component with this name is already registered/);
    expect(() => liveness.register('y', { ...probe, timeoutMs: 0 })).toThrow(/y: timeoutMs must be > 0, got 0/);
    expect(() => liveness.register('z', { ...probe, timeoutMs: Number.NaN })).toThrow(RangeError);
  });
});

describe('HealthServer /livez', () => {
  it('answers 200 "ok" while live, 503 naming the stuck component when one stops reporting, 200 again once it progresses', async () => {
    const clock = new FakeClock();
    const liveness = new Liveness({ clock });
    const dataplane = new Component(clock);
    const calc = new Component(clock);
    liveness.register('dataplane', dataplane.probe(60_000));
    liveness.register('calc-graph', calc.probe(30_000));
    const server = await HealthServer.listen({ registry: newRegistry(), ready: () => true, live: () => liveness.check(), port: 0, host: '127.0.0.1' });
    const livez = async (): Promise<[number, string]> => {
      const res = await fetch(`http://127.0.0.1:${server.port}/livez`);
      return [res.status, await res.text()];
    };
    try {
      expect(await livez()).toEqual([200, 'ok']);
      calc.idle();
      dataplane.busy();
      await clock.advance(59_000);
      expect(await livez()).toEqual([200, 'ok']);
      await clock.advance(2_000);
      expect(await livez()).toEqual([503, 'stuck: dataplane: no progress for 61.0 s (timeout 60 s)']);
      dataplane.idle();
      expect(await livez()).toEqual([200, 'ok']);
    } finally {
      await server.close();
    }
  });

  it('without a liveness check, /livez is 200', async () => {
    const server = await HealthServer.listen({ registry: newRegistry(), ready: () => false, port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/livez`);
      expect([res.status, await res.text()]).toEqual([200, 'ok']);
    } finally {
      await server.close();
    }
  });
});
