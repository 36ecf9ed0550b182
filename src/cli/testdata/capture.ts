/** Test helpers for the CLI goldens: run a command capturing its output; compare with testdata/. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const TESTDATA = fileURLToPath(new URL('./', import.meta.url));

type Run = (argv: readonly string[], out: { stdout(t: string): void; stderr(t: string): void }) => Promise<number>;

/** Runs a command; returns its exit code, stdout and stderr. */
export async function capture(run: Run, argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

/** Where the goldens live, and the environment that decides whether a missing one may be written. */
export interface GoldenOptions {
  /** @default this directory (src/cli/testdata) */
  readonly dir?: string;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Told when a golden is written. @default a line on stderr */
  readonly onWrite?: (file: string) => void;
}

/**
 * Compares `actual` with `<dir>/<name>`.
 *
 * - `UPDATE_GOLDEN=1` rewrites the golden (then the comparison is trivially equal);
 * - a missing golden fails when `CI` is set (to anything but '', 'false' or '0'; CI
 *   services set it): a golden written by the run that checks it proves nothing;
 * - without `CI`, a missing golden is written and the write is reported, so the new file
 *   is reviewed before it is committed.
 */
export function expectGolden(name: string, actual: string, opts: GoldenOptions = {}): void {
  const { dir = TESTDATA, env = process.env, onWrite = (f: string) => void process.stderr.write(`expectGolden: wrote ${f}; review and commit it\n`) } = opts;
  const file = path.join(dir, name);
  const update = env['UPDATE_GOLDEN'] === '1';
  const exists = existsSync(file);
  if (!exists && !update && isCi(env)) {
    throw new Error(`golden ${file} is missing and CI is set: run the test without CI (or with UPDATE_GOLDEN=1), review the file and commit it`);
  }
  if (update || !exists) {
    writeFileSync(file, actual);
    onWrite(file);
  }
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

function isCi(env: Readonly<Record<string, string | undefined>>): boolean {
  const v = env['CI'];
  return v !== undefined && v !== '' && v !== 'false' && v !== '0';
}
