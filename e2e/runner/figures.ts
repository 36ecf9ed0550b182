/**
 * Figures for `tessera agent` on the real control plane (npm run figures:agent), or, with
 * `--cluster kind`, on the kind cluster with Tessera installed (npm run figures:kind; e2e/kind):
 *
 * - policy latency: a Kubernetes NetworkPolicy (deny all ingress in x) is created / deleted
 *   N times; latency = from the API call to the first probe that sees the new verdict on EVERY
 *   agent (one x pod per node, each probed from a y pod on another node; probes start every
 *   5 ms, and a probe that saw the new verdict shows the rule was in place when it started);
 * - pod latency: a new pod labelled role=client (which x admits) is created N times, on the
 *   nodes in turn; latency = from the pod's creation (`ScenarioCluster.startPod`) to its first
 *   successful connection to every x pod (its own node's endpoint chains and every other
 *   node's IP sets must have it). On kind this includes kubelet starting the pod (sandbox, CNI,
 *   container), which is reported alone as `podRunningMs`;
 * - agents' RSS and CPU, idle (10 s) and during the two loops: processes from /proc, agent
 *   pods from their own process_* metrics (through the API server's pod proxy).
 *
 * Prints one line per figure and, last, the JSON of all of them. The namespaces are
 * `x-<run id>` and `y-<run id>` on the cluster (namespace-names.ts), as in the scenario runner.
 */
import { readFileSync } from 'node:fs';

import { E2eCluster } from './cluster.ts';
import { KindCluster } from './kind-cluster.ts';
import { NamespaceNames } from './namespace-names.ts';
import { cleanupNamespaces, ScenarioRun } from './run-scenario.ts';
import type { ScenarioCluster } from './scenario-cluster.ts';
import type { ManifestObject, Scenario } from './scenario.ts';

const N = Number(process.env['TESSERA_FIGURES_N'] ?? 100);
/** Pods created in the pod-latency loop (on kind each takes seconds to start). @default N */
const PODS = Number(process.env['TESSERA_FIGURES_PODS'] ?? N);
const ON_KIND = process.argv.includes('--cluster') && process.argv[process.argv.indexOf('--cluster') + 1] === 'kind';
/** Nodes, each with its own agent. @default 4; on kind, its 3 */
const NODES = ON_KIND ? 3 : Number(process.env['TESSERA_FIGURES_NODES'] ?? 4);
if (!Number.isInteger(NODES) || NODES < 2 || NODES > 16) throw new RangeError(`TESSERA_FIGURES_NODES must be an integer in 2..16, got ${process.env['TESSERA_FIGURES_NODES']}`);
const nodeName = (k: number): string => `node-${k + 1}`;
/** x/p<k> lives on node k (the policy's targets); y/p<k> on node k+1 (the probes' sources). */
const xIp = (k: number): string => `10.68.1.${10 + k}`;
const yIp = (k: number): string => `10.68.2.${10 + k}`;
const PORT = 80;
const ports = [{ name: 'http', containerPort: PORT, protocol: 'TCP' as const }];
const ns = (name: string) => ({ name, labels: { 'kubernetes.io/metadata.name': name, ns: name } });
const SCENARIO: Scenario = {
  name: 'figures',
  namespaces: [ns('x'), ns('y')],
  pods: Array.from({ length: NODES }, (_, k) => [
    { namespace: 'x', name: `p${k}`, ip: xIp(k), node: nodeName(k), labels: { pod: `p${k}` }, containerPorts: ports },
    { namespace: 'y', name: `p${k}`, ip: yIp(k), node: nodeName((k + 1) % NODES), labels: { pod: `p${k}` }, containerPorts: ports },
  ]).flat(),
  probes: [],
};
const DENY: ManifestObject = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-all', namespace: 'x' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } };
const CLIENTS: ManifestObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'clients', namespace: 'x' },
  spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } }] }] },
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
}

/** Fires `probe` every 5 ms until one STARTED at t returns `want`; resolves with that t. */
async function firstSeen(probe: () => Promise<boolean>, want: boolean, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let found: number | undefined;
  const inflight: Promise<void>[] = [];
  while (found === undefined && Date.now() < deadline) {
    const t = performance.now();
    inflight.push(probe().then((ok) => void (ok === want && (found === undefined || t < found) ? (found = t) : undefined)));
    await sleep(5);
  }
  await Promise.all(inflight);
  if (found === undefined) throw new Error(`verdict ${want} not seen within ${timeoutMs} ms`);
  return found;
}

interface Usage {
  rssMiB: number;
  cpuPercent: number;
}

/** Each agent's resident memory (MiB) and CPU seconds so far. */
type AgentSample = () => Promise<Array<{ rssMiB: number; cpuSeconds: number }>>;

function procSample(pids: readonly number[]): AgentSample {
  return async () =>
    pids.map((pid) => {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return { rssMiB: Number(m?.[1] ?? 0) / 1024, cpuSeconds: (Number(f[11]) + Number(f[12])) / 100 };
    });
}

/** Peak RSS of any agent, and the busiest agent's CPU share, while `body` runs. */
async function measure<T>(sample: AgentSample, body: () => Promise<T>): Promise<{ result: T; usage: Usage }> {
  const t0 = performance.now();
  const s0 = await sample();
  let peak = Math.max(...s0.map((x) => x.rssMiB));
  const sampler = setInterval(() => void sample().then((s) => (peak = Math.max(peak, ...s.map((x) => x.rssMiB))), () => undefined), 1_000);
  try {
    const result = await body();
    const secs = (performance.now() - t0) / 1000;
    const s1 = await sample();
    const cpu = Math.max(...s1.map((x, i) => (x.cpuSeconds - (s0[i]?.cpuSeconds ?? 0)) / secs)) * 100;
    peak = Math.max(peak, ...s1.map((x) => x.rssMiB));
    return { result, usage: { rssMiB: Math.round(peak), cpuPercent: Math.round(cpu * 10) / 10 } };
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  const log = (l: string): void => void process.stderr.write(`${l}\n`);
  const cluster: ScenarioCluster & { close(): Promise<void> } = ON_KIND ? await KindCluster.connect({ log }) : await E2eCluster.start({ log });
  const run = new ScenarioRun(cluster, SCENARIO, { names: NamespaceNames.of([SCENARIO]) });
  const { names } = run;
  const y = names.unique('y');
  const deny = names.manifest(DENY);
  const clients = names.manifest(CLIENTS);
  const out: Record<string, unknown> = { cluster: ON_KIND ? 'kind' : 'processes', nodes: NODES };
  try {
    await run.setUp();
    await run.agentsIdle();
    const sample: AgentSample = cluster instanceof KindCluster ? () => cluster.agentUsage() : procSample([...(cluster as E2eCluster).agents.values()].map((a) => a.child.pid ?? 0));
    const probe = (from: string, to: string) => () => run.probeOnce(names.probe({ from, to, port: PORT, protocol: 'TCP', expected: true }), 100).then((v) => v === true);
    // Every node's x pod, each probed from the y pod on the next node.
    const targets = Array.from({ length: NODES }, (_, k) => probe(`y/p${k}`, `x/p${k}`));

    out['idle'] = (await measure(sample, () => sleep(10_000))).usage;

    const policy = await measure(sample, async () => {
      const lat: number[] = [];
      for (let i = 0; i < N; i++) {
        const create = i % 2 === 0;
        const t0 = performance.now();
        if (create) await run.upsert(deny);
        else await run.remove(names.ref({ apiVersion: DENY.apiVersion, kind: DENY.kind, name: 'deny-all', namespace: 'x' }));
        const seen = await Promise.all(targets.map((t) => firstSeen(t, !create)));
        lat.push(Math.max(...seen) - t0);
        await sleep(50);
      }
      return lat;
    });
    const pl = policy.result;
    out['policyLatencyMs'] = { n: pl.length, p50: Math.round(percentile(pl, 0.5)), p99: Math.round(percentile(pl, 0.99)), max: Math.round(Math.max(...pl)) };
    out['duringPolicyChurn'] = policy.usage;
    console.log(`policy → enforced on all ${NODES} agents: n=${pl.length} p50=${percentile(pl, 0.5).toFixed(0)} ms p99=${percentile(pl, 0.99).toFixed(0)} ms`);

    await run.upsert(clients);
    await run.agentsIdle();
    const pods = await measure(sample, async () => {
      const lat: number[] = [];
      const running: number[] = [];
      for (let i = 0; i < PODS; i++) {
        const pod = { namespace: y, name: `n${i}`, ip: `10.68.3.${10 + (i % 200)}`, node: nodeName(i % NODES), labels: { role: 'client' } };
        const t0 = performance.now();
        const prober = await cluster.startPod(pod);
        running.push(performance.now() - t0);
        try {
          const to = Array.from({ length: NODES }, (_, k) => xIp(k));
          const seen = await Promise.all(to.map((host) => firstSeen(() => prober.probe('TCP', host, PORT, 100), true)));
          lat.push(Math.max(...seen) - t0);
        } finally {
          prober.stop();
          await cluster.stopPod(pod);
        }
      }
      return { lat, running };
    });
    const pdl = pods.result.lat;
    const run0 = pods.result.running;
    out['podRunningMs'] = { n: run0.length, p50: Math.round(percentile(run0, 0.5)), p99: Math.round(percentile(run0, 0.99)) };
    out['podLatencyMs'] = { n: pdl.length, p50: Math.round(percentile(pdl, 0.5)), p99: Math.round(percentile(pdl, 0.99)), max: Math.round(Math.max(...pdl)) };
    out['duringPodChurn'] = pods.usage;
    console.log(`pod created → its policy enforced on all ${NODES} nodes: n=${pdl.length} p50=${percentile(pdl, 0.5).toFixed(0)} ms p99=${percentile(pdl, 0.99).toFixed(0)} ms`);
    await run.remove(names.ref({ apiVersion: CLIENTS.apiVersion, kind: CLIENTS.kind, name: 'clients', namespace: 'x' }));
  } finally {
    await run.tearDown().catch((e: unknown) => process.stderr.write(`teardown: ${String(e)}\n`));
    await cleanupNamespaces(cluster, [names.unique('x'), y]).catch((e: unknown) => process.stderr.write(`namespaces: ${String(e)}\n`));
    await cluster.close();
  }
  console.log(`agent idle: ${JSON.stringify(out['idle'])}; during policy churn: ${JSON.stringify(out['duringPolicyChurn'])}; during pod churn: ${JSON.stringify(out['duringPodChurn'])}`);
  console.log(JSON.stringify(out));
}

await main();
