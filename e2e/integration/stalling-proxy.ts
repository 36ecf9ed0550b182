/**
 * A loopback TCP proxy that can be made to stop answering: until `stall()` it forwards every
 * byte both ways; from then on every connection — open or new — is still accepted and read,
 * but nothing is forwarded either way and nothing is closed. To a client behind it, the
 * server has gone silent mid-request: the failure a request timeout exists for, and the one a
 * refused connection (which fails at once) does not reproduce.
 *
 * It records, per connection, whether the client sent bytes after the stall (a request that
 * will never be answered) and whether the client closed it (the request was aborted). Once
 * stalled, the proxy itself closes no client connection until `close()`, so a closed one was
 * closed by its client.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface ProxiedConnection {
  /** Bytes the client sent after the stall, which went nowhere. */
  swallowedBytes: number;
  /** The client closed its end (ended or reset). */
  closedByClient: boolean;
}

export class StallingProxy {
  readonly port: number;
  readonly connections: ProxiedConnection[] = [];
  private stalled = false;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {
    this.port = (server.address() as AddressInfo).port;
  }

  /** Listens on 127.0.0.1 (an ephemeral port) and forwards to `target`. */
  static async listen(target: { host: string; port: number }): Promise<StallingProxy> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const proxy = new StallingProxy(server);
    server.on('connection', (client) => proxy.accept(client, target));
    return proxy;
  }

  /** From now on nothing is forwarded, on any connection. */
  stall(): void {
    this.stalled = true;
  }

  /** Connections whose client sent a request after the stall. */
  stalledRequests(): ProxiedConnection[] {
    return this.connections.filter((c) => c.swallowedBytes > 0);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    const record: ProxiedConnection = { swallowedBytes: 0, closedByClient: false };
    this.connections.push(record);
    this.sockets.add(client);
    const upstream = this.stalled ? undefined : connect(target.port, target.host);
    if (upstream !== undefined) this.sockets.add(upstream);
    client.on('data', (d: Buffer) => {
      if (this.stalled || upstream === undefined) record.swallowedBytes += d.length;
      else upstream.write(d);
    });
    upstream?.on('data', (d: Buffer) => {
      if (!this.stalled) client.write(d);
    });
    const clientGone = (): void => {
      record.closedByClient = true;
      this.sockets.delete(client);
      if (!this.stalled) upstream?.destroy();
    };
    client.on('end', clientGone);
    client.on('close', clientGone);
    client.on('error', () => undefined);
    upstream?.on('error', () => {
      if (!this.stalled) client.destroy();
    });
    upstream?.on('close', () => {
      this.sockets.delete(upstream);
      if (!this.stalled) client.destroy();
    });
  }
}
