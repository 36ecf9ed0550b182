/**
 * The policy-churn fixture of the agent reliability tests (reliability, Typha): four pods on two
 * nodes in namespaces x, y and z; z is the unchanged part (deny all ingress) and x churns between
 * admitting y and admitting z. STABLE_PROBES never change verdict while x churns; a test watches
 * them for flips (probe-flips.ts) while it disturbs the cluster, then converges on the final
 * state the API server holds.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';

import type { E2eCluster } from '../runner/cluster.ts';
import type { ManifestObject, Probe, Scenario } from '../runner/scenario.ts';

export type ChurnSource = 'y' | 'z';

const PORTS = [
  { name: 'http', containerPort: 80, protocol: 'TCP' as const },
  { name: 'dns', containerPort: 53, protocol: 'UDP' as const },
];
const pod = (namespace: string, name: string, ip: string, node: string) => ({ namespace, name, ip, node, labels: { pod: name }, containerPorts: PORTS });
const ns = (name: string) => ({ name, labels: { 'kubernetes.io/metadata.name': name, ns: name } });
const knp = (name: string, namespace: string, spec: object): ManifestObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec });

/** The policy in x that churns: ingress only from namespace `from`. */
export const fromNs = (from: ChurnSource): ManifestObject =>
  knp('churn', 'x', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: from } } }] }] });

/** The scenario, its pods in `<net>.1.0/24` (x), `<net>.2.0/24` (y) and `<net>.3.0/24` (z). */
export function churnScenario(name: string, net: string): Scenario {
  return {
    name,
    namespaces: [ns('x'), ns('y'), ns('z')],
    pods: [pod('x', 'a', `${net}.1.10`, 'node-1'), pod('y', 'b', `${net}.2.10`, 'node-2'), pod('z', 'c', `${net}.3.10`, 'node-1'), pod('y', 'd', `${net}.2.11`, 'node-1')],
    policies: [knp('deny-all', 'z', { podSelector: {}, policyTypes: ['Ingress'] }), fromNs('y')],
    probes: [],
  };
}

const p = (from: string, to: string, expected: boolean, protocol: 'TCP' | 'UDP' = 'TCP'): Probe => ({ from, to, port: protocol === 'TCP' ? 80 : 53, protocol, expected });
/** Verdicts the churn never changes: into z (denied), into y (allowed). */
export const STABLE_PROBES: readonly Probe[] = [
  p('x/a', 'z/c', false), p('y/b', 'z/c', false, 'UDP'), p('y/d', 'z/c', false),
  p('x/a', 'y/b', true), p('z/c', 'y/b', true, 'UDP'), p('x/a', 'y/d', true), p('z/c', 'y/d', true),
];
/** The verdicts into x while it admits `from`. */
export const churnProbes = (from: ChurnSource): Probe[] => [p('y/b', 'x/a', from === 'y'), p('y/d', 'x/a', from === 'y', 'UDP'), p('z/c', 'x/a', from === 'z')];

/**
 * The source x admits as the API server stores it: a write the client saw fail (the server
 * went away after committing it) may still have landed, so the test's own record is only the
 * fallback.
 */
export async function storedChurnSource(cluster: E2eCluster, fallback: ChurnSource): Promise<ChurnSource> {
  const stored = (await cluster.admin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'networking.k8s.io', version: 'v1', namespace: 'x', plural: 'networkpolicies', name: 'churn' })) as {
    spec: { ingress: Array<{ from: Array<{ namespaceSelector: { matchLabels: { ns: ChurnSource } } }> }> };
  };
  return stored.spec.ingress[0]?.from[0]?.namespaceSelector.matchLabels.ns ?? fallback;
}
