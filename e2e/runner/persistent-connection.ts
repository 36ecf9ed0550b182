/**
 * A long-lived TCP connection between two pod namespaces (echo-peer.mjs at each end), for
 * tests that need one established connection to outlive a change — a pod terminating, a
 * policy update — where the runner's probes (pod-server.ts) open a new connection each time.
 *
 * - `EchoServer.start(pod, port)` echoes on `port` inside the pod;
 * - `PersistentConnection.open(from, host, port)` opens exactly one connection and never
 *   reconnects, so every `exchange()` travels on the same 5-tuple (one conntrack entry);
 *   an exchange is answered when its line comes back in time, like a probe, else it counts as
 *   dropped. `closedBecause` says why the connection ended, if it did (a reset is not a drop).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import type { PodNet } from './network.ts';

const PEER = fileURLToPath(new URL('./echo-peer.mjs', import.meta.url));

type Message = { ready?: boolean; connected?: boolean; closed?: string; accepted?: number; id?: number; ok?: boolean };

/** Spawns echo-peer.mjs in `pod`'s namespace; resolves with the child once `started(msg)` is true. */
async function spawnPeer(pod: PodNet, args: readonly string[], onMessage: (msg: Message) => void, started: (msg: Message) => boolean): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn('ip', ['netns', 'exec', pod.netns, process.execPath, PEER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`echo-peer ${args.join(' ')} in ${pod.key} did not start: ${stderr}`)), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`echo-peer ${args.join(' ')} in ${pod.key} exited with ${code}: ${stderr}`));
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as Message;
      onMessage(msg);
      if (started(msg)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return child;
}

function stop(child: ChildProcessWithoutNullStreams): void {
  if (child.exitCode !== null) return;
  child.stdin.end();
  child.kill();
}

export class EchoServer {
  /** Connections accepted so far. */
  accepted = 0;

  private constructor(private child: ChildProcessWithoutNullStreams | undefined) {}

  static async start(pod: PodNet, port: number): Promise<EchoServer> {
    const server = new EchoServer(undefined);
    server.child = await spawnPeer(pod, ['serve', String(port)], (m) => void (m.accepted !== undefined && (server.accepted = m.accepted)), (m) => m.ready === true);
    return server;
  }

  stop(): void {
    if (this.child !== undefined) stop(this.child);
  }
}

export class PersistentConnection {
  private nextId = 0;
  private readonly pending = new Map<number, (ok: boolean) => void>();
  /** Why the connection ended (reset, closed by the peer); undefined while it is open. */
  closedBecause: string | undefined;
  private child!: ChildProcessWithoutNullStreams;

  private constructor() {}

  /** Connects from `from` to `host:port`; rejects if not connected within `connectTimeoutMs`. */
  static async open(from: PodNet, host: string, port: number, connectTimeoutMs = 3_000): Promise<PersistentConnection> {
    const conn = new PersistentConnection();
    let failed: string | undefined;
    conn.child = await spawnPeer(
      from,
      ['connect', host, String(port), String(connectTimeoutMs)],
      (m) => {
        if (m.closed !== undefined) {
          conn.closedBecause = m.closed;
          failed ??= m.closed;
        }
        if (m.id !== undefined) {
          conn.pending.get(m.id)?.(m.ok === true);
          conn.pending.delete(m.id);
        }
      },
      (m) => m.connected === true || m.closed !== undefined,
    );
    conn.child.once('exit', () => {
      conn.closedBecause ??= 'echo-peer exited';
      for (const done of conn.pending.values()) done(false);
      conn.pending.clear();
    });
    if (failed !== undefined) {
      conn.close();
      throw new Error(`connection ${from.key} → ${host}:${port} failed: ${failed}`);
    }
    return conn;
  }

  /** Sends one line on the connection; true when it is echoed back within `timeoutMs`. */
  exchange(timeoutMs: number): Promise<boolean> {
    if (this.child.exitCode !== null) return Promise.resolve(false);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, timeoutMs })}\n`);
    });
  }

  close(): void {
    stop(this.child);
  }
}
