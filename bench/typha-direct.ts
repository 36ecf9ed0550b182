/**
 * The comparison for Typha's fan-out (`npm run bench -- typha direct [agents=100]
 * [objects=100000] [seconds=60] [rate=1000] [full=10] [workers=4]`): the same simulated agents,
 * each listing and watching WorkloadEndpoints on a real kube-apiserver + etcd (the test control
 * plane, e2e/controlplane) instead of one Typha.
 *
 * Steps: start the control plane, apply the CRDs (manifests/01-crds.yaml), create `objects`
 * WorkloadEndpoints (the fixture Typha's fan-out serves, through the API: 32 requests in flight),
 * start the agents (bench/typha-agent-pool.ts; `full` real informers, the rest raw list + watch
 * streams read at the light Typha agents' level of work), wait until every agent has listed
 * everything and is watching, then `rate` label changes per second for `seconds` s as JSON merge
 * patches, each stamped with the time the bench sent it (the write through kube-apiserver and
 * etcd is in the figure; on the Typha side the stamp is taken when Typha's cache gets the
 * update, i.e. after the same write and one watch hop).
 *
 * Agents that fail a request retry it after a backoff (0.8 s doubling to 30 s, jittered), as a
 * Reflector does; the run stops early if kube-apiserver outgrows `TYPHA_BENCH_APISERVER_MAX_MIB`
 * (then `stopped` says so and the update figures are absent).
 *
 * Figures (one JSON line): createPerSecond, allInSyncSeconds, failedRequestsSync, apiserverRssMiB / etcdRssMiB
 * (peak, VmHWM), apiserverCpuPercent / etcdCpuPercent (% of one core) during the initial sync and
 * during the updates, patchesPerSecond (achieved) and patchErrors, the delivery figures of
 * AgentPool, and the watches kube-apiserver holds (`apiserver_longrunning_requests`, WATCH).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { locateBinaries } from '../e2e/controlplane/binaries.ts';
import { ControlPlane, type ControlPlaneConnection } from '../e2e/controlplane/control-plane.ts';
import type { WorkloadEndpoint } from '../src/api/index.ts';
import { REPO_ROOT } from '../e2e/runner/processes.ts';
import { workloadEndpointSnapshot } from '../test/typha/workload-endpoint-fixture.ts';
import { report } from './scenario.ts';
import { AgentPool, until } from './typha-agent-pool.ts';
import { sendStamped, stampNow, STAMP_LABEL } from './typha-agent-protocol.ts';

/** A request to the API server as its admin; resolves with the status and body. */
async function request(conn: ControlPlaneConnection, agent: https.Agent, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: string }> {
  const opts: https.RequestOptions = { method, agent, headers: { 'content-type': contentType } };
  await conn.kubeConfig.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, conn.server), { ...opts, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Runs `task(i)` for i in [0, n) with at most `parallel` in flight. */
async function inParallel(n: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < n) await task(next++);
  }));
}

/** CPU seconds (user + system), RSS and peak RSS (MiB) of a process, from /proc. */
function procUsage(pid: number): { cpuSeconds: number; rssMiB: number; hwmMiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / 100;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (field: string): number => Math.round(Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024);
  return { cpuSeconds, rssMiB: kB('VmRSS'), hwmMiB: kB('VmHWM') };
}

/**
 * kube-apiserver may not grow past this (MiB; `TYPHA_BENCH_APISERVER_MAX_MIB`, default 12 GiB):
 * N agents listing everything at once can take it past the machine's memory, and the OOM killer
 * then picks a process of the bench's choosing. The run stops there and reports what it saw.
 */
const APISERVER_MAX_MIB = Number(process.env['TYPHA_BENCH_APISERVER_MAX_MIB'] ?? 12_288);

/** Sums `apiserver_longrunning_requests` samples with verb WATCH. */
function watches(metrics: string): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (line.startsWith('apiserver_longrunning_requests{') && line.includes('verb="WATCH"')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const pct = (from: number, to: number, ms: number): number => Math.round(((to - from) / (ms / 1000)) * 100);

export async function runDirect(agents: number, objects: number, seconds: number, rate: number, fullAgents: number, lightWorkers: number): Promise<void> {
  const binaries = locateBinaries();
  const cp = new ControlPlane({ binaries });
  const conn = await cp.start();
  const kubectl = (...args: string[]): string => execFileSync(binaries.kubectl, ['--kubeconfig', conn.kubeconfigPath, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const { pids } = cp.record();
  const pool = new AgentPool(objects, Math.round(rate * seconds));
  try {
    kubectl('apply', '-f', join(REPO_ROOT, 'manifests', '01-crds.yaml'));
    kubectl('wait', '--for', 'condition=established', '--timeout', '60s', 'crd/workloadendpoints.projectcalico.org');
    const weps = workloadEndpointSnapshot(objects).map((u) => {
      const wep = JSON.parse(u.value as string) as WorkloadEndpoint;
      delete wep.metadata.resourceVersion;
      return wep;
    });
    const http = new https.Agent({ keepAlive: true, maxSockets: 64 });
    for (const ns of new Set(weps.map((w) => w.metadata.namespace as string))) {
      const r = await request(conn, http, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      if (r.status !== 201) throw new Error(`creating namespace ${ns}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    }
    const path = (w: WorkloadEndpoint, name = ''): string => `/apis/projectcalico.org/v3/namespaces/${w.metadata.namespace}/workloadendpoints${name === '' ? '' : `/${name}`}`;
    const tCreate = performance.now();
    await inParallel(weps.length, 32, async (i) => {
      const w = weps[i] as WorkloadEndpoint;
      const r = await request(conn, http, 'POST', path(w), w);
      if (r.status !== 201) throw new Error(`creating WorkloadEndpoint ${w.metadata.namespace}/${w.metadata.name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    });
    const createPerSecond = Math.round(weps.length / ((performance.now() - tCreate) / 1000));
    process.stderr.write(`typha bench direct: created ${weps.length} WorkloadEndpoints at ${createPerSecond}/s\n`);

    const usage0 = { api: procUsage(pids.kubeApiserver as number), etcd: procUsage(pids.etcd as number) };
    const t0 = performance.now();
    pool.startAll(agents, Math.min(fullAgents, agents), lightWorkers, { full: 'direct-full', light: 'direct-light' }, conn.kubeconfigPath);
    const progress = (): string => `${pool.inSync}/${agents} in sync, ${pool.failures} failed requests (retried), kube-apiserver RSS ${procUsage(pids.kubeApiserver as number).rssMiB} MiB`;
    let apiserverPeakMiB = 0;
    const syncedOrStopped = (): boolean => {
      apiserverPeakMiB = Math.max(apiserverPeakMiB, procUsage(pids.kubeApiserver as number).rssMiB);
      return pool.inSync >= agents || apiserverPeakMiB > APISERVER_MAX_MIB;
    };
    await until(syncedOrStopped, 'every agent to list and watch', 1_800_000, progress);
    const syncMs = performance.now() - t0;
    const usage1 = { api: procUsage(pids.kubeApiserver as number), etcd: procUsage(pids.etcd as number) };
    const syncFigures = {
      agents,
      fullAgents: Math.min(fullAgents, agents),
      lightWorkers,
      objects,
      createPerSecond,
      apiserverCpuPercentSync: pct(usage0.api.cpuSeconds, usage1.api.cpuSeconds, syncMs),
      etcdCpuPercentSync: pct(usage0.etcd.cpuSeconds, usage1.etcd.cpuSeconds, syncMs),
      failedRequestsSync: pool.failures,
    };
    if (pool.inSync < agents) {
      report('typha', 'direct', {
        ...syncFigures,
        stopped: `kube-apiserver RSS reached ${apiserverPeakMiB} MiB (limit ${APISERVER_MAX_MIB} MiB) after ${(syncMs / 1000).toFixed(1)} s with ${pool.inSync}/${agents} agents in sync`,
        apiserverRssMiB: usage1.api.hwmMiB,
        etcdRssMiB: usage1.etcd.hwmMiB,
        loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      });
      return;
    }
    const heldWatches = watches(kubectl('get', '--raw', '/metrics'));

    const total = Math.round(rate * seconds);
    let inFlight = 0;
    let patched = 0;
    let patchErrors = 0;
    pool.mark();
    const t1 = performance.now();
    await sendStamped(total, rate, async (first, end) => {
      for (let id = first; id < end; id++) {
        const w = weps[id % weps.length] as WorkloadEndpoint;
        inFlight++;
        void request(conn, http, 'PATCH', path(w, w.metadata.name), { metadata: { labels: { [STAMP_LABEL]: stampNow(id) } } }, 'application/merge-patch+json').then(
          (r) => (r.status === 200 ? patched++ : patchErrors++),
          () => patchErrors++,
        ).finally(() => inFlight--);
      }
      // Bounded: a server that cannot take the rate shows as a lower achieved rate.
      while (inFlight > 256) await new Promise((r) => setTimeout(r, 1));
    });
    await until(() => inFlight === 0, 'the last patches', 300_000);
    const updateMs = performance.now() - t1;
    const usage2 = { api: procUsage(pids.kubeApiserver as number), etcd: procUsage(pids.etcd as number) };
    const delivery = await pool.collect(30_000);
    report('typha', 'direct', {
      ...syncFigures,
      allInSyncSeconds: Number((syncMs / 1000).toFixed(1)),
      apiserverWatches: heldWatches,
      patchesPerSecond: Math.round(patched / (updateMs / 1000)),
      patchErrors,
      updateSeconds: Number((updateMs / 1000).toFixed(1)),
      apiserverCpuPercent: pct(usage1.api.cpuSeconds, usage2.api.cpuSeconds, updateMs),
      etcdCpuPercent: pct(usage1.etcd.cpuSeconds, usage2.etcd.cpuSeconds, updateMs),
      ...delivery,
      disconnects: pool.closed,
      apiserverRssMiB: usage2.api.hwmMiB,
      etcdRssMiB: usage2.etcd.hwmMiB,
      loadavg: loadavg().map((l) => Number(l.toFixed(2))),
    });
    http.destroy();
  } finally {
    await pool.exit();
    await cp.stop();
  }
}
