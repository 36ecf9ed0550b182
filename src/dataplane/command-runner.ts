/**
 * How the dataplane runs `iptables-restore`, `iptables-save`, `ipset` and `ip`.
 *
 * - No shell, ever: the program and its arguments go to `spawn` as a vector and bulk input
 *   (restore transactions) goes on stdin, so a policy name or label value can never be
 *   interpreted by a shell.
 * - A runner reports the exit code instead of throwing on non-zero, so callers decide what a
 *   failure means; spawn errors (ENOENT) are reported as code 127 with the error in stderr.
 *
 * Three implementations: `RealCommandRunner` (this host / network namespace),
 * `NetnsCommandRunner` (inside a named network namespace via `ip netns exec`) and
 * `RecordingCommandRunner` (unit tests: records calls, answers from a handler).
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  /**
   * Written to the child's stdin, which is then closed. An iterable is pulled chunk by chunk
   * while the child runs, yielding to the event loop between chunks, so producing the input
   * overlaps with the child consuming it (large restore transactions). A chunk may be bytes
   * (UTF-8), written as they are: a large input built in buffers is never held as strings,
   * which the garbage collector would copy while they wait in the pipe's queue. A chunk
   * handed over belongs to the runner (it is written later): the producer must not reuse it.
   */
  readonly stdin?: string | Iterable<string | Uint8Array>;
  /** Kills the child (SIGKILL) after this long and reports code 124. @default 60_000 */
  readonly timeoutMs?: number;
}

export interface CommandRunner {
  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<CommandResult>;
}

/** Runs commands directly with `spawn` (no shell). */
export class RealCommandRunner implements CommandRunner {
  run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<CommandResult> {
    const { stdin, timeoutMs = 60_000 } = opts;
    return new Promise((resolve) => {
      const child = spawn(cmd, [...args], { stdio: ['pipe', 'pipe', 'pipe'], shell: false });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      let settled = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      timer.unref();
      const finish = (r: CommandResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => finish({ code: 127, stdout: '', stderr: String(e) }));
      child.on('close', (code) =>
        finish({
          code: timedOut ? 124 : (code ?? 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8') + (timedOut ? `\n${cmd}: killed after ${timeoutMs} ms` : ''),
        }),
      );
      // A child that exits before reading all of stdin raises EPIPE; its exit code tells the story.
      child.stdin.on('error', () => undefined);
      if (stdin === undefined || typeof stdin === 'string') {
        child.stdin.end(stdin ?? '');
        return;
      }
      void pump(child.stdin, stdin, () => settled);
    });
  }
}

/**
 * How far (bytes) the producer may run ahead of the child. A pipe holds only 64 KiB: waiting
 * for `drain` after every chunk would make producing and consuming alternate instead of
 * overlap, so chunks are queued in the stream until this much is waiting.
 */
const PUMP_AHEAD_BYTES = 4 << 20;

/**
 * Writes `chunks` to `stream` ~64 KiB at a time (strings are gathered up to that; byte chunks
 * are written as they come), up to `PUMP_AHEAD_BYTES` ahead, then ends it.
 */
async function pump(stream: Writable, chunks: Iterable<string | Uint8Array>, done: () => boolean): Promise<void> {
  let buf = '';
  try {
    for (const chunk of chunks) {
      if (typeof chunk === 'string') {
        buf += chunk;
        if (buf.length < 65_536) continue;
        stream.write(buf);
        buf = '';
      } else {
        if (buf !== '') stream.write(buf);
        buf = '';
        if (chunk.length === 0) continue;
        stream.write(chunk);
      }
      if (done()) return;
      // Let libuv hand queued data to the child between chunks; wait only when far ahead.
      await (stream.writableLength < PUMP_AHEAD_BYTES ? new Promise<void>((r) => setImmediate(r)) : new Promise<void>((r) => stream.once('drain', () => r())));
      if (done()) return;
    }
    stream.end(buf);
  } catch {
    stream.end();
  }
}

/** Materialises `stdin` as one string (for recording and logging); byte chunks are UTF-8. */
export function stdinText(stdin: RunOptions['stdin']): string | undefined {
  if (stdin === undefined || typeof stdin === 'string') return stdin;
  const chunks = [...stdin];
  if (chunks.every((c) => typeof c === 'string')) return chunks.join('');
  return Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c))).toString('utf8');
}

/** Network namespace names we accept: the `ip netns` directory entry, nothing path-like. */
const NETNS_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Runs every command inside the named network namespace with `ip netns exec <ns> …`. */
export class NetnsCommandRunner implements CommandRunner {
  private readonly inner: CommandRunner;

  constructor(
    readonly netns: string,
    inner: CommandRunner = new RealCommandRunner(),
  ) {
    if (!NETNS_NAME.test(netns)) throw new TypeError(`NetnsCommandRunner: netns '${netns}' is not a valid namespace name`);
    this.inner = inner;
  }

  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<CommandResult> {
    return this.inner.run('ip', ['netns', 'exec', this.netns, cmd, ...args], opts);
  }
}

export interface RecordedCommand {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly stdin: string | undefined;
}

/** Answers a recorded command; return `undefined` for success with empty output. */
export type CommandHandler = (call: RecordedCommand) => CommandResult | undefined | Promise<CommandResult | undefined>;

/** For unit tests: records every call and answers from `handler`. */
export class RecordingCommandRunner implements CommandRunner {
  readonly calls: RecordedCommand[] = [];

  constructor(public handler: CommandHandler = () => undefined) {}

  async run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<CommandResult> {
    const call: RecordedCommand = { cmd, args: [...args], stdin: stdinText(opts.stdin) };
    this.calls.push(call);
    return (await this.handler(call)) ?? { code: 0, stdout: '', stderr: '' };
  }

  /** Calls whose program is `cmd`. */
  callsTo(cmd: string): RecordedCommand[] {
    return this.calls.filter((c) => c.cmd === cmd);
  }

  clear(): void {
    this.calls.length = 0;
  }
}
