/**
 * Typha benchmarks (`npm run bench -- typha [case] [args…]`; not in the default run).
 *
 * Cases:
 * - `map [n=100000]`: the snapshot's persistent map (src/typha/persistent-map.ts) on n keys of
 *   the snapshot's form, in shuffled order: insert / update / delete per second, in batches of
 *   100 (as the cache applies them) and one at a time; get per second; heap of the map; extra
 *   heap of 1,000 retained versions of 100 scattered updates each (crumbs a slow client pins).
 * - `fanout [agents=1000] [objects=100000] [seconds=60] [rate=1000] [full=10] [workers=2]`
 *   (issue 31: Typha's capacity): one Typha in THIS process serving `objects` WorkloadEndpoints
 *   to `agents` connections — `full` real SyncClients (decode, apply, stamp end-to-end latency)
 *   and the rest readers that drain and frame the bytes without inflating, over `workers`
 *   processes — then `rate` label changes/s for `seconds` s. Each node's own cost (inflate,
 *   decode, per update and per snapshot) is measured apart and reported beside as `node`.
 *   Figures and their meaning: bench/typha-fanout.ts.
 * - `fanout-endpointslices [agents=1000] [objects=100000] [seconds=60] [rate=300] [full=10]
 *   [workers=2]`: the same with one projected EndpointSlice per Service of 50 endpoints in the
 *   snapshot, and `rate` pod replacements/s (4 KVs each at every agent: bench/typha-fanout-workload.ts).
 * - `fanout-inflating [agents=1000] [objects=100000] [seconds=60] [rate=1000] [full=10]
 *   [workers=4]` (issue 15's bench): the readers also inflate every frame and read its stamps —
 *   on a 2-core machine 1,000 of them measure the readers more than Typha.
 *   `TYPHA_BENCH_WORKER_PROF=<dir>` writes a CPU profile of every reader worker there;
 *   `TYPHA_BENCH_NODE_COST=0` skips the per-node measurement.
 *
 * - `direct [agents=100] [objects=100000] [seconds=60] [rate=1000] [full=10] [workers=4]`: the
 *   comparison — the same agents each listing and watching a real kube-apiserver (bench/typha-direct.ts).
 *
 * Figures are one JSON line per case (`report`); heap needs `--expose-gc` (`npm run bench`
 * passes it).
 */
import { report, type BenchScenario } from '../scenario.ts';
import { PersistentMap } from '../../src/typha/persistent-map.ts';
import { runDirect } from '../typha-direct.ts';
import { runFanout, type FanoutOptions } from '../typha-fanout.ts';

function heapMB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return Number((process.memoryUsage().heapUsed / 1048576).toFixed(1));
}

/** Best of `runs` timings of `fn`, as operations per second. */
function bestRate(ops: number, fn: () => void, runs = 5): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    best = Math.min(best, performance.now() - t);
  }
  return Math.round((ops * 1000) / best);
}


function runMap(n: number): void {
  // Flat strings (JSON round trip): a template literal is a rope that flattens — and changes
  // size — the first time the map compares it, which would blur the heap figure.
  const keys: string[] = JSON.parse(JSON.stringify(Array.from({ length: n }, (_, i) => `WorkloadEndpoint/ns-${i % 1000}/wep-${i}`))) as string[];
  let seed = 1;
  const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
  }
  const v1 = { v: 1 };
  const v2 = { v: 2 };
  const batched = (from: PersistentMap<object>, edit: (m: { set(k: string, v: object): void; delete(k: string): boolean }, k: string) => void): PersistentMap<object> => {
    let m = from;
    for (let i = 0; i < n; i += 100) {
      m = m.withMutations((e) => {
        for (let j = i; j < Math.min(n, i + 100); j++) edit(e, keys[j] as string);
      });
    }
    return m;
  };
  const full = batched(PersistentMap.empty(), (e, k) => e.set(k, v1));
  const figures = {
    keys: n,
    insertBatchedPerSec: bestRate(n, () => batched(PersistentMap.empty(), (e, k) => e.set(k, v1))),
    insertSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.set(k, v1), PersistentMap.empty<object>())),
    updateBatchedPerSec: bestRate(n, () => batched(full, (e, k) => e.set(k, v2))),
    updateSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.set(k, v2), full)),
    deleteBatchedPerSec: bestRate(n, () => batched(full, (e, k) => void e.delete(k))),
    deleteSinglePerSec: bestRate(n, () => keys.reduce((m, k) => m.delete(k), full)),
    getPerSec: bestRate(n, () => keys.forEach((k) => full.get(k))),
    orderedForEachMs: Number((n / bestRate(n, () => full.forEach(() => undefined)) * 1000).toFixed(2)),
  };
  const before = heapMB();
  const again = batched(PersistentMap.empty(), (e, k) => e.set(k, v1));
  const mapMB = Number((heapMB() - before).toFixed(2));
  const versions: PersistentMap<object>[] = [];
  const beforeVersions = heapMB();
  let m = again;
  for (let b = 0; b < 1000; b++) {
    const start = Math.floor(random() * n);
    m = m.withMutations((e) => {
      for (let j = 0; j < 100; j++) e.set(keys[(start + j * 997) % n] as string, b % 2 === 0 ? v2 : v1);
    });
    versions.push(m);
  }
  const versionsMB = Number((heapMB() - beforeVersions).toFixed(1));
  report('typha', 'map', { ...figures, mapMB, mapSize: again.size, thousandVersionsMB: versionsMB, retainedVersions: versions.length });
}

const scenario: BenchScenario = {
  description: "Typha: the snapshot's persistent map, and one Typha fanning 100,000 objects and 1,000 updates/s out to N agents in worker processes over loopback TCP",
  includeInDefaultRun: false,
  async run(args) {
    const [which, ...rest] = args;
    const num = (i: number, d: number): number => (rest[i] === undefined ? d : Number(rest[i]));
    if (which === undefined || which === 'map') runMap(num(0, 100_000));
    const fanout = (readers: FanoutOptions['readers'], workload: FanoutOptions['workload'], rate: number, workers: number): FanoutOptions => ({
      readers,
      workload,
      agents: num(0, 1000),
      objects: num(1, 100_000),
      seconds: num(2, 60),
      rate: num(3, rate),
      full: num(4, 10),
      workers: num(5, workers),
    });
    if (which === undefined || which === 'fanout') await runFanout(fanout('drain', 'labels', 1000, 2));
    if (which === 'fanout-endpointslices') await runFanout(fanout('drain', 'churn', 300, 2));
    if (which === 'fanout-inflating') await runFanout(fanout('inflating', 'labels', 1000, 4));
    if (which === 'direct') await runDirect(num(0, 100), num(1, 100_000), num(2, 60), num(3, 1000), num(4, 10), num(5, 4));
  },
};

export default scenario;
