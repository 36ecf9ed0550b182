/**
 * The Felix differential at scale: `npm run bench -- felix-differential [rounds=1000]
 * [seed=random]`. Each round writes random Calico v3 and Kubernetes objects (what Felix v3.28
 * has) to a real API server read by the real calico-felix on one network-namespace cluster, and
 * the same objects to Tessera's controllers and agents on an identical one; every probe of the fixture
 * (e2e/differential: 300 per round) runs through both (needs root, the control-plane binaries,
 * iptables, ipset, ping, conntrack; builds calico-felix first if it is not cached).
 *
 * Prints the seed first (on stderr), a reproducer scenario for every failing round, then one
 * JSON line `{rounds, probes, probesPerRound, felixAllowed, differences, failedRounds, refused, seconds,
 * secondsPerRound, seed}` and one `coverage` line: for each field path, the rounds that drew it.
 * Exits non-zero on any difference. `TESSERA_DIFFERENTIAL_HOST_ENDPOINTS=<p>` puts
 * HostEndpoints in a share `p` of the rounds and adds the host probes (FelixDifferential
 * `hostEndpoints`; 0 by default until Tessera enforces them, issue 29);
 * `TESSERA_FELIX_DIFFERENTIAL_TESSERA=0` runs no Tessera controllers or agents and compares Felix
 * with Tessera's verdict engine only.
 */
import { hostEndpointsFromEnv } from '../../e2e/differential/differential.ts';
import { FelixCluster } from '../../e2e/felix/felix-cluster.ts';
import { ensureFelix } from '../../e2e/felix/felix-dir.ts';
import { FelixDifferential } from '../../e2e/felix/felix-differential.ts';
import { intArg, report, type BenchScenario } from '../scenario.ts';

const scenario: BenchScenario = {
  description: 'random policies enforced by Felix v3.28 and by Tessera on identical netns clusters, per probe',
  includeInDefaultRun: false,
  async run(args) {
    const rounds = intArg('felix-differential', args[0], 'rounds', 1000);
    const seed = intArg('felix-differential', args[1], 'seed', Math.floor(Math.random() * 2 ** 31));
    process.stderr.write(`felix-differential: seed ${seed}, ${rounds} rounds\n`);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const withTessera = process.env['TESSERA_FELIX_DIFFERENTIAL_TESSERA'] !== '0';
    const felix = await FelixCluster.create({ felixDir: ensureFelix(), log, withTessera });
    try {
      const diff = new FelixDifferential(felix, { log, hostEndpoints: hostEndpointsFromEnv() });
      const start = performance.now();
      const result = await diff.run(rounds, seed);
      const seconds = Math.round((performance.now() - start) / 10) / 100;
      report('felix-differential', 'random', {
        rounds,
        probes: result.probes,
        probesPerRound: diff.probesPerRound,
        felixAllowed: result.allowed,
        differences: result.differences,
        failedRounds: result.failed.length,
        refused: result.refused.length,
        seconds,
        secondsPerRound: Math.round((seconds / Math.max(rounds, 1)) * 100) / 100,
        seed,
      });
      report('felix-differential', 'coverage', Object.fromEntries([...result.coverage].sort(([a], [b]) => (a < b ? -1 : 1))));
      if (result.differences > 0 || result.refused.length > 0) process.exitCode = 1;
    } finally {
      await felix[Symbol.asyncDispose]();
    }
  },
};

export default scenario;
