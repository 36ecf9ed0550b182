/**
 * One `iptables-restore --noflush` transaction (dataplane.md §5.2): its input, generated as the
 * runner pulls it, and — when iptables-restore rejects it — which chain and rule the input line
 * it names belongs to.
 *
 * Layout: `*<table>`; a forward declaration (`:<chain> - [0:0]`) for every chain created or
 * deleted, so every jump target exists (and a doomed chain is flushed); per chain `-R`/`-A`/`-D`
 * by index from the hash diff (`-D` from the end, so indices stay valid); the hook rules in
 * kernel chains; `-X` of deleted chains, last, once nothing of ours jumps to them; `COMMIT`.
 *
 * Line numbers: iptables-restore names the line it failed on in both of its message forms —
 * `Error occurred at line: 7` (a rule it could not parse or resolve: an unknown match or
 * target, too many arguments, a missing set) and `line 7 failed` / `line 7: CHAIN_DEL failed …`
 * (the commit: iptables-nft maps a kernel error back to the command's line; legacy reports
 * the line of the command libiptc refused, or `COMMIT` for a table the kernel refused whole).
 * The transaction records where each chain's lines went (a few numbers per chain, not per rule)
 * and recomputes the rule index only when asked.
 */
import { performance } from 'node:perf_hooks';
import { timedChunks, type PhaseTotals } from '../apply-phases.ts';
import { RULE_HASH_PREFIX, hashCommentFragment } from './rule-text.ts';
import type { CommandResult, CommandRunner } from '../command-runner.ts';

/** What one chain should become: `want` (its rule tails and their hashes) or deleted. */
export interface ChainWrite {
  readonly name: string;
  /**
   * Undefined: delete the chain. `tails`, then `hashes`, are read while the input streams (a
   * lazy chain renders then); `written`, if given, is called once the chain's lines are.
   */
  readonly want: { readonly tails: readonly string[]; readonly hashes: () => readonly string[]; readonly written?: () => void } | undefined;
  /** The chain's hashes in the kernel; undefined when absent. */
  readonly have: readonly string[] | undefined;
}

/** The chain (and rule) an input line belongs to. */
export interface BlamedLine {
  readonly chain: string;
  /** `declare`: its forward declaration; `rules`: one of its rule operations; `delete`: its `-X`. */
  readonly op: 'declare' | 'rules' | 'delete';
  /** The desired rule the failing `-R`/`-A` writes, 1-based; undefined for other lines. */
  readonly rule: number | undefined;
}

interface Segment {
  readonly first: number;
  readonly last: number;
  readonly write: ChainWrite;
  readonly op: BlamedLine['op'];
}

export class RestoreTransaction {
  /** The chains this transaction changes (chains with nothing to do are dropped). */
  readonly chains: readonly ChainWrite[];
  /** Bytes of input generated so far. */
  bytes = 0;
  private readonly segments: Segment[] = [];

  /**
   * @param hookOps the hook lines (`-D`/`-I`/`-A` in kernel chains), or none; called once, when
   *   the input reaches them.
   */
  constructor(
    private readonly table: string,
    chains: readonly ChainWrite[],
    private readonly hookOps: () => readonly string[],
  ) {
    this.chains = chains.filter((c) => c.want !== undefined || c.have !== undefined);
  }

  /**
   * The input as UTF-8 chunks of whole lines (~64 KiB each), generated as they are pulled, so
   * rendering and hashing overlap the kernel's parsing. Generate it once.
   */
  *input(): Generator<Buffer> {
    const out = new InputChunks();
    let line = 1;
    out.line(`*${this.table}`);
    for (const c of this.chains) {
      if (c.have !== undefined && c.want !== undefined) continue;
      out.line(`:${c.name} - [0:0]`);
      line++;
      this.segments.push({ first: line, last: line, write: c, op: 'declare' });
    }
    for (const c of this.chains) {
      if (c.want === undefined) continue;
      const first = line + 1;
      const have = c.have ?? [];
      const tails = c.want.tails;
      const hashes = c.want.hashes();
      const common = Math.min(have.length, hashes.length);
      for (let i = 0; i < common; i++) {
        if (have[i] === hashes[i]) continue;
        out.line(`-R ${c.name} ${i + 1} ${ruleLine(tails[i]!, hashes[i]!)}`);
        line++;
        if (out.full) yield this.emit(out.take());
      }
      // The bulk of a from-scratch write: `-A <chain> -m comment --comment "cali:<hash>" <tail>`.
      const append = `-A ${c.name} -m comment --comment "${RULE_HASH_PREFIX}`;
      for (let i = common; i < hashes.length; i++) {
        const tail = tails[i]!;
        out.line(tail === '' ? `${append}${hashes[i]!}"` : `${append}${hashes[i]!}" ${tail}`);
        line++;
        if (out.full) yield this.emit(out.take());
      }
      for (let i = have.length; i > hashes.length; i--) {
        out.line(`-D ${c.name} ${i}`);
        line++;
      }
      c.want.written?.();
      if (line >= first) this.segments.push({ first, last: line, write: c, op: 'rules' });
    }
    for (const h of this.hookOps()) {
      out.line(h);
      line++;
    }
    for (const c of this.chains) {
      if (c.want !== undefined) continue;
      out.line(`-X ${c.name}`);
      line++;
      this.segments.push({ first: line, last: line, write: c, op: 'delete' });
    }
    out.line('COMMIT');
    yield this.emit(out.take());
  }

  /** The chain (and rule) input line `line` (1-based) wrote; undefined for other lines. */
  blame(line: number): BlamedLine | undefined {
    const s = this.segments.find((x) => line >= x.first && line <= x.last);
    if (s === undefined) return undefined;
    if (s.op !== 'rules' || s.write.want === undefined) return { chain: s.write.name, op: s.op, rule: undefined };
    return { chain: s.write.name, op: 'rules', rule: ruleAtOffset(s.write.have ?? [], s.write.want.hashes(), line - s.first) };
  }

  private emit(chunk: Buffer): Buffer {
    this.bytes += chunk.length;
    return chunk;
  }
}

/** Lines per chunk handed to the runner (~64 KiB: the runner's write size). */
const CHUNK_LINES = 512;

/**
 * Lines gathered into chunks of UTF-8 bytes. A chunk's lines are joined in one pass and
 * encoded at once, so its text dies young; the bytes handed over live outside the JavaScript
 * heap while they wait in the pipe's queue, where 64 KiB strings would be copied by every
 * collection they survive.
 */
class InputChunks {
  private lines: string[] = [];

  /** Whether the chunk is worth handing over. */
  get full(): boolean {
    return this.lines.length >= CHUNK_LINES;
  }

  /** Appends `text` as one line. */
  line(text: string): void {
    this.lines.push(text);
  }

  /** The chunk so far, each line ended by a newline (empty if none); the next line starts a new one. */
  take(): Buffer {
    const lines = this.lines;
    this.lines = [];
    if (lines.length === 0) return Buffer.alloc(0);
    lines.push('');
    return Buffer.from(lines.join('\n'), 'utf8');
  }
}

/**
 * The desired rule (1-based) written by a chain's `offset`-th operation, replaying the order
 * `input()` wrote them in: `-R` for each differing index of the common prefix, then `-A`, then
 * `-D` (undefined).
 */
function ruleAtOffset(have: readonly string[], hashes: readonly string[], offset: number): number | undefined {
  const common = Math.min(have.length, hashes.length);
  let k = offset;
  for (let i = 0; i < common; i++) {
    if (have[i] === hashes[i]) continue;
    if (k === 0) return i + 1;
    k--;
  }
  return k < hashes.length - common ? common + k + 1 : undefined;
}

function ruleLine(tail: string, hash: string): string {
  const h = hashCommentFragment(hash);
  return tail === '' ? h : `${h} ${tail}`;
}

/** The input line iptables-restore blames (1-based), from either of its message forms. */
export function restoreErrorLine(stderr: string): number | undefined {
  const m = /\bline:? (\d+)\b/.exec(stderr);
  return m === null ? undefined : Number(m[1]);
}

/** iptables-restore's message without its usage hint and deprecation notes, on one line. */
export function restoreErrorMessage(stderr: string): string {
  return stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('Try `') && !l.startsWith('Ignoring deprecated'))
    .join(' ');
}

/**
 * Runs `cmd` with `tx`'s input streamed to its stdin; adds the run (spawn to exit) to
 * `phases.restoreMs` and the time spent generating the input to `phases.generateMs`. An
 * exception thrown while generating (rendering a lazy chain, say) is rethrown after the run: a
 * runner that streams ends stdin early, and that must not pass for iptables-restore rejecting
 * the input.
 */
export async function streamRestore(runner: CommandRunner, cmd: string, args: readonly string[], tx: RestoreTransaction, phases: PhaseTotals): Promise<CommandResult> {
  const t0 = performance.now();
  const input = new GuardedInput(timedChunks(phases, 'generateMs', tx.input()));
  let res: CommandResult;
  try {
    res = await runner.run(cmd, args, { stdin: input });
  } finally {
    phases.restoreMs += performance.now() - t0;
  }
  input.rethrow();
  return res;
}

/**
 * Restore input that remembers an exception thrown while it is generated: a runner streaming
 * it ends stdin early and reports iptables-restore's complaint, so the writer rethrows the
 * real error after the run.
 */
class GuardedInput implements Iterable<Buffer> {
  private error: { readonly e: unknown } | undefined;
  constructor(private readonly chunks: Iterator<Buffer>) {}

  *[Symbol.iterator](): Iterator<Buffer> {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = this.chunks.next();
      } catch (e) {
        this.error = { e };
        throw e;
      }
      if (next.done === true) return;
      yield next.value;
    }
  }

  rethrow(): void {
    if (this.error !== undefined) throw this.error.e;
  }
}
