/** The sub-command table of the `tessera` CLI. */
import { VERSION } from '../runtime/version.ts';
import { runAgent } from './agent.ts';
import { runControllers } from './controllers.ts';
import { runConvert } from './convert.ts';
import { runDemo } from './demo.ts';
import { runExplain } from './explain.ts';
import { runRender } from './render.ts';
import { runSimulate } from './simulate.ts';
import { runValidate } from './validate.ts';

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
    run: (argv) => runValidate(argv),
  },
  controllers: {
    summary: 'run the cluster controllers (policy converter, profiles, workload endpoints, tiers)',
    run: (argv) => runControllers(argv),
  },
  agent: {
    summary: 'run the per-node agent (informers → calc graph → iptables/ipsets): tessera agent --node <name> [--netns <ns>]',
    run: (argv) => runAgent(argv),
  },
  convert: {
    summary: 'print the Calico policy for each Kubernetes NetworkPolicy: tessera convert -f <file> [--output yaml|json]',
    run: (argv) => runConvert(argv),
  },
  simulate: {
    summary: 'connectivity verdicts from the agent\'s engine: tessera simulate -f <files> | --scenarios <file> [--output table|json|html]',
    run: (argv) => runSimulate(argv),
  },
  explain: {
    summary: 'why a connection is allowed or dropped: tessera explain --from ns/pod --to ns/pod --port 80 -f <files>',
    run: (argv) => runExplain(argv),
  },
  render: {
    summary: 'the ipset and iptables-restore input the agent would apply on a node: tessera render --node <name> -f <files>',
    run: (argv) => runRender(argv),
  },
  demo: {
    summary: 'the example shop through the agent\'s engine: its connectivity matrix and one explained denied flow',
    run: (argv) => runDemo(argv),
  },
};
