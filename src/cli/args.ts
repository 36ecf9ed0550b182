/**
 * Command-line argument walking shared by every `tessera` sub-command: flags with a value
 * given as `--flag value` or `--flag=value`, integer flags with bounds, positional
 * arguments, `-h`/`--help`, and `UsageError` for anything wrong (the command prints it with
 * its usage and exits 2).
 */

/** A mistake in the command line; its message says which argument and why. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The argument under the cursor. */
export interface ArgCursor {
  /** The flag without an inline `=value` (`--port` for `--port=80`), or the positional argument. */
  readonly flag: string;
  /** True for arguments that do not start with `-`. */
  readonly positional: boolean;
  /** The flag's value: the inline `=value`, else the next argument (consumed). */
  value(): string;
  /** `value()` as an integer in [min, max]. */
  int(min: number, max?: number): number;
  /** A `UsageError` naming this argument as unknown. */
  unknown(): UsageError;
}

/**
 * Calls `visit` for each argument in order. Returns 'help' as soon as `-h`/`--help` appears
 * (the remaining arguments are not visited), else undefined.
 */
export function walkArgs(argv: readonly string[], visit: (arg: ArgCursor) => void): 'help' | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-h' || arg === '--help') return 'help';
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    visit({
      flag,
      positional: !arg.startsWith('-'),
      value,
      int(min, max = Number.MAX_SAFE_INTEGER) {
        const v = value();
        const n = Number(v);
        if (!Number.isInteger(n) || n < min || n > max) {
          const range = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer ${min}–${max}`;
          throw new UsageError(`${flag} must be ${range}, not ${JSON.stringify(v)}`);
        }
        return n;
      },
      unknown: () => new UsageError(`unknown option ${JSON.stringify(arg)}`),
    });
  }
  return undefined;
}

/**
 * The input arguments of the file-reading commands (`validate`, `convert`): paths given with
 * `-f`/`--filename` or bare, `-o`/`--output` restricted to `outputs`, and `--skip-invalid`
 * (invalid objects become notes instead of failing the command).
 */
export function parseInputArgs<O extends string>(
  argv: readonly string[],
  outputs: readonly O[],
  defaultOutput: O,
): { paths: string[]; output: O; skipInvalid: boolean } | 'help' {
  const paths: string[] = [];
  let output = defaultOutput;
  let skipInvalid = false;
  const help = walkArgs(argv, (a) => {
    if (a.positional) paths.push(a.flag);
    else if (a.flag === '--skip-invalid') skipInvalid = true;
    else if (a.flag === '-f' || a.flag === '--filename') paths.push(a.value());
    else if (a.flag === '-o' || a.flag === '--output') {
      const v = a.value();
      if (!(outputs as readonly string[]).includes(v)) {
        throw new UsageError(`--output must be ${outputs.join(' or ')}, not ${JSON.stringify(v)}`);
      }
      output = v as O;
    } else throw a.unknown();
  });
  if (help === 'help') return 'help';
  if (paths.length === 0) throw new UsageError('no input: give at least one -f <file|dir>');
  return { paths, output, skipInvalid };
}
