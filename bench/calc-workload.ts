/**
 * The calc-graph bench workloads, shared by `bench/scenarios/calc.ts` (Tessera alone) and
 * `bench/scenarios/calc-vs-felix.ts` (Tessera beside Felix's Go calculation graph, which reads
 * the same objects from NDJSON files this module writes).
 *
 * Shapes (calico-semantics §6.6, after Felix's `calc_graph_bench_test.go`):
 * - `largeCluster(endpoints, namespaces, policiesPerNs, localCount)`: one Profile per namespace
 *   (`kns.<ns>`, as kube-controllers writes them), `policiesPerNs` NetworkPolicies per namespace
 *   whose rules select peers by `app` (half of them with a named port), endpoints round-robin
 *   over `endpoints / localCount` nodes so `node-0` holds `localCount`.
 * - `isolatedCustomers(namespaces, localCount)`: per namespace 10 endpoints and 2 policies that
 *   allow traffic only from the namespace itself.
 * - churn: remote endpoints in this node's namespaces flip `app` between the peers of the
 *   active policies (every update moves one endpoint between two active IP sets); the mixed
 *   form makes every fifth update a local endpoint's relabel (which policies apply to it).
 *
 * Endpoint names follow Calico's `<node>-k8s-<pod>-<endpoint>` form (dashes doubled), which
 * Felix's v3→v1 update processor parses for the endpoint's key.
 */
import type { NetworkPolicy, Profile, V3Resource, WorkloadEndpoint } from '../src/api/index.ts';

/** The node the bench's graph runs for. */
export const LOCAL_NODE = 'node-0';

export function nsProfile(ns: string): Profile {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: { name: `kns.${ns}` },
    spec: {
      labelsToApply: { 'pcns.projectcalico.org/name': ns, 'pcns.team': `team-${ns.length % 7}` },
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
    },
  };
}

/** Calico's WorkloadEndpoint name: `<node>-<orchestrator>-<pod>-<endpoint>`, each part's dashes doubled. */
export function wepName(node: string, pod: string): string {
  const esc = (s: string): string => s.replaceAll('-', '--');
  return `${esc(node)}-k8s-${esc(pod)}-eth0`;
}

export function endpoint(ns: string, pod: string, node: string, app: string, ip: number): WorkloadEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name: wepName(node, pod),
      namespace: ns,
      labels: { app, 'pod-template-hash': 'abc123', 'projectcalico.org/orchestrator': 'k8s', 'projectcalico.org/namespace': ns },
    },
    spec: {
      node,
      orchestrator: 'k8s',
      pod,
      endpoint: 'eth0',
      interfaceName: `cali${(ip >>> 0).toString(16).padStart(11, '0')}`,
      ipNetworks: [`10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}/32`],
      profiles: [`kns.${ns}`],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    },
  };
}

export function policy(ns: string, name: string, app: string, fromApp: string, namedPort: boolean): NetworkPolicy {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec: {
      tier: 'default',
      order: 100,
      selector: `app == '${app}'`,
      types: ['Ingress', 'Egress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `app == '${fromApp}'` },
          destination: { ports: namedPort ? ['http'] : [8080] },
        },
      ],
      egress: [{ action: 'Allow', destination: { selector: `app == '${fromApp}'` } }],
    },
  };
}

/** A large cluster's dimensions. */
export interface ClusterShape {
  readonly endpoints: number;
  readonly namespaces: number;
  readonly policiesPerNs: number;
  readonly localCount: number;
}

const APPS = 50;

function nodeCount(shape: ClusterShape): number {
  return Math.ceil(shape.endpoints / shape.localCount);
}

/** Endpoint `i` of the large cluster (see the module doc). */
function clusterEndpoint(shape: ClusterShape, i: number, app?: string): WorkloadEndpoint {
  const nodes = nodeCount(shape);
  const ns = `ns-${i % shape.namespaces}`;
  // Round-robin over nodes: node-0 gets endpoints 0, nodes, 2*nodes, … (localCount of them).
  const node = `node-${i % nodes}`;
  // Local endpoints fall in the namespaces i % namespaces for i a multiple of `nodes`; in each
  // they are app-0 or app-5, so the active policies there are pol-0 (peers app-1) and pol-5
  // (peers app-6).
  const chosen = app ?? (node === LOCAL_NODE ? `app-${Math.floor(i / nodes / 4) % 2 === 0 ? 0 : 5}` : `app-${Math.floor(i / shape.namespaces) % APPS}`);
  return endpoint(ns, `pod-${i}`, node, chosen, i + 1);
}

export function* largeCluster(shape: ClusterShape): Generator<V3Resource> {
  const { namespaces, policiesPerNs } = shape;
  for (let n = 0; n < namespaces; n++) yield nsProfile(`ns-${n}`);
  for (let n = 0; n < namespaces; n++) {
    for (let p = 0; p < policiesPerNs; p++) {
      const app = `app-${(n * policiesPerNs + p) % APPS}`;
      const from = `app-${(n * policiesPerNs + p + 1) % APPS}`;
      yield policy(`ns-${n}`, `pol-${p}`, app, from, p % 2 === 0);
    }
  }
  for (let i = 0; i < shape.endpoints; i++) yield clusterEndpoint(shape, i);
}

/**
 * Churn on a large cluster: two rounds of full endpoint upserts (as a syncer delivers them).
 * Round 0 moves every flipping endpoint to one label, round 1 back to the other, so after both
 * rounds each endpoint is in one of its two states — round 1 leaves the remote endpoints on
 * `app-6` and the local ones on their synced label. `localEvery` > 0 makes every
 * `localEvery`-th update a local endpoint's relabel (app-0 ↔ app-5: which policies apply to it).
 */
export function clusterChurn(shape: ClusterShape, localEvery = 0): [V3Resource[], V3Resource[]] {
  const nodes = nodeCount(shape);
  const localNamespaces = new Set<number>();
  const locals: number[] = [];
  for (let i = 0; i < shape.endpoints; i += nodes) {
    localNamespaces.add(i % shape.namespaces);
    locals.push(i);
  }
  const rounds: [V3Resource[], V3Resource[]] = [[], []];
  let nextLocal = 0;
  for (let i = 0; i < shape.endpoints; i++) {
    if (i % nodes === 0 || !localNamespaces.has(i % shape.namespaces)) continue;
    // Remote endpoints in this node's namespaces flip between app-1 and app-6, the peers of the
    // active policies there.
    rounds[0].push(clusterEndpoint(shape, i, 'app-1'));
    rounds[1].push(clusterEndpoint(shape, i, 'app-6'));
    if (localEvery > 0 && rounds[0].length % localEvery === localEvery - 1) {
      const l = locals[nextLocal++ % locals.length] as number;
      const synced = clusterEndpoint(shape, l);
      const other = synced.metadata.labels?.app === 'app-0' ? 'app-5' : 'app-0';
      rounds[0].push(clusterEndpoint(shape, l, other));
      rounds[1].push(synced);
    }
  }
  return rounds;
}

export function* isolatedCustomers(namespaces: number, localCount: number): Generator<V3Resource> {
  const perNs = 10;
  const total = namespaces * perNs;
  const nodes = Math.ceil(total / localCount);
  for (let n = 0; n < namespaces; n++) {
    const ns = `cust-${n}`;
    yield nsProfile(ns);
    yield policy(ns, 'allow-same-ns', 'web', 'web', false);
    yield {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'default-deny', namespace: ns },
      spec: { tier: 'default', order: 1000, selector: 'all()', types: ['Ingress', 'Egress'], ingress: [{ action: 'Allow', source: { selector: 'all()' } }] },
    } satisfies NetworkPolicy;
    for (let e = 0; e < perNs; e++) {
      const i = n * perNs + e;
      yield endpoint(ns, `pod-${e}`, `node-${i % nodes}`, e % 2 === 0 ? 'web' : 'db', i + 1);
    }
  }
}
