import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import type { K8sEndpointSlice, K8sPod, K8sService } from '../api/index.ts';
import { deriveEndpointSlices, ENDPOINTSLICE_CONTROLLER, MAX_ENDPOINTS_PER_SLICE, withDerivedEndpointSlices } from './endpoint-slices.ts';
import { loadFromFiles } from './load-objects.ts';
import { applyStep, initialState, stateObjects, type Scenario } from './scenario-file.ts';

function pod(name: string, labels: Record<string, string>, ip: string | undefined, over: { ns?: string; ip6?: string; ports?: Array<{ name?: string; containerPort: number; protocol?: string }>; phase?: string; deleting?: boolean; sidecarPorts?: Array<{ name: string; containerPort: number }> } = {}): K8sPod {
  return {
    metadata: { name, namespace: over.ns ?? 'shop', labels, ...(over.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: {
      nodeName: 'node-1',
      containers: [{ ports: over.ports ?? [] }],
      ...(over.sidecarPorts === undefined ? {} : { initContainers: [{ restartPolicy: 'Always', ports: over.sidecarPorts }, { ports: over.sidecarPorts.map((p) => ({ ...p, containerPort: p.containerPort + 1 })) }] }),
    },
    status: {
      phase: over.phase ?? 'Running',
      ...(ip === undefined ? {} : { podIP: ip }),
      ...(ip !== undefined && over.ip6 !== undefined ? { podIPs: [{ ip }, { ip: over.ip6 }] } : {}),
    },
  };
}

function service(name: string, spec: K8sService['spec'], ns = 'shop'): K8sService {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec };
}

/** `<addressType> <port list> <addresses>` per slice: what the `services` match reads. */
function summary(slices: readonly K8sEndpointSlice[]): string[] {
  return slices.map((s) => {
    const ports = (s.ports ?? []).map((p) => `${p?.name ?? ''}:${p?.port ?? '-'}/${p?.protocol ?? ''}`).join(',');
    const addrs = (s.endpoints ?? []).flatMap((e) => e?.addresses ?? []).join(',');
    return `${s.metadata?.labels?.['kubernetes.io/service-name']} ${s.addressType} [${ports}] ${addrs}`;
  });
}

describe('deriveEndpointSlices: the EndpointSlice controller’s slices for a Service', () => {
  it('a Service without a selector, or with an empty one, gets none', () => {
    const pods = [pod('a', { app: 'web' }, '10.0.0.1')];
    expect(deriveEndpointSlices([service('ext', { ports: [{ port: 80 }] })], pods)).toEqual([]);
    expect(deriveEndpointSlices([service('ext', { selector: {}, ports: [{ port: 80 }] })], pods)).toEqual([]);
    expect(deriveEndpointSlices([service('ext', { selector: null, ports: [{ port: 80 }] })], pods)).toEqual([]);
  });

  it('selects pods of its namespace whose labels match, with an IP, not terminal; terminating ones stay, marked', () => {
    const pods = [
      pod('a', { app: 'web', tier: 'x' }, '10.0.0.1'),
      pod('other-label', { app: 'db' }, '10.0.0.2'),
      pod('other-ns', { app: 'web' }, '10.0.0.3', { ns: 'elsewhere' }),
      pod('no-ip', { app: 'web' }, undefined),
      pod('done', { app: 'web' }, '10.0.0.4', { phase: 'Succeeded' }),
      pod('failed', { app: 'web' }, '10.0.0.5', { phase: 'Failed' }),
      pod('going', { app: 'web' }, '10.0.0.6', { deleting: true }),
    ];
    const slices = deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] })], pods);
    expect(summary(slices)).toEqual(['web IPv4 [http:8080/TCP] 10.0.0.1,10.0.0.6']);
    const [s] = slices;
    expect(s?.metadata).toEqual({
      name: 'web-ipv4-0',
      namespace: 'shop',
      labels: { 'service.kubernetes.io/headless': '', 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': ENDPOINTSLICE_CONTROLLER },
    });
    expect(s?.endpoints?.map((e) => [e.targetRef?.name, e.conditions?.terminating, e.nodeName])).toEqual([
      ['a', false, 'node-1'],
      ['going', true, 'node-1'],
    ]);
  });

  it('targetPort defaults to port and protocol to TCP; a UDP port keeps its protocol', () => {
    const slices = deriveEndpointSlices([service('dns', { selector: { app: 'dns' }, clusterIP: '10.96.0.10', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53 }] })], [pod('a', { app: 'dns' }, '10.0.0.1')]);
    expect(summary(slices)).toEqual(['dns IPv4 [dns:53/UDP,dns-tcp:53/TCP] 10.0.0.1']);
    expect(slices[0]?.metadata?.labels?.['service.kubernetes.io/headless']).toBeUndefined();
  });

  it('a named targetPort is resolved per pod; pods whose port differs, or lack it, are in different slices', () => {
    const svc = service('web', { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'serve' }, { name: 'metrics', port: 9090, targetPort: 9090 }] });
    const pods = [
      pod('a', { app: 'web' }, '10.0.0.1', { ports: [{ name: 'serve', containerPort: 8080 }] }),
      pod('b', { app: 'web' }, '10.0.0.2', { ports: [{ name: 'serve', containerPort: 8081 }] }),
      pod('c', { app: 'web' }, '10.0.0.3', { ports: [{ name: 'serve', containerPort: 8080 }] }),
      // Same name, other protocol: not the Service port's (TCP) target.
      pod('d', { app: 'web' }, '10.0.0.4', { ports: [{ name: 'serve', containerPort: 8080, protocol: 'UDP' }] }),
    ];
    expect(summary(deriveEndpointSlices([svc], pods))).toEqual([
      'web IPv4 [http:8080/TCP,metrics:9090/TCP] 10.0.0.1,10.0.0.3',
      'web IPv4 [http:8081/TCP,metrics:9090/TCP] 10.0.0.2',
      'web IPv4 [metrics:9090/TCP] 10.0.0.4',
    ]);
    expect(deriveEndpointSlices([svc], pods).map((s) => s.metadata?.name)).toEqual(['web-ipv4-0', 'web-ipv4-1', 'web-ipv4-2']);
  });

  it('a named targetPort is found in a sidecar (init container with restartPolicy Always), not in a plain init container', () => {
    const svc = service('web', { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'proxy' }] });
    const pods = [pod('a', { app: 'web' }, '10.0.0.1', { sidecarPorts: [{ name: 'proxy', containerPort: 15001 }] })];
    expect(summary(deriveEndpointSlices([svc], pods))).toEqual(['web IPv4 [:15001/TCP] 10.0.0.1']);
  });

  it('address types: single-stack by default (IPv4), both families for a dual-stack policy, else ipFamilies or the clusterIP’s family', () => {
    const pods = [pod('dual', { app: 'web' }, '10.0.0.1', { ip6: 'FD00:0:0::1' }), pod('v4', { app: 'web' }, '10.0.0.2')];
    const ports = [{ port: 80 }];
    expect(summary(deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports })], pods))).toEqual(['web IPv4 [:80/TCP] 10.0.0.1,10.0.0.2']);
    expect(summary(deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports, ipFamilyPolicy: 'PreferDualStack' })], pods))).toEqual([
      'web IPv4 [:80/TCP] 10.0.0.1,10.0.0.2',
      'web IPv6 [:80/TCP] fd00::1',
    ]);
    expect(summary(deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports, ipFamilies: ['IPv6'] })], pods))).toEqual(['web IPv6 [:80/TCP] fd00::1']);
    expect(summary(deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports, clusterIP: 'fd00:96::10' })], pods))).toEqual(['web IPv6 [:80/TCP] fd00::1']);
  });

  it('an address type with no endpoint gets one placeholder slice (no ports, no endpoints)', () => {
    const slices = deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports: [{ port: 80 }], ipFamilies: ['IPv4', 'IPv6'] })], [pod('v4', { app: 'web' }, '10.0.0.2')]);
    expect(summary(slices)).toEqual(['web IPv4 [:80/TCP] 10.0.0.2', 'web IPv6 [] ']);
    expect(summary(deriveEndpointSlices([service('web', { selector: { app: 'nothing' }, ports: [{ port: 80 }] })], [pod('v4', { app: 'web' }, '10.0.0.2')]))).toEqual(['web IPv4 [] ']);
  });

  it(`a slice holds at most ${MAX_ENDPOINTS_PER_SLICE} endpoints`, () => {
    const pods = Array.from({ length: 2 * MAX_ENDPOINTS_PER_SLICE + 1 }, (_, i) => pod(`p${i}`, { app: 'web' }, `10.1.${i >> 8}.${i & 255}`));
    const slices = deriveEndpointSlices([service('web', { selector: { app: 'web' }, ports: [{ port: 80 }] })], pods);
    expect(slices.map((s) => s.endpoints?.length)).toEqual([MAX_ENDPOINTS_PER_SLICE, MAX_ENDPOINTS_PER_SLICE, 1]);
    expect(new Set(slices.map((s) => s.metadata?.name)).size).toBe(3);
  });

  it('withDerivedEndpointSlices: slices given for a Service stand; only Services without any are derived', () => {
    const given: K8sEndpointSlice = { metadata: { name: 'web-abcde', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } }, addressType: 'IPv4', endpoints: [{ addresses: ['10.9.9.9'] }], ports: [{ port: 1 }] };
    const pods = [pod('a', { app: 'web' }, '10.0.0.1')];
    const out = withDerivedEndpointSlices([service('web', { selector: { app: 'web' }, ports: [{ port: 80 }] }), service('web', { selector: { app: 'web' }, ports: [{ port: 80 }] }, 'other'), service('api', { selector: { app: 'web' }, ports: [{ port: 81 }] })], pods, [given]);
    expect(out.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual(['shop/web-abcde', 'other/web-ipv4-0', 'shop/api-ipv4-0']);
  });
});

describe('Services reach the simulated cluster objects', () => {
  const scenario: Scenario = {
    name: 'svc',
    namespaces: [{ name: 'shop' }],
    pods: [
      { namespace: 'shop', name: 'a', labels: { app: 'web' }, ip: '10.65.0.1', containerPorts: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] },
      { namespace: 'shop', name: 'b', labels: { app: 'other' }, ip: '10.65.0.2', containerPorts: [{ name: 'http', containerPort: 8081, protocol: 'TCP' }] },
    ],
    policies: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] } }],
    probes: [],
  };

  it('a scenario’s Service is applied, not skipped: its slices follow the pods’ labels step by step', () => {
    const notes: string[] = [];
    const state = initialState(scenario);
    expect(summary(stateObjects(state, notes).endpointSlices ?? [])).toEqual(['web IPv4 [:8080/TCP] 10.65.0.1']);
    expect(notes).toEqual([]);
    applyStep(state, { podLabels: [{ namespace: 'shop', name: 'a', labels: { app: 'gone' } }] });
    expect(summary(stateObjects(state, notes).endpointSlices ?? [])).toEqual(['web IPv4 [] ']);
    applyStep(state, { podLabels: [{ namespace: 'shop', name: 'b', labels: { app: 'web' } }] });
    expect(summary(stateObjects(state, notes).endpointSlices ?? [])).toEqual(['web IPv4 [:8081/TCP] 10.65.0.2']);
    expect(notes).toEqual([]);
  });

  it('from files: a v1 Service is read and its slices derived', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-svc-'));
    try {
      const file = path.join(dir, 'objs.json');
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
            { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'shop', labels: { app: 'web' } }, spec: { nodeName: 'n1', containers: [{ ports: [{ name: 'http', containerPort: 8080 }] }] }, status: { phase: 'Running', podIP: '10.65.0.1' } },
            { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] } },
            { apiVersion: 'v1', kind: 'Service', metadata: { name: 'external', namespace: 'shop' }, spec: { ports: [{ port: 81 }] } },
          ],
        }),
      );
      const notes: string[] = [];
      const objs = await loadFromFiles([file], notes);
      expect(notes.filter((n) => n.includes('Service'))).toEqual([]);
      expect(objs.services?.map((s) => s.metadata?.name)).toEqual(['web', 'external']);
      expect(summary(objs.endpointSlices ?? [])).toEqual(['web IPv4 [:8080/TCP] 10.65.0.1']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
