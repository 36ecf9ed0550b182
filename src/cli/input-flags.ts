/**
 * The flags of the file-reading commands (`validate`, `convert`), declared once: input paths
 * given with `-f`/`--filename` or bare, `-o`/`--output` restricted to the command's formats,
 * and `--skip-invalid` (invalid objects become notes instead of failing the command).
 */
import { listFlag, oneOf, parseFlags, switchFlag, valueFlag, UsageError, type Flag } from './args.ts';

/** The declaration for a command whose formats are `outputs`. */
export function inputFlags<O extends string>(outputs: readonly O[], defaultOutput: O, skipInvalid: string): { paths: Flag<string[]>; output: Flag<O>; skipInvalid: Flag<boolean> } {
  return {
    paths: listFlag('--filename', '<file|dir>', 'an input (repeatable, or given bare); a directory is read recursively (*.yaml, *.yml, *.json)', { short: '-f' }),
    output: valueFlag('--output', `<${outputs.join('|')}>`, 'output format', defaultOutput, (t) => oneOf('--output', t, outputs), { short: '-o', defaultText: defaultOutput }),
    skipInvalid: switchFlag('--skip-invalid', skipInvalid),
  };
}

/** Reads `argv` against `inputFlags(…)`; bare arguments are inputs too; at least one is required. */
export function parseInputArgs<O extends string>(argv: readonly string[], flags: ReturnType<typeof inputFlags<O>>): { paths: string[]; output: O; skipInvalid: boolean } | 'help' {
  const parsed = parseFlags(argv, flags, { positionals: 'paths' });
  if (parsed === 'help') return 'help';
  if (parsed.values.paths.length === 0) throw new UsageError('no input: give at least one -f <file|dir>');
  return parsed.values;
}
