/**
 * Test helpers for the Typha wire over real loopback TCP: a scriptable raw client (it can send
 * anything, including garbage, and records everything it receives), a condition poller, and
 * throwaway certificates made with Debian's `openssl`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { pino } from 'pino';
import type { Registry } from 'prom-client';

import type { Clock } from '../../src/runtime/clock.ts';
import { realClock } from '../../src/runtime/clock.ts';
import type { Logger } from '../../src/runtime/logger.ts';
import type { CompressionAlgorithm } from '../../src/typha/compression.ts';
import { MessageReader, MessageWriter } from '../../src/typha/message-stream.ts';
import type { ClientHello, Message } from '../../src/typha/messages.ts';
import type { SerializedUpdate } from '../../src/typha/serialized-update.ts';

/** Resolves once `cond()` holds; rejects after `timeoutMs` of real time naming `what`. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export function hello(overrides: Partial<ClientHello> = {}): ClientHello {
  return {
    type: 'client-hello',
    hostname: 'node-1',
    info: 'test',
    version: 'test',
    syncerType: 'felix',
    supportsDecoderRestart: true,
    supportedCompression: ['deflate-raw'],
    clientConnId: 1,
    ...overrides,
  };
}

export interface RawClientOptions {
  /** Answer pings. @default true */
  readonly pong?: boolean;
  /** Follow decoder-restarts (and ack them). @default true */
  readonly followRestarts?: boolean;
  readonly clock?: Clock;
}

export class RawClient {
  readonly socket: net.Socket;
  readonly received: Message[] = [];
  closed = false;
  readonly #writer: MessageWriter;
  readonly #reader: MessageReader;

  private constructor(socket: net.Socket, opts: RawClientOptions) {
    const { pong = true, followRestarts = true, clock = realClock } = opts;
    this.socket = socket;
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => (this.closed = true));
    this.#writer = new MessageWriter(socket, { clock, writeTimeoutMs: 60_000, maxFrameBytes: 64 << 20 });
    this.#reader = new MessageReader(socket, {
      clock,
      maxFrameBytes: 64 << 20,
      maxKVsPerMessage: 100,
      onError: () => socket.destroy(),
      onMessage: (m) => {
        this.received.push(m);
        if (m.type === 'decoder-restart' && followRestarts) {
          this.#reader.restart(m.compression === 'none' ? undefined : (m.compression as CompressionAlgorithm));
          void this.send({ type: 'ack' });
        }
        if (m.type === 'ping' && pong) void this.send({ type: 'pong', pingTimestamp: m.timestamp, pongTimestamp: 0 });
      },
    });
  }

  static async connect(port: number, opts: RawClientOptions = {}): Promise<RawClient> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawClient(socket, opts);
  }

  send(msg: Message): Promise<void> {
    return this.#writer.send(msg).catch(() => undefined);
  }

  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  of<T extends Message['type']>(type: T): Array<Extract<Message, { type: T }>> {
    return this.received.filter((m): m is Extract<Message, { type: T }> => m.type === type);
  }

  /** Every KV received, in order. */
  kvs(): SerializedUpdate[] {
    return this.of('kvs').flatMap((m) => m.kvs);
  }

  close(): void {
    this.#reader.stop();
    this.#writer.close();
    this.socket.destroy();
  }
}

export interface TestCerts {
  readonly dir: string;
  readonly ca: Buffer;
  readonly serverKey: Buffer;
  readonly serverCert: Buffer;
  /** CN `typha-client`, URI SAN `spiffe://cluster.local/ns/kube-system/sa/typha-client`. */
  readonly goodKey: Buffer;
  readonly goodCert: Buffer;
  /** CN `intruder`, URI SAN `spiffe://cluster.local/ns/default/sa/intruder`, same CA. */
  readonly wrongKey: Buffer;
  readonly wrongCert: Buffer;
  /** CN `typha-client`, but signed by another CA. */
  readonly rogueKey: Buffer;
  readonly rogueCert: Buffer;
  cleanup(): void;
}

/** A CA, a server certificate for 127.0.0.1 / `typha-server`, and client certificates, in a temp dir. */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'typha-certs-'));
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = (name: string): void => ssl('req', '-x509', ...ec, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-subj', `/CN=${name}`, '-days', '1');
  const leaf = (name: string, cn: string, san: string, caName: string): void => {
    ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.crt`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
  };
  ca('test-ca');
  ca('rogue-ca');
  leaf('server', 'typha-server', 'DNS:typha-server,IP:127.0.0.1', 'test-ca');
  leaf('good', 'typha-client', 'URI:spiffe://cluster.local/ns/kube-system/sa/typha-client', 'test-ca');
  leaf('wrong', 'intruder', 'URI:spiffe://cluster.local/ns/default/sa/intruder', 'test-ca');
  leaf('rogue', 'typha-client', 'URI:spiffe://cluster.local/ns/kube-system/sa/typha-client', 'rogue-ca');
  const r = (f: string): Buffer => readFileSync(join(dir, f));
  return {
    dir,
    ca: r('test-ca.crt'),
    serverKey: r('server.key'),
    serverCert: r('server.crt'),
    goodKey: r('good.key'),
    goodCert: r('good.crt'),
    wrongKey: r('wrong.key'),
    wrongCert: r('wrong.crt'),
    rogueKey: r('rogue.key'),
    rogueCert: r('rogue.crt'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A logger whose records (parsed JSON lines) the test can inspect. */
export function captureLogger(): { logger: Logger; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void records.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, records };
}

/** The value of a counter or gauge (summed over label sets matching `labels`), or a histogram's count. */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  const matching = values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  const counts = matching.filter((v) => (v as { metricName?: string }).metricName?.endsWith('_count'));
  return (counts.length > 0 ? counts : matching).reduce((n, v) => n + v.value, 0);
}
