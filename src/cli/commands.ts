/**
 * The sub-command table of the `tessera` CLI.
 *
 * Each entry's `run` imports its module only when that command runs, so `tessera version`
 * and `tessera --help` load none of @kubernetes/client-node, prom-client or the calc graph
 * (compiled: 43 MB RSS and ~0.05 s, against 75 MB and twice the time with one static import).
 * Keep it that way when adding a command — a summary here, and a `run` that does
 * `(await import('./<command>.ts')).run<Command>(argv)`; never a static import of a command
 * module in this file. The build makes each such import its own chunk, and
 * e2e/build/compiled.unit.test.ts checks that only that command loads it.
 */
import { VERSION } from '../runtime/version.ts';

export interface Command {
  /** One line for `tessera --help`. */
  readonly summary: string;
  run(argv: readonly string[]): Promise<number>;
}

export const commands: Record<string, Command> = {
  version: {
    summary: 'print the Tessera version',
    run: async () => {
      process.stdout.write(`tessera ${VERSION}\n`);
      return 0;
    },
  },
  validate: {
    summary: 'check projectcalico.org/v3 manifests: tessera validate -f <file|dir>...',
    run: async (argv) => (await import('./validate.ts')).runValidate(argv),
  },
  controllers: {
    summary: 'run the cluster controllers (policy converter, profiles, workload endpoints, tiers)',
    run: async (argv) => (await import('./controllers.ts')).runControllers(argv),
  },
  agent: {
    summary: 'run the per-node agent (informers → calc graph → iptables/ipsets): tessera agent --node <name> [--netns <ns>]',
    run: async (argv) => (await import('./agent.ts')).runAgent(argv),
  },
  typha: {
    summary: 'run Typha: one set of watches fanned out to every agent as a snapshot, then deltas: tessera typha [--rebalance-service <ns/name>]',
    run: async (argv) => (await import('./typha.ts')).runTypha(argv),
  },
  cleanup: {
    summary: 'remove everything the agent programmed on this node (hooks, cali- chains, IP sets): tessera cleanup [--dry-run] [--netns <ns>]',
    run: async (argv) => (await import('./cleanup.ts')).runCleanupCommand(argv),
  },
  convert: {
    summary: 'print the Calico policy for each Kubernetes NetworkPolicy: tessera convert -f <file> [--output yaml|json]',
    run: async (argv) => (await import('./convert.ts')).runConvert(argv),
  },
  simulate: {
    summary: 'connectivity verdicts from the agent\'s engine: tessera simulate -f <files> | --scenarios <file> [--output table|json|html]',
    run: async (argv) => (await import('./simulate.ts')).runSimulate(argv),
  },
  explain: {
    summary: 'why a connection is allowed or dropped: tessera explain --from ns/pod --to ns/pod --port 80 -f <files>',
    run: async (argv) => (await import('./explain.ts')).runExplain(argv),
  },
  render: {
    summary: 'the ipset and iptables-restore input the agent would apply on a node: tessera render --node <name> -f <files>',
    run: async (argv) => (await import('./render.ts')).runRender(argv),
  },
  demo: {
    summary: 'the example shop through the agent\'s engine: its connectivity matrix and one explained denied flow',
    run: async (argv) => (await import('./demo.ts')).runDemo(argv),
  },
};
