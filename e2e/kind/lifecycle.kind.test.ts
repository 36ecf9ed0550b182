/**
 * Tessera's lifecycle on the kind cluster (real kubelets, the DaemonSet and Deployment of
 * manifests/, real pods from the probe-server image; e2e/kind/global-setup.ts installs it):
 *
 * - a rolling update of the agent DaemonSet to a new image tag: every agent pod is replaced,
 *   one node at a time, and no probe whose verdict the policies fix ever flips meanwhile;
 * - a node's agent pod deleted: traffic keeps its verdicts while the DaemonSet restarts it;
 * - attributed drops on real kubelets: a denied probe is a `denied flow` line in the
 *   destination node's agent log naming the decision, and `tessera explain --live` reaches the
 *   agents through the API server's pod proxy and shows the deciding rule's kernel counter;
 * - uninstalling as README "Uninstalling" says (the agents first, manifests/uninstall/'s
 *   cleanup DaemonSet, then `kubectl delete -f manifests/`) leaves no Tessera chain, rule or IP
 *   set on any node, IPv4 or IPv6, in either iptables backend, and denied traffic flows again.
 *
 * The tests run in this order and the last one removes Tessera: a later run's global setup
 * installs it again. The fixture is the agent reliability tests' churn scenario (two nodes,
 * namespaces x, y, z; z denies all ingress).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { churnProbes, churnScenario, STABLE_PROBES } from '../agent/churn-scenario.ts';
import { watchProbes } from '../agent/probe-flips.ts';
import { pollUntil } from '../controlplane/index.ts';
import { KindCluster } from '../runner/kind-cluster.ts';
import { NamespaceNames } from '../runner/namespace-names.ts';
import { cleanupNamespaces, ScenarioRun } from '../runner/run-scenario.ts';
import type { Probe } from '../runner/scenario.ts';
import { kubectl, loadImage, MANIFEST_IMAGE, onNode, REPO_ROOT, TESSERA_VERSION } from './kind-tools.ts';
import { runExplain } from '../../src/cli/explain.ts';

const SCENARIO = churnScenario('kind-lifecycle', '10.70');
const log = (line: string): void => void process.stderr.write(`[kind lifecycle] ${line}\n`);

let cluster: KindCluster;
let run: ScenarioRun;
let names: NamespaceNames;
/** Every probe whose verdict the policies fix (the churn policy stays on `y`). */
let probes: Probe[];

async function expectConverged(ps: readonly Probe[]): Promise<void> {
  const results = await run.converge(0, ps);
  expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to} ${r.probe.port}/${r.probe.protocol}: expected ${r.probe.expected}`)).toEqual([]);
}

/** The agent pods' names by node, Ready ones only. */
async function readyAgents(): Promise<Map<string, { name: string; image: string }>> {
  const out = new Map<string, { name: string; image: string }>();
  for (const p of await cluster.agentPods()) {
    const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    if (ready && p.metadata?.deletionTimestamp === undefined) out.set(p.spec?.nodeName ?? '', { name: p.metadata?.name ?? '', image: p.spec?.containers[0]?.image ?? '' });
  }
  return out;
}

beforeAll(async () => {
  cluster = await KindCluster.connect({ log });
  names = NamespaceNames.of([SCENARIO]);
  run = new ScenarioRun(cluster, SCENARIO, { names, settleMs: 30_000 });
  await run.setUp();
  await run.applyStep({ policies: run.live.policies ?? [], probes: [] });
  probes = [...STABLE_PROBES, ...churnProbes('y')].map((p) => names.probe(p));
  await expectConverged(probes);
});

afterAll(async () => {
  // After the uninstall the WorkloadEndpoint CRD is gone, so tearDown's wait for the
  // endpoints to go fails; the pods, their routes and the policies are removed all the same.
  await run?.tearDown().catch((e: unknown) => log(`teardown: ${String(e)}`));
  if (cluster !== undefined) await cleanupNamespaces(cluster, ['x', 'y', 'z'].map((n) => names.unique(n)));
});

describe('Tessera on a kind cluster: lifecycle', () => {
  it('a rolling update of the agent DaemonSet to a new image tag replaces every agent and flips no verdict', async () => {
    const tag = `${MANIFEST_IMAGE.replace(/:[^:/]+$/, '')}:${TESSERA_VERSION}-rollout-${Date.now().toString(36)}`;
    await loadImage(`localhost/tessera:${TESSERA_VERSION}`, tag);
    const before = await readyAgents();
    const t0 = Date.now();
    await kubectl(['-n', 'tessera-system', 'set', 'image', 'daemonset/tessera-agent', `agent=${tag}`]);
    const rollout = kubectl(['-n', 'tessera-system', 'rollout', 'status', 'daemonset/tessera-agent', '--timeout=600s'], 620_000);
    const flips = await watchProbes(run, probes, rollout);
    await rollout;
    log(`rolling update to ${tag}: ${Date.now() - t0} ms, ${flips.length} flips`);
    expect(flips).toEqual([]);
    const after = await readyAgents();
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [node, agent] of after) {
      expect(agent.image, node).toBe(tag);
      expect(agent.name, node).not.toBe(before.get(node)?.name);
    }
    await expectConverged(probes);
  });

  it('a node\'s agent pod deleted: traffic keeps its verdicts while it restarts', async () => {
    const node = (await kubectl(['get', 'pod', '-n', names.unique('x'), 'a', '-o', 'jsonpath={.spec.nodeName}'])).trim();
    const victim = (await readyAgents()).get(node);
    expect(victim, `an agent on ${node}`).toBeDefined();
    const t0 = Date.now();
    const restarted = (async () => {
      await kubectl(['-n', 'tessera-system', 'delete', 'pod', victim?.name ?? '', '--wait=false']);
      await pollUntil(async () => {
        const now = (await readyAgents()).get(node);
        return now !== undefined && now.name !== victim?.name ? true : undefined;
      }, { description: `a new Ready agent pod on ${node}`, timeoutMs: 300_000, intervalMs: 500 });
    })();
    const flips = await watchProbes(run, probes, restarted);
    await restarted;
    log(`agent pod ${victim?.name} on ${node} deleted → replacement Ready in ${Date.now() - t0} ms, ${flips.length} flips`);
    expect(flips).toEqual([]);
    await expectConverged(probes);
  });

  it('a denied probe is an attributed line in the destination agent\'s log; explain --live reads the counters through the pod proxy', async () => {
    const denied = names.probe(STABLE_PROBES[0]!);
    expect(denied.expected).toBe(false);
    const [result] = await run.converge(0, [denied]);
    expect(result?.got).toBe(false);
    const [toNs, toPod] = denied.to.split('/') as [string, string];
    const [fromNs, fromPod] = denied.from.split('/') as [string, string];
    const node = (await kubectl(['get', 'pod', '-n', toNs, toPod, '-o', 'jsonpath={.spec.nodeName}'])).trim();
    const agent = (await readyAgents()).get(node);
    expect(agent, `an agent on ${node}`).toBeDefined();
    const line = await pollUntil(
      async () => {
        const logs = await kubectl(['-n', 'tessera-system', 'logs', agent?.name ?? '']);
        return logs
          .split('\n')
          .filter((l) => l.includes('"denied flow"'))
          .map((l) => JSON.parse(l) as Record<string, unknown> & { src?: { namespace?: string; pod?: string }; dst?: { namespace?: string; pod?: string } })
          .find((l) => l.src?.namespace === fromNs && l.src.pod === fromPod && l.dst?.namespace === toNs && l.dst.pod === toPod);
      },
      { description: `a denied-flow line for ${denied.from} → ${denied.to} in ${agent?.name}'s log`, timeoutMs: 30_000, intervalMs: 1_000 },
    );
    log(`denied flow on ${node}: ${JSON.stringify(line)}`);
    expect(line).toMatchObject({ component: 'denied-flows', nodeName: node, direction: 'ingress', decision: 'end-of-tier', tier: 'default', action: 'deny' });
    // z's Kubernetes NetworkPolicy deny-all (no rules) is what isolates the pod.
    expect(line['isolatedBy']).toEqual([{ kind: 'NetworkPolicy', namespace: toNs, name: 'knp.default.deny-all', kubernetesNetworkPolicy: `${toNs}/deny-all` }]);

    let stdout = '';
    let stderr = '';
    const code = await runExplain(['--kubeconfig', cluster.kubeconfigPath, '--from', denied.from, '--to', denied.to, '--port', String(denied.port), '--live'], {
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
    });
    log(`explain --live:\n${stdout}${stderr}`);
    expect(code).toBe(0);
    expect(stdout).toContain(`ingress of ${denied.to} on ${node}:`);
    expect(stdout).toMatch(/→ end of tier default \(deny\): [1-9]\d* packets/);
  });

  it('uninstalling (README "Uninstalling") leaves no Tessera chains, rules or IP sets on any node, and traffic flows again', async () => {
    const denied = probes.filter((p) => !p.expected);
    expect(denied.length).toBeGreaterThan(0);
    // README "Uninstalling", step by step.
    await kubectl(['-n', 'tessera-system', 'delete', 'daemonset', 'tessera-agent']);
    await kubectl(['-n', 'tessera-system', 'wait', '--for=delete', 'pod', '-l', 'app.kubernetes.io/name=tessera-agent', '--timeout=120s']);
    await kubectl(['apply', '-f', `${REPO_ROOT}manifests/uninstall/`]);
    await kubectl(['-n', 'tessera-system', 'rollout', 'status', 'daemonset/tessera-cleanup', '--timeout=5m'], 320_000);
    await kubectl(['delete', '-f', `${REPO_ROOT}manifests/uninstall/`]);
    await kubectl(['-n', 'tessera-system', 'delete', 'deployment', 'tessera-controllers', '--cascade=foreground']);
    for (const tier of (await kubectl(['get', 'tiers.projectcalico.org', '-o', 'name'])).split('\n').filter(Boolean)) {
      await kubectl(['patch', tier, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
    await kubectl(['delete', '-f', `${REPO_ROOT}manifests/`, '--ignore-not-found']);

    for (const node of cluster.nodes) {
      const left: string[] = [];
      for (const save of ['iptables-legacy-save', 'ip6tables-legacy-save', 'iptables-nft-save', 'ip6tables-nft-save']) {
        const rules = await onNode(node.name, [save]).catch(() => '');
        left.push(...rules.split('\n').filter((l) => /(^:cali-|-j cali-|--comment "?cali:|cali-tessera-owner)/.test(l)).map((l) => `${save}: ${l}`));
      }
      const sets = await onNode(node.name, ['ipset', 'list', '-n']);
      left.push(...sets.split('\n').filter((s) => /^(cali[46]|felix-[46])/.test(s)).map((s) => `ipset: ${s}`));
      expect(left, node.name).toEqual([]);
    }
    // Nothing enforces any more: what the policies denied is answered.
    await expectConverged(denied.map((p) => ({ ...p, expected: true })));
  });
});
