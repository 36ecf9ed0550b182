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
  /** Undefined: delete the chain. `tails`, then `hashes`, are read while the input streams (a lazy chain renders then). */
  readonly want: { readonly tails: readonly string[]; readonly hashes: () => readonly string[] } | undefined;
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

/** Lines per chunk handed to the runner (so hashing overlaps with the kernel parsing). */
const CHUNK_LINES = 512;

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

  /** The input, as chunks of lines, generated as they are pulled. Generate it once. */
  *input(): Generator<string> {
    let line = 1;
    const head: string[] = [`*${this.table}`];
    for (const c of this.chains) {
      if (c.have !== undefined && c.want !== undefined) continue;
      head.push(`:${c.name} - [0:0]`);
      line++;
      this.segments.push({ first: line, last: line, write: c, op: 'declare' });
    }
    yield this.emit(head.join('\n') + '\n');
    let ops: string[] = [];
    for (const c of this.chains) {
      if (c.want === undefined) continue;
      const first = line + 1;
      const have = c.have ?? [];
      const tails = c.want.tails;
      const hashes = c.want.hashes();
      const common = Math.min(have.length, hashes.length);
      for (let i = 0; i < common; i++) {
        if (have[i] === hashes[i]) continue;
        ops.push(`-R ${c.name} ${i + 1} ${ruleLine(tails[i]!, hashes[i]!)}`);
        line++;
      }
      // The bulk of a from-scratch write: `-A <chain> -m comment --comment "cali:<hash>" <tail>`.
      const append = `-A ${c.name} -m comment --comment "${RULE_HASH_PREFIX}`;
      for (let i = common; i < hashes.length; i++) {
        const tail = tails[i]!;
        ops.push(tail === '' ? `${append}${hashes[i]!}"` : `${append}${hashes[i]!}" ${tail}`);
        line++;
        if (ops.length >= CHUNK_LINES) {
          yield this.emit(ops.join('\n') + '\n');
          ops = [];
        }
      }
      for (let i = have.length; i > hashes.length; i--) {
        ops.push(`-D ${c.name} ${i}`);
        line++;
      }
      if (line >= first) this.segments.push({ first, last: line, write: c, op: 'rules' });
    }
    const hooks = this.hookOps();
    ops.push(...hooks);
    line += hooks.length;
    for (const c of this.chains) {
      if (c.want !== undefined) continue;
      ops.push(`-X ${c.name}`);
      line++;
      this.segments.push({ first: line, last: line, write: c, op: 'delete' });
    }
    ops.push('COMMIT', '');
    yield this.emit(ops.join('\n'));
  }

  /** The chain (and rule) input line `line` (1-based) wrote; undefined for other lines. */
  blame(line: number): BlamedLine | undefined {
    const s = this.segments.find((x) => line >= x.first && line <= x.last);
    if (s === undefined) return undefined;
    if (s.op !== 'rules' || s.write.want === undefined) return { chain: s.write.name, op: s.op, rule: undefined };
    return { chain: s.write.name, op: 'rules', rule: ruleAtOffset(s.write.have ?? [], s.write.want.hashes(), line - s.first) };
  }

  private emit(text: string): string {
    this.bytes += Buffer.byteLength(text);
    return text;
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
class GuardedInput implements Iterable<string> {
  private error: { readonly e: unknown } | undefined;
  constructor(private readonly chunks: Iterator<string>) {}

  *[Symbol.iterator](): Iterator<string> {
    for (;;) {
      let next: IteratorResult<string>;
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
