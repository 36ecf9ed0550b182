/**
 * Agent memory at scale (issue 18): the REAL compiled agent (`bin/tessera.js agent`, what the
 * image runs; `npm run build` first) fed a large cluster through Typha, and its resident
 * memory once it has programmed the dataplane. Goal: rssMB ≤ 250 (for scale: Cilium's agent
 * holds 438 MiB at 50k pods).
 *
 * `npm run bench -- agent-memory [endpoints=100000] [policies=10000] [runs=1]` (root: it
 * creates a network namespace; not in the default run).
 *
 * How, per run:
 * - the datastore (bench/agent-memory-workload.ts): the well-known Tiers, one `kns.<ns>`
 *   Profile per namespace, `policies` NetworkPolicies (10 per namespace, peers selected by
 *   label, one rule of each also from every namespace), `endpoints` WorkloadEndpoints on
 *   other nodes and 200 on the agent's node (`node-0`), spread so that ~200 policies and 50
 *   cluster-wide peer sets are active;
 * - the source is a Typha in THIS process — a SnapshotCache fed every object, in-sync, behind
 *   a SyncServer on 127.0.0.1 — so the agent needs no API server: with `--typha host:port`
 *   the kubeconfig is read but never used (it is only for `--typha-service` and the agent's
 *   own informers), so none is given and $KUBECONFIG is removed from its environment;
 * - the agent: `node [TESSERA_BENCH_NODE_FLAGS] bin/tessera.js agent --node node-0 --typha …
 *   --netns <fresh> --ip-versions 4 --iptables-backend nft --metrics-port <free>`, with
 *   NODE_ENV=production as in the image; everything else at its default (drop log and the
 *   denied-flow reader on, Felix's refresh periods). The child IS the node process (no shell),
 *   so /proc/<pid> is the agent's. The local endpoints' cali* interfaces do not exist: the
 *   driver programs endpoint chains by name and needs none (no interface monitor);
 * - syncSeconds: spawn → /readyz 200 (the first apply after in-sync reached the kernel:
 *   process start, preflight, Typha snapshot, calc graph, iptables-restore and ipset);
 * - then 10 s idle, and rssMB (VmRSS) and peakRssMB (VmHWM) from /proc/<pid>/status; only then
 *   /metrics is scraped (a scrape reads the kernel's rule counters, which allocates):
 *   heapUsedMB / heapTotalMB / externalMB (prom-client's nodejs_* defaults, at the scrape),
 *   iptablesRules and iptablesChains (felix_iptables_*, all tables), activePolicies and
 *   activeSelectors (felix_active_local_*), and from the namespace itself ipSets and
 *   ipSetMembers (`ipset list -t`);
 * - cleanup, also on error: SIGTERM the agent (SIGKILL after 10 s), delete the namespace
 *   (its rules and IP sets with it), close the server.
 *
 * Diagnosis: TESSERA_BENCH_NODE_FLAGS passes node flags to the agent (e.g. `--heap-prof
 * --heap-prof-dir=/tmp/p`, `--cpu-prof --cpu-prof-dir=/tmp/p`, written at its graceful exit);
 * TESSERA_BENCH_HEAP_SNAPSHOT=<dir> writes a heap snapshot of the agent into <dir> after the
 * RSS sample (`--heapsnapshot-signal`; the snapshot blocks the agent, so the bench waits for
 * /readyz to answer again). Agent logs go to $TMPDIR/tessera-agent-memory-<time>/.
 *
 * Figures (one JSON line per run; 2 cores, 23 GB, Node 20, load 1.6–4.8, Nov 2026), 100,000
 * remote + 200 local endpoints, 10,000 policies (1,000 namespaces) — 200 active policies, 251
 * IP sets holding 200,800 members (200 same-namespace sets of 2, 50 cluster-wide sets of
 * 2,004, and one named-port set of every endpoint: a destination named port without a
 * selector matches the whole cluster, as in Calico), 6,818 iptables rules in 1,211 chains:
 *
 *   run  syncSeconds  rssMB  peakRssMB  heapUsedMB
 *   1    11.5         417.5  424.5      327.5
 *   2    12.1         402.8  458.8      299.8
 *   3    11.0         404.1  461.3      288.5
 *
 * — 1.6× the 250 MB goal (the first version of this bench measured 611–635 MB; what went: a
 * parse cache of every address, the JSON text of every object kept by the Typha client, per-
 * endpoint copies of shared labels and ports, keys and members held as ropes). A heap snapshot
 * of what remains (~280 MB live), by retainer:
 *   - calc graph ~150 MB: IPSetMemberIndex ~80 (its LabelInheritIndex's items, the endpoints'
 *     addresses and ports, the active sets' members) and ActiveRulesCalculator 17 (the 10,000
 *     parsed policy selectors), the rest strings shared between them;
 *   - the dataplane's IP sets 28 MB: desired and actual members;
 *   - the flow log's EndpointLookup 16 MB, SyncClient's ResyncBuffer 14 MB (key → digest);
 *   - the bundle's source text 10 MB.
 * Reaching 250 MB needs one compact endpoint store shared by the calc graph, the flow log and
 * the IP sets (addresses as 32-bit integers in typed arrays, endpoints as integer ids) rather
 * than a string-keyed Map per index.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { report, type BenchScenario } from '../scenario.ts';
import { AGENT_NODE, agentMemoryWorkload, workloadSize } from '../agent-memory-workload.ts';
import { until } from '../typha-agent-pool.ts';
import { SnapshotCache } from '../../src/typha/snapshot-cache.ts';
import { SyncServer } from '../../src/typha/sync-server.ts';
import { createNetns } from '../../e2e/dataplane/netns.ts';
import { registerExitCleanup } from '../../e2e/controlplane/exit-cleanup.ts';
import type { Update } from '../../src/syncer/index.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TESSERA_BIN = path.join(REPO_ROOT, 'bin', 'tessera.js');
const COMPILED_MAIN = path.join(REPO_ROOT, 'dist', 'cli', 'main.js');

/** Idle time between ready and the steady-state RSS sample. */
const IDLE_MS = 10_000;
/** How long the agent may take to become ready. */
const READY_TIMEOUT_MS = 900_000;
/** SIGTERM → SIGKILL. */
const STOP_GRACE_MS = 10_000;

const mb = (bytes: number): number => Number((bytes / 1048576).toFixed(1));

/** A port nobody listens on right now, on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** VmRSS and VmHWM of `pid`, in bytes. */
function procMemory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (m === null) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(m[1]) * 1024;
  };
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Every sample of each metric in a Prometheus text exposition, summed over its labels. */
function metricSums(exposition: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const line of exposition.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    sums.set(m[1]!, (sums.get(m[1]!) ?? 0) + Number(m[2]));
  }
  return sums;
}

/** IP sets in the namespace and their members (`ipset list -t`: headers only). */
function ipSetCounts(netns: string): { ipSets: number; ipSetMembers: number } {
  const out = execFileSync('ip', ['netns', 'exec', netns, 'ipset', 'list', '-t'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  let ipSets = 0;
  let ipSetMembers = 0;
  for (const line of out.split('\n')) {
    if (line.startsWith('Name: ')) ipSets++;
    const m = /^Number of entries: (\d+)$/.exec(line);
    if (m !== null) ipSetMembers += Number(m[1]);
  }
  return { ipSets, ipSetMembers };
}

/** The agent as a child process: the node process itself, logs into a file. */
class AgentProcess {
  readonly exited: Promise<number | null>;
  #exitCode: number | null | undefined;
  readonly #unregister: () => void;

  constructor(
    readonly child: ChildProcess,
    readonly metricsPort: number,
    readonly logPath: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal === null ? null : -1))));
    void this.exited.then((c) => (this.#exitCode = c));
    this.#unregister = registerExitCleanup(() => child.kill('SIGKILL'));
  }

  static async start(args: readonly string[], nodeFlags: readonly string[], logPath: string): Promise<AgentProcess> {
    const metricsPort = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
    delete env['KUBECONFIG'];
    const child = spawn(process.execPath, [...nodeFlags, TESSERA_BIN, 'agent', ...args, '--metrics-port', String(metricsPort), '--metrics-host', '127.0.0.1'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    const log = createWriteStream(logPath);
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    return new AgentProcess(child, metricsPort, logPath);
  }

  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error(`the agent did not start (log: ${this.logPath})`);
    return pid;
  }

  get running(): boolean {
    return this.#exitCode === undefined;
  }

  async get(urlPath: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${this.metricsPort}${urlPath}`, { signal: AbortSignal.timeout(30_000) });
    return { status: res.status, body: await res.text() };
  }

  async ready(): Promise<boolean> {
    try {
      return (await this.get('/readyz')).status === 200;
    } catch {
      return false;
    }
  }

  /** Throws, with the log's tail, if the agent has exited. */
  assertRunning(): void {
    if (this.running) return;
    const tail = readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-5).join('\n');
    throw new Error(`agent-memory bench: the agent exited (${this.#exitCode}); log ${this.logPath}:\n${tail}`);
  }

  /** SIGTERM (the agent leaves its rules; the namespace goes next anyway), SIGKILL after the grace. */
  async stop(): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const t = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
      await this.exited;
      clearTimeout(t);
    }
    this.#unregister();
  }
}

/** Polls `cond` (async) every 100 ms until true; throws naming `what` after `timeoutMs`. */
async function untilAsync(cond: () => Promise<boolean>, what: string, timeoutMs: number, tick?: () => void): Promise<void> {
  const start = performance.now();
  while (!(await cond())) {
    tick?.();
    if (performance.now() - start > timeoutMs) throw new Error(`agent-memory bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Writes a heap snapshot of the agent into `dir` (it must run with --heapsnapshot-signal=SIGUSR2). */
async function heapSnapshot(agent: AgentProcess, dir: string): Promise<string | undefined> {
  const before = new Set(readdirSync(dir));
  agent.child.kill('SIGUSR2');
  // Node writes the snapshot on the main thread: the health server answers again once it is done.
  await new Promise((r) => setTimeout(r, 1000));
  await untilAsync(() => agent.ready(), 'the agent to finish its heap snapshot', 300_000, () => agent.assertRunning());
  return readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
}

interface RunFigures {
  syncSeconds: number;
  rssMB: number;
  peakRssMB: number;
  [figure: string]: unknown;
}

async function runOnce(updates: readonly Update[], logDir: string, run: number): Promise<RunFigures> {
  const stop = new AbortController();
  const cache = new SnapshotCache();
  void cache.start(stop.signal);
  let server: SyncServer | undefined;
  let netns: ReturnType<typeof createNetns> | undefined;
  let agent: AgentProcess | undefined;
  try {
    cache.onStatusUpdated('resync-in-progress');
    for (let i = 0; i < updates.length; i += 1000) cache.onUpdates(updates.slice(i, i + 1000));
    cache.onStatusUpdated('in-sync');
    await until(() => cache.latest().syncStatus === 'in-sync', 'the snapshot cache to ingest the objects', 600_000);
    server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0 });
    const { port } = await server.listen();
    netns = createNetns('tsr-mem');

    const snapshotDir = process.env['TESSERA_BENCH_HEAP_SNAPSHOT'];
    const nodeFlags = [
      ...(process.env['TESSERA_BENCH_NODE_FLAGS'] ?? '').split(/\s+/).filter((f) => f !== ''),
      ...(snapshotDir === undefined ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`]),
    ];
    if (snapshotDir !== undefined) mkdirSync(snapshotDir, { recursive: true });
    const logPath = path.join(logDir, `agent-${run}.log`);
    const t0 = performance.now();
    agent = await AgentProcess.start(
      ['--node', AGENT_NODE, '--typha', `127.0.0.1:${port}`, '--netns', netns.name, '--ip-versions', '4', '--iptables-backend', 'nft'],
      nodeFlags,
      logPath,
    );
    const a = agent;
    await untilAsync(() => a.ready(), `the agent to be ready (log: ${logPath})`, READY_TIMEOUT_MS, () => a.assertRunning());
    const syncSeconds = (performance.now() - t0) / 1000;
    const atReady = procMemory(a.pid);

    await new Promise((r) => setTimeout(r, IDLE_MS));
    a.assertRunning();
    const steady = procMemory(a.pid);
    const metrics = metricSums((await a.get('/metrics')).body);
    const metric = (name: string): number | undefined => metrics.get(name);
    const heap = (name: string): number | undefined => {
      const v = metric(name);
      return v === undefined ? undefined : mb(v);
    };
    const snapshot = snapshotDir === undefined ? undefined : await heapSnapshot(a, snapshotDir);
    return {
      syncSeconds: Number(syncSeconds.toFixed(1)),
      rssMB: mb(steady.rss),
      peakRssMB: mb(steady.hwm),
      rssAtReadyMB: mb(atReady.rss),
      heapUsedMB: heap('nodejs_heap_size_used_bytes'),
      heapTotalMB: heap('nodejs_heap_size_total_bytes'),
      externalMB: heap('nodejs_external_memory_bytes'),
      iptablesRules: metric('felix_iptables_rules'),
      iptablesChains: metric('felix_iptables_chains'),
      activePolicies: metric('felix_active_local_policies'),
      activeSelectors: metric('felix_active_local_selectors'),
      activeLocalEndpoints: metric('felix_active_local_endpoints'),
      applies: metric('felix_int_dataplane_apply_time_seconds_count'),
      ...ipSetCounts(netns.name),
      ...(snapshot === undefined ? {} : { heapSnapshot: path.join(snapshotDir!, snapshot) }),
      log: logPath,
    };
  } finally {
    await agent?.stop();
    netns?.destroy();
    await server?.close();
    stop.abort();
  }
}

const scenario: BenchScenario = {
  description: 'agent memory: the compiled agent fed 100k remote endpoints and 10k policies through an in-process Typha, RSS once ready and idle',
  includeInDefaultRun: false,
  async run(args) {
    const num = (i: number, d: number): number => (args[i] === undefined ? d : Number(args[i]));
    const [endpoints, policies, runs] = [num(0, 100_000), num(1, 10_000), num(2, 1)];
    if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`runs must be a positive integer, not ${args[2]}`);
    if (!existsSync(COMPILED_MAIN)) throw new Error(`agent-memory bench: ${COMPILED_MAIN} does not exist: run npm run build first (the bench measures the compiled agent)`);
    const size = workloadSize({ endpoints, policies });
    const updates: Update[] = [...agentMemoryWorkload({ endpoints, policies })].map((resource) => ({ op: 'upsert', resource }));
    const logDir = mkdtempSync(path.join(tmpdir(), 'tessera-agent-memory-'));
    const caseName = `${endpoints}-endpoints-${size.policies}-policies`;
    for (let run = 1; run <= runs; run++) {
      const figures = await runOnce(updates, logDir, run);
      report('agent-memory', caseName, {
        run,
        endpoints: size.remoteEndpoints,
        localEndpoints: size.localEndpoints,
        policies: size.policies,
        namespaces: size.namespaces,
        ...figures,
        goalRssMB: 250,
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      });
    }
  },
};

export default scenario;
