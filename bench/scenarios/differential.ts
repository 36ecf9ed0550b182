/**
 * The differential test at scale: `npm run bench -- differential [rounds=2000] [seed=random]
 * [probes=300]`. Each round applies a set of random Calico and Kubernetes policies to the
 * fixture's six dual-stack pods on two nodes (e2e/differential) and compares, probe by probe,
 * the simulator's verdict with real TCP, UDP and ICMP echo traffic through the real dataplane in
 * network namespaces (needs root, iptables, ipset, ping, conntrack).
 *
 * Prints the seed first (on stderr), then a reproducer scenario for every failing round, and
 * one JSON line `{rounds, probes, disagreements, failedRounds, seconds, seed}`; exits non-zero
 * on any disagreement. `TESSERA_DIFFERENTIAL_HOST_ENDPOINTS=<p>` puts HostEndpoints in a share
 * `p` of the rounds and adds the host probes (DifferentialOptions `hostEndpoints`; 0 by default
 * until Tessera enforces them, issue 29).
 */
import { Differential, hostEndpointsFromEnv } from '../../e2e/differential/differential.ts';
import { KernelCluster } from '../../e2e/differential/kernel-cluster.ts';
import { intArg, report, type BenchScenario } from '../scenario.ts';

const scenario: BenchScenario = {
  description: 'random policies: simulator verdicts vs real traffic through the real dataplane, per probe',
  includeInDefaultRun: false,
  async run(args) {
    const rounds = intArg('differential', args[0], 'rounds', 2000);
    const seed = intArg('differential', args[1], 'seed', Math.floor(Math.random() * 2 ** 31));
    const probesPerRound = intArg('differential', args[2], 'probes', 300);
    process.stderr.write(`differential: seed ${seed}, ${rounds} rounds, ${probesPerRound} probes per round\n`);
    const kernel = await KernelCluster.create();
    try {
      const hostEndpoints = hostEndpointsFromEnv();
      const diff = new Differential(kernel, { probesPerRound, hostEndpoints, log: (line) => process.stderr.write(`${line}\n`) });
      const start = performance.now();
      const result = await diff.run(rounds, seed);
      const seconds = Math.round((performance.now() - start) / 10) / 100;
      report('differential', 'random', { rounds, probes: result.probes, disagreements: result.disagreements, failedRounds: result.failed.length, seconds, seed });
      if (result.disagreements > 0) process.exitCode = 1;
    } finally {
      await kernel[Symbol.asyncDispose]();
    }
  },
};

export default scenario;
