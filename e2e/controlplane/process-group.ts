import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/** Options for {@link ProcessGroup.spawn}. */
export interface SpawnOptions {
  readonly command: string;
  readonly args: readonly string[];
  /** stdout and stderr are appended here (never piped: a piped child dies with its parent). */
  readonly logFile: string;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default process.cwd() */
  readonly cwd?: string;
  /**
   * Called synchronously as soon as the child has a pid, before spawn() resolves, so an owner
   * can record it with no await in between (an exit handler may run at any await).
   */
  readonly onSpawn?: (group: ProcessGroup) => void;
}

/** How a child ended, once it has. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * A child process that leads its own process group (and session), so it can be signalled as a
 * group with `kill(-pgid)` and is not hit by a terminal's Ctrl-C aimed at the test runner.
 *
 * - The child is `unref()`'d: it never keeps the Node event loop alive; its lifetime is owned
 *   by whoever calls {@link stop} (or {@link stopProcessGroup} with the recorded pid from
 *   another process, as `cli.ts down` does).
 * - Output goes to a log file, so the child survives its parent (needed by `cli.ts up`), and
 *   {@link logTail} can quote it in start-up errors.
 */
export class ProcessGroup {
  #exit: ProcessExit | undefined;

  private constructor(
    readonly pid: number,
    readonly logFile: string,
    readonly description: string,
  ) {}

  /** Starts `command`; resolves once the OS has created it (rejects if it cannot be spawned). */
  static async spawn(options: SpawnOptions): Promise<ProcessGroup> {
    const { command, args, logFile, env = process.env, cwd = process.cwd(), onSpawn } = options;
    const fd = openSync(logFile, 'a');
    try {
      const child = spawn(command, args, {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', fd, fd],
      });
      const failed = new Promise<never>((_, reject) => {
        child.once('error', (err) => reject(new Error(`cannot start ${command}: ${err.message}`, { cause: err })));
      });
      // child.pid is set synchronously when the OS created the process; otherwise 'error' follows.
      if (child.pid === undefined) return await failed;
      failed.catch(() => undefined);
      const group = new ProcessGroup(child.pid, logFile, `${command.split('/').pop() ?? command} (pid ${child.pid})`);
      child.once('exit', (code, signal) => {
        group.#exit = { code, signal };
      });
      child.unref();
      onSpawn?.(group);
      return group;
    } finally {
      closeSync(fd);
    }
  }

  /** Set once the child has exited (as observed by this process). */
  get exit(): ProcessExit | undefined {
    return this.#exit;
  }

  /** "exit code 1", "signal SIGKILL" or "still running", for error messages. */
  get exitDescription(): string {
    const exit = this.#exit;
    if (exit === undefined) return 'still running';
    return exit.signal === null ? `exit code ${exit.code}` : `signal ${exit.signal}`;
  }

  /** True while any member of the group is alive. */
  get alive(): boolean {
    return this.#exit === undefined && isProcessGroupAlive(this.pid);
  }

  /** The last `lines` lines of the log file (empty if it cannot be read). */
  logTail(lines = 40): string {
    return tailOfFile(this.logFile, lines);
  }

  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves when the group is gone. */
  async stop(graceMs = 5_000): Promise<void> {
    await stopProcessGroup(this.pid, graceMs);
  }

  /** Synchronous SIGKILL of the group, for exit handlers. */
  killNow(): void {
    signalGroup(this.pid, 'SIGKILL');
  }
}

/**
 * Stops the process group led by `pgid`: SIGTERM, then SIGKILL after `graceMs`, then waits
 * (bounded) for the group to disappear. Works for groups started by another process.
 */
export async function stopProcessGroup(pgid: number, graceMs = 5_000): Promise<void> {
  if (!isProcessGroupAlive(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  if (await waitForGroupExit(pgid, graceMs)) return;
  signalGroup(pgid, 'SIGKILL');
  if (await waitForGroupExit(pgid, 5_000)) return;
  throw new Error(`process group ${pgid} survived SIGKILL for 5 s`);
}

/**
 * Whether any process of group `pgid` exists. A leader that is a zombie (exited, not yet reaped
 * by a parent that is gone or not reaping, e.g. PID 1 in a minimal container) counts as gone.
 */
export function isProcessGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pgid}/stat`, 'utf8');
    // Format: "pid (comm) S ..."; comm may contain spaces or parentheses, so split at the last ')'.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z';
  } catch {
    // Leader gone but some member alive (or no /proc): treat as alive.
    return true;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

async function waitForGroupExit(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isProcessGroupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await delay(25);
  }
  return true;
}

/** The last `lines` lines of a text file, or '' when it cannot be read. */
export function tailOfFile(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
