import { mkdirSync } from 'node:fs';

import { httpsGet } from './https-get.ts';
import { pollUntil, PollAbort } from './poll-until.ts';
import { ProcessGroup } from './process-group.ts';

/** Options for {@link KubeControllerManager}. */
export interface KubeControllerManagerOptions {
  readonly binary: string;
  /** The identity it acts as (ControlPlane gives it the admin's). */
  readonly kubeconfigPath: string;
  /** The controllers it runs (`--controllers`), e.g. `['endpointslice']`; never empty. */
  readonly controllers: readonly string[];
  /** Where it writes its self-signed serving certificate. */
  readonly certDir: string;
  readonly logFile: string;
  /** --secure-port on 127.0.0.1 (its /healthz). */
  readonly port: number;
  /** How long start() waits for /healthz. @default 60_000 */
  readonly startTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace on stop. @default 5_000 */
  readonly stopGraceMs?: number;
  /** Once aborted, start() spawns nothing and stops waiting (see EtcdOptions.signal). @default none */
  readonly signal?: AbortSignal;
}

/**
 * Upstream kube-controller-manager running only the controllers it is given — the test control
 * plane's EndpointSlice controller, so that Services get the slices a cluster gives them (the
 * real controller, not a copy of its logic).
 *
 * - No leader election (one instance), no cloud provider, no service-account credentials per
 *   controller: every controller acts with `kubeconfigPath`'s identity.
 * - /healthz is served anonymously on loopback (kube-controller-manager always allows it);
 *   start() resolves once it answers 200. That says the process runs, not that its informers
 *   have synced: what a controller writes arrives some milliseconds later.
 */
export class KubeControllerManager {
  readonly #options: KubeControllerManagerOptions & { readonly startTimeoutMs: number; readonly stopGraceMs: number };
  #process: ProcessGroup | undefined;

  constructor(options: KubeControllerManagerOptions) {
    if (options.controllers.length === 0) throw new RangeError('KubeControllerManager: controllers must name at least one controller');
    this.#options = { startTimeoutMs: 60_000, stopGraceMs: 5_000, ...options };
  }

  get process(): ProcessGroup | undefined {
    return this.#process;
  }

  /** `https://127.0.0.1:<port>` */
  get url(): string {
    return `https://127.0.0.1:${this.#options.port}`;
  }

  /** The flags it runs with. */
  args(): string[] {
    const { kubeconfigPath, controllers, certDir, port } = this.#options;
    return [
      `--kubeconfig=${kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${certDir}`,
    ];
  }

  /** Starts it and resolves once GET /healthz answers 200. */
  async start(): Promise<void> {
    if (this.#process?.alive === true) throw new Error('kube-controller-manager is already running');
    const { binary, logFile, certDir, startTimeoutMs, signal } = this.#options;
    signal?.throwIfAborted();
    mkdirSync(certDir, { recursive: true, mode: 0o700 });
    const proc = await ProcessGroup.spawn({
      command: binary,
      args: this.args(),
      logFile,
      onSpawn: (group) => {
        this.#process = group;
      },
    });
    try {
      await pollUntil(
        async () => {
          if (proc.exit !== undefined) throw new PollAbort(new Error(`kube-controller-manager exited (${proc.exitDescription})`));
          const { status, body } = await httpsGet(`${this.url}/healthz`);
          if (status === 200) return true;
          throw new Error(`/healthz: HTTP ${status}: ${body.trim()}`);
        },
        {
          description: `kube-controller-manager ${this.url}/healthz`,
          timeoutMs: startTimeoutMs,
          intervalMs: 100,
          ...(signal === undefined ? {} : { signal }),
        },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ${logFile} (tail) ---\n${proc.logTail()}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    const proc = this.#process;
    if (proc === undefined) return;
    await proc.stop(this.#options.stopGraceMs);
    this.#process = undefined;
  }

  killNow(): void {
    this.#process?.killNow();
  }
}
