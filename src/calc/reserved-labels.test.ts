/**
 * Issue 27 (item 3): the labels that say which namespace an endpoint is in, which service
 * account runs it and which orchestrator made it are the processor's, never the pod's. Each
 * case is a pod that labels itself with another identity; the IP sets a policy's rules read
 * must hold only the pods that really have it (libcalico-go's WorkloadEndpoint update
 * processor and clientv3 stamping, calico-semantics §2.1, §2.3).
 */
import { describe, expect, it } from 'vitest';
import type { K8sPod, Rule, V3Resource } from '../api/index.ts';
import { namespaceToProfile, podToWorkloadEndpoint, serviceAccountToProfile } from '../convert/index.ts';
import { CalcGraph } from './index.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { pk, REMOTE_NODE } from '../../test/calc/fixtures.ts';

function pod(namespace: string, name: string, ip: string, serviceAccountName: string, labels: Record<string, string> = {}, node = REMOTE_NODE): K8sPod {
  return { metadata: { name, namespace, labels: { pod: name, ...labels } }, spec: { nodeName: node, serviceAccountName }, status: { phase: 'Running', podIP: ip } };
}

function endpointOf(p: K8sPod): V3Resource {
  const wep = podToWorkloadEndpoint(p);
  if (wep === undefined) throw new Error('no endpoint');
  return wep;
}

/** Namespaces x (no labels) and y (team=ops), their accounts, and the pods of the audit. */
const CLUSTER: V3Resource[] = [
  namespaceToProfile({ metadata: { name: 'x', labels: {} } }),
  namespaceToProfile({ metadata: { name: 'y', labels: { team: 'ops' } } }),
  serviceAccountToProfile({ metadata: { name: 'default', namespace: 'x' } }),
  serviceAccountToProfile({ metadata: { name: 'admin', namespace: 'x', labels: { role: 'admin' } } }),
  serviceAccountToProfile({ metadata: { name: 'default', namespace: 'y' } }),
  endpointOf(pod('x', 'target', '10.0.0.1', 'default', {}, LOCAL_NODE)),
  endpointOf(pod('x', 'admin', '10.0.0.2', 'admin')),
  // SA default, claiming admin through the profile label, the endpoint label and the SA's labels.
  endpointOf(pod('x', 'spoof-sa', '10.0.0.3', 'default', { 'pcsa.projectcalico.org/name': 'admin', 'projectcalico.org/serviceaccount': 'admin', 'pcsa.role': 'admin' })),
  // In x, claiming namespace y through the endpoint label and the namespace profile labels.
  endpointOf(pod('x', 'spoof-ns', '10.0.0.4', 'default', { 'projectcalico.org/namespace': 'y', 'pcns.projectcalico.org/name': 'y', 'pcns.team': 'ops' })),
  endpointOf(pod('y', 'real-y', '10.0.0.5', 'default')),
];

function membersOfRules(ingress: Rule[], extra: V3Resource[] = []): string[][] {
  const graph = new CalcGraph({ nodeName: LOCAL_NODE });
  const dp = new MockDataplane();
  const policy: V3Resource = { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'x' }, spec: { selector: "pod == 'target'", types: ['Ingress'], ingress } };
  graph.onUpdates([...CLUSTER, ...extra, policy].map((resource) => ({ op: 'upsert' as const, resource })));
  graph.onStatusUpdated('in-sync');
  dp.graphInSync = true;
  dp.apply(graph.flush());
  const p = dp.policies.get(pk('p', { namespace: 'x' }))?.policy;
  if (p === undefined) throw new Error('policy not active');
  return p.inboundRules.map((r) => [...(r.srcIpSetIds ?? [])].flatMap((id) => [...(dp.ipSets.get(id)?.members ?? [])]).sort());
}

describe('reserved endpoint labels cannot be claimed by a pod', () => {
  it('serviceAccounts.names [admin]: only the pod running as admin, not one labelled pcsa.projectcalico.org/name or projectcalico.org/serviceaccount: admin', () => {
    expect(membersOfRules([{ action: 'Allow', source: { serviceAccounts: { names: ['admin'] } } }])).toEqual([['10.0.0.2/32']]);
  });

  it('serviceAccounts.selector on the account name or its labels: only the admin pod', () => {
    const rules: Rule[] = [
      { action: 'Allow', source: { serviceAccounts: { selector: "projectcalico.org/name == 'admin'" } } },
      { action: 'Allow', source: { serviceAccounts: { selector: "role == 'admin'" } } },
    ];
    expect(membersOfRules(rules)).toEqual([['10.0.0.2/32'], ['10.0.0.2/32']]);
  });

  it('namespaceSelector on the namespace name or its labels, and the namespace label itself: only the pod really in y', () => {
    const rules: Rule[] = [
      { action: 'Allow', source: { namespaceSelector: "projectcalico.org/name == 'y'", selector: 'all()' } },
      { action: 'Allow', source: { namespaceSelector: "team == 'ops'", selector: 'all()' } },
      { action: 'Allow', source: { namespaceSelector: 'all()', selector: "projectcalico.org/namespace == 'y'" } },
    ];
    expect(membersOfRules(rules)).toEqual([['10.0.0.5/32'], ['10.0.0.5/32'], ['10.0.0.5/32']]);
  });

  it('projectcalico.org/orchestrator: an endpoint with another orchestrator cannot label itself k8s (clientv3 stamps spec.orchestrator, empty included)', () => {
    const direct = (name: string, ip: string, orchestrator: string | undefined): V3Resource => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name, namespace: 'x', labels: { 'projectcalico.org/orchestrator': 'k8s', kind: 'direct' } },
      spec: { node: REMOTE_NODE, ...(orchestrator === undefined ? {} : { orchestrator }), endpoint: 'eth0', interfaceName: `cali${name}`, ipNetworks: [`${ip}/32`], profiles: ['kns.x'] },
    });
    const rules: Rule[] = [{ action: 'Allow', source: { selector: "projectcalico.org/orchestrator == 'k8s' && kind == 'direct'" } }];
    expect(membersOfRules(rules, [direct('none', '10.0.0.6', undefined), direct('cni', '10.0.0.7', 'cni'), direct('kube', '10.0.0.8', 'k8s')])).toEqual([['10.0.0.8/32']]);
  });

  it('a service account name of 63 characters or more: projectcalico.org/serviceaccount still comes from spec.serviceAccountName (the stored endpoint omits it)', () => {
    const long = `sa-${'l'.repeat(67)}`;
    const p = pod('x', 'long', '10.0.0.9', long, { 'projectcalico.org/serviceaccount': 'admin' });
    const wep = endpointOf(p) as Extract<V3Resource, { kind: 'WorkloadEndpoint' }>;
    expect(wep.metadata.labels?.['projectcalico.org/serviceaccount']).toBe('admin');
    const profileOfLong = serviceAccountToProfile({ metadata: { name: long, namespace: 'x' } });
    const rules: Rule[] = [
      { action: 'Allow', source: { serviceAccounts: { names: ['admin'] } } },
      { action: 'Allow', source: { serviceAccounts: { names: [long] } } },
      { action: 'Allow', source: { serviceAccounts: { selector: `projectcalico.org/name == '${long}'` } } },
    ];
    expect(membersOfRules(rules, [profileOfLong, wep])).toEqual([['10.0.0.2/32'], ['10.0.0.9/32'], ['10.0.0.9/32']]);
  });
});
