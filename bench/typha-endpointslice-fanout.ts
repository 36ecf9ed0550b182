/**
 * What EndpointSlices add to Typha's fan-out under pod churn (issue 27): one SnapshotCache and
 * SyncServer, AGENTS real SyncClients behind byte-counting TCP proxies, a cluster of SERVICES
 * Services of PODS_PER_SERVICE pods each (one EndpointSlice per Service), then CHURN pod
 * replacements — measured twice, with Typha carrying only WorkloadEndpoints and with it also
 * carrying the EndpointSlices.
 *
 * Churn model (a Deployment's rolling replacement of one pod): the controllers write the old
 * pod's WorkloadEndpoint delete and the new pod's WorkloadEndpoint; the EndpointSlice
 * controller writes the Service's slice three times — old endpoint removed, new endpoint
 * added not-ready, new endpoint ready (Felix ignores conditions, but Typha fans out every
 * change of the object). Reported per replacement and per agent: KVs delivered, the values'
 * uncompressed JSON bytes, and the compressed bytes on the wire (deflate-raw, what agents
 * negotiate first). Counts, not times: the figures reproduce on any machine. Three runs: no
 * slices; whole slices; slices as the agent's and Typha's informers deliver them
 * (syncer/endpoint-slice-projection.ts), where a readiness-only write is a no-op Typha skips.
 *
 * `npm run bench -- typha-endpointslices`, or `node --import tsx bench/typha-endpointslice-fanout.ts`
 * (env: AGENTS, SERVICES, PODS_PER_SERVICE, CHURN).
 */
import { setMaxListeners } from 'node:events';
import net from 'node:net';
import { pathToFileURL } from 'node:url';

import { report } from './scenario.ts';

import { podToWorkloadEndpoint } from '../src/convert/workload-endpoint-builder.ts';
import type { K8sPod } from '../src/api/index.ts';
import { SnapshotCache } from '../src/typha/snapshot-cache.ts';
import { SyncClient } from '../src/typha/sync-client.ts';
import { SyncServer } from '../src/typha/sync-server.ts';
import { serializeUpdate } from '../src/typha/serialized-update.ts';
import { projectEndpointSlice } from '../src/syncer/endpoint-slice-projection.ts';
import type { AnyUpdate, SyncStatus, Update } from '../src/syncer/index.ts';

const env = (name: string, dflt: number): number => Number(process.env[name] ?? dflt);
const AGENTS = env('AGENTS', 10);
const SERVICES = env('SERVICES', 20);
const PODS_PER_SERVICE = env('PODS_PER_SERVICE', 50);
const CHURN = env('CHURN', 200);

interface PodState {
  name: string;
  ip: string;
}

const ipOf = (n: number): string => `10.${64 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;

function wep(svc: number, pod: PodState): Update {
  const k8s: K8sPod = {
    metadata: { name: pod.name, namespace: 'shop', uid: `uid-${pod.name}`, labels: { app: `svc-${svc}`, 'pod-template-hash': 'abcde12345' } },
    spec: { nodeName: `node-${svc % 7}`, serviceAccountName: 'default', containers: [{ ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }] },
    status: { phase: 'Running', podIP: pod.ip, podIPs: [{ ip: pod.ip }] },
  };
  const resource = podToWorkloadEndpoint(k8s);
  if (resource === undefined) throw new Error('no WorkloadEndpoint');
  return { op: 'upsert', resource };
}

function slice(svc: number, pods: readonly PodState[], notReady?: string): AnyUpdate {
  return {
    op: 'upsert',
    resource: {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `svc-${svc}-abcde`, namespace: 'shop', labels: { 'kubernetes.io/service-name': `svc-${svc}`, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
      addressType: 'IPv4',
      endpoints: pods.map((p) => ({
        addresses: [p.ip],
        conditions: { ready: p.name !== notReady, serving: p.name !== notReady, terminating: false },
        nodeName: `node-${svc % 7}`,
        targetRef: { kind: 'Pod', namespace: 'shop', name: p.name, uid: `uid-${p.name}` },
      })),
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    } as never,
  };
}

interface Counts {
  kvs: number;
  raw: number;
  wire: number;
}

type Mode = 'none' | 'whole' | 'projected';

async function run(mode: Mode): Promise<Counts> {
  const withSlices = mode !== 'none';
  const sliceOf = (svc: number, pods: readonly PodState[], notReady?: string): AnyUpdate => {
    const u = slice(svc, pods, notReady);
    return mode === 'projected' && u.op === 'upsert' ? { op: 'upsert', resource: projectEndpointSlice(u.resource as never) as never } : u;
  };
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const cache = new SnapshotCache({ maxBatchSize: 100 });
  const cacheRunning = cache.start(abort.signal);
  const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0, pingIntervalMs: 1e9 });
  const { port } = await server.listen();

  let next = 0;
  const services: PodState[][] = [];
  const initial: (Update | AnyUpdate)[] = [];
  for (let s = 0; s < SERVICES; s++) {
    const pods = Array.from({ length: PODS_PER_SERVICE }, () => ({ name: `svc-${s}-${next}`, ip: ipOf(next++) }));
    services.push(pods);
    for (const p of pods) initial.push(wep(s, p));
    if (withSlices) initial.push(sliceOf(s, pods));
  }
  cache.onStatusUpdated('resync-in-progress');
  cache.onUpdates(initial as Update[]);
  cache.onStatusUpdated('in-sync');

  // One proxy per agent counts the bytes Typha writes to it.
  const wire = new Array<number>(AGENTS).fill(0);
  const proxies = Array.from({ length: AGENTS }, (_, i) =>
    net.createServer((down) => {
      const up = net.connect(port, '127.0.0.1');
      up.on('data', (b: Buffer) => {
        wire[i]! += b.length;
        down.write(b);
      });
      down.on('data', (b: Buffer) => up.write(b));
      const end = (): void => {
        up.destroy();
        down.destroy();
      };
      up.on('close', end).on('error', end);
      down.on('close', end).on('error', end);
    }),
  );
  const proxyPorts = await Promise.all(proxies.map((p) => new Promise<number>((r) => p.listen(0, '127.0.0.1', () => r((p.address() as net.AddressInfo).port)))));

  const received = { kvs: 0, raw: 0 };
  let inSync = 0;
  const clients = proxyPorts.map((pp, i) => {
    const c = new SyncClient(
      { hostname: `node-${i}`, addresses: () => [`127.0.0.1:${pp}`], compression: ['deflate-raw'] },
      {
        onUpdates: (us: readonly Update[]) => {
          if (inSync < AGENTS) return;
          for (const u of us) {
            received.kvs++;
            received.raw += serializeUpdate(u).value?.length ?? 0;
          }
        },
        onStatusUpdated: (s: SyncStatus) => {
          if (s === 'in-sync') inSync++;
        },
      },
    );
    return { c, running: c.run(abort.signal) };
  });
  while (inSync < AGENTS) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 200));
  const wireAtSync = wire.reduce((a, b) => a + b, 0);

  let expected = 0;
  for (let k = 0; k < CHURN; k++) {
    const s = k % SERVICES;
    const pods = services[s]!;
    const i = Math.floor(k / SERVICES) % pods.length;
    const old = pods[i]!;
    const fresh = { name: `svc-${s}-${next}`, ip: ipOf(next++) };
    const batch: (Update | AnyUpdate)[] = [{ op: 'delete', kind: 'WorkloadEndpoint', namespace: 'shop', name: (wep(s, old) as { resource: { metadata: { name: string } } }).resource.metadata.name }, wep(s, fresh)];
    const without = pods.filter((_, j) => j !== i);
    const after = [...without.slice(0, i), fresh, ...without.slice(i)];
    if (withSlices) batch.push(sliceOf(s, without), sliceOf(s, after, fresh.name), sliceOf(s, after));
    pods[i] = fresh;
    // A projected readiness-only write equals the previous value: Typha skips it.
    expected += (mode === 'projected' ? batch.length - 1 : batch.length) * AGENTS;
    cache.onUpdates(batch as Update[]);
    // One replacement at a time, as a rolling update paces them.
    await new Promise((r) => setImmediate(r));
  }
  const deadline = Date.now() + 60_000;
  while (received.kvs < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 300));
  const totalWire = wire.reduce((a, b) => a + b, 0) - wireAtSync;

  abort.abort();
  await Promise.all(clients.map((c) => c.running));
  await server.close();
  for (const p of proxies) p.close();
  await cacheRunning;
  if (received.kvs !== expected) throw new Error(`expected ${expected} KVs delivered, got ${received.kvs}`);
  return { kvs: received.kvs / AGENTS / CHURN, raw: received.raw / AGENTS / CHURN, wire: totalWire / AGENTS / CHURN };
}

/** Runs the three measurements and prints them, with one JSON line (`report`). */
export async function measureEndpointSliceFanout(): Promise<void> {
  const base = await run('none');
  const whole = await run('whole');
  const projected = await run('projected');
  const f = (n: number): string => n.toFixed(1);
  const line = (name: string, c: Counts): string =>
    `  ${name.padEnd(30)} ${f(c.kvs)} KVs, ${f(c.raw)} B raw JSON, ${f(c.wire)} B on the wire (x${f(c.kvs / base.kvs)}, x${f(c.raw / base.raw)}, x${f(c.wire / base.wire)})`;
  console.error(`${AGENTS} agents, ${SERVICES} Services x ${PODS_PER_SERVICE} pods, ${CHURN} pod replacements; per replacement and agent:`);
  console.error(line('WorkloadEndpoints only:', base));
  console.error(line('+ whole EndpointSlices:', whole));
  console.error(line('+ projected EndpointSlices:', projected));
  report('typha-endpointslices', 'fanout', { agents: AGENTS, services: SERVICES, podsPerService: PODS_PER_SERVICE, churn: CHURN, base, whole, projected });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await measureEndpointSliceFanout();
