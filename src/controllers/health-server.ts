/**
 * `/metrics` (prom-client text format), `/livez` and `/readyz` on one node:http server.
 * `ready()` decides readiness (the controllers: informer caches synced). The server is
 * disposable: `close()` stops it and its keep-alive connections.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  registry: Registry;
  ready: () => boolean;
  /** @default 9094 */
  port?: number;
  /** @default '0.0.0.0' */
  host?: string;
}

export class HealthServer {
  private readonly server: Server;

  private constructor(server: Server) {
    this.server = server;
  }

  static async listen(opts: HealthServerOptions): Promise<HealthServer> {
    const { registry, ready, port = 9094, host = '0.0.0.0' } = opts;
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/metrics') {
        registry.metrics().then(
          (text) => {
            res.writeHead(200, { 'Content-Type': registry.contentType });
            res.end(text);
          },
          (err: unknown) => {
            res.writeHead(500);
            res.end(String(err));
          },
        );
        return;
      }
      if (path === '/livez') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      }
      if (path === '/readyz') {
        const ok = ready();
        res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
        res.end(ok ? 'ok' : 'not ready');
        return;
      }
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return new HealthServer(server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
