/**
 * `tessera cleanup`: removes everything `tessera agent` programmed on this node — the hook
 * rules in kernel chains, every `cali-` chain, the IP sets, the ownership marker — in every
 * iptables backend and IP family that holds them, and nothing else (src/dataplane/iptables/cleanup.ts).
 * manifests/uninstall/ runs it on every node once the agent DaemonSet is gone.
 *
 * Exit status: 0 removed (or nothing to remove), 1 a removal step failed, 2 usage error,
 * 3 iptables/ipset cannot be run (missing, or no NET_ADMIN), 4 refused: the state is not
 * Tessera's (Felix's chains or sets, or foreign rules jumping into `cali-` chains) and
 * `--force` was not given.
 */
import { CaliStateReadError, readCaliState } from '../dataplane/iptables/cali-state.ts';
import { CleanupError, formatPlan, planCleanup, runCleanup } from '../dataplane/iptables/cleanup.ts';
import { NetnsCommandRunner, RealCommandRunner, type CommandRunner } from '../dataplane/command-runner.ts';
import { IPTABLES_BACKENDS, IPTABLES_BACKEND_MODES, type IptablesBackendMode } from '../dataplane/iptables/iptables-backend.ts';
import { judgeOwnership } from '../dataplane/iptables/ownership.ts';
import { choiceFlag, parseFlags, processOutput, switchFlag, textFlag, usage, UsageError, type CliOutput } from './args.ts';
import { EXIT_CANNOT_PROGRAM, EXIT_FOREIGN_DATAPLANE } from './node-exit-status.ts';

/** cleanup's flags: the one declaration its parsing and its usage come from. */
const FLAGS = {
  backend: choiceFlag<IptablesBackendMode>('--iptables-backend', '<mode>', 'auto (every backend holding cali- state), nft or legacy', IPTABLES_BACKEND_MODES, 'auto'),
  netns: textFlag('--netns', '<name>', 'work inside this network namespace (tests)'),
  dryRun: switchFlag('--dry-run', 'print the restore input it would run, change nothing'),
  force: switchFlag('--force', "also remove cali- state Tessera did not write (Felix's), and foreign rules that jump into cali- chains"),
};

const USAGE = usage(
  {
    synopsis: 'tessera cleanup [options]',
    about: `Removes what tessera agent programmed on this node: its hook rules in FORWARD/INPUT/OUTPUT,
every cali- chain, its IP sets and its marker chain, for IPv4 and IPv6. Stop the agent first.`,
    footer: `exit status: 0 done, 1 a step failed, 2 usage, 3 cannot run iptables/ipset,
             4 refused: the state is not Tessera's (use --force)`,
  },
  FLAGS,
);

export interface CleanupCliOptions {
  backend: IptablesBackendMode;
  netns: string | undefined;
  dryRun: boolean;
  force: boolean;
}

export function parseCleanupArgs(argv: readonly string[]): CleanupCliOptions | 'help' {
  const parsed = parseFlags(argv, FLAGS);
  return parsed === 'help' ? 'help' : parsed.values;
}

export interface CleanupCliDeps {
  readonly out?: CliOutput;
  /** @default a RealCommandRunner, or a NetnsCommandRunner for `--netns` */
  readonly runner?: CommandRunner;
}

export async function runCleanupCommand(argv: readonly string[], deps: CleanupCliDeps = {}): Promise<number> {
  const out = deps.out ?? processOutput;
  let opts;
  let runner: CommandRunner;
  try {
    opts = parseCleanupArgs(argv);
    if (opts === 'help') {
      out.stdout(USAGE);
      return 0;
    }
    runner = deps.runner ?? (opts.netns === undefined ? new RealCommandRunner() : new NetnsCommandRunner(opts.netns));
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof TypeError)) throw err;
    out.stderr(`tessera cleanup: ${err.message}\n\n${USAGE}`);
    return 2;
  }

  let state;
  try {
    // Both backends are read whatever the scope: ownership and the IP sets depend on all of them.
    state = await readCaliState(runner);
  } catch (err) {
    if (!(err instanceof CaliStateReadError)) throw err;
    out.stderr(`tessera cleanup: cannot read the node's state: ${err.message} (needs ipset, iptables and root or CAP_NET_ADMIN)\n`);
    return EXIT_CANNOT_PROGRAM;
  }
  for (const u of state.unreadable) out.stderr(`tessera cleanup: note: could not read ${u}\n`);
  const ownership = judgeOwnership(state);
  if (ownership.verdict === 'foreign' && !opts.force) {
    out.stderr(`tessera cleanup: refusing: this node's cali- state was not written by Tessera (Felix's?); nothing removed:\n`);
    for (const r of ownership.reasons) out.stderr(`  - ${r}\n`);
    out.stderr(`Rerun with --force to remove it anyway.\n`);
    return EXIT_FOREIGN_DATAPLANE;
  }
  const backends = opts.backend === 'auto' ? IPTABLES_BACKENDS : [opts.backend];
  const plan = planCleanup(state, { backends, removeForeignReferences: opts.force });
  if (plan.foreignReferences.length > 0 && !opts.force) {
    out.stderr(`tessera cleanup: refusing: rules Tessera did not write jump into cali- chains, which keeps them from being deleted; nothing removed:\n`);
    for (const r of plan.foreignReferences) out.stderr(`  - ${r}\n`);
    out.stderr(`Remove them first, or rerun with --force to remove them too.\n`);
    return EXIT_FOREIGN_DATAPLANE;
  }
  if (plan.keptIpSets !== undefined) out.stderr(`tessera cleanup: note: ${plan.keptIpSets}\n`);
  if (plan.steps.length === 0) {
    out.stdout('nothing to remove: no cali- chains, hook rules or IP sets of Tessera on this node\n');
    return 0;
  }
  if (opts.dryRun) {
    out.stdout(formatPlan(plan));
    return 0;
  }
  try {
    await runCleanup(runner, plan, { onStep: (s) => out.stdout(`removed ${s.summary}\n`) });
  } catch (err) {
    if (!(err instanceof CleanupError)) throw err;
    out.stderr(`tessera cleanup: ${err.message}\n`);
    return 1;
  }
  return 0;
}
