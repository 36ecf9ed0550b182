import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';

import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { captureLogger, waitFor } from '../../test/typha/wire-harness.ts';
import { runTyphaProcess } from './typha-process.ts';

/** A KubeConfig for an API server that refuses every connection: the informers retry, quietly. */
function unreachableApi(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'c', cluster: 'none', user: 'u' }],
    currentContext: 'c',
  });
  return kc;
}

describe('runTyphaProcess', () => {
  it('exits 1, naming the address, when the sync server cannot listen; everything it started is stopped first', { timeout: 20_000 }, async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const { logger, records } = captureLogger();
    try {
      const code = await runTyphaProcess({
        kubeConfig: unreachableApi(),
        host: '127.0.0.1',
        port,
        metricsHost: '127.0.0.1',
        metricsPort: 0,
        maxConns: 10,
        shutdownTimeoutSeconds: 1,
        logger,
      });
      expect(code).toBe(1);
      const msgs = records.map((r) => r['msg']);
      expect(msgs).toContain('cannot listen for agents');
      expect(records.find((r) => r['msg'] === 'cannot listen for agents')).toMatchObject({ host: '127.0.0.1', port });
      expect(msgs.at(-1)).toBe('exiting');
      expect(records.at(-1)).toMatchObject({ exitCode: 1 });
      expect(msgs).not.toContain('Typha serving agents');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("is not ready before it serves, and stops with exit 0 when stopped (the signal named 'stop')", { timeout: 20_000 }, async () => {
    const { logger, records } = captureLogger();
    const stop = new AbortController();
    const running = runTyphaProcess({
      kubeConfig: unreachableApi(),
      host: '127.0.0.1',
      port: 0,
      metricsHost: '127.0.0.1',
      metricsPort: 0,
      maxConns: 10,
      shutdownTimeoutSeconds: 1,
      logger,
      stop: stop.signal,
    });
    await waitFor(() => records.some((r) => r['msg'] === 'Typha serving agents'), 'typha to listen');
    const health = records.find((r) => r['msg'] === 'serving /metrics, /livez, /readyz');
    // Listening, but the cache never reached in-sync (no API server): not ready.
    expect((await fetch(`http://127.0.0.1:${String(health?.['port'])}/readyz`)).status).toBe(503);
    stop.abort();
    expect(await running).toBe(0);
    expect(records.find((r) => r['msg'] === 'shutting down: closing agent connections')).toMatchObject({ signal: 'stop', connections: 0, gracefulMs: 0 });
    expect(records.at(-1)).toMatchObject({ msg: 'exiting', exitCode: 0 });
  });
});
