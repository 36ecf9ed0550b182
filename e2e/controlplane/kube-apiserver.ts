import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { httpsGet } from './https-get.ts';
import { pollUntil, PollAbort } from './poll-until.ts';
import { ProcessGroup } from './process-group.ts';

/** A line of kube-apiserver's --token-auth-file. */
export interface StaticTokenUser {
  readonly token: string;
  readonly user: string;
  readonly uid: string;
  readonly groups: readonly string[];
}

/** Options for {@link KubeApiserver}. */
export interface KubeApiserverOptions {
  readonly binary: string;
  /** `http://127.0.0.1:<port>` of etcd. */
  readonly etcdUrl: string;
  /** Private directory for the serving certs (certs/), SA keys and the token file. */
  readonly dir: string;
  readonly logFile: string;
  /** --secure-port; kept across {@link KubeApiserver.restart}. */
  readonly port: number;
  /** Identities for --token-auth-file (an admin in system:masters, at least). */
  readonly tokenUsers: readonly StaticTokenUser[];
  /** Appended after the defaults, so a later flag wins. @default [] */
  readonly extraArgs?: readonly string[];
  /** How long start() waits for /readyz. @default 60_000 */
  readonly startTimeoutMs?: number;
  /** SIGTERM → SIGKILL grace on stop. @default 5_000 */
  readonly stopGraceMs?: number;
  /** Once aborted, start() spawns nothing and stops waiting (see EtcdOptions.signal). @default none */
  readonly signal?: AbortSignal;
}

/**
 * kube-apiserver with envtest's flag set, adapted to static-token auth and RBAC (reference §12.3).
 *
 * - Keys and tokens are written once, on the first start; the self-signed serving certificate
 *   that kube-apiserver writes to `<dir>/certs` is reused by later starts, so clients keep
 *   trusting it across {@link restart}.
 * - Service-account tokens are signed with an RSA key made by node:crypto (PKCS#8 private,
 *   SPKI public), so the TokenRequest API works without a controller-manager.
 */
export class KubeApiserver {
  readonly #options: KubeApiserverOptions & {
    readonly extraArgs: readonly string[];
    readonly startTimeoutMs: number;
    readonly stopGraceMs: number;
  };
  #process: ProcessGroup | undefined;

  constructor(options: KubeApiserverOptions) {
    this.#options = { extraArgs: [], startTimeoutMs: 60_000, stopGraceMs: 5_000, ...options };
  }

  /** `https://127.0.0.1:<port>` */
  get url(): string {
    return `https://127.0.0.1:${this.#options.port}`;
  }

  get process(): ProcessGroup | undefined {
    return this.#process;
  }

  /** The flags it runs with (for logs and the CLI's state file). */
  args(): string[] {
    const { dir, port, etcdUrl, extraArgs } = this.#options;
    return [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      // No controller-manager creates the `default` ServiceAccount in new namespaces.
      '--disable-admission-plugins=ServiceAccount',
      '--authorization-mode=RBAC',
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      `--service-account-issuer=${this.url}/`,
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      // Without it, an open watch holds SIGTERM shutdown for the HTTP server's 60 s timeout
      // (then "Terminating all watchers from cacher"), so stop() would always end in SIGKILL.
      // With it, watches are closed at once and kube-apiserver exits in about a second.
      '--shutdown-watch-termination-grace-period=2s',
      ...extraArgs,
    ];
  }

  /** Starts kube-apiserver and resolves once GET /readyz answers 200 `ok`. */
  async start(): Promise<void> {
    if (this.#process?.alive === true) throw new Error('kube-apiserver is already running');
    this.#options.signal?.throwIfAborted();
    this.#writeCredentials();
    const { binary, logFile, startTimeoutMs } = this.#options;
    const proc = await ProcessGroup.spawn({
      command: binary,
      args: this.args(),
      logFile,
      onSpawn: (group) => {
        this.#process = group;
      },
    });
    try {
      await this.waitReady(startTimeoutMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ${logFile} (tail) ---\n${proc.logTail()}`, { cause: err });
    }
  }

  /**
   * Polls /readyz (readable anonymously via system:public-info-viewer) until it returns 200.
   * /readyz covers etcd and the post-start hooks, RBAC bootstrap included.
   */
  async waitReady(timeoutMs = this.#options.startTimeoutMs): Promise<void> {
    const proc = this.#process;
    await pollUntil(
      async () => {
        if (proc === undefined || proc.exit !== undefined) {
          throw new PollAbort(new Error(`kube-apiserver is not running (${proc?.exitDescription ?? 'never started'})`));
        }
        const { status, body } = await httpsGet(`${this.url}/readyz`);
        if (status === 200) return true;
        throw new Error(`/readyz: HTTP ${status}: ${body.split('\n').filter((l) => l.includes('[-]')).join('; ')}`);
      },
      {
        description: `kube-apiserver ${this.url}/readyz`,
        timeoutMs,
        intervalMs: 100,
        ...(this.#options.signal === undefined ? {} : { signal: this.#options.signal }),
      },
    );
  }

  async stop(): Promise<void> {
    const proc = this.#process;
    if (proc === undefined) return;
    await proc.stop(this.#options.stopGraceMs);
    this.#process = undefined;
  }

  /** Stop then start on the same port, with the same certificates, keys and tokens. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  killNow(): void {
    this.#process?.killNow();
  }

  /**
   * The PEM bundle (serving cert + its self-signed CA, as kube-apiserver writes them) that
   * verifies the serving certificate, or undefined if its SANs do not cover 127.0.0.1 (then
   * clients have to skip verification). Valid after the first start.
   */
  servingCaPem(): string | undefined {
    const file = join(this.#options.dir, 'certs', 'apiserver.crt');
    if (!existsSync(file)) return undefined;
    const pem = readFileSync(file, 'utf8');
    return new X509Certificate(pem).checkIP('127.0.0.1') === undefined ? undefined : pem;
  }

  #writeCredentials(): void {
    const { dir, tokenUsers } = this.#options;
    mkdirSync(join(dir, 'certs'), { recursive: true, mode: 0o700 });
    if (!existsSync(join(dir, 'sa.key'))) {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      writeFileSync(join(dir, 'sa.pub'), publicKey, { mode: 0o600 });
      writeFileSync(join(dir, 'sa.key'), privateKey, { mode: 0o600 });
    }
    const csv = tokenUsers.map(({ token, user, uid, groups }) => {
      for (const field of [token, user, uid, ...groups]) {
        if (/[,"\n]/.test(field)) throw new TypeError(`static token user field ${JSON.stringify(field)} contains , " or newline`);
      }
      return `${token},${user},${uid},"${groups.join(',')}"\n`;
    });
    writeFileSync(join(dir, 'tokens.csv'), csv.join(''), { mode: 0o600 });
  }
}
