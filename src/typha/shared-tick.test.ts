/**
 * The shared tick's write loop (crumb-message-cache.ts `SharedDeltaStream.park`, sync-connection.ts
 * `tickWrite`): connections caught up inside a segment are parked and written by one
 * synchronous loop per tick, one shared buffer per crumb position; a socket that reports
 * backpressure drops out and catches up from the crumb list. Coalescing is switched on from one
 * member here (the server's threshold is 100), and backpressure is a gate on the server-side
 * socket (`write` answers false and `writableNeedDrain` holds until the test emits 'drain'), so
 * every state is one the test holds, not a race it hopes to hit.
 */
import net from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { silentLogger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import type { Breadcrumb } from './breadcrumb.ts';
import { COALESCE_MS, CrumbMessageCache, SEGMENT_MS, SharedDeltaStream } from './crumb-message-cache.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame-codec.ts';
import { MAX_KVS_PER_MESSAGE } from './messages.ts';
import { SnapshotEncoder } from './snapshot-encoder.ts';
import { SyncConnection, type SyncServerConfig } from './sync-connection.ts';
import { SyncServerMetrics } from './sync-server-metrics.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { hello, RawClient, waitFor } from '../../test/typha/wire-harness.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

const baseConfig: SyncServerConfig = {
  handshakeTimeoutMs: 10_000,
  writeTimeoutMs: 120_000,
  pingIntervalMs: 100_000,
  pongTimeoutMs: 600_000,
  maxFallBehindMs: 300_000,
  newClientGraceMs: 300_000,
  batchingAgeMs: 10,
  maxKVsPerMessage: MAX_KVS_PER_MESSAGE,
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  compression: ['deflate-raw'],
};

/** Backpressure on one server-side socket, held by the test. */
class Gate {
  held = false;
  constructor(readonly socket: net.Socket) {
    const write = socket.write.bind(socket) as (chunk: Buffer) => boolean;
    socket.write = ((chunk: Buffer) => write(chunk) && !this.held) as typeof socket.write;
    Object.defineProperty(socket, 'writableNeedDrain', { get: () => this.held });
  }

  release(): void {
    this.held = false;
    this.socket.emit('drain');
  }
}

interface Served {
  readonly port: number;
  readonly shared: SharedDeltaStream;
  readonly conns: SyncConnection[];
  readonly gates: Gate[];
  readonly closes: string[];
  /** Per connection id: the [from, to] seqs `onCrumbsWritten` reported, in order. */
  readonly written: Map<number, Array<[number, number]>>;
}

async function serve(clock: FakeClock, source: TestBreadcrumbs, config: SyncServerConfig = baseConfig): Promise<Served> {
  const metrics = new SyncServerMetrics(newRegistry());
  const crumbMessages = new CrumbMessageCache(MAX_KVS_PER_MESSAGE);
  const shared = new SharedDeltaStream('deflate-raw', crumbMessages, DEFAULT_MAX_FRAME_BYTES, 1);
  const snapshots = new SnapshotEncoder({ maxKVsPerMessage: MAX_KVS_PER_MESSAGE, maxFrameBytes: DEFAULT_MAX_FRAME_BYTES, metrics });
  const served: Served = { port: 0, shared, conns: [], gates: [], closes: [], written: new Map() };
  const onCrumbsWritten = (id: number, from: Breadcrumb, to: Breadcrumb): void => {
    const list = served.written.get(id) ?? [];
    list.push([from.seq, to.seq]);
    served.written.set(id, list);
  };
  const server = net.createServer((socket) => {
    served.gates.push(new Gate(socket));
    const conn = new SyncConnection(
      served.conns.length + 1,
      socket,
      { source, clock, config, metrics, snapshots, crumbMessages, sharedDeltas: () => shared, log: silentLogger, version: 'test', onCrumbsWritten },
      () => undefined,
    );
    const close = conn.close.bind(conn);
    conn.close = (kind, reason) => {
      // The first close is the one that counts (later calls change nothing).
      if (!served.closes.some((c) => c.startsWith(`${conn.id} `))) served.closes.push(`${conn.id} ${kind}`);
      close(kind, reason);
    };
    served.conns.push(conn);
    cleanups.push(() => conn.close('shutdown', 'test over'));
    conn.start();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => void server.close());
  return { ...served, port: (server.address() as net.AddressInfo).port };
}

async function connect(s: Served, n: number): Promise<RawClient> {
  const client = await RawClient.connect(s.port);
  cleanups.push(() => client.close());
  await client.send(hello({ clientConnId: n }));
  await waitFor(() => client.of('sync-status').length === 1, `client ${n}'s snapshot`);
  return client;
}

/** Keys of the kvs a client received after its snapshot, in order. */
function deltaKeys(client: RawClient): string[] {
  const firstStatus = client.received.findIndex((m) => m.type === 'sync-status');
  return client.received.slice(firstStatus + 1).flatMap((m) => (m.type === 'kvs' ? m.kvs.map((kv) => kv.key) : []));
}

/** Runs shared ticks until `cond` holds. */
async function tickUntil(clock: FakeClock, cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) {
    await clock.advance(COALESCE_MS);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

/** Publishes `n` crumbs of two new endpoints each; returns their keys in order. */
let seed = 1000;
function publish(source: TestBreadcrumbs, n: number): string[] {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const updates = workloadEndpointSnapshot(2, { seed: seed++ });
    source.publish(updates);
    keys.push(...updates.map((u) => u.key));
  }
  return keys;
}

/** The reported ranges cover `first`…`last` exactly once, in order. */
function expectContiguous(ranges: Array<[number, number]> | undefined, first: number, last: number): void {
  const seqs = (ranges ?? []).flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => from + i));
  expect(seqs).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
}

describe('the shared tick write loop', () => {
  it('parks caught-up connections and writes each tick to all of them, in order, reported once per crumb', async () => {
    const clock = new FakeClock();
    const source = new TestBreadcrumbs(clock, workloadEndpointSnapshot(10));
    const s = await serve(clock, source);
    const a = await connect(s, 1);
    const b = await connect(s, 2);
    const expected = publish(source, 1);
    await tickUntil(clock, () => s.shared.parked === 2, 'both connections parked');
    expected.push(...publish(source, 3));
    await tickUntil(clock, () => deltaKeys(a).length === expected.length && deltaKeys(b).length === expected.length, 'the crumbs at both clients');
    expect(deltaKeys(a)).toEqual(expected);
    expect(deltaKeys(b)).toEqual(expected);
    expect(s.shared.parked).toBe(2);
    expectContiguous(s.written.get(1), 2, 5);
    expectContiguous(s.written.get(2), 2, 5);
    // The three crumbs published together went out in one tick: one write per connection.
    expect(s.written.get(1)?.at(-1)).toEqual([3, 5]);
    expect(s.closes).toEqual([]);
  });

  it('a connection whose socket reports backpressure drops out until drain, then catches up in order and parks again; the others go on', async () => {
    const clock = new FakeClock();
    const source = new TestBreadcrumbs(clock, workloadEndpointSnapshot(10));
    const s = await serve(clock, source);
    const a = await connect(s, 1);
    const b = await connect(s, 2);
    const expected = publish(source, 1);
    await tickUntil(clock, () => s.shared.parked === 2, 'both connections parked');
    const gate = s.gates[1] as Gate;
    gate.held = true;
    expected.push(...publish(source, 1)); // crumb 3: B's write meets backpressure
    await tickUntil(clock, () => s.shared.parked === 1 && deltaKeys(a).length === expected.length, 'B to drop out');
    expected.push(...publish(source, 2)); // crumbs 4, 5: A only
    await tickUntil(clock, () => deltaKeys(a).length === expected.length, 'A to go on');
    expect(s.shared.parked).toBe(1);
    // B's crumb 3 is not reported written before the socket drained.
    expectContiguous(s.written.get(2), 2, 2);
    gate.release();
    await tickUntil(clock, () => deltaKeys(b).length === expected.length && s.shared.parked === 2, 'B to catch up and park again');
    expect(deltaKeys(a)).toEqual(expected);
    expect(deltaKeys(b)).toEqual(expected);
    expectContiguous(s.written.get(1), 2, 5);
    expectContiguous(s.written.get(2), 2, 5);
    // Both in the shared loop again.
    expected.push(...publish(source, 1));
    await tickUntil(clock, () => deltaKeys(a).length === expected.length && deltaKeys(b).length === expected.length, 'crumb 6 at both');
    expect(deltaKeys(b)).toEqual(expected);
    expect(s.closes).toEqual([]);
  });

  it('a connection joining while others are parked takes its own stream until a segment starts, then parks with them', async () => {
    const clock = new FakeClock();
    const source = new TestBreadcrumbs(clock, workloadEndpointSnapshot(10));
    const s = await serve(clock, source);
    const a = await connect(s, 1);
    const fromA = publish(source, 1);
    await tickUntil(clock, () => s.shared.parked === 1, 'A parked');
    const c = await connect(s, 2);
    const fromC = publish(source, 2); // mid-segment: C cannot join the shared stream here
    fromA.push(...fromC);
    await tickUntil(clock, () => deltaKeys(a).length === fromA.length && deltaKeys(c).length === fromC.length, 'crumbs 3, 4 at both');
    expect(s.shared.parked).toBe(1);
    // Past the segment's length: the next crumb ends the segment, the one after starts one.
    await clock.advance(SEGMENT_MS);
    const more = publish(source, 1);
    await tickUntil(clock, () => deltaKeys(a).length === fromA.length + more.length && deltaKeys(c).length === fromC.length + more.length, 'the segment-ending crumb');
    more.push(...publish(source, 1));
    fromA.push(...more);
    fromC.push(...more);
    await tickUntil(clock, () => s.shared.parked === 2 && deltaKeys(c).length === fromC.length && deltaKeys(a).length === fromA.length, 'both parked');
    const last = publish(source, 2);
    fromA.push(...last);
    fromC.push(...last);
    await tickUntil(clock, () => deltaKeys(a).length === fromA.length && deltaKeys(c).length === fromC.length, 'the last crumbs at both');
    expect(deltaKeys(a)).toEqual(fromA);
    expect(deltaKeys(c)).toEqual(fromC);
    expect(s.shared.parked).toBe(2);
    expectContiguous(s.written.get(1), 2, 8);
    expectContiguous(s.written.get(2), 3, 8);
    expect(s.closes).toEqual([]);
  });

  it('a slow client that never drains is closed at the write timeout; one that drains too late is closed as fallen behind; the others stay parked', async () => {
    const clock = new FakeClock();
    const source = new TestBreadcrumbs(clock, workloadEndpointSnapshot(10));
    const s = await serve(clock, source, { ...baseConfig, writeTimeoutMs: 5_000, maxFallBehindMs: 2_000, newClientGraceMs: 0 });
    const a = await connect(s, 1);
    await connect(s, 2);
    await connect(s, 3);
    const expected = publish(source, 1);
    await tickUntil(clock, () => s.shared.parked === 3, 'all parked');
    (s.gates[1] as Gate).held = true;
    (s.gates[2] as Gate).held = true;
    expected.push(...publish(source, 1));
    await tickUntil(clock, () => s.shared.parked === 1, 'the two slow ones to drop out');
    // Crumbs keep coming for A (which takes each at once) while the slow ones wait for their drain.
    for (let i = 0; i < 6; i++) {
      await clock.advance(500);
      expected.push(...publish(source, 1));
      await tickUntil(clock, () => deltaKeys(a).length === expected.length, `A to have crumb ${4 + i}`);
    }
    (s.gates[2] as Gate).release(); // drains now, 3 s behind the newest crumb
    await tickUntil(clock, () => s.closes.includes('3 fell-behind'), 'the late drainer to be closed');
    await clock.advance(5_000);
    await tickUntil(clock, () => s.closes.includes('2 write-failed'), 'the never-draining one to be closed');
    expect(s.closes.sort()).toEqual(['2 write-failed', '3 fell-behind']);
    expected.push(...publish(source, 1));
    await tickUntil(clock, () => deltaKeys(a).length === expected.length, 'A to go on');
    expect(deltaKeys(a)).toEqual(expected);
    expect(a.closed).toBe(false);
  });
});
