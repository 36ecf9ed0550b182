/**
 * The node agent's Typha client (typha.md §5): a syncer that gets its updates from a Typha
 * instead of watching the API server, and survives a Typha going away.
 *
 * Guarantees:
 * - connects to one of `addresses()` (re-read before every connection, tried in random order,
 *   the one just lost last), says hello, acknowledges every `decoder-restart` and switches its
 *   decoder there, passes `kvs` to `callbacks.onUpdates` and `sync-status` to
 *   `callbacks.onStatusUpdated` through the dedupe buffer (resync-buffer.ts), and answers every
 *   ping at once;
 * - on any disconnect — server gone, protocol error, no message for `readTimeoutMs` (the server
 *   pings every 10 s) — it connects to another address and RESYNCS IN PLACE: the consumer is
 *   never torn down and sees exactly the differences between what it had and the new server's
 *   view (synthesised deletions included);
 * - the status passed on never regresses because of a reconnect: once the consumer has seen
 *   `in-sync`, a new connection's statuses before its own `in-sync` are withheld (within one
 *   connection they pass through as sent; see resync-buffer.ts for why);
 * - a connection that failed before its snapshot completed is followed by a capped, jittered
 *   backoff (runtime/backoff.ts); after a connection that worked, the next attempt is immediate;
 * - `run` resolves once `signal` aborts and the connection is closed.
 */
import net from 'node:net';
import tls from 'node:tls';

import { Counter, type Registry } from 'prom-client';

import { Backoff, type BackoffOptions } from '../runtime/backoff.ts';
import { realClock, sleep, type Clock, type Timer } from '../runtime/clock.ts';
import type { LivenessProbe } from '../runtime/liveness.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate, newRegistry } from '../runtime/metrics.ts';
import { VERSION } from '../runtime/version.ts';
import { COMPRESSION_NONE, isCompressionAlgorithm, SUPPORTED_COMPRESSION, type CompressionAlgorithm } from './compression.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame-codec.ts';
import { MessageReader, MessageWriter } from './message-stream.ts';
import { clientMaySend, MAX_KVS_PER_MESSAGE, SYNCER_TYPE_FELIX, type Message } from './messages.ts';
import { ResyncBuffer } from './resync-buffer.ts';
import { shuffle } from './shuffle.ts';
import type { Syncer, SyncerCallbacks } from '../syncer/index.ts';

export interface TyphaClientTls {
  /** PEM key and certificate the client presents. */
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
  /** PEM CA bundle the server's certificate must chain to. */
  readonly ca: string | Buffer;
  /** The name the server's certificate must carry. @default the address's host */
  readonly serverName?: string;
}

export interface SyncClientOptions {
  /** `host:port` (`[v6]:port`) of the Typhas; re-read before every connection. */
  readonly addresses: () => Promise<readonly string[]> | readonly string[];
  /** The node this client runs on (sent in the hello). */
  readonly hostname: string;
  readonly tls?: TyphaClientTls;
  /** @default 'tessera-agent' */
  readonly info?: string;
  /** Algorithms offered, in preference order; [] offers none. @default ['deflate-raw', 'gzip', 'brotli'] */
  readonly compression?: readonly CompressionAlgorithm[];
  /** Connect + hello + restart acknowledgement. @default 10_000 (Typha's handshake timeout) */
  readonly handshakeTimeoutMs?: number;
  /** Silence after which the server is presumed gone (three of its 10 s pings). @default 30_000 */
  readonly readTimeoutMs?: number;
  /** @default 10_000 */
  readonly writeTimeoutMs?: number;
  /** Between failed connection attempts. @default runtime/backoff.ts defaults (800 ms doubling to 30 s, jittered) */
  readonly backoff?: BackoffOptions;
  /** @default 64 MiB */
  readonly maxFrameBytes?: number;
  /** How long handling one received message may take before the agent is not live. @default 60_000 */
  readonly livenessTimeoutMs?: number;
  /** @default realClock */
  readonly clock?: Clock;
  /** Address order. @default Math.random */
  readonly random?: () => number;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

/** Splits `host:port` / `[v6]:port`; throws a TypeError naming the address. */
export function parseTyphaAddress(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || !(port > 0 && port <= 65535)) throw new TypeError(`Typha address ${JSON.stringify(address)}: expected host:port or [ipv6]:port`);
  return { host: m[1] as string, port };
}

class SessionEnded extends Error {
  override readonly name = 'SessionEnded';
}

interface SessionResult {
  /** The connection delivered its snapshot (and the status after it). */
  readonly synced: boolean;
  readonly reason: string;
}

export class SyncClient implements Syncer {
  readonly #opts: Required<Omit<SyncClientOptions, 'tls' | 'backoff' | 'registry' | 'logger'>> & Pick<SyncClientOptions, 'tls' | 'backoff'>;
  readonly #log: Logger;
  readonly #buffer: ResyncBuffer;
  readonly #connections: Counter<'result'>;
  readonly #clock: Clock;
  #reader: MessageReader | undefined;
  #diedAt: number | undefined;
  #nextConnId = 1;

  constructor(opts: SyncClientOptions, callbacks: SyncerCallbacks) {
    const {
      addresses,
      hostname,
      info = 'tessera-agent',
      compression = SUPPORTED_COMPRESSION,
      handshakeTimeoutMs = 10_000,
      readTimeoutMs = 30_000,
      writeTimeoutMs = 10_000,
      maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
      livenessTimeoutMs = 60_000,
      clock = realClock,
      random = Math.random,
      registry = newRegistry(),
      logger = silentLogger,
    } = opts;
    if (hostname === '') throw new TypeError('SyncClient: hostname must not be empty');
    for (const [name, v] of Object.entries({ handshakeTimeoutMs, readTimeoutMs, writeTimeoutMs, maxFrameBytes, livenessTimeoutMs })) {
      if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`SyncClient: ${name} must be a positive number, got ${v}`);
    }
    this.#opts = { addresses, hostname, info, compression, handshakeTimeoutMs, readTimeoutMs, writeTimeoutMs, maxFrameBytes, livenessTimeoutMs, clock, random, tls: opts.tls, backoff: opts.backoff };
    this.#clock = clock;
    this.#log = logger.child({ component: 'typha-sync-client' });
    const registers = [registry];
    const counter = (name: string, help: string): Counter => getOrCreate(registry, name, () => new Counter({ name, help, registers }));
    this.#connections = getOrCreate(
      registry,
      'tessera_typha_client_connections',
      () => new Counter({ name: 'tessera_typha_client_connections', help: 'Connections to Typha, by result (synced: delivered a snapshot; failed: did not).', labelNames: ['result'], registers }),
    );
    const skipped = counter('tessera_typha_client_kvs_skipped', 'KVs not passed on because they equal what the consumer already has.');
    const dropped = counter('tessera_typha_client_kvs_dropped', 'KVs dropped because their value could not be parsed.');
    const deletes = counter('tessera_typha_client_synthesised_deletes', 'Deletions synthesised after an in-place resync for keys the new Typha did not re-send.');
    const resyncs = counter('tessera_typha_client_resyncs', 'In-place resyncs completed after a reconnect.');
    this.#buffer = new ResyncBuffer(callbacks, this.#log, {
      onSkipped: (n) => skipped.inc(n),
      onDropped: () => dropped.inc(),
      onSynthesisedDeletes: (n) => deletes.inc(n),
      onResyncDone: () => resyncs.inc(),
    });
  }

  /**
   * Live while every received message is handled within `livenessTimeoutMs`. Waiting for a
   * Typha (connecting, backing off, an idle stream) is not stuck: that is outside the process,
   * and the read timeout bounds it. A `run` that died on an unexpected error is stuck.
   */
  get livenessProbe(): LivenessProbe {
    return {
      timeoutMs: this.#opts.livenessTimeoutMs,
      pendingSince: () => this.#diedAt ?? this.#reader?.pendingSince,
    };
  }

  /** `livenessProbe` as the `Syncer` contract lists it, under the name the agent's /livez has always used. */
  get livenessProbes(): ReadonlyArray<{ readonly name: string; readonly probe: LivenessProbe }> {
    return [{ name: 'typha client', probe: this.livenessProbe }];
  }

  async run(signal: AbortSignal): Promise<void> {
    try {
      await this.#loop(signal);
    } catch (err) {
      this.#diedAt = this.#clock.now();
      this.#log.error({ err }, 'Typha client loop failed');
      throw err;
    }
  }

  async #loop(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.#clock, { ...this.#opts.backoff, random: this.#opts.random });
    let lost: string | undefined;
    while (!signal.aborted) {
      let addresses: string[];
      try {
        addresses = [...(await this.#opts.addresses())];
      } catch (err) {
        this.#log.warn({ err: (err as Error).message }, 'cannot list Typha addresses');
        addresses = [];
      }
      shuffle(addresses, this.#opts.random);
      if (lost !== undefined && addresses.length > 1 && addresses.includes(lost)) addresses = [...addresses.filter((a) => a !== lost), lost];
      let synced = false;
      for (const address of addresses) {
        if (signal.aborted) return;
        const result = await this.#session(address, signal);
        this.#connections.inc({ result: result.synced ? 'synced' : 'failed' });
        lost = address;
        if (signal.aborted) return;
        this.#log.warn({ address, reason: result.reason, synced: result.synced }, 'Typha connection ended; reconnecting');
        if (result.synced) {
          synced = true;
          backoff.reset();
          break;
        }
      }
      if (synced) continue;
      if (addresses.length === 0) this.#log.warn('no Typha addresses');
      try {
        await sleep(this.#clock, backoff.next(), signal);
      } catch {
        return;
      }
    }
  }

  /** One connection, from connect to close; never rejects. */
  async #session(address: string, signal: AbortSignal): Promise<SessionResult> {
    const { clock, handshakeTimeoutMs, readTimeoutMs, writeTimeoutMs, maxFrameBytes, compression, hostname, info } = this.#opts;
    let target: { host: string; port: number };
    try {
      target = parseTyphaAddress(address);
    } catch (err) {
      return { synced: false, reason: (err as Error).message };
    }
    const connId = this.#nextConnId++;
    const log = this.#log.child({ address, clientConnId: connId });
    const socket = this.#connect(target);
    let synced = false;
    let helloSeen = false;
    const state = { sentHello: false, unackedRestarts: 0, unansweredPings: 0 };
    let endSession!: (reason: string) => void;
    const ended = new Promise<string>((resolve) => (endSession = resolve));
    const timers: Timer[] = [];
    let readTimer: Timer | undefined;
    const armReadTimer = (): void => {
      readTimer?.cancel();
      readTimer = clock.setTimer(() => endSession(`no message from Typha within ${readTimeoutMs} ms`), readTimeoutMs);
    };
    const fail = (reason: string): never => {
      endSession(reason);
      throw new SessionEnded(reason);
    };

    const writer = new MessageWriter(socket, { clock, writeTimeoutMs, maxFrameBytes, mayBeSent: (t) => clientMaySend(t as never, state) });
    const send = (msg: Message): void => {
      writer.send(msg).catch((err: Error) => endSession(`write failed: ${err.message}`));
    };
    const reader = new MessageReader(socket, {
      clock,
      maxFrameBytes,
      maxKVsPerMessage: MAX_KVS_PER_MESSAGE,
      onError: (err) => endSession(err instanceof SessionEnded ? err.message : `unreadable input from Typha: ${err.message}`),
      onMessage: (m) => {
        armReadTimer();
        switch (m.type) {
          case 'server-hello':
            if (helloSeen) fail('a second server-hello');
            if (m.syncerType !== '' && m.syncerType !== SYNCER_TYPE_FELIX) fail(`Typha serves syncer type ${JSON.stringify(m.syncerType)}, not ${SYNCER_TYPE_FELIX}`);
            helloSeen = true;
            handshake.cancel();
            log.info({ serverVersion: m.version, serverConnId: m.serverConnId }, 'connected to Typha');
            this.#buffer.startSession();
            return;
          case 'decoder-restart': {
            if (!helloSeen) fail('decoder-restart before server-hello');
            const c = m.compression;
            if (c !== COMPRESSION_NONE && !(isCompressionAlgorithm(c) && compression.includes(c))) fail(`Typha chose compression ${JSON.stringify(c)}, which this client did not offer`);
            reader.restart(c === COMPRESSION_NONE ? undefined : (c as CompressionAlgorithm));
            state.unackedRestarts++;
            send({ type: 'ack' });
            state.unackedRestarts--;
            return;
          }
          case 'kvs':
            if (!helloSeen) fail('kvs before server-hello');
            this.#buffer.onKVs(m.kvs);
            return;
          case 'sync-status':
            if (!helloSeen) fail('sync-status before server-hello');
            if (!synced) log.info({ status: m.status, keys: this.#buffer.size }, 'Typha snapshot received');
            synced = true;
            this.#buffer.onStatus(m.status);
            return;
          case 'ping':
            state.unansweredPings++;
            send({ type: 'pong', pingTimestamp: m.timestamp, pongTimestamp: clock.now() });
            state.unansweredPings--;
            return;
          default:
            fail(`unexpected ${m.type} from Typha`);
        }
      },
    });
    const handshake = clock.setTimer(() => endSession(`no server-hello within ${handshakeTimeoutMs} ms`), handshakeTimeoutMs);
    timers.push(handshake);
    const onAbort = (): void => endSession('client stopping');
    signal.addEventListener('abort', onAbort, { once: true });
    socket.on('error', (err) => endSession(`socket error: ${err.message}`));
    socket.on('end', () => {
      const err = reader.end();
      endSession(err === undefined ? 'Typha closed the connection' : `Typha closed the connection mid-frame: ${err.message}`);
    });
    socket.on('close', () => endSession('connection closed'));
    socket.once(this.#opts.tls === undefined ? 'connect' : 'secureConnect', () => {
      state.sentHello = false;
      send({
        type: 'client-hello',
        hostname,
        info,
        version: VERSION,
        syncerType: SYNCER_TYPE_FELIX,
        supportsDecoderRestart: true,
        supportedCompression: compression,
        clientConnId: connId,
      });
      state.sentHello = true;
      armReadTimer();
    });
    this.#reader = reader;

    const reason = await ended;
    signal.removeEventListener('abort', onAbort);
    for (const t of timers) t.cancel();
    readTimer?.cancel();
    reader.stop();
    writer.close();
    socket.destroy();
    if (this.#reader === reader) this.#reader = undefined;
    return { synced, reason };
  }

  #connect(target: { host: string; port: number }): net.Socket {
    const t = this.#opts.tls;
    if (t === undefined) return net.connect({ host: target.host, port: target.port, noDelay: true });
    const servername = t.serverName ?? (net.isIP(target.host) === 0 ? target.host : undefined);
    return tls.connect({ host: target.host, port: target.port, key: t.key, cert: t.cert, ca: t.ca, ...(servername === undefined ? {} : { servername }) });
  }
}
