/**
 * Measures ControlPlane start-to-ready time (etcd /health, then kube-apiserver /readyz) over
 * several cold starts with warm binaries, and the stop time. Prints one line per run and a
 * summary. Not a test: wall-clock figures are reported, never asserted.
 *
 *   npx tsx e2e/controlplane/measure-start.ts [runs=5]
 */
import { performance } from 'node:perf_hooks';

import { locateBinaries } from './binaries.ts';
import { ControlPlane } from './control-plane.ts';

const runs = Number(process.argv[2] ?? 5);
if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`runs must be a positive integer, got ${process.argv[2]}`);
const binaries = locateBinaries();
const totals: number[] = [];
for (let i = 1; i <= runs; i++) {
  const controlPlane = new ControlPlane({ binaries });
  await controlPlane.start();
  const { etcdMs, kubeApiserverMs, totalMs } = controlPlane.timings ?? { etcdMs: NaN, kubeApiserverMs: NaN, totalMs: NaN };
  const stopBegan = performance.now();
  await controlPlane.stop();
  const stopMs = performance.now() - stopBegan;
  totals.push(totalMs);
  console.log(
    `run ${i}: ready in ${totalMs.toFixed(0)} ms (etcd ${etcdMs.toFixed(0)} ms, kube-apiserver ${kubeApiserverMs.toFixed(0)} ms); stop ${stopMs.toFixed(0)} ms`,
  );
}
const sorted = [...totals].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
console.log(
  `start-to-ready over ${runs} runs: min ${sorted[0]?.toFixed(0)} ms, median ${median.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms`,
);
