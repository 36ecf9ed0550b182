import { describe, expect, it } from 'vitest';

import { namespaceToProfile, profileSource, serviceAccountProfileName, serviceAccountToProfile } from './profile-builder.ts';
import { podIsFinished, podToWorkloadEndpoint, workloadEndpointName, workloadInterfaceName } from './workload-endpoint-builder.ts';
import { defaultTiers } from './default-tiers.ts';
import { projectPod } from './pod-projection.ts';
import { validateResource, type K8sPod } from '../api/index.ts';

describe('profiles (calico-semantics §2.2)', () => {
  it('Namespace → kns.<ns>: allow-all rules, pcns.* labels plus pcns.projectcalico.org/name', () => {
    expect(namespaceToProfile({ metadata: { name: 'shop', labels: { team: 'web', 'kubernetes.io/metadata.name': 'shop' } } })).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.shop' },
      spec: {
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
        labelsToApply: {
          'pcns.team': 'web',
          'pcns.kubernetes.io/metadata.name': 'shop',
          'pcns.projectcalico.org/name': 'shop',
        },
      },
    });
  });

  it('ServiceAccount → ksa.<ns>.<sa>: pcsa.* labels, no rules', () => {
    expect(serviceAccountToProfile({ metadata: { name: 'api', namespace: 'shop', labels: { tier: 'b' } } })).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'ksa.shop.api' },
      spec: { labelsToApply: { 'pcsa.tier': 'b', 'pcsa.projectcalico.org/name': 'api' } },
    });
    expect(serviceAccountProfileName('', 'x')).toBe('ksa.default.x');
  });

  it("the name labels are the object's name, over a label of the same key the Namespace or ServiceAccount carries", () => {
    expect(namespaceToProfile({ metadata: { name: 'shop', labels: { 'projectcalico.org/name': 'kube-system' } } }).spec.labelsToApply).toEqual({
      'pcns.projectcalico.org/name': 'shop',
    });
    expect(serviceAccountToProfile({ metadata: { name: 'default', namespace: 'shop', labels: { 'projectcalico.org/name': 'admin' } } }).spec.labelsToApply).toEqual({
      'pcsa.projectcalico.org/name': 'default',
    });
  });

  it('a 70-character ServiceAccount name (Kubernetes allows 253): the ksa. profile keeps it, as Calico does, and is a valid object (issue 27 item 15)', () => {
    const sa = `sa-${'l'.repeat(67)}`;
    const profile = serviceAccountToProfile({ metadata: { name: sa, namespace: 'shop' } });
    expect(profile.spec.labelsToApply).toEqual({ 'pcsa.projectcalico.org/name': sa });
    expect(validateResource(profile)).toEqual([]);
  });

  it('profileSource inverts the names (SA names may contain dots; namespaces cannot)', () => {
    expect(profileSource('kns.shop')).toEqual({ kind: 'namespace', name: 'shop' });
    expect(profileSource('ksa.shop.api.v2')).toEqual({ kind: 'serviceaccount', namespace: 'shop', name: 'api.v2' });
    expect(profileSource('other')).toBeUndefined();
    expect(profileSource('ksa.nodot')).toBeUndefined();
  });
});

const POD: K8sPod = {
  metadata: { name: 'api-0', namespace: 'shop', labels: { app: 'api', 'projectcalico.org/namespace': 'spoofed' } },
  spec: {
    nodeName: 'node-1',
    serviceAccountName: 'api',
    containers: [
      {
        ports: [
          { name: 'http', containerPort: 8080 },
          { name: 'dns', containerPort: 53, protocol: 'UDP' },
          { containerPort: 9000 }, // no name, no hostPort: skipped
          { containerPort: 9001, hostPort: 30001, protocol: 'SCTP' },
        ],
      },
    ],
    initContainers: [{ ports: [{ name: 'init', containerPort: 7000, protocol: 'TCP' }] }],
  },
  status: { phase: 'Running', podIPs: [{ ip: '10.0.0.5' }, { ip: 'fd00::5' }] },
};

describe('Pod → WorkloadEndpoint (calico-semantics §2.1)', () => {
  it('builds the endpoint Calico would', () => {
    expect(podToWorkloadEndpoint(POD)).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: {
        name: 'node--1-k8s-api--0-eth0',
        namespace: 'shop',
        labels: {
          app: 'api',
          'projectcalico.org/namespace': 'shop',
          'projectcalico.org/orchestrator': 'k8s',
          'projectcalico.org/serviceaccount': 'api',
        },
      },
      spec: {
        orchestrator: 'k8s',
        node: 'node-1',
        pod: 'api-0',
        endpoint: 'eth0',
        serviceAccountName: 'api',
        ipNetworks: ['10.0.0.5/32', 'fd00::5/128'],
        profiles: ['kns.shop', 'ksa.shop.api'],
        interfaceName: workloadInterfaceName('shop', 'api-0'),
        ports: [
          { name: 'http', protocol: 'TCP', port: 8080 },
          { name: 'dns', protocol: 'UDP', port: 53 },
          { protocol: 'SCTP', port: 9001, hostPort: 30001 },
          { name: 'init', protocol: 'TCP', port: 7000 },
        ],
      },
    });
  });

  it('the projected pod the controllers cache builds the same endpoint, and keeps nothing else', () => {
    const full = {
      ...POD,
      metadata: { ...POD.metadata, annotations: { big: 'x'.repeat(1000) }, managedFields: [] },
      spec: { ...POD.spec, volumes: [{ name: 'v' }], containers: [{ ...POD.spec?.containers?.[0], image: 'img', env: [{ name: 'A', value: 'b' }] }] },
      status: { ...POD.status, conditions: [{ type: 'Ready', status: 'True' }], hostIP: '192.168.0.1' },
    } as unknown as K8sPod;
    const projected = projectPod(full as never);
    expect(podToWorkloadEndpoint(projected)).toEqual(podToWorkloadEndpoint(full));
    expect(JSON.stringify(projected)).not.toMatch(/big|volumes|image|env|conditions|hostIP/);
    for (const phase of ['Succeeded', 'Failed']) {
      expect(podToWorkloadEndpoint(projectPod({ ...full, status: { ...full.status, phase } } as never))).toBeUndefined();
    }
    const terminating = projectPod({ ...full, metadata: { ...full.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } } as never);
    expect(podToWorkloadEndpoint(terminating)).toEqual(podToWorkloadEndpoint(full));
    expect(podToWorkloadEndpoint(projectPod({ ...full, spec: { ...full.spec, hostNetwork: true } } as never))).toBeUndefined();
  });

  it('names: dashes inside a part are doubled', () => {
    expect(workloadEndpointName('kind-worker', 'web-7d9f')).toBe('kind--worker-k8s-web--7d9f-eth0');
  });

  it('interface name: cali + first 11 hex of SHA-1("<ns>.<pod>")', () => {
    // `printf default.nginx | sha1sum` = c440f455693b69cd…
    expect(workloadInterfaceName('default', 'nginx')).toBe('calic440f455693');
  });

  it('no SA: no serviceaccount label, one profile', () => {
    const wep = podToWorkloadEndpoint({ ...POD, spec: { ...POD.spec, serviceAccountName: '' } });
    expect(wep?.spec.profiles).toEqual(['kns.shop']);
    expect(wep?.metadata.labels?.['projectcalico.org/serviceaccount']).toBeUndefined();
  });

  it('a pod cannot relabel its namespace, orchestrator or service account; the endpoint is valid with a 70-character SA', () => {
    const labels = { app: 'api', 'projectcalico.org/namespace': 'kube-system', 'projectcalico.org/orchestrator': 'other', 'projectcalico.org/serviceaccount': 'admin' };
    const wep = podToWorkloadEndpoint({ ...POD, metadata: { ...POD.metadata, labels } });
    expect(wep?.metadata.labels).toEqual({ app: 'api', 'projectcalico.org/namespace': 'shop', 'projectcalico.org/orchestrator': 'k8s', 'projectcalico.org/serviceaccount': 'api' });
    const sa = `sa-${'l'.repeat(67)}`;
    const long = podToWorkloadEndpoint({ ...POD, spec: { ...POD.spec, serviceAccountName: sa } });
    expect(long === undefined ? ['no endpoint'] : validateResource(long)).toEqual([]);
  });

  it('a 63-character SA name is not a label (Calico keeps only names shorter than 63)', () => {
    const sa = 'a'.repeat(63);
    const wep = podToWorkloadEndpoint({ ...POD, spec: { ...POD.spec, serviceAccountName: sa } });
    expect(wep?.metadata.labels?.['projectcalico.org/serviceaccount']).toBeUndefined();
    expect(wep?.spec.profiles).toEqual(['kns.shop', `ksa.shop.${sa}`]);
  });

  it('falls back to status.podIP', () => {
    expect(podToWorkloadEndpoint({ ...POD, status: { podIP: '10.0.0.9' } })?.spec.ipNetworks).toEqual(['10.0.0.9/32']);
  });

  it.each([
    ['finished (Succeeded)', { ...POD, status: { ...POD.status, phase: 'Succeeded' } }],
    ['finished (Failed)', { ...POD, status: { ...POD.status, phase: 'Failed' } }],
    ['without IPs', { ...POD, status: { phase: 'Pending' } }],
    ['unscheduled', { ...POD, spec: { ...POD.spec, nodeName: '' } }],
    ['host-networked', { ...POD, spec: { ...POD.spec, hostNetwork: true } }],
  ] as Array<[string, K8sPod]>)('no endpoint for a pod %s', (_, pod) => {
    expect(podToWorkloadEndpoint(pod)).toBeUndefined();
  });
});

describe('graceful termination (Calico IsFinished, without Calico CNI annotations)', () => {
  const deleting = (pod: K8sPod): K8sPod => ({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });

  it('a pod being deleted keeps exactly the endpoint it had while running (established connections keep their policy)', () => {
    expect(podIsFinished(deleting(POD))).toBe(false);
    expect(podToWorkloadEndpoint(deleting(POD))).toEqual(podToWorkloadEndpoint(POD));
  });

  it.each(['Succeeded', 'Failed', 'Completed'])('a pod being deleted loses its endpoint once its phase is %s', (phase) => {
    const pod = deleting({ ...POD, status: { ...POD.status, phase } });
    expect(podIsFinished(pod)).toBe(true);
    expect(podToWorkloadEndpoint(pod)).toBeUndefined();
  });

  it('a pod being deleted whose IPs are gone from status has no endpoint', () => {
    expect(podToWorkloadEndpoint(deleting({ ...POD, status: { phase: 'Running' } }))).toBeUndefined();
  });

  it('Running, Pending and an unset phase are not finished', () => {
    const { phase: _unset, ...noPhase } = POD.status ?? {};
    for (const status of [{ ...noPhase, phase: 'Running' }, { ...noPhase, phase: 'Pending' }, noPhase]) {
      expect(podIsFinished({ ...POD, status })).toBe(false);
    }
  });

  it("Calico CNI's emptied podIP annotation is not a signal here: no CNI but Calico's writes it, and the endpoint follows status", () => {
    const annotated = { ...deleting(POD), metadata: { ...deleting(POD).metadata, annotations: { 'cni.projectcalico.org/podIP': '' } } } as K8sPod;
    expect(podToWorkloadEndpoint(annotated)).toEqual(podToWorkloadEndpoint(POD));
  });
});

describe('default tiers', () => {
  it('kube-admin 1000 Pass, default 1000000 Deny, kube-baseline 10000000 Pass', () => {
    expect(defaultTiers().map((t) => [t.metadata.name, t.spec.order, t.spec.defaultAction])).toEqual([
      ['kube-admin', 1_000, 'Pass'],
      ['default', 1_000_000, 'Deny'],
      ['kube-baseline', 10_000_000, 'Pass'],
    ]);
  });
});

describe('Pod → WorkloadEndpoint: interface naming', () => {
  it("'calico' (the builder's default) names Calico's host veth; 'none' names no interface, everything else equal", () => {
    const calico = podToWorkloadEndpoint(POD, { interfaceNaming: 'calico' });
    expect(podToWorkloadEndpoint(POD)).toEqual(calico);
    expect(calico?.spec.interfaceName).toBe(workloadInterfaceName('shop', 'api-0'));
    const none = podToWorkloadEndpoint(POD, { interfaceNaming: 'none' });
    expect(none?.spec).not.toHaveProperty('interfaceName');
    const { interfaceName: _dropped, ...rest } = calico!.spec;
    expect(none).toEqual({ ...calico, spec: rest });
  });
});
