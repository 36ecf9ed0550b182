/** The sub-command table of the `tessera` CLI. */
import { VERSION } from '../runtime/version.ts';
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
  demo: {
    summary: 'run the engine on the bundled examples without a cluster',
    run: async () => {
      process.stdout.write(
        'tessera demo: the no-cluster simulation is not built yet (see issue "User tools").\n' +
          'Today Tessera ships the v3 API model, its validation and the Calico selector engine; try\n' +
          '  npm run tessera -- validate -f examples/\n',
      );
      return 0;
    },
  },
};
