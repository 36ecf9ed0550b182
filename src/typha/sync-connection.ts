/**
 * One client of the sync server, from accept to close (typha.md §2.2, §2.5, §3):
 *
 *   hello (≤ handshake timeout) → server hello → [decoder-restart → ack] → shared snapshot →
 *   the crumb's sync status → deltas of each following crumb, forever.
 *
 * Guarantees:
 * - the client walks the shared breadcrumb list with its own cursor (`Breadcrumb.next`); there
 *   is no per-client queue — a slow client simply lags behind on the list;
 * - a client that keeps up (its crumb < `batchingAgeMs` older than the newest) gets one `kvs`
 *   message per crumb with deltas; a lagging one gets the deltas of consecutive crumbs merged
 *   into messages of at most `maxKVsPerMessage` (whole crumbs; a crumb is split only if it
 *   alone exceeds the limit); a status change always follows the deltas of its crumb;
 * - with compression, a client joins the shared delta stream (crumb-message-cache.ts
 *   `SharedDeltaStream`) at the first segment start it reaches, keeping up or lagging: the
 *   crumbs' messages compressed once for every client; it stays there, writing every published
 *   crumb's bytes at once when it lags, and its own compressor carries only what is
 *   per-connection (pings) between segments;
 * - a client more than `maxFallBehindMs` behind is disconnected, unless its snapshot finished
 *   less than `newClientGraceMs` ago (counted once per connection in `_grace_used`);
 * - liveness: a ping every `pingIntervalMs`; no pong within `pongTimeoutMs` of a ping being
 *   WRITTEN closes the connection (a ping queued behind a long snapshot write does not count
 *   against the client: the snapshot send is bounded by the write timeout instead);
 * - a compressed snapshot counts as absorbed only when the client acks the `decoder-restart`
 *   that ends it (the client acks after decoding every message before it): "written" to the
 *   socket is not "read" when the kernel's loopback buffers hold megabytes of it. Until that
 *   ack, pong watchdogs are not armed, and the ack must come within `writeTimeoutMs` of the
 *   snapshot's last frame being written (typha.md §2.3: a client that cannot absorb a write in
 *   120 s is disconnected, reason `write-failed`). After the ack, a ping already written gets
 *   the full `pongTimeoutMs` from the ack;
 * - every close has exactly one logged reason and one `tessera_typha_connections_closed` count;
 *   `onClose` is called synchronously from `close()`, so the server's count drops at once.
 */
import type { Socket } from 'node:net';

import type { Clock, Timer } from '../runtime/clock.ts';
import { every } from '../runtime/clock.ts';
import { Deferred } from '../runtime/deferred.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Breadcrumb, BreadcrumbSource } from './breadcrumb.ts';
import { negotiateCompression, type CompressionAlgorithm } from './compression.ts';
import { ConnectionClosedError, MessageReader, MessageWriter, WriteTimeoutError } from './message-stream.ts';
import { serverMaySend, SYNCER_TYPE_FELIX, type ClientHello, type Message } from './messages.ts';
import type { SerializedUpdate } from './serialized-update.ts';
import type { SnapshotEncoder } from './snapshot-encoder.ts';
import { MAX_CRUMBS_PER_WRITE, type CrumbMessageCache, type SharedCrumbFrames, type SharedDeltaStream, type TickMember, type TickWrite } from './crumb-message-cache.ts';
import type { SyncServerMetrics } from './sync-server-metrics.ts';
import type { SyncStatus } from '../syncer/index.ts';

/** The server's resolved limits (defaults in sync-server.ts). */
export interface SyncServerConfig {
  readonly handshakeTimeoutMs: number;
  readonly writeTimeoutMs: number;
  readonly pingIntervalMs: number;
  readonly pongTimeoutMs: number;
  readonly maxFallBehindMs: number;
  readonly newClientGraceMs: number;
  readonly batchingAgeMs: number;
  readonly maxKVsPerMessage: number;
  readonly maxFrameBytes: number;
  readonly compression: readonly CompressionAlgorithm[];
}

export interface SyncConnectionDeps {
  readonly source: BreadcrumbSource;
  readonly clock: Clock;
  readonly config: SyncServerConfig;
  readonly metrics: SyncServerMetrics;
  readonly snapshots: SnapshotEncoder;
  readonly crumbMessages: CrumbMessageCache;
  /** The server's shared compressed delta stream for an algorithm (one per algorithm). */
  readonly sharedDeltas: (algorithm: CompressionAlgorithm) => SharedDeltaStream;
  readonly log: Logger;
  readonly version: string;
  /** See `SyncServerOptions.onCrumbsWritten`. */
  readonly onCrumbsWritten?: (connId: number, from: Breadcrumb, to: Breadcrumb) => void;
}

/**
 * The largest frame a client may send. Clients send only hellos, acks and pongs (well under
 * 1 KiB); the limit bounds what a hostile or broken client can make the server buffer before
 * it is closed.
 */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024;

/** Why a connection closed; the label of `tessera_typha_connections_closed`. */
export type CloseReason =
  | 'handshake-timeout'
  | 'bad-hello'
  | 'malformed'
  | 'protocol'
  | 'peer-closed'
  | 'socket-error'
  | 'write-failed'
  | 'pong-timeout'
  | 'fell-behind'
  | 'rebalance'
  | 'shutdown';

class ConnectionClosed extends Error {
  override readonly name = 'ConnectionClosed';
}

/** Why a parked connection left the shared tick, and where it is on the crumb list. */
interface ParkExit {
  /** The last crumb whose bytes were written (or queued, when not `accepted`). */
  readonly at: Breadcrumb;
  /** The tick's write that made it leave, if any (a segment end, or backpressure). */
  readonly written?: TickWrite;
  /** The socket accepted `written` at once (else it is drained by the writer's queue). */
  readonly accepted?: boolean;
}

export class SyncConnection implements TickMember {
  readonly id: number;
  readonly #socket: Socket;
  readonly #deps: SyncConnectionDeps;
  readonly #onClose: (conn: SyncConnection) => void;
  readonly #log: Logger;
  readonly #reader: MessageReader;
  readonly #writer: MessageWriter;
  readonly #abort = new AbortController();
  readonly #hello = new Deferred<ClientHello>();
  #ack: Deferred<void> | undefined;
  #clientHello: ClientHello | undefined;
  #phase: 'hello' | 'handshake' | 'ack' | 'snapshot' | 'streaming' | 'closed' = 'hello';
  #timers: Timer[] = [];
  #pingQueued = false;
  #outstandingPing: { timestamp: number; writtenAt: number; watchdog: Timer | undefined } | undefined;
  /** Writing the snapshot or inside a shared delta segment: nothing of the connection's own stream may be queued. */
  #midSegment = false;
  /** The shared stream this connection joined (it leaves it only by closing). */
  #sharedStream: SharedDeltaStream | undefined;
  /** A ping came due mid-segment; it goes out at the segment's end. */
  #pingDeferred = false;
  /** The connection's own compressed stream carried something since the client's last restart. */
  #ownDirty = true;
  /** Armed from the last snapshot frame written until the client acks the restart ending it. */
  #snapshotAbsorbed: Timer | undefined;
  #closeReason: string | undefined;
  /** Parked on the shared stream's tick (see `tickWrite`): its position and how its loop resumes. */
  #park: { at: Breadcrumb; exit: Deferred<ParkExit> } | undefined;
  readonly #done = new Deferred<void>();

  constructor(id: number, socket: Socket, deps: SyncConnectionDeps, onClose: (conn: SyncConnection) => void) {
    this.id = id;
    this.#socket = socket;
    this.#deps = deps;
    this.#onClose = onClose;
    this.#log = deps.log.child({ connId: id, remote: `${socket.remoteAddress}:${socket.remotePort}` });
    const { clock, config, metrics } = deps;
    this.#reader = new MessageReader(socket, {
      clock,
      maxFrameBytes: MAX_CLIENT_FRAME_BYTES,
      maxKVsPerMessage: config.maxKVsPerMessage,
      onMessage: (m) => this.#onMessage(m),
      onError: (err) => this.close('malformed', `unreadable input: ${err.message}`),
    });
    this.#writer = new MessageWriter(socket, {
      clock,
      writeTimeoutMs: config.writeTimeoutMs,
      maxFrameBytes: config.maxFrameBytes,
      mayBeSent: (type) => serverMaySend(type as never, this.#clientHello),
      onWritten: (ms) => metrics.clientWriteLatencySecs.observe(ms / 1000),
    });
    socket.on('end', () => {
      const err = this.#reader.end();
      this.close(err === undefined ? 'peer-closed' : 'malformed', err === undefined ? 'client closed the connection' : `unreadable input: ${err.message}`);
    });
    socket.on('close', () => this.close('peer-closed', 'connection closed'));
    socket.on('error', (err) => this.close('socket-error', `socket error: ${err.message}`));
  }

  /** The client's hostname once it said hello. */
  get hostname(): string | undefined {
    return this.#clientHello?.hostname;
  }

  get streaming(): boolean {
    return this.#phase === 'streaming';
  }

  /** Resolves once the connection is closed and its resources released. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** Runs the conversation; never rejects (every failure is a close with a reason). */
  start(): void {
    void this.#run().catch((err: unknown) => {
      if (err instanceof ConnectionClosed) return;
      const writeFailed = err instanceof WriteTimeoutError || err instanceof ConnectionClosedError;
      this.close(writeFailed ? 'write-failed' : 'protocol', `connection failed: ${(err as Error).message}`);
    });
  }

  /** Closes the connection (idempotent); the first reason is the one logged and counted. */
  close(kind: CloseReason, reason: string): void {
    if (this.#closeReason !== undefined) return;
    this.#closeReason = reason;
    const wasStreaming = this.#phase === 'streaming';
    this.#phase = 'closed';
    const quiet = kind === 'peer-closed' || kind === 'shutdown';
    this.#log[quiet ? 'info' : 'warn']({ reason, kind, hostname: this.#clientHello?.hostname }, 'closing Typha connection');
    this.#deps.metrics.connectionsClosed.inc({ reason: kind });
    if (wasStreaming) this.#deps.metrics.connectionsStreaming.dec();
    for (const t of this.#timers) t.cancel();
    this.#outstandingPing?.watchdog?.cancel();
    this.#snapshotAbsorbed?.cancel();
    if (this.#sharedStream !== undefined) this.#sharedStream.members--;
    if (this.#park !== undefined) {
      this.#sharedStream?.unpark(this);
      this.#park.exit.reject(new ConnectionClosed(reason));
      this.#park = undefined;
    }
    this.#abort.abort(new ConnectionClosed(reason));
    this.#hello.reject(new ConnectionClosed(reason));
    this.#ack?.reject(new ConnectionClosed(reason));
    this.#reader.stop();
    this.#writer.close();
    this.#socket.destroy();
    this.#onClose(this);
    this.#done.resolve();
  }

  #onMessage(m: Message): void {
    if (this.#phase === 'closed') return;
    if (this.#phase === 'hello') {
      if (m.type !== 'client-hello') return this.close('protocol', `expected client-hello, got ${m.type}`);
      this.#phase = 'handshake';
      this.#hello.resolve(m);
      return;
    }
    switch (m.type) {
      case 'ack':
        // The first ack completes the handshake; later ones answer the restart that ends a
        // compressed snapshot, which the server does not wait for.
        if (this.#phase === 'ack') this.#ack?.resolve();
        else if (this.#snapshotAbsorbed !== undefined) this.#onSnapshotAbsorbed();
        return;
      case 'pong':
        return this.#onPong(m.pingTimestamp);
      default:
        return this.close('protocol', `unexpected ${m.type} from a client`);
    }
  }

  async #run(): Promise<void> {
    const { clock, config, metrics, source, snapshots, crumbMessages, sharedDeltas, version } = this.#deps;
    const handshake = clock.setTimer(() => this.close('handshake-timeout', `no handshake within ${config.handshakeTimeoutMs} ms`), config.handshakeTimeoutMs);
    this.#timers.push(handshake);

    const hello = await this.#hello.promise;
    if (hello.syncerType !== '' && hello.syncerType !== SYNCER_TYPE_FELIX) {
      return this.close('bad-hello', `unsupported syncer type ${JSON.stringify(hello.syncerType)} (this server serves only ${SYNCER_TYPE_FELIX})`);
    }
    this.#clientHello = hello;
    this.#log.info({ hostname: hello.hostname, info: hello.info, version: hello.version, clientConnId: hello.clientConnId }, 'Typha client said hello');
    await this.#writer.send({ type: 'server-hello', version, syncerType: SYNCER_TYPE_FELIX, serverConnId: this.id });

    const compression = hello.supportsDecoderRestart ? negotiateCompression(hello.supportedCompression, config.compression) : undefined;
    if (compression !== undefined) {
      this.#phase = 'ack';
      this.#ack = new Deferred<void>();
      await this.#writer.send({ type: 'decoder-restart', compression });
      await this.#ack.promise;
    }
    handshake.cancel();
    this.#phase = 'snapshot';
    // Nothing of the connection's own stream may be queued before the snapshot's frames or
    // between them and the restart after them (the client's decoder expects the snapshot's
    // stream there: a ping would be unreadable): a ping that comes due while the snapshot is
    // generated or written waits until the restart is queued.
    this.#midSegment = true;
    this.#timers.push(every(clock, config.pingIntervalMs, () => this.#sendPing()));

    let crumb = source.latest();
    const started = clock.now();
    const snapshot = await snapshots.get(crumb, compression);
    // Pre-encoded frames bypass the writer's guard; the decoder-restart they end with exists
    // only when `compression` is set, i.e. only for a client that announced supportsDecoderRestart.
    await this.#writer.sendFrames(snapshot.frames);
    if (compression !== undefined) {
      // Written is not yet read: the ack of the restart ending the snapshot says it was.
      this.#snapshotAbsorbed = clock.setTimer(
        () => this.close('write-failed', `client did not read its snapshot within ${config.writeTimeoutMs} ms of it being written`),
        config.writeTimeoutMs,
      );
      // The snapshot's own compressed stream ended with a restart; ours starts now.
      await this.#writer.restart(compression);
    }
    this.#midSegment = false;
    this.#sendDeferredPing();
    const snapshotDone = clock.now();
    metrics.clientSnapshotSendSecs.observe((snapshotDone - started) / 1000);
    this.#log.info({ seq: crumb.seq, kvs: snapshot.kvs, messages: snapshot.messages, wireBytes: snapshot.wireBytes, compression: compression ?? 'none' }, 'sent snapshot');

    let status: SyncStatus = crumb.syncStatus;
    await this.#writer.send({ type: 'sync-status', status });
    if (this.#phase !== 'snapshot') throw new ConnectionClosed(this.#closeReason ?? 'closed');
    this.#phase = 'streaming';
    metrics.connectionsStreaming.inc();

    const shared = compression === undefined ? undefined : sharedDeltas(compression);
    const graceUntil = snapshotDone + config.newClientGraceMs;
    let graceCounted = false;
    for (;;) {
      // Caught up inside a segment of a coalescing shared stream, with nothing of its own
      // queued, a connection parks on the stream's tick: the tick writes a shared buffer for it
      // synchronously, with every other connection at the same crumb, until a write meets
      // backpressure or ends the segment (then this loop resumes: waits for the drain, restarts
      // its own stream, and catches up from the crumb list like any lagging connection).
      // No promise or closure per connection per tick while parked.
      if (shared !== undefined && this.#sharedStream === shared && shared.coalescing && this.#midSegment && crumb.nextIfPublished === undefined && this.#writer.idle && compression !== undefined) {
        const exit = await this.#parkOn(shared, crumb);
        crumb = exit.at;
        status = crumb.syncStatus;
        const w = exit.written;
        if (w !== undefined) {
          if (exit.accepted !== true) {
            await this.#writer.flushed();
            this.#deps.onCrumbsWritten?.(this.id, w.from, w.to);
          }
          if (w.endsSegment) await this.#endSegment(compression);
        }
        continue;
      }
      // On a coalescing shared stream a connection that is not parked (joining, or catching up)
      // writes only on the shared tick: it waits for the tick first and then takes every crumb
      // published by then — one wake-up per tick instead of one per crumb and another for the
      // tick. If nothing was published by the tick it waits for the next crumb and then for a
      // tick, as before.
      let ticked = false;
      if (shared !== undefined && this.#sharedStream !== undefined && shared.coalescing && crumb.nextIfPublished === undefined) {
        await shared.tick(clock);
        if (this.#abort.signal.aborted) throw this.#abort.signal.reason;
        ticked = crumb.nextIfPublished !== undefined;
      }
      crumb = await crumb.next(this.#abort.signal);
      const behindMs = source.latest().timestamp - crumb.timestamp;
      metrics.clientLatencySecs.observe(Math.max(0, behindMs) / 1000);
      if (behindMs > config.maxFallBehindMs) {
        if (clock.now() >= graceUntil) {
          return this.close('fell-behind', `client is ${behindMs} ms behind the newest breadcrumb (limit ${config.maxFallBehindMs} ms)`);
        }
        if (!graceCounted) {
          graceCounted = true;
          metrics.connectionsGraceUsed.inc();
          this.#log.info({ behindMs }, 'client fell behind within its post-snapshot grace period');
        }
      }
      const frames = shared?.framesFor(crumb, status);
      // A client joins the shared stream at a segment's first crumb, whether it keeps up there
      // or lags, and once in it stays: shared bytes cost the server nothing per connection but
      // the write, so instead of merged batches a lagging client takes every published crumb
      // (up to MAX_CRUMBS_PER_WRITE) in one write. (Until it reaches a segment start a lagging client gets merged
      // batches on its own stream, as Typha's. Only joining when caught up fed back on itself
      // at scale: per-connection compression of lagging clients took the CPU that would have
      // let them catch up — 1,000 clients at 1,000 updates/s stayed 80 s behind.)
      if (frames !== undefined && shared !== undefined && compression !== undefined && (this.#midSegment || frames.startsSegment)) {
        if (this.#sharedStream === undefined) {
          this.#sharedStream = shared;
          shared.members++;
        }
        if (shared.coalescing && !ticked) await shared.tick(clock);
        const from = crumb;
        const parts = [frames];
        for (let next = crumb.nextIfPublished; next !== undefined && parts.length < MAX_CRUMBS_PER_WRITE; next = crumb.nextIfPublished) {
          // Every published crumb, not only those already compressed: they are queued on the
          // segment's one compressor, so waiting for them costs only that compression, while
          // taking only finished ones left a crowd woken by one tick with one crumb each
          // (the others were compressing) — fewer crumbs per tick than were published.
          const f = shared.framesFor(next, crumb.syncStatus);
          if (f === undefined) break;
          parts.push(f);
          crumb = next;
        }
        await this.#sendShared(parts, compression);
        this.#deps.onCrumbsWritten?.(this.id, from, crumb);
        status = crumb.syncStatus;
        continue;
      }
      this.#ownDirty = true;
      const first = crumb;
      const kvs: SerializedUpdate[] = [...crumb.deltas];
      if (behindMs >= config.batchingAgeMs) {
        for (let next = crumb.nextIfPublished; next !== undefined; next = crumb.nextIfPublished) {
          if (crumb.syncStatus !== status || kvs.length + next.deltas.length > config.maxKVsPerMessage) break;
          crumb = next;
          kvs.push(...crumb.deltas);
        }
      }
      if (crumb === first) {
        // One crumb: its messages are encoded once for every client.
        for (const m of crumbMessages.kvsMessages(crumb)) {
          metrics.kvsPerMsg.observe(m.count);
          await this.#writer.sendEncoded('kvs', m.bytes);
        }
      } else {
        for (let i = 0; i < kvs.length; i += config.maxKVsPerMessage) {
          const batch = kvs.slice(i, i + config.maxKVsPerMessage);
          metrics.kvsPerMsg.observe(batch.length);
          await this.#writer.send({ type: 'kvs', kvs: batch });
        }
      }
      if (crumb.syncStatus !== status) {
        status = crumb.syncStatus;
        await this.#writer.send({ type: 'sync-status', status });
      }
      this.#deps.onCrumbsWritten?.(this.id, first, crumb);
    }
  }

  /**
   * Writes a crumb's part of the shared delta stream. Joining (at a segment's first crumb) ends
   * the connection's own stream with a restart if it carried anything, so the client's decoder
   * is fresh; leaving (the segment ended with a restart) starts a fresh own stream. In between
   * nothing else is written: a ping waits for the segment's end (≤ SEGMENT_MS of crumbs).
   */
  async #sendShared(crumbs: readonly SharedCrumbFrames[], compression: CompressionAlgorithm): Promise<void> {
    if (!this.#midSegment) {
      this.#midSegment = true;
      if (this.#ownDirty) await this.#writer.send({ type: 'decoder-restart', compression });
    }
    const bytes = await Promise.all(crumbs.map((c) => c.bytes));
    for (const c of crumbs) for (const n of c.kvsCounts) this.#deps.metrics.kvsPerMsg.observe(n);
    await this.#writer.sendFrames(bytes);
    // Own messages may follow only if the last crumb written ended a segment (any earlier
    // segment end is followed by the next segment's first crumb: segments are contiguous).
    if (!(crumbs.at(-1) as SharedCrumbFrames).endsSegment) return;
    await this.#endSegment(compression);
  }

  /** The shared bytes written last ended a segment with a restart: a fresh own stream starts. */
  async #endSegment(compression: CompressionAlgorithm): Promise<void> {
    await this.#writer.restart(compression);
    this.#ownDirty = false;
    this.#midSegment = false;
    this.#sendDeferredPing();
  }

  /** Parks on `shared`'s tick at `at`; resolves when the connection leaves it, rejects when it closes. */
  #parkOn(shared: SharedDeltaStream, at: Breadcrumb): Promise<ParkExit> {
    const exit = new Deferred<ParkExit>();
    this.#park = { at, exit };
    shared.park(this, at, this.#deps.clock);
    return exit.promise;
  }

  /**
   * `TickMember`: called synchronously by the shared tick with the bytes of every crumb after
   * this connection's position. Observes what the per-crumb path observes (how far behind,
   * kvs per message, the write's time) and writes them with one `socket.write`. Stays parked
   * unless the write met backpressure or ended a segment, or the connection is further behind
   * than `maxFallBehindMs` (its loop then applies the fell-behind rule, grace included).
   */
  tickWrite(w: TickWrite): boolean {
    const park = this.#park;
    if (park === undefined || this.#phase === 'closed') return false;
    const { metrics, source, config } = this.#deps;
    const behindMs = source.latest().timestamp - w.from.timestamp;
    if (behindMs > config.maxFallBehindMs) {
      this.#leavePark({ at: park.at });
      return false;
    }
    metrics.clientLatencySecs.observe(Math.max(0, behindMs) / 1000);
    for (const n of w.kvsCounts) metrics.kvsPerMsg.observe(n);
    const accepted = this.#writer.writeNow(w.bytes);
    if (accepted) this.#deps.onCrumbsWritten?.(this.id, w.from, w.to);
    if (accepted && !w.endsSegment) {
      park.at = w.to;
      return true;
    }
    this.#leavePark({ at: w.to, written: w, accepted });
    return false;
  }

  /** `TickMember`: the tick cannot serve this connection; its loop resumes where it is. */
  tickResume(): void {
    const park = this.#park;
    if (park !== undefined) this.#leavePark({ at: park.at });
  }

  #leavePark(exit: ParkExit): void {
    const park = this.#park as { exit: Deferred<ParkExit> };
    this.#park = undefined;
    park.exit.resolve(exit);
  }

  #sendDeferredPing(): void {
    if (!this.#pingDeferred) return;
    this.#pingDeferred = false;
    this.#sendPing();
  }

  #sendPing(): void {
    if (this.#pingQueued || this.#outstandingPing !== undefined || this.#phase === 'closed') return;
    if (this.#midSegment) {
      this.#pingDeferred = true;
      return;
    }
    this.#ownDirty = true;
    const { clock } = this.#deps;
    const timestamp = clock.now();
    this.#pingQueued = true;
    this.#writer.send({ type: 'ping', timestamp }).then(
      () => {
        this.#pingQueued = false;
        if (this.#phase === 'closed') return;
        // Behind an unread snapshot the ping waits for the client to reach it: armed on the ack.
        this.#outstandingPing = { timestamp, writtenAt: clock.now(), watchdog: this.#snapshotAbsorbed === undefined ? this.#pongWatchdog() : undefined };
      },
      (err: Error) => this.close('write-failed', `ping write failed: ${err.message}`),
    );
  }

  #pongWatchdog(): Timer {
    const { clock, config } = this.#deps;
    return clock.setTimer(() => this.close('pong-timeout', `no pong within ${config.pongTimeoutMs} ms of a ping`), config.pongTimeoutMs);
  }

  /** The client decoded its whole snapshot: liveness is the pong timeout's again. */
  #onSnapshotAbsorbed(): void {
    this.#snapshotAbsorbed?.cancel();
    this.#snapshotAbsorbed = undefined;
    const ping = this.#outstandingPing;
    if (ping !== undefined && ping.watchdog === undefined) ping.watchdog = this.#pongWatchdog();
  }

  #onPong(pingTimestamp: number): void {
    const ping = this.#outstandingPing;
    if (ping === undefined || ping.timestamp !== pingTimestamp) {
      // An answer to a ping whose write had not completed yet, or a stale one: harmless.
      return;
    }
    ping.watchdog?.cancel();
    this.#outstandingPing = undefined;
    this.#deps.metrics.pingLatency.observe((this.#deps.clock.now() - ping.writtenAt) / 1000);
  }
}
