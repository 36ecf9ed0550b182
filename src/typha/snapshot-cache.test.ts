import { afterEach, describe, expect, it } from 'vitest';

import type { V3Resource } from '../api/types.ts';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import type { Breadcrumb } from './breadcrumb.ts';
import { seededRandom } from '../runtime/seeded-random.ts';
import { decodeUpdate, type SerializedUpdate } from './serialized-update.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import type { Update } from '../syncer/index.ts';

function wep(name: string, resourceVersion = '1', app = 'web'): Update {
  const resource = {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace: 'shop', resourceVersion, labels: { app } },
    spec: { node: 'n1', orchestrator: 'k8s', pod: name, endpoint: 'eth0', ipNetworks: ['10.0.0.1/32'] },
  } as unknown as V3Resource;
  return { op: 'upsert', resource };
}

const del = (name: string): Update => ({ op: 'delete', kind: 'WorkloadEndpoint', namespace: 'shop', name });
const key = (name: string): string => `WorkloadEndpoint/shop/${name}`;

async function metric(registry: Registry, name: string): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (m === undefined) throw new Error(`metric ${name} is not registered`);
  const { values } = await m.get();
  return values[0]?.value ?? Number.NaN; // counters and gauges: one unlabelled value
}

describe('SnapshotCache', () => {
  const stops: AbortController[] = [];
  afterEach(() => {
    for (const s of stops.splice(0)) s.abort();
  });

  function started(opts: { clock?: FakeClock; registry?: Registry; maxBatchSize?: number } = {}): { cache: SnapshotCache; clock: FakeClock; registry: Registry } {
    const clock = opts.clock ?? new FakeClock(0);
    const registry = opts.registry ?? newRegistry();
    const cache = new SnapshotCache({ clock, registry, ...(opts.maxBatchSize === undefined ? {} : { maxBatchSize: opts.maxBatchSize }) });
    const stop = new AbortController();
    stops.push(stop);
    void cache.start(stop.signal);
    return { cache, clock, registry };
  }

  /** The crumbs after `from`, waiting for each, until one has sequence number `seq`. */
  async function walkTo(from: Breadcrumb, seq: number): Promise<Breadcrumb[]> {
    const out: Breadcrumb[] = [];
    let c = from;
    while (c.seq < seq) {
      c = await c.next();
      out.push(c);
    }
    return out;
  }

  it('starts from crumb 0: empty, wait-for-datastore, nothing before start', async () => {
    const cache = new SnapshotCache({ clock: new FakeClock(0) });
    cache.onUpdates([wep('a')]);
    await flushMicrotasks();
    const first = cache.latest();
    expect(first).toMatchObject({ seq: 0, deltas: [], syncStatus: 'wait-for-datastore', nextIfPublished: undefined });
    expect(first.snapshot.size).toBe(0);
  });

  it('publishes crumbs in order with seq + 1 each; a status change ends its batch and is carried by later crumbs', async () => {
    const { cache } = started();
    const c0 = cache.latest();
    cache.onStatusUpdated('resync-in-progress');
    cache.onUpdates([wep('a'), wep('b')]);
    cache.onUpdates([wep('c')]);
    cache.onStatusUpdated('in-sync');
    cache.onUpdates([wep('d')]);
    const [c1, c2, c3] = await walkTo(c0, 3);
    expect(c1).toMatchObject({ seq: 1, syncStatus: 'resync-in-progress', deltas: [] });
    expect(c2?.seq).toBe(2);
    expect(c2?.syncStatus).toBe('in-sync');
    expect(c2?.deltas.map((d) => d.key)).toEqual([key('a'), key('b'), key('c')]);
    expect([...(c2?.snapshot.values() ?? [])].map((d) => d.key)).toEqual([key('a'), key('b'), key('c')]);
    expect(c3).toMatchObject({ seq: 3, syncStatus: 'in-sync' });
    expect(c3?.deltas.map((d) => [d.key, d.updateType])).toEqual([[key('d'), 'new']]);
    expect(c0.nextIfPublished).toBe(c1);
    expect(cache.latest()).toBe(c3);
  });

  it('two readers walk the same crumb objects and share each serialised update', async () => {
    const { cache } = started();
    const start = cache.latest();
    const reader = async (): Promise<Breadcrumb[]> => walkTo(start, 2);
    const both = Promise.all([reader(), reader()]);
    cache.onUpdates([wep('a')]);
    await flushMicrotasks();
    cache.onUpdates([wep('b')]);
    const [r1, r2] = await both;
    expect(r1).toHaveLength(2);
    r1.forEach((crumb, i) => expect(r2[i]).toBe(crumb));
    expect(r2[1]?.snapshot.get(key('a'))).toBe(r1[0]?.deltas[0]);
  });

  it("an old crumb's snapshot is unchanged by later updates and deletes", async () => {
    const { cache } = started();
    cache.onUpdates([wep('a'), wep('b'), wep('c')]);
    const [old] = await walkTo(cache.latest(), 1);
    const before = [...(old?.snapshot.values() ?? [])];
    cache.onUpdates([wep('a', '2', 'db'), del('b'), wep('z')]);
    const [now] = await walkTo(old as Breadcrumb, 2);
    expect([...(old?.snapshot.values() ?? [])]).toEqual(before);
    expect(old?.snapshot.size).toBe(3);
    expect(now?.snapshot.size).toBe(3);
    expect(now?.snapshot.get(key('b'))).toBeUndefined();
    expect(decodeUpdate(now?.snapshot.get(key('a')) as never)).toMatchObject({ resource: { metadata: { labels: { app: 'db' }, resourceVersion: '2' } } });
    expect(now?.deltas.map((d) => [d.key, d.updateType])).toEqual([
      [key('a'), 'updated'],
      [key('b'), 'deleted'],
      [key('z'), 'new'],
    ]);
  });

  it('skips and counts updates equal but for the resourceVersion, and deletes of absent keys', async () => {
    const { cache, registry } = started();
    cache.onUpdates([wep('a', '1'), wep('a', '2'), wep('a', '3', 'db'), del('nope'), del('a'), del('a')]);
    const [c1] = await walkTo(cache.latest(), 1);
    expect(c1?.deltas.map((d) => [d.updateType, d.resourceVersion])).toEqual([
      ['new', '1'],
      ['updated', '3'],
      ['deleted', ''],
    ]);
    expect(await metric(registry, 'tessera_typha_updates_total')).toBe(6);
    expect(await metric(registry, 'tessera_typha_updates_skipped')).toBe(3);
    expect(await metric(registry, 'tessera_typha_cache_size')).toBe(0);
  });

  it('a delete of an absent key alone still publishes, with no deltas and an unchanged snapshot', async () => {
    const { cache } = started();
    cache.onUpdates([wep('a')]);
    const [c1] = await walkTo(cache.latest(), 1);
    cache.onUpdates([del('absent')]);
    const [c2] = await walkTo(c1 as Breadcrumb, 2);
    expect(c2?.deltas).toEqual([]);
    expect(c2?.snapshot).toBe(c1?.snapshot);
  });

  it('batches at most maxBatchSize (default 100) updates per crumb', async () => {
    const { cache, registry } = started();
    cache.onUpdates(Array.from({ length: 250 }, (_, i) => wep(`w${String(i).padStart(3, '0')}`)));
    const crumbs = await walkTo(cache.latest(), 3);
    expect(crumbs.map((c) => c.deltas.length)).toEqual([100, 100, 50]);
    expect(crumbs[2]?.snapshot.size).toBe(250);
    expect(await metric(registry, 'tessera_typha_breadcrumb_seq_number')).toBe(3);
    expect(await metric(registry, 'tessera_typha_cache_size')).toBe(250);
  });

  it('publishes an empty crumb every second while idle, timed from the last crumb', async () => {
    const { cache, clock } = started();
    await clock.advance(999);
    expect(cache.latest().seq).toBe(0);
    await clock.advance(1);
    expect(cache.latest()).toMatchObject({ seq: 1, timestamp: 1000, deltas: [] });
    await clock.advance(500);
    cache.onUpdates([wep('a')]);
    const [c2] = await walkTo(cache.latest(), 2);
    expect(c2).toMatchObject({ timestamp: 1500 });
    await clock.advance(999);
    expect(cache.latest().seq).toBe(2);
    await clock.advance(1);
    expect(cache.latest()).toMatchObject({ seq: 3, timestamp: 2500, deltas: [] });
    expect(cache.latest().snapshot).toBe(c2?.snapshot);
  });

  it('next() counts blocking and non-blocking calls, and rejects with the reason on abort', async () => {
    const { cache, registry, clock } = started();
    const c0 = cache.latest();
    const waiting = c0.next();
    await clock.advance(1000);
    const c1 = await waiting;
    expect(await c0.next()).toBe(c1);
    expect(await metric(registry, 'tessera_typha_breadcrumb_block')).toBe(1);
    expect(await metric(registry, 'tessera_typha_breadcrumb_non_block')).toBe(1);
    const stop = new AbortController();
    const aborted = c1.next(stop.signal);
    stop.abort(new Error('client gone'));
    await expect(aborted).rejects.toThrow('client gone');
    const pre = new AbortController();
    pre.abort(new Error('already'));
    await expect(c1.next(pre.signal)).rejects.toThrow('already');
  });

  it('publishes nothing after its signal aborts', async () => {
    const clock = new FakeClock(0);
    const cache = new SnapshotCache({ clock });
    const stop = new AbortController();
    const done = cache.start(stop.signal);
    stop.abort();
    await done;
    cache.onUpdates([wep('a')]);
    await clock.advance(5000);
    expect(cache.latest().seq).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('over 3,000 random updates: each crumb is the previous snapshot plus its deltas, ≤ 100 of them, and the last matches a plain Map', async () => {
    const random = seededRandom(7);
    const { cache } = started();
    const ref = new Map<string, string>();
    const first = cache.latest();
    let sent = 0;
    for (let round = 0; round < 30; round++) {
      const batch: Update[] = [];
      for (let i = 0; i < 100; i++) {
        const name = `w${Math.floor(random() * 200)}`;
        const r = random();
        if (r < 0.3) batch.push(del(name));
        else batch.push(wep(name, String(++sent), r < 0.6 ? 'web' : 'db'));
      }
      // Deliver as the informers do: one update per call, some calls in later ticks.
      for (const u of batch) cache.onUpdates([u]);
      if (random() < 0.5) await flushMicrotasks();
      for (const u of batch) {
        if (u.op === 'delete') ref.delete(key(u.name));
        else ref.set(key(u.resource.metadata.name), (u.resource.metadata.labels as Record<string, string>)['app'] as string);
      }
    }
    cache.onStatusUpdated('in-sync');
    let crumb: Breadcrumb = first;
    let state = new Map<string, SerializedUpdate>();
    while (crumb.syncStatus !== 'in-sync') {
      const next = await crumb.next();
      expect(next.seq).toBe(crumb.seq + 1);
      expect(next.deltas.length).toBeLessThanOrEqual(100);
      state = new Map(state);
      for (const d of next.deltas) {
        expect(d.updateType).toBe(d.value === null ? 'deleted' : state.has(d.key) ? 'updated' : 'new');
        if (d.value === null) state.delete(d.key);
        else state.set(d.key, d);
      }
      expect([...next.snapshot.values()]).toEqual([...state.keys()].sort().map((k) => state.get(k)));
      crumb = next;
    }
    const labels = new Map([...crumb.snapshot.values()].map((u) => [u.key, (JSON.parse(u.value as string) as { metadata: { labels: { app: string } } }).metadata.labels.app]));
    expect(labels).toEqual(ref);
  });

  it('refuses bad options', () => {
    expect(() => new SnapshotCache({ maxBatchSize: 0 })).toThrow(/maxBatchSize must be an integer ≥ 1/);
    expect(() => new SnapshotCache({ minCrumbIntervalMs: 0 })).toThrow(/minCrumbIntervalMs must be > 0/);
  });
});
