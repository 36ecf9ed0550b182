/**
 * The flags of the commands that run the simulator (`simulate`, `explain`, `render`),
 * declared once: each command takes the subset it understands (`pickFlags`), and the
 * parsed result always has every field — a flag a command does not take keeps its initial
 * value, so the shared loaders (`loadCluster`) read one shape.
 */
import type { ProbeProtocol } from '../simulate/index.ts';
import { intFlag, listFlag, oneOf, parseFlags, switchFlag, textFlag, textFlagOr, valueFlag, type Flag, type Flags, type FlagValues } from './args.ts';

const PROTOCOLS: readonly ProbeProtocol[] = ['TCP', 'UDP', 'SCTP'];

export const SIMULATOR_FLAGS = {
  files: listFlag('--filename', '<file|dir>', 'manifests to read (repeatable); a directory is read recursively (*.yaml, *.yml, *.json)', { short: '-f' }),
  scenarios: listFlag('--scenarios', '<file|dir>', 'truth-table scenario files to check (repeatable)'),
  kubeconfig: textFlag('--kubeconfig', '<file>', "read the objects from the cluster this kubeconfig names instead of files"),
  output: textFlagOr('--output', '<format>', 'output format', 'table', { short: '-o' }),
  port: intFlag('--port', '<n>', 'destination port', 80, { min: 1, max: 65535 }),
  protocol: valueFlag<ProbeProtocol>('--protocol', '<TCP|UDP|SCTP>', 'protocol (any case)', 'TCP', (t) => oneOf('--protocol', t.toUpperCase(), PROTOCOLS), { defaultText: 'TCP' }),
  from: textFlag('--from', '<ns/pod|IP>', 'the source: a pod, or an address outside the cluster'),
  to: textFlag('--to', '<ns/pod|IP>', 'the destination: a pod, or an address outside the cluster'),
  node: textFlag('--node', '<name>', 'the node'),
  skipInvalid: switchFlag('--skip-invalid', 'leave invalid objects out (a note each on stderr), as the agent would'),
};

/** The options the simulator commands share. */
export type SimulatorArgs = FlagValues<typeof SIMULATOR_FLAGS>;

type SimulatorFlag = keyof typeof SIMULATOR_FLAGS;

/** The subset of `SIMULATOR_FLAGS` a command takes, in the order given (its usage's order); `overrides` restate a flag's text for that command. */
export function pickFlags<K extends SimulatorFlag>(keys: readonly K[], overrides: Partial<Record<K, Partial<Pick<Flag<unknown>, 'description' | 'defaultText'>>>> = {}): Pick<typeof SIMULATOR_FLAGS, K> {
  const out: Partial<Record<K, Flag<unknown>>> = {};
  for (const k of keys) out[k] = { ...SIMULATOR_FLAGS[k], ...overrides[k] } as Flag<unknown>;
  return out as Pick<typeof SIMULATOR_FLAGS, K>;
}

const INITIAL = Object.fromEntries(Object.entries(SIMULATOR_FLAGS).map(([k, f]) => [k, f.initial])) as SimulatorArgs;

/**
 * Reads `argv` against the flags a command takes (`pickFlags`, plus any of its own); any other
 * flag is unknown.
 */
export function parseSimulatorArgs<F extends Flags>(argv: readonly string[], flags: F): (SimulatorArgs & FlagValues<F>) | 'help' {
  const parsed = parseFlags(argv, flags);
  if (parsed === 'help') return 'help';
  return { ...INITIAL, ...parsed.values };
}
