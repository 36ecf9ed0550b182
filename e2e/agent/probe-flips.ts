/**
 * Watching verdicts that must not change while something is done to the cluster (an API
 * server restart, an agent restart, a Typha killed): probes are sampled every 50 ms until the
 * action's promise settles, and every sample that disagrees with its expectation is a flip.
 *
 * An expected-allowed probe that timed out is re-checked with a long timeout before it counts
 * (a slow answer on a loaded machine is not a flip); an unexpected "allowed" always counts.
 */
import type { ScenarioRun } from '../runner/run-scenario.ts';
import type { Probe } from '../runner/scenario.ts';

/** Samples `probes` until `until` settles; returns every sample that disagreed with its expectation. */
export async function watchProbes(run: ScenarioRun, probes: readonly Probe[], until: Promise<unknown>): Promise<string[]> {
  const flips: string[] = [];
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    const got = await Promise.all(probes.map((pr) => run.probeOnce(pr, 400)));
    probes.forEach((pr, i) => {
      if (got[i] !== pr.expected) flips.push(`${pr.from} → ${pr.to} ${pr.port}/${pr.protocol}: expected ${pr.expected}, got ${got[i]}`);
    });
    if (flips.length > 0 && probes.some((pr, i) => pr.expected && got[i] === false)) {
      const recheck = await Promise.all(probes.map((pr) => (pr.expected ? run.probeOnce(pr, 3_000) : Promise.resolve(pr.expected))));
      if (recheck.every((ok, i) => ok === probes[i]?.expected) && flips.every((f) => f.endsWith('got false') && f.includes('expected true'))) flips.length = 0;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return flips;
}
