/**
 * `tessera controllers` and `tessera agent` as child processes, as a cluster runs them: each
 * with its own ServiceAccount token (exactly manifests/' RBAC), JSON logs into a file, and
 * /metrics /livez /readyz on a port they pick (read back from their "serving" log line).
 * Every child is killed on exit (normal, or SIGINT/SIGTERM/SIGHUP) if the runner has not
 * stopped it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { metricValue } from './scenario-cluster.ts';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * How a child runs Tessera: the sources through tsx, or with TESSERA_E2E_COMPILED=1 the
 * compiled build (bin/tessera.js → dist/, what the image runs; `npm run build` first), so a
 * run can measure and prove what production executes.
 */
const TESSERA_COMMAND: readonly string[] =
  process.env['TESSERA_E2E_COMPILED'] === '1' ? ['bin/tessera.js'] : ['--import', 'tsx', 'src/cli/main.ts'];

export class TesseraProcess {
  private exitCode: number | null | undefined;
  private readonly exited: Promise<number | null>;
  private readonly unregister: () => void;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly port: number,
    exited: Promise<number | null>,
    unregister: () => void,
  ) {
    this.exited = exited;
    this.unregister = unregister;
    void exited.then((c) => (this.exitCode = c));
  }

  /** Spawns `tessera <args>`, waits for its health server, and returns it. */
  static async start(name: string, args: readonly string[], logPath: string, timeoutMs = 30_000): Promise<TesseraProcess> {
    const child = spawn(process.execPath, [...TESSERA_COMMAND, ...args, '--metrics-port=0', '--metrics-host=127.0.0.1'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TESSERA_LOG_LEVEL: process.env['TESSERA_E2E_LOG_LEVEL'] ?? 'info' },
    });
    const unregister = registerExitCleanup(() => child.kill('SIGKILL'));
    const log = createWriteStream(logPath, { flags: 'a' });
    child.stderr?.pipe(log, { end: false });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not serve /metrics within ${timeoutMs} ms (log: ${logPath})`)), timeoutMs);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code} before serving (log: ${logPath})`));
      });
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        log.write(`${line}\n`);
        if (!line.includes('serving /metrics')) return;
        try {
          const port = (JSON.parse(line) as { port?: number }).port;
          if (port !== undefined) {
            clearTimeout(timer);
            resolve(port);
          }
        } catch {
          // Not JSON: ignore.
        }
      });
    });
    return new TesseraProcess(name, child, port, exited, unregister);
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  async get(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${this.port}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: await res.text() };
  }

  async ready(): Promise<boolean> {
    try {
      return (await this.get('/readyz')).status === 200;
    } catch {
      return false;
    }
  }

  /** The value of an un-labelled metric, or undefined. */
  async metric(name: string): Promise<number | undefined> {
    return metricValue((await this.get('/metrics')).body, name);
  }

  /** SIGTERM (graceful: an agent leaves its rules in place); SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const t = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(t);
    }
    this.unregister();
    return this.exited;
  }
}
