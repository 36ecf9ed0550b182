/**
 * `validateResource` throughput on the calc-vs-Felix workload's objects (bench/calc-workload.ts,
 * the `medium` shape: 50,000 WorkloadEndpoints, 2,000 NetworkPolicies, 200 Profiles). This is
 * the validation the agent's syncer runs on every object of a sync, which issue 18's profile
 * put at ~22 % of the sync's CPU.
 *
 * Prints one line per kind and one for the whole sync: objects per second and the milliseconds
 * one pass over the objects costs (the best of `--runs` passes, default 5, after a warm-up
 * pass), and the findings seen (0 expected: the workload is valid).
 *
 *   npm run bench -- validation [--runs N] [--endpoints N]
 */
import { parseArgs } from 'node:util';
import { validateResource } from '../../src/api/index.ts';
import type { V3Resource } from '../../src/api/index.ts';
import { largeCluster } from '../calc-workload.ts';
import { report, type BenchScenario } from '../scenario.ts';

function bestPass(objects: readonly V3Resource[], runs: number): { ms: number; findings: number } {
  let best = Infinity;
  let findings = 0;
  for (let run = 0; run <= runs; run++) {
    findings = 0;
    const start = performance.now();
    for (const o of objects) findings += validateResource(o).length;
    const ms = performance.now() - start;
    if (run > 0) best = Math.min(best, ms); // run 0 warms up
  }
  return { ms: best, findings };
}

const scenario: BenchScenario = {
  description: 'validateResource on the calc-vs-Felix medium workload (objects/s per kind and for the whole sync)',
  async run(args) {
    const { values } = parseArgs({
      args: [...args],
      options: { runs: { type: 'string', default: '5' }, endpoints: { type: 'string', default: '50000' } },
    });
    const runs = Number(values.runs);
    const endpoints = Number(values.endpoints);
    const objects = [...largeCluster({ endpoints, namespaces: 200, policiesPerNs: 10, localCount: 200 })];
    const byKind = new Map<string, V3Resource[]>();
    for (const o of objects) {
      const list = byKind.get(o.kind) ?? [];
      list.push(o);
      byKind.set(o.kind, list);
    }
    for (const [kind, list] of [...byKind].sort(([a], [b]) => a.localeCompare(b))) {
      const { ms, findings } = bestPass(list, runs);
      report('validation', kind, { objects: list.length, ms: Math.round(ms), objectsPerSecond: Math.round((list.length * 1000) / ms), findings });
    }
    const { ms, findings } = bestPass(objects, runs);
    report('validation', 'sync', { objects: objects.length, ms: Math.round(ms), objectsPerSecond: Math.round((objects.length * 1000) / ms), findings });
    await Promise.resolve();
  },
};

export default scenario;
