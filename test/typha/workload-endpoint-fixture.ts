/**
 * A realistic, deterministic Typha snapshot for tests and for the compression measurement
 * (compression.ts): `count` WorkloadEndpoints as the controllers build them from pods
 * (`podToWorkloadEndpoint`), spread over namespaces and nodes, with Deployment-style pod names,
 * the usual labels (app, pod-template-hash, tier, version, team), service accounts, named ports
 * and resourceVersions — serialised as the snapshot cache would (`serializeUpdate`).
 *
 * The same `seed` yields the same bytes on every machine, so a measured figure reproduces.
 */
import { podToWorkloadEndpoint } from '../../src/convert/workload-endpoint-builder.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { serializeUpdate, type SerializedUpdate } from '../../src/typha/serialized-update.ts';
import type { K8sPod } from '../../src/api/index.ts';

const APPS = ['frontend', 'checkout', 'cart', 'payments', 'catalog', 'search', 'recommendations', 'auth', 'gateway', 'inventory', 'shipping', 'email', 'metrics-collector', 'redis', 'postgres'];
const TIERS = ['web', 'api', 'backend', 'data', 'infra'];
const ALPHANUM = 'bcdfghjklmnpqrstvwxz2456789';

export interface WorkloadEndpointFixtureOptions {
  /** @default 1 */
  readonly seed?: number;
  /** @default 50 */
  readonly namespaces?: number;
  /** @default 200 */
  readonly nodes?: number;
}

/** `count` WorkloadEndpoint SerializedUpdates (all `new`), in creation order. */
export function workloadEndpointSnapshot(count: number, opts: WorkloadEndpointFixtureOptions = {}): SerializedUpdate[] {
  const { seed = 1, namespaces = 50, nodes = 200 } = opts;
  const random = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const token = (n: number): string => Array.from({ length: n }, () => pick([...ALPHANUM])).join('');
  const out: SerializedUpdate[] = [];
  for (let i = 0; out.length < count; i++) {
    const app = pick(APPS);
    const namespace = `team-${Math.floor(random() * namespaces)}`;
    const node = `ip-10-0-${Math.floor(random() * 64)}-${Math.floor(random() * 250)}.eu-west-1.compute.internal`;
    const hash = token(10);
    const name = `${app}-${hash}-${token(5)}`;
    const ip = `10.${64 + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`;
    const pod: K8sPod = {
      metadata: {
        name,
        namespace,
        uid: `${token(8)}-${token(4)}-${token(4)}-${token(4)}-${token(12)}`,
        labels: { app, 'pod-template-hash': hash, tier: pick(TIERS), version: `v${1 + Math.floor(random() * 4)}`, team: namespace },
      },
      spec: {
        nodeName: `${node}-${Math.floor(random() * nodes)}`,
        serviceAccountName: `${app}-sa`,
        containers: [{ ports: [{ name: 'http', containerPort: 8080 }, ...(random() < 0.5 ? [{ name: 'metrics', containerPort: 9090 }] : [])] }],
      },
      status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
    };
    const wep = podToWorkloadEndpoint(pod);
    if (wep === undefined) continue;
    wep.metadata.resourceVersion = String(100_000 + i * 7);
    out.push(serializeUpdate({ op: 'upsert', resource: wep }));
  }
  return out;
}
