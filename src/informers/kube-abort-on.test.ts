import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';

import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { abortOn } from './kube-abort-on.ts';

describe('abortOn', () => {
  it('aborting the signal aborts a real client-node request that is waiting for an answer', async () => {
    // A loopback server that accepts the request and never answers.
    const sockets: Socket[] = [];
    let received = '';
    const server = createServer((s) => {
      sockets.push(s);
      s.setEncoding('utf8').on('data', (d: string) => (received += d));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    try {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: 'u' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      const api = kc.makeApiClient(CoordinationV1Api);
      const c = new AbortController();
      const read = api.readNamespacedLease({ name: 'le-lease', namespace: 'le-ns' }, abortOn(c.signal));
      const settled = read.then(
        () => 'answered',
        (err: unknown) => (err as Error).name,
      );
      while (!received.includes('\r\n\r\n')) await new Promise((r) => setImmediate(r));
      expect(received).toMatch(/^GET \/apis\/coordination\.k8s\.io\/v1\/namespaces\/le-ns\/leases\/le-lease /);
      c.abort();
      expect(await settled).toBe('AbortError');
      // The connection itself was closed by the client.
      const socket = sockets[0]!;
      if (!socket.destroyed && !socket.readableEnded) await once(socket, 'close');
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});
