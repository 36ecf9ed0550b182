/**
 * Command-line flags, declared once per command: each `Flag` names itself, says how its
 * value is read and what it defaults to, and carries its usage line. `parseFlags` reads an
 * argv with `node:util` `parseArgs` against the declaration; `usage` prints it;
 * `readCommandLine` is every command's first step (help and usage errors answered, with the
 * exit status). Value readers shared by several commands (`readInt`, `oneOf`,
 * `readNamespacedName`: the one reading of `ns/name`) live here too.
 *
 * Guarantees (every `tessera` command relies on them):
 * - a value is given as `--flag value` or `--flag=value` (a value may start with `-`:
 *   `--metrics-port -1` is a bad port, not a missing one); a repeatable flag collects each;
 *   otherwise the last occurrence wins;
 * - arguments are checked in order and the first mistake is a `UsageError` whose message names
 *   the flag (`--port must be an integer 0–65535, not "x"`, `--node needs a value`,
 *   `unknown option "--bogus"`); the command prints it with its usage and exits 2;
 * - `-h`/`--help` makes `parseFlags` return 'help' as soon as it is reached: arguments after it
 *   are not checked, arguments before it are;
 * - a flag absent from argv takes its `env` variable when that is set and not empty (read as
 *   the flag's value would be), else its `initial` value;
 * - without `positionals`, a bare argument is an unknown option, as it always was.
 */
import { parseArgs } from 'node:util';

import { EXIT_USAGE } from './exit-status.ts';

/** A mistake in the command line; its message says which argument and why. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** One flag of a command: how it is read, its default, and its line in the usage. */
export interface Flag<T> {
  /** `--metrics-port`. */
  readonly name: `--${string}`;
  /** `-f` for `--filename`. @default none */
  readonly short?: `-${string}`;
  /** What the value is called in the usage (`<n>`); absent for a switch, which takes none. */
  readonly value?: string;
  /** The usage's description, without the default (wrapped when printed). */
  readonly description: string;
  /** How the usage states the default: `(default <text>)`. @default none stated */
  readonly defaultText?: string;
  /** A line printed above this flag in the usage, for a group of flags. @default none */
  readonly heading?: string;
  /** The environment variable read when the flag is absent. @default none */
  readonly env?: string;
  /** The value when neither the flag nor its `env` is given. */
  readonly initial: T;
  /**
   * A value flag's reading of one occurrence: `previous` is the value so far (the initial
   * value, or what earlier occurrences made). Throws `UsageError` naming the flag.
   */
  read?(text: string, previous: T): T;
  /** A switch's value when given. */
  readonly given?: T;
}

/** A command's declaration: the key is the field of the parsed result. */
export type Flags = Readonly<Record<string, Flag<unknown>>>;

export type FlagValues<F extends Flags> = { -readonly [K in keyof F]: F[K] extends Flag<infer T> ? T : never };

interface FlagText {
  readonly short?: `-${string}`;
  readonly defaultText?: string;
  readonly heading?: string;
  readonly env?: string;
}

/** A value flag read by `read` (which throws `UsageError` naming the flag on a bad value). */
export function valueFlag<T>(name: `--${string}`, value: string, description: string, initial: T, read: (text: string, previous: T) => T, text: FlagText = {}): Flag<T> {
  return { name, value, description, initial, read, ...text };
}

/** A string flag; undefined when absent (and its `env` unset). */
export function textFlag(name: `--${string}`, value: string, description: string, text: FlagText = {}): Flag<string | undefined> {
  return valueFlag<string | undefined>(name, value, description, undefined, (t) => t, text);
}

/** A string flag with a default, stated in the usage. */
export function textFlagOr(name: `--${string}`, value: string, description: string, initial: string, text: FlagText = {}): Flag<string> {
  return valueFlag(name, value, description, initial, (t) => t, { defaultText: initial, ...text });
}

/** A repeatable string flag: every occurrence, in order. */
export function listFlag(name: `--${string}`, value: string, description: string, text: FlagText = {}): Flag<string[]> {
  return valueFlag<string[]>(name, value, description, [], (t, previous) => [...previous, t], text);
}

/** An integer in [min, max]. */
export function intFlag<T extends number | undefined>(name: `--${string}`, value: string, description: string, initial: T, range: { readonly min: number; readonly max?: number }, text: FlagText = {}): Flag<number | T> {
  return valueFlag<number | T>(name, value, description, initial, (t) => readInt(name, t, range.min, range.max), { ...(initial === undefined ? {} : { defaultText: String(initial) }), ...text });
}

/** One of `values` (its metavar lists them unless `text.value` is given elsewhere). */
export function choiceFlag<V extends string>(name: `--${string}`, value: string, description: string, values: readonly V[], initial: V, text: FlagText = {}): Flag<V> {
  return valueFlag(name, value, description, initial, (t) => oneOf(name, t, values), { defaultText: initial, ...text });
}

/** A switch: `given` when present, else `initial`. */
export function switchFlag<T = boolean>(name: `--${string}`, description: string, initial: T = false as T, given: T = true as T, text: FlagText = {}): Flag<T> {
  return { name, description, initial, given, ...text };
}

/** `text` as an integer in [min, max], else a `UsageError` naming `flag`. */
export function readInt(flag: string, text: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer ${min}–${max}`;
    throw new UsageError(`${flag} must be ${range}, not ${JSON.stringify(text)}`);
  }
  return n;
}

/** `text` when it is one of `values`, else a `UsageError`: `--x must be a, b or c, not "d"`. */
export function oneOf<V extends string>(flag: string, text: string, values: readonly V[]): V {
  if ((values as readonly string[]).includes(text)) return text as V;
  const list = values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
  throw new UsageError(`${flag} must be ${list}, not ${JSON.stringify(text)}`);
}

/** A DNS-1123 label (a namespace); a Service's name is a DNS-1035 label (it starts with a letter). */
const NAMESPACED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z]([-a-z0-9]*[a-z0-9])?)$/;

/**
 * `namespace/name` of a Service (the one reading of `ns/name` on the command line), else a
 * `UsageError`: `<flag> must be <namespace>/<noun>, not "…"`.
 */
export function readNamespacedName(flag: string, text: string, noun = 'name'): { namespace: string; name: string } {
  const m = NAMESPACED_NAME.exec(text);
  if (m === null) throw new UsageError(`${flag} must be <namespace>/<${noun}>, not ${JSON.stringify(text)}`);
  return { namespace: m[1] as string, name: m[3] as string };
}

export interface ParseOptions<F extends Flags> {
  /** Where `env` defaults are read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Bare arguments are allowed instead of being unknown options: `true` returns them as
   * `positionals`; a flag's key reads each as a value of that flag, in argv order among its
   * other occurrences (`validate a.yaml -f b.yaml`). @default false
   */
  readonly positionals?: boolean | (keyof F & string);
}

export interface Parsed<F extends Flags> {
  readonly values: FlagValues<F>;
  readonly positionals: string[];
}

/** Reads `argv` against `flags` (see the module comment for the rules). */
export function parseFlags<F extends Flags>(argv: readonly string[], flags: F, opts: ParseOptions<F> = {}): Parsed<F> | 'help' {
  const { env = process.env, positionals: allowPositionals = false } = opts;
  const byName = new Map<string, [keyof F & string, Flag<unknown>]>();
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [key, f] of Object.entries(flags)) {
    const long = f.name.slice(2);
    byName.set(long, [key, f]);
    options[long] = { type: f.read === undefined ? 'boolean' : 'string', ...(f.short === undefined ? {} : { short: f.short.slice(1) }) };
  }
  const values: Record<string, unknown> = {};
  for (const [key, f] of Object.entries(flags)) {
    const fromEnv = f.env === undefined ? undefined : env[f.env];
    values[key] = fromEnv !== undefined && fromEnv !== '' && f.read !== undefined ? f.read(fromEnv, f.initial) : f.initial;
  }
  const positionals: string[] = [];
  // strict: false so the checks (and their messages) are ours, made in argv order.
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'option-terminator') {
      if (allowPositionals !== false) continue;
      throw new UsageError('unknown option "--"');
    }
    if (token.kind === 'positional') {
      if (allowPositionals === false) throw new UsageError(`unknown option ${JSON.stringify(token.value)}`);
      if (allowPositionals === true) positionals.push(token.value);
      else values[allowPositionals] = flags[allowPositionals]!.read!(token.value, values[allowPositionals]);
      continue;
    }
    if (token.name === 'help') return 'help';
    const known = byName.get(token.name);
    if (known === undefined) throw new UsageError(`unknown option ${JSON.stringify(argv[token.index])}`);
    const [key, f] = known;
    if (f.read === undefined) {
      values[key] = f.given;
      continue;
    }
    if (token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
    values[key] = f.read(token.value, values[key]);
  }
  return { values: values as FlagValues<F>, positionals };
}

/** Where a command writes (tests pass a capture). */
export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The process's stdout and stderr. */
export const processOutput: CliOutput = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

/** A command line read: the options to run with, or the exit status the command ends with now. */
export type CommandLine<T> = { readonly options: T } | { readonly exitCode: number };

/**
 * Every command's first step: `parse` its argv. `--help` prints the usage on stdout (exit
 * 0); a `UsageError` prints `tessera <command>: <message>`, a blank line and the usage on
 * stderr (exit 2). Any other error is not the user's and propagates.
 */
export function readCommandLine<T>(command: string, usageText: string, parse: () => T | 'help', out: CliOutput = processOutput): CommandLine<T> {
  let options: T | 'help';
  try {
    options = parse();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    out.stderr(`tessera ${command}: ${err.message}\n\n${usageText}`);
    return { exitCode: EXIT_USAGE };
  }
  if (options === 'help') {
    out.stdout(usageText);
    return { exitCode: 0 };
  }
  return { options };
}

/** A command's usage text, made from its flags. */
export interface UsageText {
  /** `tessera agent [options]` (after `usage: `). */
  readonly synopsis: string;
  /** Paragraphs between the synopsis and the flags, as written. @default none */
  readonly about?: string;
  /** Text after the flags, as written (an exit-status table). @default none */
  readonly footer?: string;
}

const WIDTH = 96;
const DESCRIPTION_COLUMN = 31;

/** The usage: synopsis, about, one entry per flag (description wrapped, default stated), footer. */
export function usage(text: UsageText, flags: Flags): string {
  const out = [`usage: ${text.synopsis}`, ''];
  if (text.about !== undefined) out.push(text.about.trimEnd(), '');
  for (const f of Object.values(flags)) {
    if (f.heading !== undefined) out.push(`  ${f.heading}`);
    const names = `  ${f.short === undefined ? '' : `${f.short}, `}${f.name}${f.value === undefined ? '' : ` ${f.value}`}`;
    const description = f.defaultText === undefined ? f.description : `${f.description} (default ${f.defaultText})`;
    const lines = wrap(description, WIDTH - DESCRIPTION_COLUMN);
    const indent = ' '.repeat(DESCRIPTION_COLUMN);
    if (names.length < DESCRIPTION_COLUMN) out.push(`${names.padEnd(DESCRIPTION_COLUMN)}${lines[0] ?? ''}`);
    else out.push(names, `${indent}${lines[0] ?? ''}`);
    for (const l of lines.slice(1)) out.push(`${indent}${l}`);
  }
  if (text.footer !== undefined) out.push('', text.footer.trimEnd());
  return `${out.join('\n')}\n`;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}
