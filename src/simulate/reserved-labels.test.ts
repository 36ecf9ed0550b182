/**
 * Issue 27 (items 3, 6, 15) through the simulator: translateCluster → calc graph → verdict
 * engine, on the audit's inputs. A pod that labels itself with another identity gets no more
 * than the identity it has; a GlobalNetworkPolicy's `serviceAccountSelector: all()` selects
 * only endpoints with a service account; a ServiceAccount name Kubernetes accepts (70
 * characters) neither aborts the simulation nor loses its labels.
 */
import { describe, expect, it } from 'vitest';
import type { K8sPod, V3Resource } from '../api/index.ts';
import { translateCluster, type ClusterObjects } from './cluster-objects.ts';
import { Simulation } from './simulation.ts';

const LONG_SA = `sa-${'l'.repeat(67)}`;

function pod(namespace: string, name: string, ip: string, serviceAccountName: string, labels: Record<string, string> = {}): K8sPod {
  return {
    metadata: { name, namespace, labels: { pod: name, ...labels } },
    spec: { nodeName: 'node-1', serviceAccountName, containers: [{ ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }] },
    status: { phase: 'Running', podIP: ip },
  };
}

const PODS: K8sPod[] = [
  pod('x', 'target', '10.66.1.1', 'default'),
  pod('x', 'admin', '10.66.1.2', 'admin'),
  pod('x', 'spoof-sa', '10.66.1.3', 'default', { 'pcsa.projectcalico.org/name': 'admin', 'projectcalico.org/serviceaccount': 'admin' }),
  pod('x', 'spoof-ns', '10.66.1.4', 'default', { 'projectcalico.org/namespace': 'y', 'pcns.projectcalico.org/name': 'y', 'pcns.team': 'ops' }),
  pod('x', 'spoof-orch', '10.66.1.5', 'default', { 'projectcalico.org/orchestrator': 'other' }),
  pod('x', 'long', '10.66.1.6', LONG_SA),
  pod('y', 'real-y', '10.66.2.1', 'default'),
];

/** x/target admits: account admin (0), namespace team=ops (1), pods of orchestrator k8s labelled pod=spoof-orch (2). */
const TARGET_POLICY: V3Resource = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'target', namespace: 'x' },
  spec: {
    selector: "pod == 'target'",
    types: ['Ingress'],
    ingress: [
      { action: 'Allow', source: { serviceAccounts: { names: ['admin'] } } },
      { action: 'Allow', source: { namespaceSelector: "team == 'ops'" } },
      { action: 'Allow', source: { selector: "projectcalico.org/orchestrator == 'k8s' && pod == 'spoof-orch'" } },
    ],
  },
};

function objects(calico: V3Resource[], pods: K8sPod[] = PODS): ClusterObjects {
  return {
    namespaces: [{ metadata: { name: 'x' } }, { metadata: { name: 'y', labels: { team: 'ops' } } }],
    serviceAccounts: [{ metadata: { name: 'admin', namespace: 'x' } }],
    pods,
    networkPolicies: [],
    calico,
  };
}

function allowed(sim: Simulation, from: string, to: string): boolean {
  const f = sim.endpointFor(from);
  const t = sim.endpointFor(to);
  if (f === undefined || t === undefined) throw new Error(`no endpoint ${from} or ${to}`);
  return sim.verdict(f, t, 'TCP', 8080).allowed;
}

describe('simulate: reserved labels (issue 27)', () => {
  it('a pod with SA default labelled pcsa.projectcalico.org/name (or projectcalico.org/serviceaccount): admin does not pass serviceAccounts.names [admin]', () => {
    const sim = new Simulation(translateCluster(objects([TARGET_POLICY])).resources);
    expect(allowed(sim, 'x/admin', 'x/target')).toBe(true);
    expect(allowed(sim, 'x/spoof-sa', 'x/target')).toBe(false);
  });

  it('a pod labelled projectcalico.org/namespace: y (and pcns.*) is still in x for namespaceSelector; the orchestrator label is k8s whatever the pod says', () => {
    const sim = new Simulation(translateCluster(objects([TARGET_POLICY])).resources);
    expect(allowed(sim, 'y/real-y', 'x/target')).toBe(true);
    expect(allowed(sim, 'x/spoof-ns', 'x/target')).toBe(false);
    expect(allowed(sim, 'x/spoof-orch', 'x/target')).toBe(true);
  });

  it('GlobalNetworkPolicy serviceAccountSelector all() selects pods (all have an account) but not an endpoint without one', () => {
    // tier first (order 1): allow everything to endpoints with a service account; then the default tier denies.
    const first: V3Resource = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'first' }, spec: { order: 1, defaultAction: 'Pass' } };
    const allowSa: V3Resource = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'first.sa-all' },
      spec: { tier: 'first', selector: 'all()', serviceAccountSelector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow' }] },
    };
    const denyRest: V3Resource = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'deny-rest' },
      spec: { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny' }] },
    };
    // A workload endpoint that no pod made: no service account.
    const vm: V3Resource = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node--1-k8s-vm-eth0', namespace: 'x', labels: { pod: 'vm' } },
      spec: { orchestrator: 'k8s', node: 'node-1', pod: 'vm', endpoint: 'eth0', ipNetworks: ['10.66.1.9/32'], profiles: ['kns.x'], interfaceName: 'calivm0000001' },
    };
    const sim = new Simulation(translateCluster(objects([first, allowSa, denyRest, vm])).resources);
    expect(allowed(sim, 'x/admin', 'x/target')).toBe(true);
    expect(allowed(sim, 'x/admin', 'x/long')).toBe(true);
    expect(allowed(sim, 'x/admin', 'x/vm')).toBe(false);
  });

  it('a 70-character ServiceAccount: translated without an error, its ksa. profile keeps pcsa.projectcalico.org/name, and names/selectors on it match', () => {
    const t = translateCluster(objects([], PODS));
    const profile = t.resources.get(`Profile//ksa.x.${LONG_SA}`);
    expect(profile?.kind === 'Profile' ? profile.spec.labelsToApply : undefined).toEqual({ 'pcsa.projectcalico.org/name': LONG_SA });
    const wep = [...t.resources.values()].find((r) => r.kind === 'WorkloadEndpoint' && r.spec.pod === 'long');
    // The stored endpoint omits the label (not a valid label value), as Calico's conversion does.
    expect(wep?.metadata.labels?.['projectcalico.org/serviceaccount']).toBeUndefined();
    const byName: V3Resource = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'long', namespace: 'x' },
      spec: {
        selector: "pod == 'target'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', source: { serviceAccounts: { names: [LONG_SA] } } }, { action: 'Deny' }],
      },
    };
    const bySelector: V3Resource = { ...byName, spec: { ...byName.spec, ingress: [{ action: 'Allow', source: { serviceAccounts: { selector: `projectcalico.org/name == '${LONG_SA}'` } } }] } };
    for (const policy of [byName, bySelector]) {
      const sim = new Simulation(translateCluster(objects([policy])).resources);
      expect(allowed(sim, 'x/long', 'x/target')).toBe(true);
      expect(allowed(sim, 'x/admin', 'x/target')).toBe(false);
    }
  });
});
