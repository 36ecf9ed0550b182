/**
 * Tessera's calc graph beside Felix's (`npm run bench -- calc-vs-felix [case…] [--runs n]
 * [--churn-repeat n] [--mixed-repeat n] [--dump dir]`; not in the default run).
 *
 * The Felix side is Calico's own Go code (bench/felix: `NewCalculationGraph` behind the
 * `ValidationFilter`, built by bench/felix/build.sh at the Calico version its go.mod pins); the
 * Tessera side is bench/calc-vs-felix-tessera.ts. Both read the same NDJSON workload, written
 * once per case from bench/calc-workload.ts's builders into
 * `${TESSERA_CACHE:-~/.cache/tessera}/calc-vs-felix/<case>/`, and print the same figures
 * and a digest of the dataplane state their output describes. Each run starts the three
 * processes — Tessera, Felix (graph: v3→v1 conversion done beforehand), Felix
 * (graph+conversion: the update processors timed too, like for like) — one after another, the
 * order rotating between runs, so machine noise falls on all of them.
 *
 * Cases:
 * - `large`: 250,000 endpoints (200 on this node) in 1,000 namespaces, 10,000 policies; then
 *   `churn-remote` (remote endpoints flip between the peers of active policies: every update
 *   moves a member between two active IP sets) and `churn-mixed` (the same with every fifth
 *   update a local endpoint's relabel, which changes the policies that apply to it).
 * - `medium`: 50,000 endpoints in 200 namespaces, 2,000 policies; then `churn-remote`.
 *
 * Per case and phase it prints every run, then a summary line: best and median of each side;
 * `ratio` = Tessera / Felix graph and `ratioWithConversion` = Tessera / Felix graph+conversion
 * (seconds for a sync, so < 1 is faster; updates/s for churn, so > 1 is faster); heap (V8
 * heapUsed after gc() against Go's HeapAlloc after runtime.GC(), both with the graph alive)
 * and RSS; `outputsMatch` (every run of every side ended in the same state digest); and the
 * load average before and after. A digest mismatch exits 1 (`--dump <dir>` writes each side's
 * canonical state for a diff).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { build } from 'esbuild';

import type { V3Resource } from '../../src/api/index.ts';
import { clusterChurn, largeCluster, type ClusterShape } from '../calc-workload.ts';
import { report, type BenchScenario } from '../scenario.ts';

const run = promisify(execFile);
const benchDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

interface Case {
  readonly shape: ClusterShape;
  /** Churn name → every how many updates one is a local relabel (0: none). */
  readonly churns: Readonly<Record<string, number>>;
}

const CASES: Readonly<Record<string, Case>> = {
  large: { shape: { endpoints: 250_000, namespaces: 1_000, policiesPerNs: 10, localCount: 200 }, churns: { remote: 0, mixed: 5 } },
  medium: { shape: { endpoints: 50_000, namespaces: 200, policiesPerNs: 10, localCount: 200 }, churns: { remote: 0 } },
};

function cacheDir(): string {
  return path.join(process.env.TESSERA_CACHE ?? path.join(os.homedir(), '.cache', 'tessera'), 'calc-vs-felix');
}

/**
 * The Tessera side bundled as `npm run build` bundles the agent (esbuild, ESM, node20, no
 * keepNames): run under tsx, every closure would also pay tsx's `__name` wrapper, which the
 * shipped code does not.
 */
async function bundleTesseraSide(): Promise<string> {
  const outfile = path.join(cacheDir(), 'tessera-side.mjs');
  await build({
    entryPoints: [path.join(benchDir, 'calc-vs-felix-tessera.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
    banner: { js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);" },
  });
  return outfile;
}

async function writeLines(file: string, resources: Iterable<V3Resource>): Promise<void> {
  const out = createWriteStream(file);
  for (const r of resources) {
    if (!out.write(`${JSON.stringify(r)}\n`)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/** The case's workload directory, written unless it holds the files of these exact builders. */
async function workloadDir(name: string, c: Case): Promise<string> {
  const dir = path.join(cacheDir(), name);
  const stamp = createHash('sha256')
    .update(await readFile(path.join(benchDir, 'calc-workload.ts')))
    .update(JSON.stringify(c))
    .digest('hex');
  const stampFile = path.join(dir, 'STAMP');
  if (existsSync(stampFile) && (await readFile(stampFile, 'utf8')) === stamp) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  process.stderr.write(`calc-vs-felix: writing the ${name} workload to ${dir}\n`);
  await writeLines(path.join(dir, 'sync.ndjson'), largeCluster(c.shape));
  for (const [churn, localEvery] of Object.entries(c.churns)) {
    const rounds = clusterChurn(c.shape, localEvery);
    for (const r of [0, 1] as const) await writeLines(path.join(dir, `churn-${churn}-${r}.ndjson`), rounds[r]);
  }
  await writeFile(stampFile, stamp);
  return dir;
}

type Figures = Record<string, unknown> & { impl: string; mode: string; case: string; phase: string; stateDigest: string };

async function runSide(cmd: string, args: readonly string[]): Promise<Figures[]> {
  const { stdout } = await run(cmd, args, { maxBuffer: 64 << 20 });
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Figures);
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function r2(v: number): number {
  return Number(v.toFixed(2));
}

const scenario: BenchScenario = {
  description: "Tessera's calc graph beside Felix's (Calico's Go code): sync, churn, heap, same output",
  includeInDefaultRun: false,
  async run(args) {
    const opt = (flag: string, dflt: string): string => {
      const i = args.indexOf(flag);
      return i >= 0 ? (args[i + 1] ?? dflt) : dflt;
    };
    const runs = Number(opt('--runs', '3'));
    // Long enough that one GC pause is noise, not the figure: 160k remote updates (~2-3 s);
    // the mixed churn is slow on Felix (every local relabel rescans its selectors): 20k.
    const churnRepeat = opt('--churn-repeat', '100');
    const mixedRepeat = opt('--mixed-repeat', '10');
    const dumpDir = opt('--dump', '');
    const names = args.filter((a, i) => !a.startsWith('--') && !(args[i - 1] ?? '').startsWith('--'));
    for (const name of names) {
      if (CASES[name] === undefined) {
        process.stderr.write(`unknown calc-vs-felix case '${name}'; available: ${Object.keys(CASES).join(', ')}\n`);
        process.exitCode = 2;
        return;
      }
    }
    const { stdout: built } = await run('bash', [path.join(benchDir, 'felix', 'build.sh')], { maxBuffer: 16 << 20 });
    const felix = built.trim().split('\n').at(-1) as string;
    if (dumpDir !== '') await mkdir(dumpDir, { recursive: true });
    const tesseraSide = await bundleTesseraSide();

    for (const name of names.length > 0 ? names : Object.keys(CASES)) {
      const dir = await workloadDir(name, CASES[name] as Case);
      const dump = (side: string): string[] => (dumpDir === '' ? [] : ['--dump', path.join(dumpDir, `${name}-${side}`)]);
      const sides: Record<string, () => Promise<Figures[]>> = {
        tessera: () =>
          runSide(process.execPath, ['--expose-gc', tesseraSide, dir, '--churn-repeat', churnRepeat, '--mixed-repeat', mixedRepeat, ...dump('tessera')]),
        felix: () => runSide(felix, ['-workload', dir, '-churn-repeat', churnRepeat, '-mixed-repeat', mixedRepeat, ...dump('felix')]),
        'felix+conversion': () => runSide(felix, ['-workload', dir, '-convert', '-churn-repeat', churnRepeat, '-mixed-repeat', mixedRepeat, ...dump('felix-conversion')]),
      };
      const order = Object.keys(sides);
      const results: Figures[] = [];
      const loadBefore = os.loadavg().map(r2);
      for (let i = 0; i < runs; i++) {
        for (let k = 0; k < order.length; k++) {
          const side = order[(i + k) % order.length] as string;
          for (const f of await (sides[side] as () => Promise<Figures[]>)()) {
            results.push(f);
            report('calc-vs-felix', `${name}/${f.phase}`, { run: i + 1, ...f, bench: undefined, case: undefined });
          }
        }
      }
      const loadAfter = os.loadavg().map(r2);
      for (const phase of [...new Set(results.map((f) => f.phase))]) {
        const of = (impl: string, mode: string): Figures[] => results.filter((f) => f.phase === phase && f.impl === impl && f.mode === mode);
        const t = of('tessera', 'graph+conversion');
        const g = of('felix', 'graph');
        const c = of('felix', 'graph+conversion');
        const digests = new Set([...t, ...g, ...c].map((f) => f.stateDigest));
        const sync = phase === 'sync';
        const metric = sync ? 'seconds' : 'updatesPerSecond';
        const vals = (fs: Figures[], key: string): number[] => fs.map((f) => Number(f[key]));
        // Best = fastest: least seconds, most updates/s.
        const best = (fs: Figures[]): number => (sync ? Math.min(...vals(fs, metric)) : Math.max(...vals(fs, metric)));
        const mid = (fs: Figures[]): number => median(vals(fs, metric));
        report('calc-vs-felix', `${name}/${phase}`, {
          summary: true,
          metric,
          runs,
          tessera: { best: best(t), median: mid(t) },
          felix: { best: best(g), median: mid(g) },
          felixWithConversion: { best: best(c), median: mid(c) },
          ratio: { best: r2(best(t) / best(g)), median: r2(mid(t) / mid(g)) },
          ratioWithConversion: { best: r2(best(t) / best(c)), median: r2(mid(t) / mid(c)) },
          heapMB: { tessera: median(vals(t, 'heapMB')), felix: median(vals(g, 'heapMB')), ratio: r2(median(vals(t, 'heapMB')) / median(vals(g, 'heapMB'))) },
          rssMB: { tessera: median(vals(t, 'rssMB')), felix: median(vals(g, 'rssMB')) },
          outputsMatch: digests.size === 1,
          state: t[0]?.state,
          loadBefore,
          loadAfter,
        });
        if (digests.size !== 1) {
          process.stderr.write(`calc-vs-felix: ${name}/${phase}: the sides' outputs differ (digests ${[...digests].join(', ')}); rerun with --dump <dir> and diff\n`);
          process.exitCode = 1;
        }
      }
    }
  },
};

export default scenario;
