/**
 * `validateResource` throughput on the calc-vs-Felix workload's objects (bench/calc-workload.ts,
 * the `medium` shape: 50,000 WorkloadEndpoints, 2,000 NetworkPolicies, 200 Profiles). This is
 * the validation the agent's syncer runs on every object of a sync, which issue 18's profile
 * put at ~22 % of the sync's CPU.
 *
 * Prints one line per kind and one for the whole sync: the milliseconds one pass over the
 * objects costs, wall and CPU (each the best of `--runs` passes, default 10, after a warm-up
 * pass), objects per CPU second, and the findings seen (0 expected: the workload is valid).
 *
 *   npm run bench -- validation [--runs N] [--endpoints N]
 */
import { parseArgs } from 'node:util';
import { validateResource } from '../../src/api/index.ts';
import type { V3Resource } from '../../src/api/index.ts';
import { largeCluster } from '../calc-workload.ts';
import { report, type BenchScenario } from '../scenario.ts';

/**
 * The best of `runs` passes (after a warm-up pass), in CPU time of this process as well as
 * wall time: on a shared machine the CPU time is the steadier figure.
 */
function bestPass(objects: readonly V3Resource[], runs: number): { ms: number; cpuMs: number; findings: number } {
  let best = Infinity;
  let bestCpu = Infinity;
  let findings = 0;
  for (let run = 0; run <= runs; run++) {
    findings = 0;
    const start = performance.now();
    const cpu = process.cpuUsage();
    for (const o of objects) findings += validateResource(o).length;
    const used = process.cpuUsage(cpu);
    const ms = performance.now() - start;
    if (run === 0) continue; // warm-up
    best = Math.min(best, ms);
    bestCpu = Math.min(bestCpu, (used.user + used.system) / 1000);
  }
  return { ms: best, cpuMs: bestCpu, findings };
}

const scenario: BenchScenario = {
  description: 'validateResource on the calc-vs-Felix medium workload (objects/s per kind and for the whole sync)',
  async run(args) {
    const { values } = parseArgs({
      args: [...args],
      options: { runs: { type: 'string', default: '10' }, endpoints: { type: 'string', default: '50000' } },
    });
    const runs = Number(values.runs);
    const endpoints = Number(values.endpoints);
    // Through JSON, as calc-vs-felix's Tessera side reads them (sync.ndjson) and as the agent
    // gets them from the API server: flat strings, not the builders' concatenations.
    const objects = [...largeCluster({ endpoints, namespaces: 200, policiesPerNs: 10, localCount: 200 })].map(
      (o) => JSON.parse(JSON.stringify(o)) as V3Resource,
    );
    const byKind = new Map<string, V3Resource[]>();
    for (const o of objects) {
      const list = byKind.get(o.kind) ?? [];
      list.push(o);
      byKind.set(o.kind, list);
    }
    for (const [kind, list] of [...byKind].sort(([a], [b]) => a.localeCompare(b))) {
      const { ms, cpuMs, findings } = bestPass(list, runs);
      report('validation', kind, { objects: list.length, ms: Math.round(ms), cpuMs: Math.round(cpuMs), objectsPerCpuSecond: Math.round((list.length * 1000) / cpuMs), findings });
    }
    const { ms, cpuMs, findings } = bestPass(objects, runs);
    report('validation', 'sync', { objects: objects.length, ms: Math.round(ms), cpuMs: Math.round(cpuMs), objectsPerCpuSecond: Math.round((objects.length * 1000) / cpuMs), findings });
    await Promise.resolve();
  },
};

export default scenario;
