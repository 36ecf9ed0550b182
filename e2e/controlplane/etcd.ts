import { mkdirSync } from 'node:fs';

import { pollUntil, PollAbort } from './poll-until.ts';
import { ProcessGroup } from './process-group.ts';

/** Options for {@link Etcd}. */
export interface EtcdOptions {
  /** Path of the etcd binary (Debian's etcd-server 3.4.23 at /usr/bin/etcd). */
  readonly binary: string;
  /** Data directory; kept across {@link Etcd.restart}. Put it on tmpfs: 3.4 has no --unsafe-no-fsync. */
  readonly dataDir: string;
  /** Where stdout/stderr are appended. */
  readonly logFile: string;
  readonly clientPort: number;
  readonly peerPort: number;
  /** How long {@link Etcd.start} waits for /health. @default 30_000 */
  readonly startTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace on stop. @default 5_000 */
  readonly stopGraceMs?: number;
  /**
   * Once aborted, start() spawns nothing and stops waiting (the owner was torn down by an exit
   * handler; a process spawned after that would have no one left to stop it). @default none
   */
  readonly signal?: AbortSignal;
}

/**
 * A single-member etcd on loopback (reference §12.2).
 *
 * - Ports and data dir are fixed at construction, so {@link restart} brings back the same
 *   member with the same data at the same URL: kube-apiserver's client reconnects by itself.
 * - {@link compact} uses etcd's v3 JSON gateway. etcd 3.4 serves it under both `/v3/` and
 *   `/v3beta/` (`/v3alpha/` answers 404), checked against 3.4.23; `/v3/` is the stable prefix.
 */
export class Etcd {
  readonly #options: EtcdOptions & { readonly startTimeoutMs: number; readonly stopGraceMs: number };
  #process: ProcessGroup | undefined;

  constructor(options: EtcdOptions) {
    this.#options = { startTimeoutMs: 30_000, stopGraceMs: 5_000, ...options };
  }

  /** `http://127.0.0.1:<clientPort>`, what kube-apiserver's --etcd-servers gets. */
  get clientUrl(): string {
    return `http://127.0.0.1:${this.#options.clientPort}`;
  }

  /** The running process, if any (pid recorded by `cli.ts up`). */
  get process(): ProcessGroup | undefined {
    return this.#process;
  }

  /** Starts etcd and resolves once GET /health reports healthy. */
  async start(): Promise<void> {
    if (this.#process?.alive === true) throw new Error('etcd is already running');
    const { binary, dataDir, logFile, peerPort, startTimeoutMs, signal } = this.#options;
    signal?.throwIfAborted();
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const proc = await ProcessGroup.spawn({
      command: binary,
      args: [
        '--name=default',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${this.clientUrl}`,
        `--advertise-client-urls=${this.clientUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--logger=zap',
        '--log-outputs=stderr',
      ],
      logFile,
      // etcd 3.4 reads ETCD_* variables as flags; do not let the caller's leak in.
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ETCD_'))),
      onSpawn: (group) => {
        this.#process = group;
      },
    });
    await pollUntil(
      async () => {
        if (proc.exit !== undefined) {
          throw new PollAbort(new Error(`etcd exited during start-up (${proc.exitDescription})\n${proc.logTail()}`));
        }
        const res = await fetch(`${this.clientUrl}/health`, { signal: AbortSignal.timeout(2_000) });
        const body = (await res.json()) as { health?: string };
        return res.ok && body.health === 'true' ? true : undefined;
      },
      {
        description: `etcd /health on ${this.clientUrl} (log: ${logFile})`,
        timeoutMs: startTimeoutMs,
        ...(signal === undefined ? {} : { signal }),
      },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n--- ${logFile} (tail) ---\n${proc.logTail()}`, { cause: err });
    });
  }

  /** Stops the process group (SIGTERM, then SIGKILL); the data dir is left alone. */
  async stop(): Promise<void> {
    const proc = this.#process;
    if (proc === undefined) return;
    await proc.stop(this.#options.stopGraceMs);
    this.#process = undefined;
  }

  /** Stop then start, same ports and data dir. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Synchronous SIGKILL, for exit handlers. */
  killNow(): void {
    this.#process?.killNow();
  }

  /** The current store revision, from the response header of a v3 range request. */
  async currentRevision(): Promise<number> {
    // key "\0" (base64 AA==): any range returns the header; this one matches nothing we store.
    const body = await this.#gateway<{ header?: { revision?: string } }>('kv/range', { key: 'AA==' });
    const revision = Number(body.header?.revision);
    if (!Number.isSafeInteger(revision) || revision < 1) {
      throw new Error(`etcd range returned no usable header.revision: ${JSON.stringify(body)}`);
    }
    return revision;
  }

  /**
   * Compacts the key-value history up to the current revision (physically, so the old
   * revisions are gone when this resolves) and returns that revision. Watches that then ask
   * kube-apiserver for an older resourceVersion get 410 Gone once its watch cache is behind.
   */
  async compact(): Promise<number> {
    const revision = await this.currentRevision();
    await this.#gateway('kv/compaction', { revision: String(revision), physical: true });
    return revision;
  }

  async #gateway<T>(path: string, body: unknown): Promise<T> {
    const res = await fetch(`${this.clientUrl}/v3/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`etcd POST /v3/${path}: HTTP ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}
