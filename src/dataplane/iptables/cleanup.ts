/**
 * Removing everything the agent programmed on a node (`tessera cleanup`), and nothing else.
 *
 * Guarantees:
 * - Only `cali-` chains, rules of kernel chains carrying a `cali:` hash comment, and IP sets
 *   named as `IpSets` owns them are removed. Foreign chains, rules and sets are never touched —
 *   except, when asked (`removeForeignReferences`), foreign rules that jump into a `cali-`
 *   chain, which would otherwise keep that chain from being deleted.
 * - Order: per table ONE `iptables-restore --noflush` transaction deletes the hook rules,
 *   flushes every `cali-` chain (its declaration) and deletes them (`-X`, after every flush, so
 *   no chain is referenced when it goes) — all or nothing per table; then the IP sets (no rule
 *   references them any more); then the ownership marks, last, so a crash part-way leaves
 *   state the next agent or cleanup still recognises as Tessera's (see `ownership.ts`).
 * - The IP sets are shared by both backends: they are destroyed only when every table holding
 *   `cali-` state is in scope; otherwise they and the marks stay, and the plan says why.
 * - Destroying a set the kernel still holds a reference to (nft may release a deleted rule's
 *   reference asynchronously) is retried with backoff; the sets are re-listed before each try.
 */
import { sleep, realClock, type Clock } from '../../runtime/clock.ts';
import { describeTable, parseOwnedIpSets, type CaliState, type CaliTableState } from './cali-state.ts';
import type { CommandRunner } from '../command-runner.ts';
import { iptablesCommand } from './iptables-backend.ts';
import type { IptablesBackend } from './iptables-table.ts';
import { OWNER_MARKER_CHAIN } from './ownership.ts';

/** Felix's xtables lock flags (`--wait 10 --wait-interval 50000`), as the table uses them. */
const RESTORE_ARGS: readonly string[] = ['--noflush', '--wait', '10', '--wait-interval', '50000'];

export interface CleanupStep {
  readonly phase: 'iptables' | 'ipsets' | 'marker';
  readonly cmd: string;
  readonly args: readonly string[];
  /** The restore input; for `ipsets`, the sets as planned (re-listed when it runs). */
  readonly stdin: string;
  /** What it removes, one line for the report. */
  readonly summary: string;
}

export interface CleanupPlan {
  readonly steps: readonly CleanupStep[];
  /** Foreign rules jumping into `cali-` chains (removed only with `removeForeignReferences`). */
  readonly foreignReferences: readonly string[];
  /** Why the IP sets and marks stay, when they do. */
  readonly keptIpSets: string | undefined;
}

export interface PlanCleanupOptions {
  /** Backends to clean. @default every backend in the state */
  readonly backends?: readonly IptablesBackend[];
  /** Also delete foreign rules that jump into `cali-` chains. @default false */
  readonly removeForeignReferences?: boolean;
}

/** The steps that remove `state` (see the module comment for the order). */
export function planCleanup(state: CaliState, opts: PlanCleanupOptions = {}): CleanupPlan {
  const { backends, removeForeignReferences = false } = opts;
  const inScope = (t: CaliTableState): boolean => backends === undefined || backends.includes(t.backend);
  const tables = state.tables.filter(inScope);
  const outOfScope = state.tables.filter((t) => !inScope(t));
  const steps: CleanupStep[] = [];
  const foreignReferences: string[] = [];
  for (const t of tables) {
    foreignReferences.push(...t.foreignReferences);
    const chains = t.chains.filter((c) => c !== OWNER_MARKER_CHAIN);
    const refs = removeForeignReferences ? t.foreignReferences : [];
    if (chains.length + t.hookRules.length + refs.length === 0) continue;
    const lines = [`*${t.table}`];
    // Delete by the exact text read back, never by index: an index could hit a foreign rule.
    for (const rule of [...t.hookRules, ...refs]) lines.push(`-D${rule.slice(2)}`);
    for (const c of chains) lines.push(`:${c} - [0:0]`);
    for (const c of chains) lines.push(`-X ${c}`);
    lines.push('COMMIT', '');
    const parts = [`${t.hookRules.length} hook rule(s)`, `${chains.length} chain(s)`];
    if (refs.length > 0) parts.push(`${refs.length} foreign rule(s) jumping into them`);
    steps.push({ phase: 'iptables', cmd: iptablesCommand(t.backend, t.ipVersion, 'restore'), args: RESTORE_ARGS, stdin: lines.join('\n'), summary: `${describeTable(t)}: ${parts.join(', ')}` });
  }
  const busy = outOfScope.filter((t) => t.hookRules.length > 0 || t.chains.some((c) => c !== OWNER_MARKER_CHAIN));
  const keptIpSets =
    busy.length > 0 ? `${busy.map(describeTable).join(', ')} (not cleaned: --iptables-backend) still hold cali- state that may use the IP sets; they and the marker chains stay` : undefined;
  if (keptIpSets === undefined) {
    if (state.ipsets.length > 0) {
      steps.push({ phase: 'ipsets', cmd: 'ipset', args: ['restore'], stdin: state.ipsets.map((n) => `destroy ${n}\n`).join(''), summary: `${state.ipsets.length} IP set(s)` });
    }
    for (const t of tables) {
      if (!t.chains.includes(OWNER_MARKER_CHAIN)) continue;
      steps.push({
        phase: 'marker',
        cmd: iptablesCommand(t.backend, t.ipVersion, 'restore'),
        args: RESTORE_ARGS,
        stdin: `*${t.table}\n:${OWNER_MARKER_CHAIN} - [0:0]\n-X ${OWNER_MARKER_CHAIN}\nCOMMIT\n`,
        summary: `${describeTable(t)}: the marker chain ${OWNER_MARKER_CHAIN}`,
      });
    }
  }
  return { steps, foreignReferences, keptIpSets };
}

/** `# <command line>` and its input, per step: what `--dry-run` prints. */
export function formatPlan(plan: CleanupPlan): string {
  return plan.steps.map((s) => `# ${[s.cmd, ...s.args].join(' ')}\n${s.stdin}`).join('');
}

export class CleanupError extends Error {
  override readonly name = 'CleanupError';
}

export interface RunCleanupOptions {
  /** @default realClock */
  readonly clock?: Clock;
  /** Attempts at destroying the IP sets. @default 6 */
  readonly ipsetAttempts?: number;
  /** First retry delay, doubling. @default 100 */
  readonly ipsetRetryMs?: number;
  /** Called after each step that succeeded. */
  readonly onStep?: (step: CleanupStep) => void;
}

/** Runs `plan`'s steps in order; throws `CleanupError` naming the step that failed. */
export async function runCleanup(runner: CommandRunner, plan: CleanupPlan, opts: RunCleanupOptions = {}): Promise<void> {
  const { clock = realClock, ipsetAttempts = 6, ipsetRetryMs = 100, onStep } = opts;
  for (const step of plan.steps) {
    if (step.phase === 'ipsets') await destroyIpSets(runner, step, clock, ipsetAttempts, ipsetRetryMs);
    else {
      const r = await runner.run(step.cmd, step.args, { stdin: step.stdin });
      if (r.code !== 0) throw new CleanupError(`${step.summary}: ${step.cmd} failed (exit ${r.code}): ${r.stderr.trim()}`);
    }
    onStep?.(step);
  }
}

async function destroyIpSets(runner: CommandRunner, step: CleanupStep, clock: Clock, attempts: number, retryMs: number): Promise<void> {
  const planned = new Set(step.stdin.split('\n').filter((l) => l !== '').map((l) => l.slice('destroy '.length)));
  let delay = retryMs;
  let lastError = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const listed = await runner.run('ipset', ['list', '-n']);
    if (listed.code !== 0) throw new CleanupError(`${step.summary}: ipset list -n failed (exit ${listed.code}): ${listed.stderr.trim()}`);
    // `ipset restore` stops at the first failure: the sets before it are gone already.
    const left = parseOwnedIpSets(listed.stdout).filter((n) => planned.has(n));
    if (left.length === 0) return;
    const r = await runner.run('ipset', ['restore'], { stdin: left.map((n) => `destroy ${n}\n`).join('') });
    if (r.code === 0) return;
    lastError = r.stderr.trim();
    if (attempt < attempts) await sleep(clock, delay);
    delay *= 2;
  }
  throw new CleanupError(`${step.summary}: ipset destroy failed ${attempts} times: ${lastError}`);
}
