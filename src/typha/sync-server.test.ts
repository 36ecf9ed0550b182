import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock, type Clock } from '../runtime/clock.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { seededRandom } from '../runtime/seeded-random.ts';
import net from 'node:net';

import { realClock } from '../runtime/clock.ts';
import type { CompressionAlgorithm } from './compression.ts';
import { encodeFrame, FrameDecoder } from './frame-codec.ts';
import { MessageReader, MessageWriter } from './message-stream.ts';
import { decodeMessage, encodeMessage, type Message } from './messages.ts';
import { COALESCE_MIN_MEMBERS, COALESCE_MS } from './crumb-message-cache.ts';
import { SyncServer, type SyncServerOptions } from './sync-server.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';
import { captureLogger, hello, metricValue, RawClient, waitFor } from '../../test/typha/wire-harness.ts';
import type { Update } from '../syncer/index.ts';

const tier = (name: string, order = 1): Update => ({
  op: 'upsert',
  resource: { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name, resourceVersion: String(order) }, spec: { order } },
});

/** A clock whose time the test sets synchronously: stamps crumbs without running anything. */
class CrumbClock implements Clock {
  t = 0;
  now(): number {
    return this.t;
  }
  setTimer(): { cancel(): void } {
    throw new Error('CrumbClock has no timers');
  }
}

interface Harness {
  server: SyncServer;
  port: number;
  registry: Registry;
  records: Array<Record<string, unknown>>;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(opts: Partial<SyncServerOptions> & Pick<SyncServerOptions, 'source' | 'clock'>): Promise<Harness> {
  const registry = newRegistry();
  const { logger, records } = captureLogger();
  // Pings are tested on their own; elsewhere they would only add traffic to the assertions.
  const server = new SyncServer({ host: '127.0.0.1', port: 0, registry, logger, pingIntervalMs: 1e9, ...opts });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  return { server, port, registry, records };
}

async function connect(port: number, opts: Parameters<typeof RawClient.connect>[1] = {}): Promise<RawClient> {
  const c = await RawClient.connect(port, opts);
  cleanups.push(() => c.close());
  return c;
}

/** A client that said hello and received its snapshot and the status after it. */
async function streamingClient(port: number, h = hello(), opts: Parameters<typeof RawClient.connect>[1] = {}): Promise<RawClient> {
  const c = await connect(port, opts);
  await c.send(h);
  await waitFor(() => c.of('sync-status').length > 0 || c.closed, 'snapshot and status');
  return c;
}

describe('SyncServer handshake', () => {
  it('negotiates compression: server-hello, decoder-restart, and after the ack a compressed snapshot, its status, and deltas', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, workloadEndpointSnapshot(250));
    const { port } = await startServer({ source: crumbs, clock });
    const c = await streamingClient(port);
    // The snapshot's own stream ends with a restart into the connection's stream (both followed by the client).
    expect(c.received.map((m) => m.type)).toEqual(['server-hello', 'decoder-restart', 'kvs', 'kvs', 'kvs', 'decoder-restart', 'sync-status']);
    expect(c.of('decoder-restart').map((m) => m.compression)).toEqual(['deflate-raw', 'deflate-raw']);
    expect(c.of('server-hello')[0]).toMatchObject({ syncerType: 'felix' });
    expect(c.of('kvs').map((m) => m.kvs.length)).toEqual([100, 100, 50]);
    expect(c.of('sync-status')[0]?.status).toBe('in-sync');
    crumbs.publish([tier('a'), tier('b')]);
    await waitFor(() => c.of('kvs').length === 4, 'delta');
    expect(c.of('kvs')[3]?.kvs.map((kv) => [kv.key, kv.updateType])).toEqual([
      ['Tier//a', 'new'],
      ['Tier//b', 'new'],
    ]);
  });

  it('a client that offers no compression gets plain frames and no decoder-restart', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, workloadEndpointSnapshot(120));
    const { port } = await startServer({ source: crumbs, clock });
    const c = await streamingClient(port, hello({ supportedCompression: [] }));
    expect(c.received.map((m) => m.type)).toEqual(['server-hello', 'kvs', 'kvs', 'sync-status']);
  });

  it('a client that does not announce decoder-restart is never sent one, whatever it offers', async () => {
    const clock = new FakeClock();
    const { port } = await startServer({ source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(3)), clock });
    const c = await streamingClient(port, hello({ supportsDecoderRestart: false, supportedCompression: ['deflate-raw', 'gzip'] }));
    expect(c.received.map((m) => m.type)).toEqual(['server-hello', 'kvs', 'sync-status']);
  });

  it('the server prefers its own order among what the client offers (brotli and gzip work too)', async () => {
    const clock = new FakeClock();
    const { port } = await startServer({ source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(5)), clock, compression: ['brotli', 'gzip'] });
    const a = await streamingClient(port, hello({ supportedCompression: ['gzip', 'brotli'] }));
    const b = await streamingClient(port, hello({ supportedCompression: ['gzip', 'deflate-raw'] }));
    expect(a.of('decoder-restart')[0]?.compression).toBe('brotli');
    expect(b.of('decoder-restart')[0]?.compression).toBe('gzip');
    expect(a.kvs()).toHaveLength(5);
    expect(b.kvs()).toEqual(a.kvs());
  });

  it('an unsupported syncer type, a first message that is not a hello, and a second hello are closed with a reason', async () => {
    const clock = new FakeClock();
    const { port, records } = await startServer({ source: new TestBreadcrumbs(clock), clock });
    const bgp = await connect(port);
    await bgp.send(hello({ syncerType: 'bgp' }));
    const rude = await connect(port);
    await rude.send({ type: 'pong', pingTimestamp: 1, pongTimestamp: 1 });
    const twice = await connect(port);
    await twice.send(hello());
    await twice.send(hello());
    await waitFor(() => bgp.closed && rude.closed && twice.closed, 'all three closed');
    expect(bgp.received).toEqual([]);
    const reasons = records.filter((r) => r['msg'] === 'closing Typha connection').map((r) => r['reason']);
    expect(reasons).toContain('unsupported syncer type "bgp" (this server serves only felix)');
    expect(reasons).toContain('expected client-hello, got pong');
    expect(reasons).toContain('unexpected client-hello from a client');
  });

  it('no hello within the handshake timeout closes the connection; a client that said hello in time is unaffected', async () => {
    const clock = new FakeClock();
    const { port, registry } = await startServer({ source: new TestBreadcrumbs(clock), clock });
    const silent = await connect(port);
    const good = await streamingClient(port);
    await clock.advance(9_999);
    expect(silent.closed).toBe(false);
    await clock.advance(1);
    await waitFor(() => silent.closed, 'silent client closed');
    expect(good.closed).toBe(false);
    expect(await metricValue(registry, 'tessera_typha_connections_closed', { reason: 'handshake-timeout' })).toBe(1);
  });
});

describe('SyncServer snapshot and deltas', () => {
  it('clients starting at the same crumb, or at idle crumbs after it, share one encoded snapshot (generated once, then reused)', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, workloadEndpointSnapshot(300));
    const { port, registry } = await startServer({ source: crumbs, clock });
    const a = await streamingClient(port);
    const b = await streamingClient(port);
    expect(b.kvs()).toEqual(a.kvs());
    expect(await metricValue(registry, 'tessera_typha_snapshots_generated')).toBe(1);
    expect(await metricValue(registry, 'tessera_typha_snapshots_reused')).toBe(1);
    const raw = await metricValue(registry, 'tessera_typha_snapshot_raw_bytes');
    const compressed = await metricValue(registry, 'tessera_typha_snapshot_compressed_bytes', { compression: 'deflate-raw' });
    expect(raw).toBeGreaterThan(5 * compressed);
    // An idle crumb (or a status-only one) has the same snapshot: still shared.
    crumbs.publish([]);
    crumbs.publish([], 'resync-in-progress');
    const c = await streamingClient(port);
    expect(c.of('sync-status')[0]?.status).toBe('resync-in-progress');
    expect(await metricValue(registry, 'tessera_typha_snapshots_generated')).toBe(1);
    expect(await metricValue(registry, 'tessera_typha_snapshots_reused')).toBe(2);
    // A crumb that changed something means a new snapshot for the next client.
    crumbs.publish([tier('x')]);
    await streamingClient(port);
    expect(await metricValue(registry, 'tessera_typha_snapshots_generated')).toBe(2);
  });

  it('a status change follows the deltas of its crumb', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, [], 'resync-in-progress');
    const { port } = await startServer({ source: crumbs, clock });
    const c = await streamingClient(port);
    crumbs.publish([tier('a')]);
    crumbs.publish([tier('b')], 'in-sync');
    crumbs.publish([tier('c')]);
    await waitFor(() => c.kvs().length === 3, 'three deltas');
    expect(c.received.filter((m) => m.type === 'kvs' || m.type === 'sync-status').map((m) => (m.type === 'kvs' ? m.kvs.map((kv) => kv.key).join() : m.status))).toEqual([
      'resync-in-progress',
      'Tier//a',
      'Tier//b',
      'in-sync',
      'Tier//c',
    ]);
  });

  it('a client ≥ 10 ms behind on its own stream gets merged messages of ≤ 100 KVs; once caught up, one message per crumb', async () => {
    const clock = new FakeClock();
    const crumbClock = new CrumbClock();
    const crumbs = new TestBreadcrumbs(crumbClock);
    const { port, registry } = await startServer({ source: crumbs, clock });
    const c = await streamingClient(port, hello({ supportedCompression: [] }));
    const expected = publishThirtyCrumbsAtOnce(crumbs, crumbClock);
    await waitFor(() => c.kvs().length === 150, 'all deltas');
    // Crumb 2 is 29 ms behind: 20 crumbs merged into 100; crumb 22 is 9 ms behind: one per crumb.
    expect(c.of('kvs').map((m) => m.kvs.length)).toEqual([100, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]);
    expect(c.kvs().map((kv) => kv.key)).toEqual(expected);
    expect(await metricValue(registry, 'tessera_typha_kvs_per_msg')).toBe(11);
  });

  it('a compressed client ≥ 10 ms behind joins the shared delta stream at its segment start: every crumb once, in order, as the shared per-crumb messages', async () => {
    const clock = new FakeClock();
    const crumbClock = new CrumbClock();
    const crumbs = new TestBreadcrumbs(crumbClock);
    const { port } = await startServer({ source: crumbs, clock });
    const lagging = await streamingClient(port);
    const expected = publishThirtyCrumbsAtOnce(crumbs, crumbClock);
    await waitFor(() => lagging.kvs().length === 150, 'all deltas');
    // The first crumb it reaches starts the shared stream's first segment: it joins there,
    // 29 ms behind, and receives the crumbs' shared messages (5 KVs each), not merged ones.
    expect(lagging.of('kvs').map((m) => m.kvs.length)).toEqual(Array.from({ length: 30 }, () => 5));
    expect(lagging.kvs().map((kv) => kv.key)).toEqual(expected);
    // A client that connects now reads the same shared segment bytes and decodes them from its own fresh decoder.
    const late = await streamingClient(port, hello({ hostname: 'late' }));
    crumbClock.t += 1;
    crumbs.publish([tier('after')]);
    await waitFor(() => [lagging, late].every((c) => c.kvs().some((kv) => kv.key === 'Tier//after')), 'the next delta at both');
    expect([lagging.closed, late.closed]).toEqual([false, false]);
  });

  it('onCrumbsWritten reports every crumb after the snapshot exactly once per connection, in order, on its own stream and on the shared one', async () => {
    const clock = new FakeClock();
    const crumbClock = new CrumbClock();
    const crumbs = new TestBreadcrumbs(crumbClock);
    const written = new Map<number, number[]>();
    const { port } = await startServer({
      source: crumbs,
      clock,
      onCrumbsWritten: (connId, from, to) => {
        const seqs = written.get(connId) ?? [];
        for (let c: typeof from | undefined = from; c !== undefined; c = c === to ? undefined : c.nextIfPublished) seqs.push(c.seq);
        written.set(connId, seqs);
        expect(seqs.at(-1)).toBe(to.seq);
      },
    });
    const first = crumbs.latest().seq;
    const plain = await streamingClient(port, hello({ supportedCompression: [] }));
    const shared = await streamingClient(port, hello({ hostname: 'node-2' }));
    publishThirtyCrumbsAtOnce(crumbs, crumbClock);
    await waitFor(() => [plain, shared].every((c) => c.kvs().length === 150), 'all deltas');
    await waitFor(() => [...written.values()].every((s) => s.length === 30) && written.size === 2, 'every crumb reported');
    for (const seqs of written.values()) expect(seqs).toEqual(Array.from({ length: 30 }, (_, i) => first + 1 + i));
  });

  it('a client more than 300 s behind is kept within 300 s of its snapshot (grace, counted once), and dropped after', async () => {
    const clock = new FakeClock();
    const crumbClock = new CrumbClock();
    const crumbs = new TestBreadcrumbs(crumbClock);
    const { port, registry, records } = await startServer({ source: crumbs, clock });
    const c = await streamingClient(port);
    crumbClock.t = 1_000;
    crumbs.publish([tier('a')]);
    crumbClock.t = 302_000;
    crumbs.publish([tier('b')]);
    await waitFor(() => c.kvs().length === 2, 'both deltas despite being 301 s behind');
    expect(await metricValue(registry, 'tessera_typha_connections_grace_used')).toBe(1);
    expect(c.closed).toBe(false);

    await clock.advance(300_000);
    crumbClock.t = 303_000;
    crumbs.publish([tier('c')]);
    crumbClock.t = 604_000;
    crumbs.publish([tier('d')]);
    await waitFor(() => c.closed, 'client dropped');
    expect(c.kvs().map((kv) => kv.key)).toEqual(['Tier//a', 'Tier//b']);
    expect(await metricValue(registry, 'tessera_typha_connections_closed', { reason: 'fell-behind' })).toBe(1);
    expect(records.find((r) => r['kind'] === 'fell-behind')?.['reason']).toBe('client is 301000 ms behind the newest breadcrumb (limit 300000 ms)');
  });
});

/** 30 crumbs of 5 tiers, 1 ms apart, published before the server can look at any; their keys in order. */
function publishThirtyCrumbsAtOnce(crumbs: TestBreadcrumbs, crumbClock: CrumbClock): string[] {
  const expected: string[] = [];
  for (let i = 0; i < 30; i++) {
    crumbClock.t += 1;
    const names = Array.from({ length: 5 }, (_, j) => `t-${i}-${j}`);
    expected.push(...names.map((n) => `Tier//${n}`));
    crumbs.publish(names.map((n) => tier(n)));
  }
  return expected;
}

describe('SyncServer liveness', () => {
  it('a client that stops reading is closed when a write has not drained within 120 s', async () => {
    const clock = new FakeClock();
    const { port, registry } = await startServer({ source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(10_000)), clock });
    const stuck = await connect(port);
    stuck.socket.pause();
    await stuck.send(hello({ supportedCompression: [] }));
    // ~10.8 MB of snapshot cannot fit in the loopback socket buffers of a reader that never reads.
    await waitForMetric(registry, 'tessera_typha_snapshots_generated', 1);
    // Advance in steps (the server may still be filling the buffers when the first step runs);
    // the paused client would not notice the close, so the server's count is what tells.
    const start = clock.now();
    for (let i = 0; i < 300 && (await metricValue(registry, 'tessera_typha_connections_closed')) === 0; i++) {
      await clock.advance(1_000);
      await new Promise((r) => setTimeout(r, 1));
    }
    expect(clock.now() - start).toBeGreaterThanOrEqual(120_000);
    expect(await metricValue(registry, 'tessera_typha_connections_closed', { reason: 'write-failed' })).toBe(1);
  });

  it('pings every 10 s; a client that never answers is closed 60 s after its first ping, one that answers stays', async () => {
    const clock = new FakeClock();
    const { port, registry } = await startServer({ source: new TestBreadcrumbs(clock), clock, pingIntervalMs: 10_000 });
    const answering = await streamingClient(port);
    const mute = await streamingClient(port, hello({ hostname: 'mute' }), { pong: false });
    for (let i = 1; i <= 6; i++) {
      await clock.advance(10_000);
      await waitFor(() => answering.of('ping').length === i && mute.of('ping').length >= 1, `ping ${i}`);
      await waitForMetric(registry, 'tessera_typha_ping_latency', i);
    }
    // t = 60 s: the mute client's first ping was written at 10 s.
    expect(mute.closed).toBe(false);
    await clock.advance(10_000);
    await waitFor(() => mute.closed, 'mute client closed');
    expect(answering.closed).toBe(false);
    expect(await metricValue(registry, 'tessera_typha_connections_closed', { reason: 'pong-timeout' })).toBe(1);
  });
});

describe('SyncServer slow snapshot readers', () => {
  /**
   * A client that acked the handshake, then stops reading: its compressed snapshot (a few KiB)
   * fits in the loopback buffers, so the server's writes complete at once and only the client
   * knows it has not read them. Returns a `resume()` that starts reading (answering pings and
   * acking restarts) and the plain frames received so far.
   */
  async function stalledAfterHandshake(port: number): Promise<{ socket: net.Socket; resume(): void; received: Message[] }> {
    const socket = net.connect({ host: '127.0.0.1', port });
    cleanups.push(() => void socket.destroy());
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const received: Message[] = [];
    const frames = new FrameDecoder();
    const onHandshake = (chunk: Buffer): void => {
      for (const f of frames.push(chunk).frames) {
        const m = decodeMessage(f);
        received.push(m);
        if (m.type === 'decoder-restart') {
          socket.off('data', onHandshake);
          socket.pause();
          socket.write(encodeFrame(encodeMessage({ type: 'ack' })));
        }
      }
    };
    socket.on('data', onHandshake);
    socket.write(encodeFrame(encodeMessage(hello())));
    await waitFor(() => socket.isPaused(), 'the handshake');
    const resume = (): void => {
      const writer = new MessageWriter(socket, { clock: realClock, writeTimeoutMs: 60_000, maxFrameBytes: 64 << 20 });
      const reader: MessageReader = new MessageReader(socket, {
        clock: realClock,
        maxFrameBytes: 64 << 20,
        maxKVsPerMessage: 100,
        onError: () => socket.destroy(),
        onMessage: (m) => {
          received.push(m);
          if (m.type === 'decoder-restart') {
            reader.restart(m.compression as CompressionAlgorithm);
            void writer.send({ type: 'ack' });
          }
          if (m.type === 'ping') void writer.send({ type: 'pong', pingTimestamp: m.timestamp, pongTimestamp: 0 });
        },
      });
      reader.restart('deflate-raw');
      socket.resume();
    };
    return { socket, resume, received };
  }

  it('a client still reading its snapshot is not closed by the pong timeout: its ping counts from the ack ending the snapshot', async () => {
    const clock = new FakeClock();
    const { port, registry } = await startServer({ source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(250)), clock, pingIntervalMs: 10_000 });
    const slow = await stalledAfterHandshake(port);
    await waitForMetric(registry, 'tessera_typha_client_snapshot_send_secs', 1);
    // The ping is written at 10 s, behind the unread snapshot; 60 s later it is still unread.
    for (let i = 0; i < 10; i++) await clock.advance(10_000);
    expect(slow.socket.destroyed).toBe(false);
    expect(await metricValue(registry, 'tessera_typha_connections_closed')).toBe(0);
    slow.resume();
    await waitForMetric(registry, 'tessera_typha_ping_latency', 1);
    expect(slow.received.filter((m) => m.type === 'kvs').flatMap((m) => (m.type === 'kvs' ? m.kvs : [])).length).toBe(250);
    // From now on the pong timeout applies as usual (the client keeps answering). Each ping and
    // its pong cross real sockets: the fake clock moves on only once the server has the pong
    // (on a loaded machine 60 fake seconds could otherwise pass before a pong is read).
    for (let i = 0; i < 10; i++) {
      const answered = await metricValue(registry, 'tessera_typha_ping_latency');
      await clock.advance(10_000);
      await waitForMetric(registry, 'tessera_typha_ping_latency', answered + 1);
    }
    expect(await metricValue(registry, 'tessera_typha_connections_closed')).toBe(0);
  });

  it('a client that does not read its snapshot is closed by the write timeout (120 s after the snapshot was written), not the pong timeout', async () => {
    const clock = new FakeClock();
    const { port, registry } = await startServer({ source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(250)), clock, pingIntervalMs: 10_000 });
    await stalledAfterHandshake(port);
    await waitForMetric(registry, 'tessera_typha_client_snapshot_send_secs', 1);
    for (let i = 0; i < 11; i++) await clock.advance(10_000);
    expect(await metricValue(registry, 'tessera_typha_connections_closed')).toBe(0);
    await clock.advance(10_000);
    await waitForMetric(registry, 'tessera_typha_connections_closed', 1);
    expect(await metricValue(registry, 'tessera_typha_connections_closed', { reason: 'write-failed' })).toBe(1);
  });
});

describe('SyncServer shared delta stream', () => {
  it('clients that keep up share one compressed delta stream: across segment ends, pings and a late joiner, every delta arrives once, in order', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, workloadEndpointSnapshot(50));
    const { port, registry } = await startServer({ source: crumbs, clock, pingIntervalMs: 2_000 });
    const early = [await streamingClient(port), await streamingClient(port, hello({ hostname: 'node-2' }))];
    const names = Array.from({ length: 30 }, (_, i) => `t${i}`);
    let late: RawClient | undefined;
    for (const [i, name] of names.entries()) {
      crumbs.publish([tier(name, i + 1)]);
      const clients = late === undefined ? early : [...early, late];
      await waitFor(() => clients.every((c) => c.kvs().some((kv) => kv.key.endsWith(`/${name}`)) || c.closed), `delta ${name}`);
      await clock.advance(400); // a segment ends every ~3 crumbs; a ping every 5
      if (i === 10) late = await streamingClient(port, hello({ hostname: 'late' }));
    }
    const deltas = (c: RawClient): string[] => c.kvs().filter((kv) => kv.key.startsWith('Tier/')).map((kv) => kv.key.slice('Tier//'.length));
    for (const c of early) {
      expect(c.closed).toBe(false);
      expect(deltas(c)).toEqual(names);
      // Handshake, snapshot end, then the joins and segment ends of the shared stream.
      expect(c.of('decoder-restart').length).toBeGreaterThan(8);
    }
    expect(late?.closed).toBe(false);
    // t0…t10 in its snapshot (in key order), the rest as deltas.
    expect(deltas(late as RawClient).slice(0, 11)).toEqual(names.slice(0, 11).sort());
    expect(deltas(late as RawClient).slice(11)).toEqual(names.slice(11));
    expect((late as RawClient).of('decoder-restart').length).toBeGreaterThan(4);
    expect(await metricValue(registry, 'tessera_typha_ping_latency')).toBeGreaterThan(0);
    expect(await metricValue(registry, 'tessera_typha_connections_closed')).toBe(0);
  });
  it(`with ≥ ${COALESCE_MIN_MEMBERS} clients on the shared stream, one write tick carries every crumb published before it to every client`, async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock);
    const { port } = await startServer({ source: crumbs, clock });
    const clients: RawClient[] = [];
    for (let i = 0; i < COALESCE_MIN_MEMBERS + 10; i++) clients.push(await streamingClient(port, hello({ hostname: `node-${i}` })));
    const has = (c: RawClient, name: string): boolean => c.kvs().some((kv) => kv.key === `Tier//${name}`);
    // Every client joins the shared stream at this crumb (the later ones on a tick).
    crumbs.publish([tier('warm-up')]);
    for (let i = 0; i < 20 && !clients.every((c) => has(c, 'warm-up')); i++) {
      await clock.advance(COALESCE_MS);
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(() => clients.every((c) => has(c, 'warm-up')), 'the warm-up crumb at every client');
    // Ten crumbs at once: every client wakes (no I/O in between) and parks on the one tick.
    const names = Array.from({ length: 10 }, (_, i) => `burst-${i}`);
    for (const n of names) crumbs.publish([tier(n)]);
    await new Promise((r) => setImmediate(r));
    await clock.advance(COALESCE_MS);
    // No further tick: each client wrote all ten on this one (taking only crumbs already
    // compressed, each wrote one per tick and delivery fell behind publication).
    await waitFor(() => clients.every((c) => names.every((n) => has(c, n))), 'all ten crumbs at every client after one tick');
    expect(clients.filter((c) => c.closed)).toEqual([]);
  }, 30_000);
});

async function waitForMetric(registry: Registry, name: string, atLeast: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await metricValue(registry, name)) < atLeast) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${name} >= ${atLeast}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('SyncServer connection limits', () => {
  it('refuses connections over maxConns, and after setMaxConns drops one random connection per interval down to the target', async () => {
    const clock = new FakeClock();
    const { server, port, registry } = await startServer({ source: new TestBreadcrumbs(clock), clock, maxConns: 3, random: seededRandom(3) });
    const clients = [await streamingClient(port), await streamingClient(port), await streamingClient(port)];
    const extra = await connect(port);
    await waitFor(() => extra.closed, 'fourth connection refused');
    expect(server.connectionCount).toBe(3);
    expect(await metricValue(registry, 'tessera_typha_connections_refused')).toBe(1);

    server.setMaxConns(1);
    await clock.advance(899); // the interval is 1 s ± 10 %
    expect(server.connectionCount).toBe(3);
    await clock.advance(201);
    expect(server.connectionCount).toBe(2);
    await clock.advance(1_100);
    expect(server.connectionCount).toBe(1);
    await clock.advance(5_000);
    expect(server.connectionCount).toBe(1);
    await waitFor(() => clients.filter((c) => c.closed).length === 2, 'two clients dropped');
    expect(await metricValue(registry, 'tessera_typha_connections_dropped')).toBe(2);
    expect(await metricValue(registry, 'tessera_typha_connections_active')).toBe(1);
  });

  it('a graceful close spreads the disconnects over gracefulMs', async () => {
    const clock = new FakeClock();
    const { server, port } = await startServer({ source: new TestBreadcrumbs(clock), clock, random: seededRandom(5) });
    for (let i = 0; i < 4; i++) await streamingClient(port);
    const closing = server.close({ gracefulMs: 4_000 });
    await clock.advance(999);
    expect(server.connectionCount).toBe(4);
    await clock.advance(1);
    expect(server.connectionCount).toBe(3);
    await clock.advance(2_000);
    expect(server.connectionCount).toBe(1);
    await clock.advance(1_000);
    await closing;
    expect(server.connectionCount).toBe(0);
  });
});

describe('SyncServer against garbage', () => {
  it('random bytes, huge length prefixes, truncated frames and bad messages each close only their own connection, with a reason', async () => {
    const clock = new FakeClock();
    const crumbs = new TestBreadcrumbs(clock, workloadEndpointSnapshot(10));
    const { server, port, records } = await startServer({ source: crumbs, clock });
    const good = [await streamingClient(port), await streamingClient(port, hello({ supportedCompression: [] }))];
    const random = seededRandom(11);
    const attacks: Array<(c: RawClient) => void> = [
      (c) => c.writeRaw(Buffer.from(Array.from({ length: 64 }, () => Math.floor(random() * 256)))),
      (c) => c.writeRaw(Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3])),
      (c) => {
        c.writeRaw(encodeFrame(encodeMessage(hello())).subarray(0, 10));
        c.socket.end();
      },
      (c) => c.writeRaw(encodeFrame(Buffer.from('{"type":"client-hello","hostname":42}'))),
      (c) => c.writeRaw(encodeFrame(Buffer.from('{"type":"warp"}'))),
      (c) => c.writeRaw(encodeFrame(Buffer.from([0xc3, 0x28]))),
    ];
    for (let round = 0; round < 3; round++) {
      for (const attack of attacks) {
        const c = await connect(port);
        attack(c);
        await waitFor(() => c.closed, 'attacker closed');
      }
    }
    // A streaming client that turns bad mid-stream goes too.
    const turncoat = await streamingClient(port);
    turncoat.writeRaw(Buffer.from([0, 0, 0, 2, 0x7b]));
    turncoat.socket.end();
    await waitFor(() => turncoat.closed, 'turncoat closed');

    const reasons = records.filter((r) => r['msg'] === 'closing Typha connection').map((r) => String(r['reason']));
    expect(reasons.filter((r) => r.includes('exceeds the maximum frame size')).length).toBeGreaterThanOrEqual(3);
    expect(reasons.filter((r) => r.includes('stream ended inside a frame')).length).toBeGreaterThanOrEqual(4);
    expect(reasons).toContain('unreadable input: client-hello: hostname: expected a string, got number');
    expect(reasons).toContain('unreadable input: message: type: unknown message type "warp"');
    expect(reasons.some((r) => r.startsWith('unreadable input: message: payload is not UTF-8 JSON'))).toBe(true);

    // The well-behaved clients never noticed.
    crumbs.publish([tier('after-the-storm')]);
    await waitFor(() => good.every((c) => c.kvs().some((kv) => kv.key === 'Tier//after-the-storm')), 'delta to the good clients');
    expect(good.every((c) => !c.closed)).toBe(true);
    await waitFor(() => server.connectionCount === 2, 'only the good clients remain');
  });
});
