/**
 * Typha's sync server (typha.md §2, §3, §4.3): accepts node agents over TCP (optionally mutual
 * TLS), and streams each the snapshot of the newest breadcrumb, its status, then the deltas of
 * every following crumb (one `SyncConnection` per client, sync-connection.ts).
 *
 * Guarantees:
 * - at most `maxConns` connections: one over the limit is refused at accept (closed at once,
 *   counted in `_connections_refused`);
 * - after `setMaxConns(n)` below the current count, one random connection is dropped every
 *   `dropIntervalMs` ±10 % until the count is at most `n` (counted in `_connections_dropped`);
 *   the dropped client reconnects through the Service and usually lands on a less loaded Typha;
 * - with TLS, only TLS: the client must present a certificate signed by `ca` whose subject CN
 *   equals `clientCN` or which carries the URI SAN `clientURISAN` (at least one must be set);
 * - `close({gracefulMs})` stops accepting, then spreads the disconnects evenly over
 *   `gracefulMs` (at most 300 s) so clients do not stampede the other Typhas; it resolves once
 *   every connection is closed.
 * Every timer runs on the injected clock, except the TLS handshake itself (node:tls's own timer,
 * set to `handshakeTimeoutMs`).
 */
import net from 'node:net';
import tls from 'node:tls';

import { realClock, type Clock, type Timer } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { VERSION } from '../runtime/version.ts';
import type { Breadcrumb, BreadcrumbSource } from './breadcrumb.ts';
import { DEFAULT_SERVER_COMPRESSION, type CompressionAlgorithm } from './compression.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame-codec.ts';
import { MAX_KVS_PER_MESSAGE } from './messages.ts';
import { SnapshotEncoder } from './snapshot-encoder.ts';
import { CrumbMessageCache, SharedDeltaStream } from './crumb-message-cache.ts';
import { shuffle } from './shuffle.ts';
import { SyncConnection, type SyncServerConfig } from './sync-connection.ts';
import { SyncServerMetrics } from './sync-server-metrics.ts';

/** Typha's default port (`syncproto.DefaultPort`). */
export const DEFAULT_TYPHA_PORT = 5473;
/** typha.md §4.3: a graceful shutdown drops its connections over at most 300 s. */
export const MAX_GRACEFUL_MS = 300_000;

export interface TyphaServerTls {
  /** PEM private key and certificate of the server. */
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
  /** PEM CA bundle that client certificates must chain to. */
  readonly ca: string | Buffer;
  /** Accept a client whose certificate's subject CN is this. */
  readonly clientCN?: string;
  /** Accept a client whose certificate carries this URI SAN. */
  readonly clientURISAN?: string;
}

export interface SyncServerOptions {
  readonly source: BreadcrumbSource;
  /** @default '0.0.0.0' */
  readonly host?: string;
  /** 0 picks an ephemeral port. @default 5473 */
  readonly port?: number;
  readonly tls?: TyphaServerTls;
  /** Typha `MaxConnectionsUpperLimit`. @default 10000 */
  readonly maxConns?: number;
  /** Typha: handshake timeout. @default 10_000 */
  readonly handshakeTimeoutMs?: number;
  /** Typha: per-message write timeout. @default 120_000 */
  readonly writeTimeoutMs?: number;
  /** Typha `ServerPingIntervalSecs`. @default 10_000 */
  readonly pingIntervalMs?: number;
  /** Typha `ServerPongTimeoutSecs`. @default 60_000 */
  readonly pongTimeoutMs?: number;
  /** Typha `ServerMaxFallBehindSecs`. @default 300_000 */
  readonly maxFallBehindMs?: number;
  /** Typha `ServerNewClientFallBehindGracePeriod`. @default 300_000 */
  readonly newClientGraceMs?: number;
  /** Typha `ServerMinBatchingAgeThresholdSecs`. @default 10 */
  readonly batchingAgeMs?: number;
  /** Typha `ServerMaxMessageSize`. @default 100 */
  readonly maxKVsPerMessage?: number;
  /** Typha `ConnectionDropIntervalSecs` (jittered ±10 %). @default 1_000 */
  readonly dropIntervalMs?: number;
  /** Largest frame the server sends (clients' frames are capped at MAX_CLIENT_FRAME_BYTES). @default 64 MiB (frame-codec.ts) */
  readonly maxFrameBytes?: number;
  /** Algorithms the server will use, in order of preference. @default ['deflate-raw'] (compression.ts) */
  readonly compression?: readonly CompressionAlgorithm[];
  /** @default realClock */
  readonly clock?: Clock;
  /** Picks the connection to drop and the jitter. @default Math.random */
  readonly random?: () => number;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
  /**
   * Observation only (the fan-out bench): called after the bytes of crumbs `from` … `to` (in
   * list order, inclusive) were accepted by connection `connId`'s socket — written without
   * backpressure, or drained. Every crumb after a connection's snapshot is reported exactly
   * once per connection, in order. Must not throw.
   */
  readonly onCrumbsWritten?: (connId: number, from: Breadcrumb, to: Breadcrumb) => void;
}

function positive(name: string, v: number): number {
  if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`SyncServer: ${name} must be a positive number, got ${v}`);
  return v;
}

function nonNegativeInt(name: string, v: number): number {
  if (!(Number.isSafeInteger(v) && v >= 0)) throw new RangeError(`SyncServer: ${name} must be a non-negative integer, got ${v}`);
  return v;
}

/** Whether a verified client certificate names an allowed identity. */
export function clientIdentityAllowed(cert: tls.PeerCertificate, allowed: Pick<TyphaServerTls, 'clientCN' | 'clientURISAN'>): boolean {
  const cn = cert.subject?.CN;
  if (allowed.clientCN !== undefined && allowed.clientCN !== '' && (Array.isArray(cn) ? cn.includes(allowed.clientCN) : cn === allowed.clientCN)) return true;
  if (allowed.clientURISAN !== undefined && allowed.clientURISAN !== '') {
    const sans = (cert.subjectaltname ?? '').split(', ');
    if (sans.includes(`URI:${allowed.clientURISAN}`)) return true;
  }
  return false;
}

export class SyncServer {
  readonly #source: BreadcrumbSource;
  readonly #host: string;
  readonly #port: number;
  readonly #tls: TyphaServerTls | undefined;
  readonly #config: SyncServerConfig;
  readonly #dropIntervalMs: number;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #metrics: SyncServerMetrics;
  readonly #log: Logger;
  readonly #snapshots: SnapshotEncoder;
  readonly #crumbMessages: CrumbMessageCache;
  readonly #sharedDeltas = new Map<CompressionAlgorithm, SharedDeltaStream>();
  readonly #connections = new Set<SyncConnection>();
  readonly #onCrumbsWritten: SyncServerOptions['onCrumbsWritten'];
  #maxConns: number;
  #server: net.Server | undefined;
  #dropTimer: Timer | undefined;
  #closing = false;
  #nextConnId = 1;

  constructor(opts: SyncServerOptions) {
    const {
      source,
      host = '0.0.0.0',
      port = DEFAULT_TYPHA_PORT,
      maxConns = 10_000,
      handshakeTimeoutMs = 10_000,
      writeTimeoutMs = 120_000,
      pingIntervalMs = 10_000,
      pongTimeoutMs = 60_000,
      maxFallBehindMs = 300_000,
      newClientGraceMs = 300_000,
      batchingAgeMs = 10,
      maxKVsPerMessage = MAX_KVS_PER_MESSAGE,
      dropIntervalMs = 1_000,
      maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
      compression = DEFAULT_SERVER_COMPRESSION,
      clock = realClock,
      random = Math.random,
      registry = newRegistry(),
      logger = silentLogger,
    } = opts;
    if (opts.tls !== undefined) {
      const t = opts.tls;
      if (!t.key || !t.cert || !t.ca) throw new TypeError('SyncServer: tls needs key, cert and ca (PEM)');
      if (!t.clientCN && !t.clientURISAN) throw new TypeError('SyncServer: tls needs clientCN or clientURISAN (or both) to check client certificates against');
    }
    nonNegativeInt('port', port);
    if (port > 65535) throw new RangeError(`SyncServer: port must be at most 65535, got ${port}`);
    this.#source = source;
    this.#onCrumbsWritten = opts.onCrumbsWritten;
    this.#host = host;
    this.#port = port;
    this.#tls = opts.tls;
    this.#maxConns = nonNegativeInt('maxConns', maxConns);
    if (!(Number.isSafeInteger(maxKVsPerMessage) && maxKVsPerMessage >= 1 && maxKVsPerMessage <= MAX_KVS_PER_MESSAGE)) {
      throw new RangeError(`SyncServer: maxKVsPerMessage must be an integer in [1, ${MAX_KVS_PER_MESSAGE}] (clients reject more), got ${maxKVsPerMessage}`);
    }
    this.#config = {
      handshakeTimeoutMs: positive('handshakeTimeoutMs', handshakeTimeoutMs),
      writeTimeoutMs: positive('writeTimeoutMs', writeTimeoutMs),
      pingIntervalMs: positive('pingIntervalMs', pingIntervalMs),
      pongTimeoutMs: positive('pongTimeoutMs', pongTimeoutMs),
      maxFallBehindMs: positive('maxFallBehindMs', maxFallBehindMs),
      newClientGraceMs: nonNegativeInt('newClientGraceMs', newClientGraceMs),
      batchingAgeMs: nonNegativeInt('batchingAgeMs', batchingAgeMs),
      maxKVsPerMessage,
      maxFrameBytes: positive('maxFrameBytes', maxFrameBytes),
      compression,
    };
    this.#dropIntervalMs = positive('dropIntervalMs', dropIntervalMs);
    this.#clock = clock;
    this.#random = random;
    this.#metrics = new SyncServerMetrics(registry);
    this.#log = logger.child({ component: 'typha-sync-server' });
    this.#snapshots = new SnapshotEncoder({ maxKVsPerMessage, maxFrameBytes, metrics: this.#metrics });
    this.#crumbMessages = new CrumbMessageCache(maxKVsPerMessage);
  }

  /** Open connections (handshaking or streaming). */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Connections that have their snapshot and receive deltas. */
  get streamingCount(): number {
    let n = 0;
    for (const c of this.#connections) if (c.streaming) n++;
    return n;
  }

  async listen(): Promise<{ port: number }> {
    if (this.#server !== undefined) throw new Error('SyncServer.listen: already listening');
    const server = this.#tls === undefined ? net.createServer((s) => this.#accept(s)) : this.#tlsServer(this.#tls);
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, this.#host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.#log.error({ err }, 'Typha listener error'));
    const port = (server.address() as net.AddressInfo).port;
    this.#log.info({ host: this.#host, port, tls: this.#tls !== undefined, maxConns: this.#maxConns }, 'Typha sync server listening');
    return { port };
  }

  /** The connection target (typha.md §4.3 `SetMaxConns`): refuses new ones over it and sheds the excess. */
  setMaxConns(n: number): void {
    nonNegativeInt('maxConns', n);
    if (n !== this.#maxConns) this.#log.info({ from: this.#maxConns, to: n, connections: this.#connections.size }, 'connection target changed');
    this.#maxConns = n;
    this.#scheduleDrop();
  }

  async close(options: { gracefulMs?: number } = {}): Promise<void> {
    const gracefulMs = Math.min(Math.max(0, options.gracefulMs ?? 0), MAX_GRACEFUL_MS);
    this.#closing = true;
    this.#dropTimer?.cancel();
    this.#dropTimer = undefined;
    const server = this.#server;
    const stopped = server === undefined ? Promise.resolve() : new Promise<void>((resolve) => server.close(() => resolve()));
    const all = [...this.#connections];
    this.#log.info({ connections: all.length, gracefulMs }, 'Typha sync server shutting down');
    if (gracefulMs > 0 && all.length > 0) {
      // Spread evenly: connection i (in random order) goes at (i+1)·gracefulMs/n.
      const step = gracefulMs / all.length;
      shuffle(all, this.#random);
      const timers = all.map((c, i) => this.#clock.setTimer(() => c.close('shutdown', 'graceful shutdown'), step * (i + 1)));
      await Promise.all(all.map((c) => c.done));
      for (const t of timers) t.cancel();
    } else {
      for (const c of all) c.close('shutdown', 'server shutting down');
    }
    await Promise.all(all.map((c) => c.done));
    await stopped;
  }

  #tlsServer(t: TyphaServerTls): net.Server {
    const server = tls.createServer(
      { key: t.key, cert: t.cert, ca: t.ca, requestCert: true, rejectUnauthorized: true, handshakeTimeout: this.#config.handshakeTimeoutMs },
      (socket) => {
        const cert = socket.getPeerCertificate();
        if (!socket.authorized || !clientIdentityAllowed(cert, t)) {
          this.#log.warn(
            { remote: `${socket.remoteAddress}:${socket.remotePort}`, cn: cert.subject?.CN, san: cert.subjectaltname, authorizationError: socket.authorizationError },
            'rejecting TLS client: certificate names neither the allowed CN nor the allowed URI SAN',
          );
          socket.destroy();
          return;
        }
        this.#accept(socket);
      },
    );
    // Refuse before spending a TLS handshake on a connection that would be refused anyway.
    server.on('connection', (raw: net.Socket) => {
      if (this.#closing || this.#connections.size >= this.#maxConns) this.#refuse(raw);
    });
    server.on('tlsClientError', (err, socket) => this.#log.info({ err: err.message, remote: socket.remoteAddress }, 'TLS handshake failed'));
    return server;
  }

  #refuse(socket: net.Socket): void {
    this.#metrics.connectionsRefused.inc();
    this.#log.warn({ remote: `${socket.remoteAddress}:${socket.remotePort}`, connections: this.#connections.size, maxConns: this.#maxConns }, 'refusing connection: at the connection limit');
    socket.destroy();
  }

  #accept(socket: net.Socket): void {
    if (socket.destroyed) return;
    if (this.#closing || this.#connections.size >= this.#maxConns) {
      this.#refuse(socket);
      return;
    }
    socket.setNoDelay(true);
    const id = this.#nextConnId++;
    const conn = new SyncConnection(
      id,
      socket,
      {
        source: this.#source,
        clock: this.#clock,
        config: this.#config,
        metrics: this.#metrics,
        snapshots: this.#snapshots,
        crumbMessages: this.#crumbMessages,
        sharedDeltas: (algorithm) => this.#sharedDelta(algorithm),
        log: this.#log,
        version: VERSION,
        ...(this.#onCrumbsWritten === undefined ? {} : { onCrumbsWritten: this.#onCrumbsWritten }),
      },
      (c) => {
        this.#connections.delete(c);
        this.#metrics.connectionsActive.set(this.#connections.size);
      },
    );
    this.#connections.add(conn);
    this.#metrics.connectionsAccepted.inc();
    this.#metrics.connectionsActive.set(this.#connections.size);
    conn.start();
    this.#scheduleDrop();
  }

  #sharedDelta(algorithm: CompressionAlgorithm): SharedDeltaStream {
    let stream = this.#sharedDeltas.get(algorithm);
    if (stream === undefined) {
      stream = new SharedDeltaStream(algorithm, this.#crumbMessages, this.#config.maxFrameBytes);
      this.#sharedDeltas.set(algorithm, stream);
    }
    return stream;
  }

  /** Arms the drop timer while above the target (one random drop per jittered interval). */
  #scheduleDrop(): void {
    if (this.#closing || this.#dropTimer !== undefined || this.#connections.size <= this.#maxConns) return;
    const jittered = this.#dropIntervalMs * (0.9 + 0.2 * this.#random());
    this.#dropTimer = this.#clock.setTimer(() => {
      this.#dropTimer = undefined;
      if (this.#closing || this.#connections.size <= this.#maxConns) return;
      const all = [...this.#connections];
      const victim = all[Math.floor(this.#random() * all.length)] as SyncConnection;
      this.#metrics.connectionsDropped.inc();
      this.#log.info({ connections: all.length, maxConns: this.#maxConns, hostname: victim.hostname }, 'dropping a connection to get down to the connection target');
      victim.close('rebalance', 'above the connection target');
      this.#scheduleDrop();
    }, jittered);
  }
}
