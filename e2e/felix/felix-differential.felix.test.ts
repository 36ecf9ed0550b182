/**
 * The Felix differential in CI (e2e/felix): Calico's own Felix (v3.28, built by build.sh) and
 * Tessera's controllers and agents enforce the same objects from one API server on identical
 * network-namespace clusters; every probe — TCP and UDP on four ports and ICMP echo, IPv4 and
 * IPv6, between every ordered pair of the fixture's six pods — must get the same outcome from
 * Felix as from Tessera's agents and Tessera's verdict engine.
 *
 * First the fixed regression rounds (one per defect of the Calico surface audit), then a
 * bounded number of random rounds from a fixed seed (`TESSERA_FELIX_DIFFERENTIAL_ROUNDS`,
 * `TESSERA_FELIX_DIFFERENTIAL_SEED` override them; `npm run bench -- felix-differential` runs
 * a thousand). A failure prints each failing round's minimal reproducer as a scenario file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { allProbes, hostEndpointsFromEnv, roundScenario } from '../differential/differential.ts';
import { FelixCluster } from './felix-cluster.ts';
import { ensureFelix } from './felix-dir.ts';
import { describeDifference, FelixDifferential } from './felix-differential.ts';
import { REGRESSION_ROUNDS } from './regression-rounds.ts';

const ROUNDS = Number(process.env['TESSERA_FELIX_DIFFERENTIAL_ROUNDS'] ?? 120);
const SEED = Number(process.env['TESSERA_FELIX_DIFFERENTIAL_SEED'] ?? 20261127);
/** The share of rounds with HostEndpoints (`hostEndpointsFromEnv`: policy-generator.ts DEFAULT_HOST_ENDPOINTS unless the environment says). */
const HOST_ENDPOINTS = hostEndpointsFromEnv();

/**
 * With host endpoints on, the differential probes the hosts in every comparison, so every
 * scenario it compares lists the fixture's nodes (their addresses and servers), the fixed
 * rounds too: those then also check that hosts without HostEndpoints are not policed.
 */
const WITH_HOSTS = { hosts: HOST_ENDPOINTS > 0 };

describe('Felix differential: Felix and Tessera enforce the same verdicts on real kernels', () => {
  let felix: FelixCluster;
  let diff: FelixDifferential;
  const log: string[] = [];

  beforeAll(async () => {
    felix = await FelixCluster.create({ felixDir: ensureFelix(), log: (line) => log.push(line) });
    diff = new FelixDifferential(felix, { log: (line) => log.push(line), hostEndpoints: HOST_ENDPOINTS });
  });
  afterAll(async () => {
    await felix?.[Symbol.asyncDispose]();
  });

  for (const r of REGRESSION_ROUNDS) {
    it(`regression round ${r.name}: ${r.defect}`, async () => {
      const found = await diff.compare(roundScenario(`felix-regression-${r.name}`, r.policies, WITH_HOSTS));
      expect(found.map(describeDifference)).toEqual([]);
    });
  }

  it('a Kubernetes NetworkPolicy rewritten with egress rules is defaulted as written, on both sides (seed 28 round 588: the harness once kept the first policyTypes)', async () => {
    const knp = (spec: object) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'rewritten', namespace: 'alpha' }, spec });
    expect((await diff.compare(roundScenario('felix-rewrite-1', [knp({ podSelector: { matchLabels: { app: 'web' } }, ingress: [{}] })], WITH_HOSTS))).map(describeDifference)).toEqual([]);
    expect((await diff.compare(roundScenario('felix-rewrite-2', [knp({ podSelector: { matchLabels: { app: 'web' } }, egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] })], WITH_HOSTS))).map(describeDifference)).toEqual([]);
  });

  it(`${ROUNDS} random rounds, every probe of every round agrees (seed ${SEED}${HOST_ENDPOINTS > 0 ? `, host endpoints in ${HOST_ENDPOINTS} of them` : ''})`, { timeout: 1_800_000 }, async () => {
    const result = await diff.run(ROUNDS, SEED);
    const failures = result.failed.flatMap((r) => r.differences.map((d) => `round ${r.round}: ${describeDifference(d)}`));
    if (failures.length > 0 || result.refused.length > 0) process.stderr.write(`felix differential seed ${SEED}:\n${log.join('\n')}\n`);
    expect(failures).toEqual([]);
    expect(result.refused).toEqual([]);
    expect(result.probes).toBe(ROUNDS * allProbes({ hosts: HOST_ENDPOINTS > 0 }).length);
  });
});
