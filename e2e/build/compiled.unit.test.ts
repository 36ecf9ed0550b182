/**
 * The compiled build is what production runs (bin/tessera.js → dist/, the image's
 * entrypoint): it must be built from the current sources, run without tsx or any .ts file,
 * and load each sub-command's code only when that command runs.
 *
 * Needs dist/: `npm test` builds it first (the `pretest` script); run alone, do
 * `npm run build` before. Every child runs with e2e/build/module-log.mjs preloaded, which
 * reports each module the ESM loader resolves; dist/meta.json (esbuild's metafile, see
 * build.mjs) says which sources each of those output files holds.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { commands } from '../../src/cli/commands.ts';
import { RealCommandRunner, type CommandResult } from '../../src/dataplane/command-runner.ts';
import { VERSION } from '../../src/runtime/version.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'bin', 'tessera.js');
const META = join(REPO, 'dist', 'meta.json');
const MODULE_LOG = join(REPO, 'e2e', 'build', 'module-log.mjs');
const runner = new RealCommandRunner();

/** The part of esbuild's metafile this test reads; paths are relative to the repository. */
interface Metafile {
  readonly inputs: Record<string, unknown>;
  readonly outputs: Record<string, { readonly entryPoint?: string; readonly inputs: Record<string, unknown> }>;
}

function metafile(): Metafile {
  expect(existsSync(META), 'dist/meta.json is missing: run npm run build').toBe(true);
  return JSON.parse(readFileSync(META, 'utf8')) as Metafile;
}

interface TesseraRun extends CommandResult {
  /** Every module URL the run resolved, in order (`node:` built-ins included). */
  readonly modules: readonly string[];
  /** The sources (repository paths) inside the dist/ files it loaded, from the metafile. */
  readonly sources: readonly string[];
}

/** `node bin/tessera.js <args>` with the module log; its lines are taken out of stderr. */
async function tessera(args: readonly string[], bin = BIN): Promise<TesseraRun> {
  const r = await runner.run(process.execPath, ['--import', MODULE_LOG, bin, ...args], { timeoutMs: 60_000 });
  const modules: string[] = [];
  const stderr: string[] = [];
  for (const line of r.stderr.split('\n')) {
    if (line.startsWith('module-log: ')) modules.push(line.slice('module-log: '.length));
    else stderr.push(line);
  }
  const outputs = bin === BIN ? metafile().outputs : {};
  const sources = modules
    .filter((u) => u.startsWith('file:'))
    .flatMap((u) => Object.keys(outputs[fileURLToPath(u).slice(REPO.length)]?.inputs ?? {}));
  return { ...r, stderr: stderr.join('\n'), modules, sources };
}

/** The output file holding sub-command `name` (its dynamic import() became an entry point). */
function commandOutput(name: string): string {
  const entry = Object.entries(metafile().outputs).find(([, o]) => o.entryPoint === `src/cli/${name}.ts`);
  expect(entry, `dist/meta.json: no output for src/cli/${name}.ts — is its run() an import('./${name}.ts')?`).toBeDefined();
  return pathToFileURL(join(REPO, entry?.[0] ?? '')).href;
}

const notTypeScript = (modules: readonly string[]): string[] => modules.filter((u) => u.includes('/node_modules/tsx/') || /\.[cm]?ts$/.test(u));
const packages = (sources: readonly string[]): string[] => sources.filter((s) => s.includes('node_modules/'));
const commandSources = (sources: readonly string[]): string[] =>
  sources.filter((s) => Object.keys(commands).some((name) => s === `src/cli/${name}.ts`));

describe('the compiled build (dist/)', () => {
  const tempDirs: string[] = [];
  afterAll(() => {
    for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  });

  it('is built from the current sources: none of the bundled sources changed after the build', () => {
    const built = statSync(META).mtimeMs;
    const sources = Object.keys(metafile().inputs).filter((s) => s.startsWith('src/'));
    expect(sources).toContain('src/cli/main.ts');
    const changed = sources.filter((s) => !existsSync(join(REPO, s)) || statSync(join(REPO, s)).mtimeMs > built);
    expect(changed, 'these sources changed since the last build: run npm run build').toEqual([]);
  });

  it('`tessera version` prints the package version and loads no package and no sub-command', async () => {
    const r = await tessera(['version']);
    expect(r.stderr.trim()).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`tessera ${VERSION}\n`);
    expect(r.sources).toContain('src/cli/main.ts');
    expect(notTypeScript(r.modules)).toEqual([]);
    expect(packages(r.sources)).toEqual([]);
    expect(commandSources(r.sources)).toEqual([]);
  });

  it('`tessera --help` lists every sub-command and loads none of them', async () => {
    const r = await tessera(['--help']);
    expect(r.code).toBe(0);
    for (const [name, c] of Object.entries(commands)) expect(r.stdout).toContain(`${name.padEnd(12)} ${c.summary}`);
    expect(packages(r.sources)).toEqual([]);
    expect(commandSources(r.sources)).toEqual([]);
  });

  it('every sub-command loads its own compiled chunk on demand, never tsx or a .ts file', { timeout: 120_000 }, async () => {
    const names = Object.keys(commands).filter((n) => n !== 'version');
    expect(names).toContain('agent');
    for (const name of names) {
      const r = await tessera([name, '--help']);
      expect(r.code, `tessera ${name} --help: ${r.stderr}`).toBe(0);
      expect(r.modules, `tessera ${name} --help`).toContain(commandOutput(name));
      expect(notTypeScript(r.modules), `tessera ${name} --help`).toEqual([]);
    }
  });

  it('bin/tessera.js without dist/ says to run npm run build, exit 1, no stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bd-no-dist-'));
    tempDirs.push(dir);
    mkdirSync(join(dir, 'bin'));
    copyFileSync(BIN, join(dir, 'bin', 'tessera.js'));
    const r = await tessera(['version'], join(dir, 'bin', 'tessera.js'));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${join(dir, 'dist', 'cli', 'main.js')} does not exist: run npm run build`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
