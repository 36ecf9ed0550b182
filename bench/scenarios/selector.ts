/**
 * Selector parse and evaluate throughput. Targets (2-core CI machine): ≥ 10M evaluations/s
 * for a single equality, ≥ 2M/s for a 5-term `&&` with `in {…}` sets, ≥ 200k parses/s.
 *
 * Each case parses its selector text repeatedly, then evaluates the compiled selector
 * round-robin over a few realistic pod label maps, some matching and some not, so the
 * figures include both the short-circuit-early and the full-walk paths.
 */
import { measureOpsPerSecond, report, type BenchScenario } from '../scenario.ts';
import { parseSelector } from '../../src/selector/index.ts';

const CASES: ReadonlyArray<{ readonly name: string; readonly text: string }> = [
  { name: 'equality', text: 'app == "web"' },
  {
    name: 'and-5-with-sets',
    text: 'app in {"web", "api", "frontend"} && tier in {"frontend", "backend"} && env == "prod" && has(team) && version not in {"v0", "v1"}',
  },
  {
    name: 'namespaced-policy',
    text: "(projectcalico.org/orchestrator == 'k8s' && app == 'web') && projectcalico.org/namespace == 'prod'",
  },
  { name: 'all', text: 'all()' },
];

/** Pod label maps as the WorkloadEndpoint converter would produce them (§2.1). */
const LABEL_MAPS: ReadonlyArray<Readonly<Record<string, string>>> = [
  // Matches every case.
  {
    app: 'web',
    tier: 'frontend',
    env: 'prod',
    team: 'payments',
    version: 'v3',
    'pod-template-hash': '7d9f8c6b5',
    'projectcalico.org/orchestrator': 'k8s',
    'projectcalico.org/namespace': 'prod',
    'projectcalico.org/serviceaccount': 'default',
  },
  // Fails late: right app and namespace labels, wrong version / namespace.
  {
    app: 'web',
    tier: 'backend',
    env: 'prod',
    team: 'search',
    version: 'v1',
    'projectcalico.org/orchestrator': 'k8s',
    'projectcalico.org/namespace': 'staging',
  },
  // Fails early: different app.
  {
    app: 'db',
    tier: 'backend',
    env: 'prod',
    'statefulset.kubernetes.io/pod-name': 'db-0',
    'projectcalico.org/orchestrator': 'k8s',
    'projectcalico.org/namespace': 'prod',
  },
  // A host endpoint: few labels, none of the interesting ones.
  { 'kubernetes.io/hostname': 'node-1', 'node-role.kubernetes.io/worker': '' },
];

const BATCH = 10_000;

const scenario: BenchScenario = {
  description: 'parses/s and evaluations/s for typical selectors over pre-built label maps',
  async run(args) {
    const minMs = args[0] === undefined ? 1000 : Number(args[0]);
    let sink = 0;
    for (const { name, text } of CASES) {
      const parse = measureOpsPerSecond(() => {
        for (let i = 0; i < BATCH; i++) sink += parseSelector(text).root.kind.length;
        return BATCH;
      }, minMs);
      const sel = parseSelector(text);
      const maps = LABEL_MAPS;
      const nMaps = maps.length;
      const evaluate = measureOpsPerSecond(() => {
        for (let i = 0; i < BATCH; i++) if (sel.evaluate(maps[i % nMaps] as Readonly<Record<string, string>>)) sink++;
        return BATCH;
      }, minMs);
      const matching = maps.filter((m) => sel.evaluate(m)).length;
      report('selector', name, {
        selector: sel.toString(),
        parsesPerSecond: parse.opsPerSecond,
        evaluationsPerSecond: evaluate.opsPerSecond,
        labelMaps: nMaps,
        matchingLabelMaps: matching,
      });
    }
    if (sink === -1) process.stderr.write('unreachable\n');
  },
};

export default scenario;
