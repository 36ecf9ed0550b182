/**
 * SyncConnection on its own, with the snapshot encoder gated by the test: what happens while a
 * snapshot is being generated is then a state the test holds open, not a race it hopes to hit.
 */
import net from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { silentLogger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import type { Breadcrumb } from './breadcrumb.ts';
import type { CompressionAlgorithm } from './compression.ts';
import { CrumbMessageCache, SharedDeltaStream } from './crumb-message-cache.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame-codec.ts';
import { MAX_KVS_PER_MESSAGE } from './messages.ts';
import { SnapshotEncoder, type EncodedSnapshot } from './snapshot-encoder.ts';
import { SyncConnection, type SyncServerConfig } from './sync-connection.ts';
import { SyncServerMetrics } from './sync-server-metrics.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { hello, RawClient, waitFor } from '../../test/typha/wire-harness.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** The real encoder behind a gate: `get` is recorded and answers only once the test opens it. */
class GatedSnapshots {
  readonly #real: SnapshotEncoder;
  readonly #opened: Promise<void>;
  open!: () => void;
  calls = 0;

  constructor(real: SnapshotEncoder) {
    this.#real = real;
    this.#opened = new Promise((resolve) => (this.open = resolve));
  }

  async get(crumb: Breadcrumb, compression: CompressionAlgorithm | undefined): Promise<EncodedSnapshot> {
    this.calls++;
    await this.#opened;
    return this.#real.get(crumb, compression);
  }
}

const config: SyncServerConfig = {
  handshakeTimeoutMs: 10_000,
  writeTimeoutMs: 120_000,
  pingIntervalMs: 10_000,
  pongTimeoutMs: 60_000,
  maxFallBehindMs: 300_000,
  newClientGraceMs: 300_000,
  batchingAgeMs: 10,
  maxKVsPerMessage: MAX_KVS_PER_MESSAGE,
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  compression: ['deflate-raw'],
};

/** A listener whose one accepted socket becomes a SyncConnection with `snapshots`. */
async function serve(clock: FakeClock, source: TestBreadcrumbs, snapshots: GatedSnapshots): Promise<{ port: number; closes: string[] }> {
  const metrics = new SyncServerMetrics(newRegistry());
  const crumbMessages = new CrumbMessageCache(MAX_KVS_PER_MESSAGE);
  const shared = new SharedDeltaStream('deflate-raw', crumbMessages, DEFAULT_MAX_FRAME_BYTES);
  const closes: string[] = [];
  const log = silentLogger;
  const server = net.createServer((socket) => {
    const conn = new SyncConnection(
      1,
      socket,
      { source, clock, config, metrics, snapshots: snapshots as unknown as SnapshotEncoder, crumbMessages, sharedDeltas: () => shared, log, version: 'test' },
      () => undefined,
    );
    const close = conn.close.bind(conn);
    conn.close = (kind, reason) => {
      closes.push(`${kind}: ${reason}`);
      close(kind, reason);
    };
    cleanups.push(() => conn.close('shutdown', 'test over'));
    conn.start();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => void server.close());
  return { port: (server.address() as net.AddressInfo).port, closes };
}

describe('SyncConnection while its snapshot is generated', () => {
  it('a ping that comes due then goes out after the restart ending the snapshot, in the stream the client decodes next, and the client reads everything', async () => {
    const clock = new FakeClock();
    const source = new TestBreadcrumbs(clock, workloadEndpointSnapshot(250));
    const snapshots = new GatedSnapshots(new SnapshotEncoder({ maxKVsPerMessage: MAX_KVS_PER_MESSAGE, maxFrameBytes: DEFAULT_MAX_FRAME_BYTES, metrics: new SyncServerMetrics(newRegistry()) }));
    const { port, closes } = await serve(clock, source, snapshots);
    const client = await RawClient.connect(port);
    cleanups.push(() => client.close());
    await client.send(hello());
    // The handshake is done and the snapshot is being generated (held at the gate).
    await waitFor(() => snapshots.calls === 1, 'the snapshot to be requested');
    // Two ping intervals pass mid-snapshot (a pong timeout's worth would too: no ping is out yet).
    await clock.advance(10_000);
    await clock.advance(10_000);
    expect(client.of('ping')).toEqual([]);
    snapshots.open();
    await waitFor(() => client.of('sync-status').length === 1, 'the snapshot and its status');
    expect(client.received.map((m) => m.type)).toEqual(['server-hello', 'decoder-restart', 'kvs', 'kvs', 'kvs', 'decoder-restart', 'ping', 'sync-status']);
    expect(client.kvs()).toHaveLength(250);
    expect(client.closed).toBe(false);
    // The deferred ping was answered: the next interval's ping goes out and the connection lives on.
    await clock.advance(10_000);
    await waitFor(() => client.of('ping').length === 2, 'the next ping');
    expect(closes).toEqual([]);
  });
});
