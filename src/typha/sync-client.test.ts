import net from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { seededRandom } from '../runtime/seeded-random.ts';
import { encodeFrame } from './frame-codec.ts';
import { encodeMessage } from './messages.ts';
import type { SerializedUpdate } from './serialized-update.ts';
import { serializeUpdate } from './serialized-update.ts';
import { parseTyphaAddress, SyncClient, type SyncClientOptions } from './sync-client.ts';
import { SyncServer, type SyncServerOptions } from './sync-server.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { captureLogger, metricValue, waitFor } from '../../test/typha/wire-harness.ts';
import type { Registry } from '../runtime/metrics.ts';
import type { SyncStatus, SyncerCallbacks, Update } from '../syncer/index.ts';

type Event = { updates: string[] } | { status: SyncStatus };

/** Records what the consumer sees, compactly: `+key@rv` for upserts, `-key` for deletes. */
class Recorder implements SyncerCallbacks {
  readonly events: Event[] = [];
  readonly resources = new Map<string, Update>();
  onUpdates(updates: readonly Update[]): void {
    this.events.push({ updates: updates.map(show) });
    for (const u of updates) {
      if (u.op === 'delete') this.resources.delete(keyOf(u));
      else this.resources.set(keyOf(u), u);
    }
  }
  onStatusUpdated(status: SyncStatus): void {
    this.events.push({ status });
  }
  get statuses(): SyncStatus[] {
    return this.events.flatMap((e) => ('status' in e ? [e.status] : []));
  }
  /** Every update description since event `from`. */
  updatesSince(from: number): string[] {
    return this.events.slice(from).flatMap((e) => ('updates' in e ? e.updates : []));
  }
}

function keyOf(u: Update): string {
  return u.op === 'delete' ? `${u.kind}/${u.namespace ?? ''}/${u.name}` : `${u.resource.kind}/${u.resource.metadata.namespace ?? ''}/${u.resource.metadata.name}`;
}

function show(u: Update): string {
  return u.op === 'delete' ? `-${keyOf(u)}` : `+${keyOf(u)}@${u.resource.metadata.resourceVersion ?? ''}`;
}

const tier = (name: string, order: number, rv = String(order)): Update => ({
  op: 'upsert',
  resource: { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name, resourceVersion: rv }, spec: { order } },
});
const snapshotOf = (...updates: Update[]): SerializedUpdate[] => updates.map((u) => serializeUpdate(u));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(
  opts: Partial<SyncServerOptions> & Pick<SyncServerOptions, 'source' | 'clock'>,
): Promise<{ server: SyncServer; source: SyncServerOptions['source']; address: string; records: Array<Record<string, unknown>> }> {
  const { logger, records } = captureLogger();
  const server = new SyncServer({ host: '127.0.0.1', port: 0, pingIntervalMs: 1e9, logger, ...opts });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  return { server, source: opts.source, address: `127.0.0.1:${port}`, records };
}

function startClient(opts: Partial<SyncClientOptions> & Pick<SyncClientOptions, 'addresses' | 'clock'>, recorder = new Recorder()) {
  const { logger, records } = captureLogger();
  const registry = newRegistry();
  const client = new SyncClient({ hostname: 'node-1', logger, registry, random: seededRandom(1), ...opts }, recorder);
  const abort = new AbortController();
  const running = client.run(abort.signal);
  cleanups.push(async () => {
    abort.abort();
    await running;
  });
  return { client, recorder, records, registry, abort, running };
}

describe('SyncClient', () => {
  it('parses host:port and [v6]:port, and names a bad address', () => {
    expect(parseTyphaAddress('10.0.0.1:5473')).toEqual({ host: '10.0.0.1', port: 5473 });
    expect(parseTyphaAddress('[fd00::1]:5473')).toEqual({ host: 'fd00::1', port: 5473 });
    expect(() => parseTyphaAddress('typha')).toThrow('Typha address "typha": expected host:port or [ipv6]:port');
  });

  it('feeds the snapshot, the status and the deltas to the callbacks, resourceVersions restored', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, snapshotOf(tier('a', 1), tier('b', 2)));
    const { address } = await startServer({ source: crumbs, clock });
    const { recorder, client } = startClient({ addresses: () => [address], clock });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    expect(recorder.events).toEqual([{ updates: ['+Tier//a@1', '+Tier//b@2'] }, { status: 'in-sync' }]);
    crumbs.publish([tier('a', 10), { op: 'delete', kind: 'Tier', name: 'b' }]);
    await waitFor(() => recorder.events.length === 3, 'delta');
    expect(recorder.events[2]).toEqual({ updates: ['+Tier//a@10', '-Tier//b'] });
    expect(recorder.resources.get('Tier//a')).toEqual(tier('a', 10));
    expect(client.livenessProbe.pendingSince()).toBeUndefined();
  });

  it('works without compression too', async () => {
    const clock = new FakeClock();
    const { address } = await startServer({ source: new TestBreadcrumbs(clock, snapshotOf(tier('a', 1))), clock });
    const { recorder } = startClient({ addresses: () => [address], clock, compression: [] });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    expect(recorder.events[0]).toEqual({ updates: ['+Tier//a@1'] });
  });

  it('drops a KV it cannot parse with an error naming the key, and passes on the rest', async () => {
    const clock = new FakeClock();
    const bad: SerializedUpdate = { key: 'Tier//broken', value: '{"kind":', resourceVersion: '1', updateType: 'new' };
    const { address } = await startServer({ source: new TestBreadcrumbs(clock, [...snapshotOf(tier('a', 1)), bad]), clock });
    const { recorder, records, registry } = startClient({ addresses: () => [address], clock });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    expect(recorder.updatesSince(0)).toEqual(['+Tier//a@1']);
    expect(records.find((r) => r['msg'] === 'dropping a Typha update whose value cannot be parsed')?.['key']).toBe('Tier//broken');
    expect(await metricValue(registry, 'tessera_typha_client_kvs_dropped')).toBe(1);
  });

  it('answers pings, so the server keeps it past the pong timeout', async () => {
    const clock = new FakeClock();
    const registry = newRegistry();
    const { server, address } = await startServer({ source: new TestBreadcrumbs(clock), clock, pingIntervalMs: 10_000, registry });
    const { recorder } = startClient({ addresses: () => [address], clock });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    for (let i = 1; i <= 8; i++) {
      await clock.advance(10_000);
      const deadline = Date.now() + 10_000;
      while ((await metricValue(registry, 'tessera_typha_ping_latency')) < i) {
        if (Date.now() > deadline) throw new Error(`no pong ${i}`);
        await new Promise((r) => setTimeout(r, 2));
      }
    }
    expect(server.streamingCount).toBe(1);
    expect(await metricValue(registry, 'tessera_typha_connections_closed')).toBe(0);
  });

  it('resyncs in place on another Typha: exactly the deletes and updates needed, nothing for identical values, no repeated status', async () => {
    const clock = new FakeClock();
    const first = await startServer({
      source: new TestBreadcrumbs(clock, snapshotOf(tier('same', 1), tier('changed', 2), tier('gone', 3), tier('same-but-rv', 4, '40'))),
      clock,
    });
    const second = await startServer({
      source: new TestBreadcrumbs(clock, snapshotOf(tier('same', 1), tier('changed', 20), tier('same-but-rv', 4, '41'), tier('added', 5))),
      clock,
    });
    let addresses = [first.address];
    const { recorder, registry } = startClient({ addresses: () => addresses, clock });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    const before = recorder.events.length;
    addresses = [first.address, second.address];
    await first.server.close();
    await waitFor(() => second.server.streamingCount === 1, 'connected to the second Typha');
    await waitFor(() => recorder.events.length === before + 2, 'resync');
    // Updates in the new snapshot's key order, then the synthesised deletion, then nothing else.
    expect(recorder.events.slice(before)).toEqual([{ updates: ['+Tier//added@5', '+Tier//changed@20'] }, { updates: ['-Tier//gone'] }]);
    expect(recorder.statuses).toEqual(['in-sync']);
    expect(await metricValue(registry, 'tessera_typha_client_resyncs')).toBe(1);
    expect(await metricValue(registry, 'tessera_typha_client_synthesised_deletes')).toBe(1);
    // The stream goes on from the new Typha.
    (second.source as TestBreadcrumbs).publish([tier('later', 6)]);
    await waitFor(() => recorder.events.length === before + 3, 'delta from the second Typha');
    expect(recorder.events.at(-1)).toEqual({ updates: ['+Tier//later@6'] });
  });

  it('a resync against a Typha that is itself still syncing withholds its statuses and deletes only at its in-sync', async () => {
    const clock = new FakeClock();
    const first = await startServer({ source: new TestBreadcrumbs(clock, snapshotOf(tier('a', 1), tier('b', 2), tier('c', 3))), clock });
    const secondCrumbs = new TestBreadcrumbs(clock, snapshotOf(tier('a', 1)), 'resync-in-progress');
    const second = await startServer({ source: secondCrumbs, clock });
    let addresses = [first.address];
    const { recorder } = startClient({ addresses: () => addresses, clock });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    const before = recorder.events.length;
    addresses = [second.address];
    await first.server.close();
    await waitFor(() => second.server.streamingCount === 1, 'connected to the second Typha');
    secondCrumbs.publish([tier('b', 22)]);
    await waitFor(() => recorder.events.length === before + 1, 'b passed on during the resync');
    // Its snapshot lacked b and c, but it was not in sync: nothing deleted yet, no status regression.
    expect(recorder.events.slice(before)).toEqual([{ updates: ['+Tier//b@22'] }]);
    secondCrumbs.publish([tier('d', 4)], 'in-sync');
    await waitFor(() => recorder.events.length === before + 3, 'in-sync on the second Typha');
    expect(recorder.events.slice(before)).toEqual([{ updates: ['+Tier//b@22'] }, { updates: ['+Tier//d@4'] }, { updates: ['-Tier//c'] }]);
    expect(recorder.statuses).toEqual(['in-sync']);
  });

  it('gives up on a Typha that accepts but never says hello, after the handshake timeout', async () => {
    const clock = new FakeClock();
    const sockets = new Set<net.Socket>();
    const mute = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => undefined);
    });
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => mute.close(() => resolve())));
    cleanups.push(() => sockets.forEach((s) => s.destroy()));
    const { registry, records } = startClient({ addresses: () => [`127.0.0.1:${(mute.address() as net.AddressInfo).port}`], clock });
    await waitForConnections(mute, 1);
    await clock.advance(10_000);
    await waitForMetric(registry, 'tessera_typha_client_connections', { result: 'failed' }, 1);
    expect(records.find((r) => r['msg'] === 'Typha connection ended; reconnecting')?.['reason']).toBe('no server-hello within 10000 ms');
  });

  it('abandons a stream that goes silent for the read timeout and resyncs (here: to the same Typha, with nothing to change)', async () => {
    const clock = new FakeClock();
    const registry = newRegistry();
    // Pings are disabled in these servers: after the snapshot the stream is silent.
    const { address } = await startServer({ source: new TestBreadcrumbs(clock, snapshotOf(tier('a', 1))), clock, registry });
    const { recorder, registry: clientRegistry } = startClient({ addresses: () => [address], clock, readTimeoutMs: 30_000 });
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync');
    await clock.advance(30_000);
    await waitForMetric(clientRegistry, 'tessera_typha_client_resyncs', {}, 1);
    expect(await metricValue(registry, 'tessera_typha_connections_accepted')).toBe(2);
    expect(recorder.events).toEqual([{ updates: ['+Tier//a@1'] }, { status: 'in-sync' }]);
  });

  it('a server that sends garbage (raw, or after switching to compression) ends only that session, with the reason logged', async () => {
    const clock = new FakeClock();
    const random = seededRandom(9);
    const plainHello = encodeFrame(encodeMessage({ type: 'server-hello', version: 'x', syncerType: 'felix', serverConnId: 1 }));
    const scripts: Buffer[] = [
      Buffer.from(Array.from({ length: 256 }, () => Math.floor(random() * 256))),
      Buffer.concat([plainHello, Buffer.from([0xff, 0xff, 0xff, 0xff])]),
      Buffer.concat([plainHello, encodeFrame(encodeMessage({ type: 'decoder-restart', compression: 'deflate-raw' })), encodeFrame(Buffer.from('not deflate at all'))]),
      Buffer.concat([plainHello, encodeFrame(encodeMessage({ type: 'decoder-restart', compression: 'zstd' }))]),
      Buffer.concat([plainHello, encodeFrame(Buffer.from('{"type":"kvs","kvs":[{"key":"Tier//a","value":7}]}'))]),
    ];
    const sockets = new Set<net.Socket>();
    let served = 0;
    const evil = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('data', () => socket.write(scripts[served++ % scripts.length] as Buffer));
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => evil.close(() => resolve())));
    cleanups.push(() => sockets.forEach((s) => s.destroy()));
    const { recorder, registry, records } = startClient({
      addresses: () => [`127.0.0.1:${(evil.address() as net.AddressInfo).port}`],
      clock,
      backoff: { initialMs: 1_000, maxMs: 1_000, jitter: 0 },
    });
    for (let i = 1; i <= scripts.length; i++) {
      await waitForMetric(registry, 'tessera_typha_client_connections', { result: 'failed' }, i);
      await clock.advance(1_000);
    }
    const reasons = records.filter((r) => r['msg'] === 'Typha connection ended; reconnecting').map((r) => String(r['reason']));
    expect(reasons.slice(0, scripts.length)).toEqual([
      expect.stringMatching(/^unreadable input from Typha: |^Typha closed|^no server-hello/),
      'unreadable input from Typha: frame length 4294967295 exceeds the maximum frame size 67108864',
      expect.stringMatching(/^unreadable input from Typha: deflate-raw decompressor: /),
      'Typha chose compression "zstd", which this client did not offer',
      'unreadable input from Typha: kvs: kvs[0].value: expected a string or null',
    ]);
    expect(recorder.events).toEqual([]);
  });

  it('reconnects after a failed attempt with backoff, to whichever address works', async () => {
    const clock = new FakeClock();
    const { address } = await startServer({ source: new TestBreadcrumbs(clock, snapshotOf(tier('a', 1))), clock });
    let addresses = ['127.0.0.1:1'];
    const { recorder, registry } = startClient({ addresses: () => addresses, clock, backoff: { initialMs: 1_000, jitter: 0 } });
    await waitFor(() => recorder.events.length === 0, 'first attempt');
    await waitForMetric(registry, 'tessera_typha_client_connections', { result: 'failed' }, 1);
    addresses = [address];
    await clock.advance(1_000);
    await waitFor(() => recorder.statuses.includes('in-sync'), 'in-sync after the backoff');
  });
});

async function waitForMetric(registry: Registry, name: string, labels: Record<string, string>, atLeast: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await metricValue(registry, name, labels)) < atLeast) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${name} >= ${atLeast}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function waitForConnections(server: net.Server, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const count = await new Promise<number>((resolve, reject) => server.getConnections((err, c) => (err ? reject(err) : resolve(c))));
    if (count >= n) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} connections`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
