/**
 * Agents fed by Typha on the real control plane (issue 15): two `tessera typha` processes, the
 * agents started with `--typha` naming both (so they hold no watch on the API server), pods as
 * network namespaces, real probes.
 *
 * - Policies reach the dataplane through Typha: the scenario's verdicts hold.
 * - Killing a Typha (SIGKILL) during policy churn: its agents resync in place through the
 *   other, no unchanged verdict flips meanwhile, and the final state is the API server's.
 * - The killed Typha comes back and serves again; agents stay up throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { E2eCluster } from '../runner/cluster.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { Probe } from '../runner/scenario.ts';
import { churnProbes, churnScenario, fromNs, STABLE_PROBES, storedChurnSource, type ChurnSource } from './churn-scenario.ts';
import { watchProbes } from './probe-flips.ts';

const SCENARIO = churnScenario('typha', '10.69');

let cluster: E2eCluster;
let run: ScenarioRun;

async function expectConverged(probes: readonly Probe[]): Promise<void> {
  const results = await run.converge(0, probes);
  expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}`)).toEqual([]);
}

/** The Typha metric `name` (summed over its labels) as the process serves it. */
async function typhaMetric(typha: string, name: string): Promise<number> {
  const { body } = await cluster.typhas.get(typha)!.process.get('/metrics');
  return body
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

beforeAll(async () => {
  cluster = await E2eCluster.start({ typhas: 2, log: () => undefined });
  run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
  await run.setUp();
  await run.applyStep({ policies: SCENARIO.policies ?? [], probes: [] });
});

afterAll(async () => {
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('agents through Typha (real control plane, two Typhas, netns, real probes)', () => {
  it('policies reach every agent through Typha', async () => {
    await expectConverged([...STABLE_PROBES, ...churnProbes('y')]);
    const active = (await typhaMetric('typha-1', 'tessera_typha_connections_active')) + (await typhaMetric('typha-2', 'tessera_typha_connections_active'));
    expect(active).toBe(cluster.agents.size);
  });

  it('killing a Typha during churn: its agents resync in place through the other, nothing stable flips, the final state is the API server\'s', async () => {
    // Kill the Typha that serves at least one agent (both may have picked the same one).
    const victim = (await typhaMetric('typha-1', 'tessera_typha_connections_active')) > 0 ? 'typha-1' : 'typha-2';
    const survivor = victim === 'typha-1' ? 'typha-2' : 'typha-1';
    let stop = false;
    let writes = 0;
    let last: ChurnSource = 'y';
    const churn = (async () => {
      while (!stop) {
        const next: ChurnSource = last === 'y' ? 'z' : 'y';
        await run.upsert(fromNs(next));
        last = next;
        writes++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const outage = (async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      cluster.typhas.get(victim)!.process.child.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 3_000));
      stop = true;
      await churn;
    })();
    const flips = await watchProbes(run, STABLE_PROBES, outage);
    await outage;
    expect(writes).toBeGreaterThan(5);
    expect(flips).toEqual([]);
    await expectConverged([...STABLE_PROBES, ...churnProbes(await storedChurnSource(cluster, last))]);
    expect(await typhaMetric(survivor, 'tessera_typha_connections_active')).toBe(cluster.agents.size);
    for (const agent of cluster.agents.values()) expect(agent.running).toBe(true);
  });

  it('the killed Typha restarts and serves again; a policy change still reaches every agent', async () => {
    const victim = [...cluster.typhas].find(([, t]) => !t.process.running)?.[0];
    expect(victim).toBeDefined();
    await cluster.startTypha(victim!);
    await run.upsert(fromNs('z'));
    await expectConverged(churnProbes('z'));
    await run.upsert(fromNs('y'));
    await expectConverged(churnProbes('y'));
    for (const agent of cluster.agents.values()) expect(agent.running).toBe(true);
  });
});
