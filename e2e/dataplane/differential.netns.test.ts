/**
 * The differential test in CI (e2e/differential): 200 rounds of random Calico v3 and Kubernetes
 * policies over six dual-stack pods on two nodes; in every round every probe — TCP and UDP on
 * four ports and ICMP echo, IPv4 and IPv6, between every ordered pair of pods — must get the
 * same verdict from the simulator as from real traffic through the real dataplane.
 *
 * The seed is fixed so CI is reproducible (`TESSERA_DIFFERENTIAL_SEED` overrides it, and
 * `TESSERA_DIFFERENTIAL_ROUNDS` the number of rounds for a quick local run; `npm run bench --
 * differential` runs thousands of rounds from a random one). A failure prints each failing
 * round's minimal reproducer as a scenario file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allProbes, Differential, describe as describeDisagreement, hostEndpointsFromEnv } from '../differential/differential.ts';
import { KernelCluster } from '../differential/kernel-cluster.ts';

const ROUNDS = Number(process.env['TESSERA_DIFFERENTIAL_ROUNDS'] ?? 200);
/** The share of rounds with HostEndpoints (`hostEndpointsFromEnv`: policy-generator.ts DEFAULT_HOST_ENDPOINTS unless the environment says). */
const HOST_ENDPOINTS = hostEndpointsFromEnv();
/** Every probe of the fixture: 30 ordered pod pairs × 2 families × (4 served ports + ICMP echo), and the host probes with host endpoints. */
const PROBES = allProbes({ hosts: HOST_ENDPOINTS > 0 }).length;
const SEED = Number(process.env['TESSERA_DIFFERENTIAL_SEED'] ?? 20261123);

describe('differential: simulator verdicts equal real traffic through the dataplane', () => {
  let kernel: KernelCluster;

  beforeAll(async () => {
    kernel = await KernelCluster.create();
  });
  afterAll(async () => {
    await kernel?.[Symbol.asyncDispose]();
  });

  it(`${ROUNDS} rounds of random policies, every probe of every round agrees (seed ${SEED})`, { timeout: 600_000 }, async () => {
    const log: string[] = [];
    const diff = new Differential(kernel, { probesPerRound: PROBES, hostEndpoints: HOST_ENDPOINTS, log: (line) => log.push(line) });
    const result = await diff.run(ROUNDS, SEED);
    const failures = result.failed.flatMap((r) => r.disagreements.map((d) => `round ${r.round}: ${describeDisagreement(d)}`));
    if (failures.length > 0) process.stderr.write(`differential seed ${SEED}:\n${log.join('\n')}\n`);
    expect(failures).toEqual([]);
    expect(result.probes).toBe(ROUNDS * PROBES);
  });
});
