/**
 * The datastore contents of the agent-memory bench (bench/scenarios/agent-memory.ts): one
 * large cluster as the agent receives it through Typha — the well-known Tiers, one `kns.<ns>`
 * Profile per namespace (what namespaces become in projectcalico.org/v3), namespaced
 * NetworkPolicies and WorkloadEndpoints.
 *
 * The shape is calc.ts's `largeCluster` (10 policies per namespace, 50 apps, each policy
 * selecting one app and allowing its peers by app label), changed in two ways so that the
 * agent programs a large dataplane rather than a handful of chains:
 * - the local endpoints are spread over up to `localEndpoints` namespaces, each labelled with
 *   the app one of its namespace's policies selects, so up to `localEndpoints` policies are
 *   active (calc.ts packs them into 2–4 namespaces and 2 apps: 4 active policies);
 * - every policy also allows its peers from EVERY namespace (`namespaceSelector: all()`) on
 *   the metrics port, as a "monitoring from anywhere" rule does: those IP sets hold
 *   endpoints / 50 members each (2,000 at 100k endpoints), so the agent holds, and the kernel
 *   gets, most of the cluster's addresses — not only a few per namespace. (The named port of
 *   the even policies' first rule, with no destination selector, adds one set of every
 *   endpoint, as Calico's would.)
 *
 * Deterministic: the same arguments yield the same objects, in the same order (tiers,
 * profiles, policies, then endpoints — the order does not matter to the agent, which programs
 * nothing before in-sync).
 */
import type { NetworkPolicy, Profile, V3Resource, WorkloadEndpoint } from '../src/api/index.ts';
import { defaultTiers } from '../src/convert/default-tiers.ts';

/** The node the measured agent runs as; remote endpoints are on node-1 … node-K. */
export const AGENT_NODE = 'node-0';

/** Policies per namespace (calc.ts's largeCluster: 10). */
const POLICIES_PER_NAMESPACE = 10;
/** Distinct `app` labels in the cluster (calc.ts: 50). */
const APPS = 50;
/** Remote endpoints per node (calc.ts: as many as the local node has, 200). */
const ENDPOINTS_PER_NODE = 200;

export interface AgentMemoryWorkloadOptions {
  /** WorkloadEndpoints on other nodes than {@link AGENT_NODE}. */
  readonly endpoints: number;
  /** NetworkPolicies; rounded up to a multiple of 10 (10 per namespace). */
  readonly policies: number;
  /** WorkloadEndpoints on {@link AGENT_NODE}. @default 200 */
  readonly localEndpoints?: number;
}

/** What {@link agentMemoryWorkload} yields, counted. */
export interface AgentMemoryWorkloadSize {
  readonly namespaces: number;
  readonly policies: number;
  readonly remoteEndpoints: number;
  readonly localEndpoints: number;
}

export function workloadSize(opts: AgentMemoryWorkloadOptions): AgentMemoryWorkloadSize {
  const { endpoints, policies, localEndpoints = 200 } = opts;
  if (!Number.isInteger(endpoints) || endpoints < 1) throw new RangeError(`endpoints must be a positive integer, not ${endpoints}`);
  if (!Number.isInteger(policies) || policies < 1) throw new RangeError(`policies must be a positive integer, not ${policies}`);
  if (!Number.isInteger(localEndpoints) || localEndpoints < 0) throw new RangeError(`localEndpoints must be a non-negative integer, not ${localEndpoints}`);
  const namespaces = Math.ceil(policies / POLICIES_PER_NAMESPACE);
  return { namespaces, policies: namespaces * POLICIES_PER_NAMESPACE, remoteEndpoints: endpoints, localEndpoints };
}

/** A namespace as the agent sees it: the Profile the controllers write for it. */
export function namespaceProfile(ns: string, team: number): Profile {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: { name: `kns.${ns}` },
    spec: {
      labelsToApply: { 'pcns.projectcalico.org/name': ns, 'pcns.team': `team-${team}` },
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
    },
  };
}

/** A pod's WorkloadEndpoint; `ip` is the address as a number inside 10.0.0.0/8. */
export function workloadEndpoint(ns: string, name: string, node: string, app: string, ip: number): WorkloadEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name,
      namespace: ns,
      labels: { app, 'pod-template-hash': 'abc123', 'projectcalico.org/orchestrator': 'k8s', 'projectcalico.org/namespace': ns },
    },
    spec: {
      node,
      orchestrator: 'k8s',
      pod: name,
      endpoint: 'eth0',
      interfaceName: `cali${(ip >>> 0).toString(16).padStart(11, '0')}`,
      ipNetworks: [`10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}/32`],
      profiles: [`kns.${ns}`],
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'metrics', protocol: 'TCP', port: 9090 },
      ],
    },
  };
}

/**
 * Policy `p` of namespace `n`: applies to `app-k` (k = (10n + p) mod 50) and allows, in
 * ingress, `app-(k+1)` of its namespace on http (a named port for even p, so named-port IP
 * sets are exercised too) and `app-(k+1)` of any namespace on 9090; in egress, `app-(k+1)` of
 * its namespace.
 */
export function appPolicy(n: number, p: number): NetworkPolicy {
  const ns = `ns-${n}`;
  const k = (n * POLICIES_PER_NAMESPACE + p) % APPS;
  const app = `app-${k}`;
  const peer = `app-${(k + 1) % APPS}`;
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name: `pol-${p}`, namespace: ns },
    spec: {
      tier: 'default',
      order: 100 + p,
      selector: `app == '${app}'`,
      types: ['Ingress', 'Egress'],
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: { selector: `app == '${peer}'` }, destination: { ports: p % 2 === 0 ? ['http'] : [8080] } },
        { action: 'Allow', protocol: 'TCP', source: { namespaceSelector: 'all()', selector: `app == '${peer}'` }, destination: { ports: [9090] } },
      ],
      egress: [{ action: 'Allow', destination: { selector: `app == '${peer}'` } }],
    },
  };
}

/** The whole datastore, as `V3Resource`s (see the file comment). */
export function* agentMemoryWorkload(opts: AgentMemoryWorkloadOptions): Generator<V3Resource> {
  const { namespaces, remoteEndpoints, localEndpoints } = workloadSize(opts);
  yield* defaultTiers();
  for (let n = 0; n < namespaces; n++) yield namespaceProfile(`ns-${n}`, n % 7);
  for (let n = 0; n < namespaces; n++) for (let p = 0; p < POLICIES_PER_NAMESPACE; p++) yield appPolicy(n, p);
  const nodes = Math.ceil(remoteEndpoints / ENDPOINTS_PER_NODE);
  for (let i = 0; i < remoteEndpoints; i++) {
    // Round-robin over namespaces and nodes; within a namespace the apps cycle, so every
    // (namespace, app) pair has endpoints / (namespaces × 50) members (2 at 100k / 1,000).
    const ns = `ns-${i % namespaces}`;
    yield workloadEndpoint(ns, `pod-${i}`, `node-${1 + (i % nodes)}`, `app-${Math.floor(i / namespaces) % APPS}`, i + 1);
  }
  // Local endpoint j sits in namespace j·stride (+ 0…4, see below) and carries the app its
  // policy j mod 10 selects: one active policy per local endpoint while namespaces last. The
  // offset ⌊j/10⌋ mod 5 shifts the namespace's residue mod 5, which is what picks its 10 apps
  // (10n mod 50): with a stride of 5, local endpoint j runs app-(j mod 50), so all 50 apps —
  // and 50 cluster-wide peer sets — are active, not 10.
  const stride = Math.max(1, Math.floor(namespaces / Math.max(1, localEndpoints)));
  for (let j = 0; j < localEndpoints; j++) {
    const n = (j * stride + (Math.floor(j / POLICIES_PER_NAMESPACE) % 5)) % namespaces;
    const p = j % POLICIES_PER_NAMESPACE;
    const app = `app-${(n * POLICIES_PER_NAMESPACE + p) % APPS}`;
    yield workloadEndpoint(`ns-${n}`, `local-${j}`, AGENT_NODE, app, remoteEndpoints + j + 1);
  }
}
