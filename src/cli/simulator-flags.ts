/**
 * The flags of the commands that run the simulator (`simulate`, `explain`, `render`),
 * declared once: each command takes the subset it understands (`pickFlags`), and the
 * parsed result always has every field — a flag a command does not take keeps its initial
 * value, so the shared loaders (`loadCluster`) read one shape.
 */
import { DEFAULT_FAILSAFE_INBOUND, DEFAULT_FAILSAFE_OUTBOUND, type ProtoPort } from '../dataplane/index.ts';
import type { EndpointToHostAction, ProbeProtocol, SimulationOptions } from '../simulate/index.ts';
import { formatPorts, readFailsafePorts } from './failsafe-flags.ts';
import { intFlag, listFlag, oneOf, parseFlags, switchFlag, textFlag, textFlagOr, valueFlag, type Flag, type Flags, type FlagValues } from './args.ts';

const PROTOCOLS: readonly ProbeProtocol[] = ['TCP', 'UDP', 'SCTP'];


export const SIMULATOR_FLAGS = {
  files: listFlag('--filename', '<file|dir>', 'manifests to read (repeatable); a directory is read recursively (*.yaml, *.yml, *.json)', { short: '-f' }),
  scenarios: listFlag('--scenarios', '<file|dir>', 'truth-table scenario files to check (repeatable)'),
  kubeconfig: textFlag('--kubeconfig', '<file>', "read the objects from the cluster this kubeconfig names instead of files"),
  output: textFlagOr('--output', '<format>', 'output format', 'table', { short: '-o' }),
  port: intFlag('--port', '<n>', 'destination port', 80, { min: 1, max: 65535 }),
  protocol: valueFlag<ProbeProtocol>('--protocol', '<TCP|UDP|SCTP>', 'protocol (any case)', 'TCP', (t) => oneOf('--protocol', t.toUpperCase(), PROTOCOLS), { defaultText: 'TCP' }),
  from: textFlag('--from', '<ns/pod|node|IP>', 'the source: a pod, a node (its host network), or an address'),
  to: textFlag('--to', '<ns/pod|node|IP>', 'the destination: a pod, a node (its host network), or an address'),
  node: textFlag('--node', '<name>', 'the node'),
  skipInvalid: switchFlag('--skip-invalid', 'leave invalid objects out (a note each on stderr), as the agent would'),
  // The agent's own flags that change a host flow's verdict: decide as an agent run with them.
  endpointToHostAction: valueFlag<EndpointToHostAction>(
    '--default-endpoint-to-host-action',
    '<DROP|ACCEPT|RETURN>',
    "as the agent's flag: what a pod's traffic to its own node meets after its egress policy allowed it",
    'ACCEPT',
    (t) => oneOf('--default-endpoint-to-host-action', t.toUpperCase(), ['DROP', 'ACCEPT', 'RETURN']),
    { defaultText: "ACCEPT, what manifests/ run the agent with (as Calico's manifests do; the agent's own default is Felix's DROP)" },
  ),
  failsafeInbound: valueFlag<readonly ProtoPort[]>('--failsafe-inbound-host-ports', '<ports>', "as the agent's flag (Felix's syntax; none for no failsafe)", DEFAULT_FAILSAFE_INBOUND, readFailsafePorts('--failsafe-inbound-host-ports'), {
    defaultText: `Felix's list and Tessera's pods' health ports and the kubelet's: ${formatPorts(DEFAULT_FAILSAFE_INBOUND)}`,
  }),
  failsafeOutbound: valueFlag<readonly ProtoPort[]>('--failsafe-outbound-host-ports', '<ports>', "as the agent's flag", DEFAULT_FAILSAFE_OUTBOUND, readFailsafePorts('--failsafe-outbound-host-ports'), {
    defaultText: `Felix's: ${formatPorts(DEFAULT_FAILSAFE_OUTBOUND)}`,
  }),
};

/** The simulation options the agent's flags above stand for. */
export function agentOptions(a: Pick<SimulatorArgs, 'endpointToHostAction' | 'failsafeInbound' | 'failsafeOutbound'>): SimulationOptions {
  return { endpointToHostAction: a.endpointToHostAction, failsafes: { inbound: a.failsafeInbound, outbound: a.failsafeOutbound } };
}

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
