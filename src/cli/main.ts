/**
 * The `tessera` command. Sub-commands register themselves in `commands`; each gets the
 * remaining argv and returns an exit code. Unknown commands print usage and exit 2.
 */
import { commands } from './commands.ts';

function usage(): string {
  const lines = Object.entries(commands)
    .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
    .join('\n');
  return `usage: tessera <command> [options]\n\ncommands:\n${lines}\n`;
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`tessera: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  return command.run(rest);
}

process.exitCode = await main(process.argv.slice(2));
