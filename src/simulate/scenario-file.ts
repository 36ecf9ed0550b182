/**
 * Scenario files (`netpol-truth-tables/v1`, `calico-truth-tables/v1`; see
 * ../shared/scenarios/README.md) → `ClusterObjects` and probes.
 *
 * Pods are built as the cluster would hold them (Pod with `spec.nodeName`,
 * `spec.serviceAccountName`, containers' ports, `status.podIP`), so they go through the same
 * Pod → WorkloadEndpoint builder as `-f` input. A pod without `node` runs on `node-1`.
 *
 * Dual-stack pods (the e2e runner's extension): a pod's optional `ip6` goes into
 * `status.podIPs` after its `ip`, so its WorkloadEndpoint has a /128 next to the /32; a
 * probe's optional `ipVersion` (4 or 6, default 4) is checked here (6 needs `ip6` on both
 * pods) and is the address family the probe is meant for.
 *
 * Nodes (optional `nodes`, "Hosts as endpoints"; scenario-nodes.ts): validated here, and a probe
 * endpoint without `/` names one. A probe's `ipVersion` 6 then needs an IPv6 address on every
 * pod endpoint (`ip6`) and node endpoint (`ip` or `ip6`).
 *
 * `steps` (optional, per scenario; the extension defined in e2e/scenarios/README.md): applied
 * in order on top of step 0 (the top-level policies and probes). Inside one step:
 * `namespaceLabels`, `podLabels` (full replacement maps), `policies` (upsert by
 * apiVersion/kind/namespace/name), `deletePolicies`, then its `probes`.
 */
import { isIPv6 } from 'node:net';
import type { V3Resource } from '../api/index.ts';
import { isNodeEndpoint, nodeProblems, nodesByName, probeNodeProblem, type ScenarioNode } from './scenario-nodes.ts';
import { classifyObjects, type ClusterObjects, type K8sNamespace, type K8sServiceAccount } from './cluster-objects.ts';
import { withServiceEndpoints } from './endpoint-slices.ts';
import type { ProbeProtocol } from './verdict-engine.ts';
import type { K8sNetworkPolicy, K8sNode, K8sPod } from '../api/index.ts';

export interface ScenarioProbe {
  readonly from: string;
  readonly to: string;
  readonly port: number;
  readonly protocol: ProbeProtocol;
  /** The address family probed (both pods need `ip6` for 6). @default 4 */
  readonly ipVersion?: 4 | 6;
  readonly expected: boolean;
}

export interface ScenarioPod {
  readonly namespace: string;
  readonly name: string;
  readonly labels?: Record<string, string>;
  readonly ip?: string;
  /** An IPv6 address as well: a dual-stack pod. */
  readonly ip6?: string;
  readonly node?: string;
  readonly serviceAccount?: string;
  readonly containerPorts?: ReadonlyArray<{ name?: string; containerPort: number; protocol?: string }>;
}

export interface ScenarioStep {
  readonly description?: string;
  readonly namespaceLabels?: ReadonlyArray<{ name: string; labels: Record<string, string> }>;
  readonly podLabels?: ReadonlyArray<{ namespace: string; name: string; labels: Record<string, string> }>;
  readonly policies?: readonly unknown[];
  readonly deletePolicies?: ReadonlyArray<{ apiVersion?: string; kind: string; namespace?: string; name: string }>;
  readonly probes?: readonly ScenarioProbe[];
}

export interface Scenario {
  readonly name: string;
  readonly description?: string;
  readonly namespaces: ReadonlyArray<{ name: string; labels?: Record<string, string> }>;
  /** Nodes with an address of their own, probe endpoints ("Hosts as endpoints"). */
  readonly nodes?: readonly ScenarioNode[];
  readonly pods: readonly ScenarioPod[];
  readonly policies: readonly unknown[];
  readonly probes: readonly ScenarioProbe[];
  readonly steps?: readonly ScenarioStep[];
}

export interface ScenarioFile {
  readonly schema: string;
  readonly scenarios: readonly Scenario[];
}

export class ScenarioFormatError extends Error {
  override readonly name = 'ScenarioFormatError';
}

const SCHEMAS = new Set(['netpol-truth-tables/v1', 'calico-truth-tables/v1']);

export function parseScenarioFile(text: string, file: string): ScenarioFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ScenarioFormatError(`${file}: not JSON: ${(err as Error).message}`);
  }
  const v = value as Partial<ScenarioFile> | null;
  if (typeof v !== 'object' || v === null || typeof v.schema !== 'string' || !SCHEMAS.has(v.schema)) {
    throw new ScenarioFormatError(`${file}: schema must be one of ${[...SCHEMAS].join(', ')}`);
  }
  if (!Array.isArray(v.scenarios)) throw new ScenarioFormatError(`${file}: scenarios must be a list`);
  v.scenarios.forEach((s: Partial<Scenario>, i) => {
    const where = `${file}: scenarios[${i}]${typeof s.name === 'string' ? ` (${s.name})` : ''}`;
    if (typeof s.name !== 'string') throw new ScenarioFormatError(`${where}: name must be a string`);
    for (const f of ['namespaces', 'pods', 'policies', 'probes'] as const) {
      if (s[f] !== undefined && !Array.isArray(s[f])) throw new ScenarioFormatError(`${where}: ${f} must be a list`);
    }
    for (const [j, p] of (s.pods ?? []).entries()) {
      if (p.ip6 !== undefined && !isIPv6(p.ip6)) throw new ScenarioFormatError(`${where}: pods[${j}]: ip6 ${JSON.stringify(p.ip6)} is not an IPv6 address`);
    }
    const podAddresses = (s.pods ?? []).flatMap((p) => [p.ip, p.ip6].filter((a): a is string => typeof a === 'string'));
    const [nodeProblem] = nodeProblems(s.nodes, podAddresses);
    if (nodeProblem !== undefined) throw new ScenarioFormatError(`${where}: ${nodeProblem}`);
    const nodes = nodesByName(s.nodes);
    const dualStack = new Set((s.pods ?? []).filter((p) => p.ip6 !== undefined).map((p) => `${p.namespace}/${p.name}`));
    for (const [j, p] of (s.probes ?? []).entries()) checkProbe(p, `${where}: probes[${j}]`, dualStack, nodes);
    for (const [k, step] of (s.steps ?? []).entries()) {
      for (const [j, p] of (step.probes ?? []).entries()) checkProbe(p, `${where}: steps[${k}].probes[${j}]`, dualStack, nodes);
    }
  });
  return {
    schema: v.schema,
    scenarios: v.scenarios.map((s) => ({ namespaces: [], pods: [], policies: [], probes: [], ...s })),
  };
}

function checkProbe(p: Partial<ScenarioProbe>, where: string, dualStack: ReadonlySet<string>, nodes: ReadonlyMap<string, ScenarioNode>): void {
  if (typeof p.from !== 'string' || typeof p.to !== 'string') throw new ScenarioFormatError(`${where}: from and to must be "ns/pod" or a node's name`);
  if (typeof p.port !== 'number' || !Number.isInteger(p.port) || p.port < 1 || p.port > 65535) throw new ScenarioFormatError(`${where}: port must be 1–65535`);
  if (p.protocol !== 'TCP' && p.protocol !== 'UDP' && p.protocol !== 'SCTP') throw new ScenarioFormatError(`${where}: protocol must be TCP, UDP or SCTP`);
  if (typeof p.expected !== 'boolean') throw new ScenarioFormatError(`${where}: expected must be true or false`);
  if (p.ipVersion !== undefined && p.ipVersion !== 4 && p.ipVersion !== 6) throw new ScenarioFormatError(`${where}: ipVersion must be 4 or 6`);
  const pods = [p.from, p.to].filter((e) => !isNodeEndpoint(e));
  if (p.ipVersion === 6 && !pods.every((e) => dualStack.has(e))) {
    throw new ScenarioFormatError(`${where}: ipVersion 6 needs ip6 on ${pods.length === 2 ? 'both pods' : `pod ${pods[0]}`} (${p.from} → ${p.to})`);
  }
  const nodeProblem = probeNodeProblem(p as ScenarioProbe, nodes);
  if (nodeProblem !== undefined) throw new ScenarioFormatError(`${where}: ${nodeProblem}`);
}

function podObject(p: ScenarioPod): K8sPod {
  return {
    metadata: { name: p.name, namespace: p.namespace, labels: { ...(p.labels ?? {}) } },
    spec: {
      nodeName: p.node ?? 'node-1',
      serviceAccountName: p.serviceAccount ?? 'default',
      containers: [{ ports: (p.containerPorts ?? []).map((c) => ({ ...c })) }],
    },
    status: {
      phase: 'Running',
      ...(p.ip !== undefined ? { podIP: p.ip } : {}),
      ...(p.ip !== undefined && p.ip6 !== undefined ? { podIPs: [{ ip: p.ip }, { ip: p.ip6 }] } : {}),
    },
  };
}

/** The state of a scenario before any step. */
export interface ScenarioState {
  namespaces: Map<string, Record<string, string>>;
  pods: Map<string, ScenarioPod>;
  /** Policies by `<apiVersion>/<kind>/<namespace>/<name>`, in apply order. */
  policies: Map<string, unknown>;
  /** The scenario's `nodes`: each is also a Node object (labels, addresses) for ClusterNetworkPolicy `nodes` peers. */
  nodes?: readonly ScenarioNode[];
}

function policyKey(o: unknown): string {
  const v = o as { apiVersion?: string; kind?: string; metadata?: { namespace?: string; name?: string } };
  return `${v.apiVersion ?? ''}/${v.kind ?? ''}/${v.metadata?.namespace ?? ''}/${v.metadata?.name ?? ''}`;
}

export function initialState(s: Scenario): ScenarioState {
  return {
    namespaces: new Map(s.namespaces.map((n) => [n.name, { ...(n.labels ?? {}) }])),
    pods: new Map(s.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
    policies: new Map(s.policies.map((p) => [policyKey(p), p])),
    ...(s.nodes === undefined ? {} : { nodes: s.nodes }),
  };
}

/** A scenario node as the Node object the API server would hold: its labels and its addresses as InternalIPs. */
function nodeObject(n: ScenarioNode): K8sNode {
  return {
    metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name, ...(n.labels ?? {}) } },
    status: { addresses: [n.ip, ...(n.ip6 === undefined ? [] : [n.ip6])].map((address) => ({ type: 'InternalIP', address })) },
  };
}

/** Applies one step to `state` in place, in the README's order. */
export function applyStep(state: ScenarioState, step: ScenarioStep): void {
  for (const l of step.namespaceLabels ?? []) state.namespaces.set(l.name, { ...l.labels });
  for (const l of step.podLabels ?? []) {
    const key = `${l.namespace}/${l.name}`;
    const pod = state.pods.get(key);
    if (pod !== undefined) state.pods.set(key, { ...pod, labels: { ...l.labels } });
  }
  for (const o of step.policies ?? []) state.policies.set(policyKey(o), o);
  for (const d of step.deletePolicies ?? []) {
    for (const key of [...state.policies.keys()]) {
      const [api = '', kind = '', ns = '', name = ''] = splitPolicyKey(key);
      if (kind === d.kind && name === d.name && ns === (d.namespace ?? '') && (d.apiVersion === undefined || d.apiVersion === api)) state.policies.delete(key);
    }
  }
}

function splitPolicyKey(key: string): string[] {
  // apiVersion may itself contain a slash (networking.k8s.io/v1): split from the right.
  const parts = key.split('/');
  const name = parts.pop() ?? '';
  const ns = parts.pop() ?? '';
  const kind = parts.pop() ?? '';
  return [parts.join('/'), kind, ns, name];
}

export function stateObjects(state: ScenarioState, notes: string[]): ClusterObjects {
  const namespaces: K8sNamespace[] = [...state.namespaces].map(([name, labels]) => ({ metadata: { name, labels } }));
  const pods = [...state.pods.values()];
  const sas = new Set(pods.map((p) => `${p.namespace}/${p.serviceAccount ?? 'default'}`));
  const serviceAccounts: K8sServiceAccount[] = [...sas].sort().map((k) => {
    const [namespace = '', name = ''] = k.split('/');
    return { metadata: { namespace, name } };
  });
  const policies = classifyObjects([...state.policies.values()], notes);
  return withServiceEndpoints({
    namespaces,
    serviceAccounts,
    pods: pods.map(podObject),
    networkPolicies: policies.networkPolicies as K8sNetworkPolicy[],
    calico: policies.calico as V3Resource[],
    ...(policies.unenforced === undefined || policies.unenforced.length === 0 ? {} : { unenforced: policies.unenforced }),
    services: policies.services ?? [],
    endpointSlices: policies.endpointSlices ?? [],
    clusterNetworkPolicies: policies.clusterNetworkPolicies ?? [],
    // A Node object among the policies replaces the scenario's node of that name.
    nodes: [...(state.nodes ?? []).filter((n) => !(policies.nodes ?? []).some((o) => o.metadata?.name === n.name)).map(nodeObject), ...(policies.nodes ?? [])],
  });
}
