import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { FakeClock } from '../runtime/clock.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { SyncClient, type TyphaClientTls } from './sync-client.ts';
import { SyncServer, type TyphaServerTls } from './sync-server.ts';
import { TestBreadcrumbs } from '../../test/typha/test-breadcrumbs.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';
import { captureLogger, makeTestCerts, metricValue, RawClient, waitFor, type TestCerts } from '../../test/typha/wire-harness.ts';
import type { SyncStatus, SyncerCallbacks } from '../syncer/index.ts';

let certs: TestCerts;
beforeAll(() => {
  certs = makeTestCerts();
});
afterAll(() => certs.cleanup());

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startServer(identity: Pick<TyphaServerTls, 'clientCN' | 'clientURISAN'>) {
  const clock = new FakeClock();
  const { logger, records } = captureLogger();
  const server = new SyncServer({
    host: '127.0.0.1',
    port: 0,
    clock,
    logger,
    pingIntervalMs: 1e9,
    source: new TestBreadcrumbs(clock, workloadEndpointSnapshot(3)),
    tls: { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, ...identity },
  });
  const { port } = await server.listen();
  cleanups.push(() => server.close());
  return { server, port, records, clock };
}

/** Runs a client until it syncs or its first connection fails; returns which. */
async function attempt(port: number, clock: FakeClock, tls: TyphaClientTls | undefined): Promise<'synced' | 'failed'> {
  const registry: Registry = newRegistry();
  const statuses: SyncStatus[] = [];
  const callbacks: SyncerCallbacks = { onUpdates: () => undefined, onStatusUpdated: (s) => void statuses.push(s) };
  const client = new SyncClient({ hostname: 'node-1', addresses: () => [`127.0.0.1:${port}`], clock, registry, ...(tls === undefined ? {} : { tls }) }, callbacks);
  const abort = new AbortController();
  const running = client.run(abort.signal);
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (statuses.includes('in-sync')) return 'synced';
      // A failed attempt is followed by a backoff on the fake clock, which never advances here.
      if ((await metricValue(registry, 'tessera_typha_client_connections', { result: 'failed' })) > 0) return 'failed';
      if (Date.now() > deadline) throw new Error('neither synced nor failed');
      await new Promise((r) => setTimeout(r, 2));
    }
  } finally {
    abort.abort();
    await running;
  }
}

const client = (key: Buffer, cert: Buffer): TyphaClientTls => ({ key, cert, ca: certs.ca });

describe('SyncServer with mutual TLS', () => {
  it('accepts a client certificate with the configured CN and rejects another CN from the same CA, with a log naming it', async () => {
    const { port, clock, records } = await startServer({ clientCN: 'typha-client' });
    expect(await attempt(port, clock, client(certs.goodKey, certs.goodCert))).toBe('synced');
    expect(await attempt(port, clock, client(certs.wrongKey, certs.wrongCert))).toBe('failed');
    const rejection = records.find((r) => String(r['msg']).startsWith('rejecting TLS client'));
    expect(rejection?.['cn']).toBe('intruder');
  });

  it('accepts by URI SAN when only clientURISAN is set', async () => {
    const { port, clock } = await startServer({ clientURISAN: 'spiffe://cluster.local/ns/kube-system/sa/typha-client' });
    expect(await attempt(port, clock, client(certs.goodKey, certs.goodCert))).toBe('synced');
    expect(await attempt(port, clock, client(certs.wrongKey, certs.wrongCert))).toBe('failed');
  });

  it('rejects a certificate from another CA with the right CN, a client without a certificate, and plain TCP', async () => {
    const { port, clock, server } = await startServer({ clientCN: 'typha-client' });
    expect(await attempt(port, clock, client(certs.rogueKey, certs.rogueCert))).toBe('failed');
    expect(await attempt(port, clock, undefined)).toBe('failed');
    const plain = await RawClient.connect(port);
    cleanups.push(() => plain.close());
    await plain.send({ type: 'client-hello', hostname: 'x', info: '', version: '', syncerType: '', supportsDecoderRestart: false, supportedCompression: [], clientConnId: 0 });
    await waitFor(() => plain.closed, 'plain TCP connection closed');
    expect(plain.received).toEqual([]);
    expect(server.connectionCount).toBe(0);
  });

  it('refuses a TLS configuration that would check no identity', () => {
    const source = new TestBreadcrumbs(new FakeClock());
    expect(() => new SyncServer({ source, tls: { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca } })).toThrow('SyncServer: tls needs clientCN or clientURISAN');
  });
});
