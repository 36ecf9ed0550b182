/**
 * `/metrics` (prom-client text format), `/livez` and `/readyz` on one node:http server.
 * `ready()` decides readiness (the controllers: informer caches synced); `live()` decides
 * liveness — 503 with one line per stuck component (`describeLiveness`) when a main loop made
 * no progress within its timeout, so the kubelet restarts the process. The server is
 * disposable: `close()` stops it and its keep-alive connections.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Registry } from 'prom-client';

import { describeLiveness, type LivenessReport } from './liveness.ts';

export interface HealthServerOptions {
  registry: Registry;
  ready: () => boolean;
  /** Asked on every `/livez` (e.g. `Liveness.check`). @default always live */
  live?: () => LivenessReport;
  /** @default 9094 */
  port?: number;
  /** @default '0.0.0.0' */
  host?: string;
  /** More read-only endpoints answering JSON (the agent's `/rules`). @default none */
  json?: Readonly<Record<string, () => Promise<unknown>>>;
}

const ALWAYS_LIVE = (): LivenessReport => ({ live: true, components: [] });

export class HealthServer {
  private readonly server: Server;

  private constructor(server: Server) {
    this.server = server;
  }

  static async listen(opts: HealthServerOptions): Promise<HealthServer> {
    const { registry, ready, live = ALWAYS_LIVE, port = 9094, host = '0.0.0.0', json = {} } = opts;
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
        const report = live();
        res.writeHead(report.live ? 200 : 503, { 'Content-Type': 'text/plain' });
        res.end(describeLiveness(report));
        return;
      }
      if (path === '/readyz') {
        const ok = ready();
        res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' });
        res.end(ok ? 'ok' : 'not ready');
        return;
      }
      const answer = path === undefined ? undefined : Object.hasOwn(json, path) ? json[path] : undefined;
      if (answer !== undefined) {
        answer().then(
          (body) => {
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify(body));
          },
          (err: unknown) => {
            res.writeHead(500, { 'Content-Type': 'text/plain' });
            res.end(String((err as Error).message ?? err));
          },
        );
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
