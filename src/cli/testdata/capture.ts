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

/** Compares with testdata/<name>; `UPDATE_GOLDEN=1` (or a missing file) writes it. */
export function expectGolden(name: string, actual: string): void {
  const file = path.join(TESTDATA, name);
  if (process.env['UPDATE_GOLDEN'] === '1' || !existsSync(file)) writeFileSync(file, actual);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}
