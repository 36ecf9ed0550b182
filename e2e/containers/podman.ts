/**
 * Podman for the containers suite: the `podman` CLI with the repository's engine settings
 * (images/containers.conf: runc, cgroupfs, lowered ulimits — why in that file), and podman's
 * Docker-compatible API socket, which testcontainers talks to.
 *
 * Invariants:
 * - Every podman call here, and the API service started here, uses CONTAINERS_CONF =
 *   images/containers.conf unless the caller set CONTAINERS_CONF already; the host's
 *   /etc/containers is never written.
 * - ensurePodmanService() reuses a service that already answers on the socket (a developer's,
 *   or the previous run's) and otherwise starts `podman system service --time=0` detached;
 *   only a service it started is stopped by the returned stop().
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { pollUntil } from '../controlplane/poll-until.ts';

const run = promisify(execFile);

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CONTAINERS_CONF = process.env['CONTAINERS_CONF'] ?? `${REPO_ROOT}images/containers.conf`;
/** Where the Docker API is served: the path `podman system service` uses for root by default. */
export const PODMAN_SOCKET = '/run/podman/podman.sock';

/** The environment every podman process of the suite gets. */
export function podmanEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CONTAINERS_CONF };
}

/** Runs `podman <args>` and returns its stdout; the error names the command and its stderr. */
export async function podman(args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('podman', [...args], { env: podmanEnv(), maxBuffer: 64 << 20 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`podman ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

/** Everything a container wrote, stdout and stderr (`podman logs` keeps them apart). */
export async function podmanLogs(id: string): Promise<string> {
  try {
    const { stdout, stderr } = await run('podman', ['logs', id], { env: podmanEnv(), maxBuffer: 64 << 20 });
    return stdout + stderr;
  } catch (err) {
    throw new Error(`podman logs ${id} failed: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`, { cause: err });
  }
}

/** Whether something answers the Docker API's GET /_ping on `socket`. */
export function pingSocket(socket = PODMAN_SOCKET): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping', method: 'GET', timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** A Docker API endpoint for testcontainers, and how to stop it if this process started it. */
export interface PodmanService {
  readonly dockerHost: string;
  readonly startedHere: boolean;
  stop(): void;
}

/** See the file comment. Throws with podman's output when the service does not come up. */
export async function ensurePodmanService(socket = PODMAN_SOCKET): Promise<PodmanService> {
  const dockerHost = `unix://${socket}`;
  if (await pingSocket(socket)) return { dockerHost, startedHere: false, stop: () => undefined };
  mkdirSync(dirname(socket), { recursive: true });
  // Output to a file, not pipes: the service must not hold this process's event loop open.
  const logFile = join(tmpdir(), `tessera-podman-service-${process.pid}.log`);
  const log = openSync(logFile, 'w');
  const child = spawn('podman', ['system', 'service', '--time=0', dockerHost], {
    env: podmanEnv(),
    detached: true,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  child.unref();
  await pollUntil(async () => ((await pingSocket(socket)) ? true : undefined), {
    description: `podman system service on ${socket}`,
    timeoutMs: 30_000,
  }).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\npodman system service output (${logFile}):\n${readFileSync(logFile, 'utf8')}`, { cause: err });
  });
  return {
    dockerHost,
    startedHere: true,
    stop: () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      rmSync(logFile, { force: true });
    },
  };
}
