import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';

import type { KubeConfig } from '@kubernetes/client-node';

import { kubernetesVersion, locateBinaries, type ControlPlaneBinaries } from './binaries.ts';
import {
  ETCD_PREFIX,
  RECORD_FILE,
  reapOrphans,
  TEMP_PREFIX,
  writeRecord,
  type ControlPlaneRecord,
} from './control-plane-record.ts';
import { Etcd } from './etcd.ts';
import { registerExitCleanup } from './exit-cleanup.ts';
import { freePorts } from './free-port.ts';
import { KubeApiserver, type StaticTokenUser } from './kube-apiserver.ts';
import { KubeControllerManager } from './kube-controller-manager.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import {
  issueServiceAccountToken,
  type ServiceAccountIdentity,
  type ServiceAccountTokenOptions,
} from './service-account-token.ts';

/** Options for {@link ControlPlane}. */
export interface ControlPlaneOptions {
  /** The programs to run. @default locateBinaries() (build cache + PATH; never builds) */
  readonly binaries?: ControlPlaneBinaries;
  /** Parent of the temp dir (certs, keys, tokens, logs, kubeconfig). @default os.tmpdir() */
  readonly tempRoot?: string;
  /** Parent of etcd's data dir; tmpfs, because etcd 3.4 cannot skip fsync. @default '/dev/shm' if writable, else tempRoot */
  readonly etcdDataRoot?: string;
  /** Where the admin kubeconfig is written. @default `<temp dir>/kubeconfig` */
  readonly kubeconfigPath?: string;
  /** Per-component start-up deadline (etcd /health, kube-apiserver /readyz). @default 60_000 */
  readonly startTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace when stopping each process group. @default 5_000 */
  readonly stopGraceMs?: number;
  /** Further --token-auth-file identities (e.g. a non-admin user for RBAC tests). @default [] */
  readonly extraTokenUsers?: readonly StaticTokenUser[];
  /** Extra kube-apiserver flags, appended after the defaults. @default [] */
  readonly apiserverArgs?: readonly string[];
  /**
   * kube-controller-manager controllers to run (`--controllers`), e.g. `['endpointslice']`,
   * acting as the admin; started after kube-apiserver. @default [] (no kube-controller-manager)
   */
  readonly controllers?: readonly string[];
}

/** How to talk to a started control plane as its admin (system:masters). */
export interface ControlPlaneConnection {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Admin bearer token (static token file, group system:masters). */
  readonly token: string;
  /** For @kubernetes/client-node. */
  readonly kubeConfig: KubeConfig;
  /** The same identity as a kubeconfig file, for kubectl (`KUBECONFIG=… kubectl …`). */
  readonly kubeconfigPath: string;
  /** PEM bundle verifying the serving cert; undefined means clients skip TLS verification. */
  readonly caPem: string | undefined;
}

/** Wall-clock milliseconds of the last start(), for the harness's own figures (never asserted). */
export interface StartTimings {
  readonly etcdMs: number;
  readonly kubeApiserverMs: number;
  /** 0 when no controllers were asked for. */
  readonly kubeControllerManagerMs: number;
  readonly totalMs: number;
}

/** Options for {@link ControlPlane.restartApiserver} and {@link ControlPlane.restartEtcd}. */
export interface RestartOptions {
  /**
   * How long the component stays down between stop and start — the outage a reliability test
   * wants its clients to ride out (this is the scenario, not a wait for a condition).
   * @default 0
   */
  readonly downtimeMs?: number;
}

/** What exists between start() and stop(). */
interface RunningState {
  readonly tempDir: string;
  readonly etcdDataDir: string;
  readonly etcd: Etcd;
  readonly apiserver: KubeApiserver;
  readonly controllerManager: KubeControllerManager | undefined;
  readonly unregisterExitCleanup: () => void;
  readonly startedAt: string;
  detached: boolean;
  connection?: ControlPlaneConnection;
}

/** The admin's static-token identity. */
export const ADMIN_USER = 'tessera-admin';

/**
 * A real etcd + kube-apiserver on loopback, for tests and `make cluster-up` (reference §12),
 * with kube-controller-manager running the `controllers` asked for (none by default).
 *
 * Guarantees:
 * - Free loopback ports only; etcd's data on tmpfs; every file in two private temp dirs.
 * - stop() (or `await using`) stops kube-controller-manager, kube-apiserver, then etcd (SIGTERM, SIGKILL after a grace
 *   period, waiting until each process group is gone) and removes both dirs. It is idempotent
 *   and also runs (synchronously, with SIGKILL) when the process exits or is interrupted —
 *   unless detach() handed the control plane over to its on-disk record (`cli.ts up`).
 * - If the owning process dies by SIGKILL, the next start() under the same tempRoot reaps it.
 * - A failed start() cleans up after itself and throws with the tail of the failing log.
 * - restartApiserver()/restartEtcd() keep ports, certificates, tokens and etcd data, so
 *   existing clients and their kubeconfigs stay valid; both resolve once /readyz is 200.
 *
 * Not thread-safe in the sense of overlapping calls: await each lifecycle method before the
 * next.
 */
export class ControlPlane implements AsyncDisposable {
  readonly #options: ControlPlaneOptions;
  #state: RunningState | undefined;
  #timings: StartTimings | undefined;

  constructor(options: ControlPlaneOptions = {}) {
    this.#options = options;
  }

  /** `new ControlPlane(options)` then `start()`; returns the started control plane. */
  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const controlPlane = new ControlPlane(options);
    await controlPlane.start();
    return controlPlane;
  }

  /** Starts etcd, then kube-apiserver, then kube-controller-manager if asked for; writes the admin kubeconfig. */
  async start(): Promise<ControlPlaneConnection> {
    if (this.#state !== undefined) throw new Error('ControlPlane.start: already started; call stop() first');
    const {
      binaries = locateBinaries(),
      tempRoot = tmpdir(),
      etcdDataRoot = defaultEtcdDataRoot(tempRoot),
      startTimeoutMs = 60_000,
      stopGraceMs = 5_000,
      extraTokenUsers = [],
      apiserverArgs = [],
      controllers = [],
    } = this.#options;

    await reapOrphans(tempRoot);
    const began = performance.now();
    const [etcdClientPort, etcdPeerPort, apiserverPort, controllerManagerPort] = (await freePorts(4)) as [number, number, number, number];
    const token = randomBytes(32).toString('base64url');

    // From here to registerExitCleanup() there is no await: an interrupt cannot strand the dirs.
    const tempDir = mkdtempSync(join(tempRoot, TEMP_PREFIX));
    const etcdDataDir = mkdtempSync(join(etcdDataRoot, ETCD_PREFIX));
    mkdirSync(join(tempDir, 'logs'));

    // Aborted by the exit handler: if this process carries on after a signal (another listener
    // kept it alive), start() must not spawn anything the handler can no longer stop.
    const lifetime = new AbortController();
    const etcd = new Etcd({
      binary: binaries.etcd,
      dataDir: join(etcdDataDir, 'member-data'),
      logFile: join(tempDir, 'logs', 'etcd.log'),
      clientPort: etcdClientPort,
      peerPort: etcdPeerPort,
      startTimeoutMs,
      stopGraceMs,
      signal: lifetime.signal,
    });
    const apiserver = new KubeApiserver({
      binary: binaries.kubeApiserver,
      etcdUrl: etcd.clientUrl,
      dir: join(tempDir, 'apiserver'),
      logFile: join(tempDir, 'logs', 'kube-apiserver.log'),
      port: apiserverPort,
      tokenUsers: [{ token, user: ADMIN_USER, uid: `${ADMIN_USER}-uid`, groups: ['system:masters'] }, ...extraTokenUsers],
      extraArgs: apiserverArgs,
      startTimeoutMs,
      stopGraceMs,
      signal: lifetime.signal,
    });
    const kubeconfigPath = this.#options.kubeconfigPath ?? join(tempDir, 'kubeconfig');
    const controllerManager =
      controllers.length === 0
        ? undefined
        : new KubeControllerManager({
            binary: binaries.kubeControllerManager,
            kubeconfigPath,
            controllers,
            certDir: join(tempDir, 'controller-manager', 'certs'),
            logFile: join(tempDir, 'logs', 'kube-controller-manager.log'),
            port: controllerManagerPort,
            startTimeoutMs,
            stopGraceMs,
            signal: lifetime.signal,
          });
    // Until stop() or detach(): if this process exits or is interrupted, take everything down.
    const unregisterExitCleanup = registerExitCleanup(() => {
      lifetime.abort(new Error('ControlPlane torn down by an exit or signal handler'));
      controllerManager?.killNow();
      apiserver.killNow();
      etcd.killNow();
      rmSync(etcdDataDir, { recursive: true, force: true });
      rmSync(tempDir, { recursive: true, force: true });
    });
    this.#state = {
      tempDir,
      etcdDataDir,
      etcd,
      apiserver,
      controllerManager,
      unregisterExitCleanup,
      startedAt: new Date().toISOString(),
      detached: false,
    };

    try {
      this.#writeRecord();
      await etcd.start();
      const etcdReady = performance.now();
      this.#writeRecord();
      await apiserver.start();
      const apiserverReady = performance.now();
      const caPem = apiserver.servingCaPem();
      const kubeConfig = writeKubeconfig(kubeconfigPath, {
        server: apiserver.url,
        token,
        user: ADMIN_USER,
        ...(caPem === undefined ? {} : { caPem }),
      });
      this.#state.connection = { server: apiserver.url, token, kubeConfig, kubeconfigPath, caPem };
      this.#writeRecord();
      await controllerManager?.start();
      const controllerManagerReady = performance.now();
      this.#writeRecord();
      this.#timings = {
        etcdMs: etcdReady - began,
        kubeApiserverMs: apiserverReady - etcdReady,
        kubeControllerManagerMs: controllerManager === undefined ? 0 : controllerManagerReady - apiserverReady,
        totalMs: controllerManagerReady - began,
      };
      return this.#state.connection;
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
  }

  /** The admin connection; throws before start() has succeeded. */
  get connection(): ControlPlaneConnection {
    const connection = this.#state?.connection;
    if (connection === undefined) throw new Error('ControlPlane: not started');
    return connection;
  }

  /** Durations of the last successful start(). */
  get timings(): StartTimings | undefined {
    return this.#timings;
  }

  /** Directory of the logs, certs and keys (removed by stop()). */
  get tempDir(): string {
    return this.#require().tempDir;
  }

  /** Stops kube-apiserver and etcd and removes every temp dir. Safe to call more than once. */
  async stop(): Promise<void> {
    const state = this.#state;
    if (state === undefined) return;
    const errors: unknown[] = [];
    for (const component of [...(state.controllerManager === undefined ? [] : [state.controllerManager]), state.apiserver, state.etcd]) {
      try {
        await component.stop();
      } catch (err) {
        errors.push(err);
        component.killNow();
      }
    }
    rmSync(state.etcdDataDir, { recursive: true, force: true });
    rmSync(state.tempDir, { recursive: true, force: true });
    state.unregisterExitCleanup();
    this.#state = undefined;
    if (errors.length > 0) throw new AggregateError(errors, 'ControlPlane.stop: some processes did not stop cleanly');
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Stops kube-apiserver, keeps it down for `downtimeMs`, and starts it again on the same port
   * with the same certs and tokens; resolves when /readyz is 200.
   */
  async restartApiserver(options: RestartOptions = {}): Promise<void> {
    const { apiserver } = this.#require();
    await apiserver.stop();
    await outage(options);
    await apiserver.start();
    this.#writeRecord();
  }

  /**
   * Stops etcd, keeps it down for `downtimeMs`, and starts it again with its data; resolves
   * when etcd is healthy and kube-apiserver's /readyz (which checks etcd) is 200 again.
   */
  async restartEtcd(options: RestartOptions = {}): Promise<void> {
    const { etcd, apiserver } = this.#require();
    await etcd.stop();
    await outage(options);
    await etcd.start();
    this.#writeRecord();
    await apiserver.waitReady();
  }

  /**
   * Lets the control plane outlive this process (used by `cli.ts up`): the exit and signal
   * handlers are removed, and the record says it has no owner, so only
   * `destroyRecorded(record)` (`cli.ts down`) stops it. Returns that record.
   */
  detach(): ControlPlaneRecord {
    const state = this.#require();
    state.unregisterExitCleanup();
    state.detached = true;
    this.#writeRecord();
    return this.record();
  }

  /**
   * Compacts etcd's history up to its current revision; returns that revision.
   *
   * Reads that go to etcd at an older revision then fail with 410 Gone (e.g. a list with
   * `resourceVersionMatch: Exact`). Watches usually do not: kube-apiserver serves them from its
   * watch cache, which keeps its own window of recent events regardless of etcd compaction.
   * To make a watch from a compacted revision get 410 Expired, start the control plane with
   * `apiserverArgs: ['--watch-cache=false']` (watches then read etcd), or restart kube-apiserver
   * after compacting (its new cache starts at the current revision). The watch's start
   * (resourceVersion + 1) must lie strictly below the compaction revision: starting exactly
   * at it gets a 500 "etcd event received with PrevKv=nil" instead of 410.
   */
  async compactEtcd(): Promise<number> {
    return this.#require().etcd.compact();
  }

  /**
   * Issues a ServiceAccount token (TokenRequest API) and writes a kubeconfig for it next to the
   * admin's, so a component can run with exactly the RBAC granted to that ServiceAccount.
   */
  async issueServiceAccountToken(
    namespace: string,
    serviceAccount: string,
    options: Partial<Pick<ServiceAccountTokenOptions, 'create' | 'expirationSeconds' | 'audiences' | 'kubeconfigPath'>> = {},
  ): Promise<ServiceAccountIdentity> {
    const { tempDir } = this.#require();
    const { server, kubeConfig, caPem } = this.connection;
    return issueServiceAccountToken(kubeConfig, {
      namespace,
      serviceAccount,
      server,
      ...(caPem === undefined ? {} : { caPem }),
      kubeconfigPath: join(tempDir, `kubeconfig-${namespace}-${serviceAccount}`),
      ...options,
    });
  }

  /** What another process needs to find and stop this control plane. */
  record(): ControlPlaneRecord {
    const { tempDir, etcdDataDir, etcd, apiserver, controllerManager, connection, startedAt, detached } = this.#require();
    return {
      format: 1,
      kubernetesVersion: kubernetesVersion(),
      ownerPid: detached ? null : process.pid,
      tempDir,
      etcdDataDir,
      kubeconfigPath: connection?.kubeconfigPath ?? this.#options.kubeconfigPath ?? join(tempDir, 'kubeconfig'),
      server: apiserver.url,
      etcdUrl: etcd.clientUrl,
      pids: { etcd: etcd.process?.pid ?? null, kubeApiserver: apiserver.process?.pid ?? null, kubeControllerManager: controllerManager?.process?.pid ?? null },
      startedAt,
    };
  }

  #writeRecord(): void {
    const state = this.#require();
    writeRecord(join(state.tempDir, RECORD_FILE), this.record());
  }

  #require(): RunningState {
    if (this.#state === undefined) throw new Error('ControlPlane: not started');
    return this.#state;
  }
}

async function outage({ downtimeMs = 0 }: RestartOptions): Promise<void> {
  if (!Number.isFinite(downtimeMs) || downtimeMs < 0) {
    throw new RangeError(`downtimeMs must be a finite number ≥ 0, got ${downtimeMs}`);
  }
  if (downtimeMs > 0) await delay(downtimeMs);
}

function defaultEtcdDataRoot(fallback: string): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return fallback;
  }
}
