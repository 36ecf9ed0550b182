/**
 * Benchmark entry point: `npm run bench -- <scenario> [args…]`, or no scenario for all of
 * the quick ones. Each scenario module lives in `bench/scenarios/<name>.ts` and exports a
 * default `BenchScenario`. Scenarios print one JSON line per measured case via `report()`,
 * so results can be piped into `jq` or compared across runs.
 */
import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import type { BenchScenario } from './scenario.ts';

const scenarioDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scenarios');

async function loadScenario(name: string): Promise<BenchScenario> {
  const mod = (await import(pathToFileURL(path.join(scenarioDir, `${name}.ts`)).href)) as {
    default: BenchScenario;
  };
  return mod.default;
}

async function main(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  const available = (await readdir(scenarioDir))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => f.slice(0, -3))
    .sort();
  if (name === undefined) {
    for (const n of available) {
      const s = await loadScenario(n);
      if (s.includeInDefaultRun !== false) await s.run([]);
    }
    return;
  }
  if (!available.includes(name)) {
    process.stderr.write(`unknown bench scenario '${name}'; available: ${available.join(', ')}\n`);
    process.exitCode = 2;
    return;
  }
  await (await loadScenario(name)).run(args);
}

await main();
