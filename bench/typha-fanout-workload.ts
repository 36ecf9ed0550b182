/**
 * What the fan-out bench (bench/typha-fanout.ts) feeds Typha: the snapshot's objects and, per
 * stamped id, the batch of updates the "API side" writes.
 *
 * - `labels`: `objects` WorkloadEndpoints (the realistic fixture); update `id` relabels endpoint
 *   `id mod objects` with its stamp — one KV per stamped id.
 * - `churn`: the same WorkloadEndpoints plus one EndpointSlice per Service, a Service being up
 *   to PODS_PER_SERVICE endpoints of one namespace (as the agent's and Typha's informers
 *   deliver slices: projected, syncer/endpoint-slice-projection.ts); update `id` is one pod
 *   replacement of a rolling update (typha-endpointslice-fanout.ts's model): the old pod's
 *   WorkloadEndpoint deleted, the new one (stamped) created, and the Service's slice written
 *   three times — old endpoint removed, new one added not-ready, new one ready (the last equal
 *   once projected: Typha drops it as a no-op). Four KVs reach each agent per stamped id.
 */
import { SERVICE_NAME_LABEL, type K8sEndpointSlice, type WorkloadEndpoint } from '../src/api/index.ts';
import { projectEndpointSlice } from '../src/syncer/endpoint-slice-projection.ts';
import { decodeUpdate } from '../src/typha/serialized-update.ts';
import type { AnyUpdate, Update } from '../src/syncer/index.ts';
import { workloadEndpointSnapshot } from '../test/typha/workload-endpoint-fixture.ts';
import { stampNow, STAMP_LABEL } from './typha-agent-protocol.ts';

export const PODS_PER_SERVICE = 50;

export type Workload = 'labels' | 'churn';

export interface FanoutWorkload {
  /** The snapshot, in batches of ≤ 1,000. */
  readonly initial: ReadonlyArray<readonly Update[]>;
  /** Objects in the snapshot. */
  readonly objects: number;
  /** KVs each agent receives per stamped id. */
  readonly kvsPerId: number;
  /** The updates of stamped id `id`, stamped now. */
  batch(id: number): Update[];
}

type Upsert = Extract<Update, { op: 'upsert' }>;

const withStamp = (wep: WorkloadEndpoint, id: number, rename?: string): WorkloadEndpoint => ({
  ...wep,
  metadata: { ...wep.metadata, ...(rename === undefined ? {} : { name: rename, uid: `${wep.metadata.uid ?? ''}-${rename}` }), labels: { ...wep.metadata.labels, [STAMP_LABEL]: stampNow(id) } },
});

const addressOf = (wep: WorkloadEndpoint): string => (wep.spec.ipNetworks?.[0] ?? '').replace(/\/\d+$/, '');

function sliceOf(namespace: string, service: number, pods: readonly WorkloadEndpoint[]): Update {
  const slice: K8sEndpointSlice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `svc-${service}-abcde`, namespace, labels: { [SERVICE_NAME_LABEL]: `svc-${service}` } },
    addressType: 'IPv4',
    endpoints: pods.map((p) => ({ addresses: [addressOf(p)], conditions: { ready: true } })),
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  };
  return { op: 'upsert', resource: projectEndpointSlice(slice) } as AnyUpdate as Update;
}

export function fanoutWorkload(kind: Workload, objects: number): FanoutWorkload {
  const weps = workloadEndpointSnapshot(objects).map((s) => (decodeUpdate(s) as Upsert).resource as WorkloadEndpoint);
  const inBatches = (all: readonly Update[]): Update[][] => Array.from({ length: Math.ceil(all.length / 1000) }, (_, i) => all.slice(i * 1000, (i + 1) * 1000));
  if (kind === 'labels') {
    return {
      initial: inBatches(weps.map((resource) => ({ op: 'upsert', resource }))),
      objects,
      kvsPerId: 1,
      batch: (id) => [{ op: 'upsert', resource: withStamp(weps[id % weps.length] as WorkloadEndpoint, id) }],
    };
  }
  // Services: each namespace's endpoints, PODS_PER_SERVICE at a time.
  const byNamespace = new Map<string, WorkloadEndpoint[]>();
  for (const w of weps) {
    const ns = w.metadata.namespace ?? '';
    const members = byNamespace.get(ns);
    if (members === undefined) byNamespace.set(ns, [w]);
    else members.push(w);
  }
  const services: Array<{ namespace: string; pods: WorkloadEndpoint[] }> = [];
  for (const [namespace, members] of byNamespace) {
    for (let i = 0; i < members.length; i += PODS_PER_SERVICE) services.push({ namespace, pods: members.slice(i, i + PODS_PER_SERVICE) });
  }
  const slices = services.map((s, i) => sliceOf(s.namespace, i, s.pods));
  let nextIp = 0;
  return {
    initial: inBatches([...weps.map((resource): Update => ({ op: 'upsert', resource })), ...slices]),
    objects: weps.length + slices.length,
    kvsPerId: 4,
    batch(id) {
      const s = id % services.length;
      const svc = services[s] as { namespace: string; pods: WorkloadEndpoint[] };
      const at = Math.floor(id / services.length) % svc.pods.length;
      const old = svc.pods[at] as WorkloadEndpoint;
      const ip = `10.${200 + (nextIp >> 16)}.${(nextIp >> 8) & 255}.${nextIp & 255}`;
      nextIp++;
      const fresh = withStamp({ ...old, spec: { ...old.spec, ipNetworks: [`${ip}/32`] } }, id, `${old.metadata.name}-r${id}`);
      const without = svc.pods.filter((_, j) => j !== at);
      svc.pods[at] = fresh;
      return [
        { op: 'delete', kind: 'WorkloadEndpoint', namespace: svc.namespace, name: old.metadata.name },
        { op: 'upsert', resource: fresh },
        sliceOf(svc.namespace, s, without),
        sliceOf(svc.namespace, s, svc.pods),
        sliceOf(svc.namespace, s, svc.pods),
      ];
    },
  };
}
