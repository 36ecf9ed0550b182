import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { decodeUpdate } from './serialized-update.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import { SyncClient } from './sync-client.ts';
import { SyncServer } from './sync-server.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';
import { metricValue, waitFor } from '../../test/typha/wire-harness.ts';
import type { SyncStatus, Update } from '../syncer/index.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A consumer that keeps the state it was told, like the calc graph would. */
class Consumer {
  readonly state = new Map<string, Update>();
  readonly statuses: SyncStatus[] = [];
  updates = 0;
  onUpdates(updates: readonly Update[]): void {
    for (const u of updates) {
      this.updates++;
      const key = u.op === 'delete' ? `${u.kind}/${u.namespace ?? ''}/${u.name}` : `${u.resource.kind}/${u.resource.metadata.namespace ?? ''}/${u.resource.metadata.name}`;
      if (u.op === 'delete') this.state.delete(key);
      else this.state.set(key, u);
    }
  }
  onStatusUpdated(status: SyncStatus): void {
    this.statuses.push(status);
  }
}

async function serve(cache: SnapshotCache, clock: FakeClock, registry = newRegistry()): Promise<{ server: SyncServer; address: string }> {
  const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0, clock, registry, pingIntervalMs: 1e9 });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  return { server, address: `127.0.0.1:${port}` };
}

describe('Typha end to end (SnapshotCache → SyncServer → SyncClient)', () => {
  it('two agents get the same 1,000 endpoints, share one snapshot, follow deltas, and resync in place to a new server without a single update', async () => {
    const clock = new FakeClock();
    const abort = new AbortController();
    const cache = new SnapshotCache({ clock });
    const cacheRunning = cache.start(abort.signal);
    cleanups.push(async () => {
      abort.abort();
      await cacheRunning;
    });
    const endpoints = workloadEndpointSnapshot(1_000).map(decodeUpdate);
    cache.onStatusUpdated('resync-in-progress');
    cache.onUpdates(endpoints);
    cache.onStatusUpdated('in-sync');
    await waitFor(() => cache.latest().syncStatus === 'in-sync', 'cache in sync');

    const registry = newRegistry();
    const first = await serve(cache, clock, registry);
    let addresses = [first.address];
    const consumers = [new Consumer(), new Consumer()];
    for (const [i, consumer] of consumers.entries()) {
      const client = new SyncClient({ hostname: `node-${i}`, addresses: () => addresses, clock }, consumer);
      const clientAbort = new AbortController();
      const running = client.run(clientAbort.signal);
      cleanups.push(async () => {
        clientAbort.abort();
        await running;
      });
    }
    await waitFor(() => consumers.every((c) => c.statuses.includes('in-sync')), 'both agents in sync');
    for (const c of consumers) {
      expect(c.state.size).toBe(1_000);
      expect(c.statuses).toEqual(['in-sync']);
    }
    expect(await metricValue(registry, 'tessera_typha_snapshots_generated')).toBe(1);
    expect(await metricValue(registry, 'tessera_typha_snapshots_reused')).toBe(1);

    const victim = endpoints[0] as Extract<Update, { op: 'upsert' }>;
    const changed = endpoints[1] as Extract<Update, { op: 'upsert' }>;
    const relabelled: Update = {
      op: 'upsert',
      resource: { ...changed.resource, metadata: { ...changed.resource.metadata, labels: { app: 'moved' }, resourceVersion: '999999' } },
    };
    cache.onUpdates([{ op: 'delete', kind: 'WorkloadEndpoint', namespace: victim.resource.metadata.namespace ?? '', name: victim.resource.metadata.name }, relabelled]);
    await waitFor(() => consumers.every((c) => c.state.size === 999), 'delete delivered');
    for (const c of consumers) expect(c.state.get(`WorkloadEndpoint/${changed.resource.metadata.namespace}/${changed.resource.metadata.name}`)).toEqual(relabelled);

    // The first Typha goes away; a second one serves the same cache: identical values, so the
    // agents' consumers see nothing at all.
    const second = await serve(cache, clock);
    addresses = [first.address, second.address];
    const updatesBefore = consumers.map((c) => c.updates);
    await first.server.close();
    await waitFor(() => second.server.streamingCount === 2, 'both agents on the second Typha');
    cache.onUpdates([{ op: 'delete', kind: 'WorkloadEndpoint', namespace: changed.resource.metadata.namespace ?? '', name: changed.resource.metadata.name }]);
    await waitFor(() => consumers.every((c) => c.state.size === 998), 'a delta from the second Typha');
    expect(consumers.map((c) => c.updates)).toEqual(updatesBefore.map((n) => n + 1));
    for (const c of consumers) expect(c.statuses).toEqual(['in-sync']);
  });
});
