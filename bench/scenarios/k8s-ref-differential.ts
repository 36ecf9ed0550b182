/**
 * Tessera vs a second reading of Kubernetes NetworkPolicy semantics:
 * `npm run bench -- k8s-ref-differential [cases=20000] [seed=1]`.
 *
 * Generates `cases` random clusters (namespaces, pods with labels, dual-stack addresses and
 * named container ports, 1-3 NetworkPolicies; e2e/reference/k8s-ref-cases.ts) from a
 * seeded fast-check run, decides every probe of each with Tessera's simulate path and with
 * the reference evaluator (e2e/reference/k8s-ref-netpol-evaluator.ts), and counts
 * disagreements. On the first one, fast-check shrinks the case and the minimal reproducer —
 * a YAML file `tessera simulate -f` reads, the disagreeing probe in its header — goes to
 * stderr, and the exit status is 1. Prints one JSON line of figures.
 */
import fc from 'fast-check';
import { report, type BenchScenario } from '../scenario.ts';
import { caseArb } from '../../e2e/reference/k8s-ref-cases.ts';
import { reproducer, runCase } from '../../e2e/reference/k8s-ref-differential.ts';

const scenario: BenchScenario = {
  description: 'Tessera convert → calc graph → verdict vs the Kubernetes NetworkPolicy reference evaluator, on random clusters',
  includeInDefaultRun: false,
  async run(args) {
    const cases = Number(args[0] ?? 20_000);
    const seed = Number(args[1] ?? 1);
    let probes = 0;
    let withDroppedRules = 0;
    const start = performance.now();
    const result = fc.check(
      fc.property(caseArb, (c) => {
        const outcome = runCase(c);
        probes += outcome.probes;
        if (outcome.dropped.length > 0) withDroppedRules++;
        return outcome.failure === undefined && outcome.disagreements.length === 0;
      }),
      { numRuns: cases, seed },
    );
    const seconds = Math.round((performance.now() - start) / 10) / 100;
    if (result.failed && result.counterexample !== null) {
      const [c] = result.counterexample;
      process.stderr.write(`k8s-ref-differential: disagreement (seed ${seed}, path ${result.counterexamplePath}); minimal reproducer:\n${reproducer(c, runCase(c))}\n`);
      process.exitCode = 1;
    }
    report('k8s-ref-differential', 'random', {
      cases: result.numRuns,
      probes,
      casesWithDroppedRules: withDroppedRules,
      disagreeingCases: result.failed ? 1 : 0,
      seed,
      seconds,
    });
  },
};

export default scenario;
