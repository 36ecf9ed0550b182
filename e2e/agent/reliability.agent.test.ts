/**
 * Reliability of `tessera agent` on the real control plane (the three scenarios), with
 * the runner's cluster: controllers and one agent per node as processes, pods as network
 * namespaces, probes as real TCP/UDP connections.
 *
 * - Restart the API server and etcd during policy churn: agents recover, their rules converge
 *   to the final state, and no probe in the unchanged part of the policy flips meanwhile.
 * - Restart an agent: the rules stay while it is down and restarting; no probe flips.
 * - Tamper with a node's iptables and ipsets: repaired within the refresh interval.
 */
import { execFileSync } from 'node:child_process';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pollUntil } from '../controlplane/poll-until.ts';
import { watchProbes } from './probe-flips.ts';
import { E2eCluster } from '../runner/cluster.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { Probe } from '../runner/scenario.ts';
import { churnProbes, churnScenario, fromNs, STABLE_PROBES, storedChurnSource } from './churn-scenario.ts';

/** Agents' full read-back period (Felix's refresh intervals, shortened for the test). */
const REFRESH_S = 3;

const SCENARIO = churnScenario('reliability', '10.67');

let cluster: E2eCluster;
let run: ScenarioRun;

async function expectConverged(probes: readonly Probe[]): Promise<void> {
  const results = await run.converge(0, probes);
  expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}`)).toEqual([]);
}

beforeAll(async () => {
  cluster = await E2eCluster.start({ refreshSeconds: REFRESH_S, log: () => undefined });
  run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
  await run.setUp();
  await run.applyStep({ policies: SCENARIO.policies ?? [], probes: [] });
  await expectConverged([...STABLE_PROBES, ...churnProbes('y')]);
});

afterAll(async () => {
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('tessera agent reliability (real control plane, netns, real probes)', () => {
  it('restarting kube-apiserver and etcd during churn: agents recover, converge to the final state, and unchanged verdicts never flip', async () => {
    const controlPlane = cluster.controlPlane!;
    let stop = false;
    let writes = 0;
    let last: 'y' | 'z' = 'y';
    const churn = (async () => {
      while (!stop) {
        const next: 'y' | 'z' = last === 'y' ? 'z' : 'y';
        try {
          await run.upsert(fromNs(next));
          last = next;
          writes++;
        } catch {
          // The API is down: keep trying; the last successful write is the final state.
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const outage = (async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      await controlPlane.restartApiserver({ downtimeMs: 2_000 });
      await new Promise((r) => setTimeout(r, 1_000));
      await controlPlane.restartEtcd({ downtimeMs: 2_000 });
      await new Promise((r) => setTimeout(r, 2_000));
      stop = true;
      await churn;
    })();
    const flips = await watchProbes(run, STABLE_PROBES, outage);
    await outage;
    expect(writes).toBeGreaterThan(5);
    expect(flips).toEqual([]);
    const final = await storedChurnSource(cluster, last);
    await expectConverged([...STABLE_PROBES, ...churnProbes(final)]);
    for (const agent of cluster.agents.values()) expect(agent.running).toBe(true);
    // Leave x as the other tests expect it.
    await run.upsert(fromNs('y'));
    await expectConverged(churnProbes('y'));
  });

  it('restarting an agent keeps its rules in place: no probe flips while it is down or resyncing', async () => {
    const probes = [...STABLE_PROBES, ...churnProbes('y')];
    const restart = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      const old = cluster.agents.get('node-1')!;
      expect(await old.stop()).toBe(0);
      await new Promise((r) => setTimeout(r, 1_500));
      await cluster.startAgent('node-1');
      await new Promise((r) => setTimeout(r, 1_000));
    })();
    const flips = await watchProbes(run, probes, restart);
    await restart;
    expect(flips).toEqual([]);
  });

  it(`tampered iptables rules and ipset members are repaired by the agent's periodic read-back (refresh ${REFRESH_S} s)`, async () => {
    const nodeNs = cluster.network.nodeNs('node-1');
    const inNs = (args: string[]): string => execFileSync('ip', ['netns', 'exec', nodeNs, ...args], { encoding: 'utf8' });
    const rules = (): string =>
      inNs(['iptables-nft-save', '-t', 'filter'])
        .split('\n')
        .filter((l) => l.startsWith('-A cali-'))
        .sort()
        .join('\n');
    const setMembers = (): string => inNs(['ipset', 'save']).split('\n').filter((l) => l.startsWith('add cali')).sort().join('\n');
    const before = { rules: rules(), sets: setMembers() };
    const policyChain = /^-A (cali-pi-\S+)/m.exec(before.rules)?.[1];
    const member = before.sets.split('\n').find((l) => l.startsWith('add '));
    expect(policyChain).toBeDefined();
    expect(member).toBeDefined();

    const t0 = Date.now();
    inNs(['iptables-nft', '-F', policyChain!]);
    const [, set, entry] = member!.split(' ');
    inNs(['ipset', 'del', set!, entry!]);
    expect(rules()).not.toEqual(before.rules);

    // Liveness only: tests assert no wall-clock bounds. That the repair comes with the first
    // read-back after the damage, i.e. within one refresh interval, is proven on a fake clock
    // in e2e/dataplane/tamper.netns.test.ts; here the time is printed as a figure.
    await pollUntil(() => (rules() === before.rules && setMembers() === before.sets ? true : undefined), {
      description: 'the agent to repair the tampered rules and set members',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    console.log(`agent repaired tampering after ${Date.now() - t0} ms (refresh interval ${REFRESH_S} s)`);
    await expectConverged([...STABLE_PROBES, ...churnProbes('y')]);
  });
});
