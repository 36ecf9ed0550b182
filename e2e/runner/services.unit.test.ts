import { describe, expect, it } from 'vitest';

import { kubeConfigFor } from '../controlplane/kubeconfig.ts';
import { ScenarioRun } from './run-scenario.ts';
import type { ScenarioCluster } from './scenario-cluster.ts';
import { isService, sliceMembers } from './services.ts';

/** A cluster whose API server is a closed loopback port: every request fails at once. */
function unreachableCluster(): ScenarioCluster {
  return {
    admin: kubeConfigFor({ server: 'https://127.0.0.1:1', token: 't', user: 'u' }),
    hasNamespaceController: false,
    ensureNodes: () => Promise.resolve(),
    startPod: () => Promise.reject(new Error('not used')),
    stopPod: () => Promise.resolve(),
    startNode: () => Promise.reject(new Error('not used')),
    stopNode: () => Promise.resolve(),
    reportedNodeAddress: () => undefined,
    ensureClusterNetworkPolicyCrd: () => Promise.reject(new Error('not used')),
    clusterNodeName: (n) => n,
    agentsIdle: () => Promise.resolve(),
  };
}

const scenario = { name: 's', namespaces: [{ name: 'x' }], pods: [] };

describe('scenario Services in the runner', () => {
  it('isService: only core/v1 Service', () => {
    expect(isService({ apiVersion: 'v1', kind: 'Service' })).toBe(true);
    expect(isService({ apiVersion: 'v1', kind: 'ConfigMap' })).toBe(false);
    expect(isService({ apiVersion: 'projectcalico.org/v3', kind: 'Service' })).toBe(false);
  });

  it('sliceMembers: one `addressType address protocol:port` per address and port, a slice without ports as `-`, duplicates once', () => {
    expect(
      sliceMembers([
        { addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.2'] }, { addresses: ['10.0.0.1'] }], ports: [{ port: 80, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }] },
        { addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'] }], ports: [{ port: 80 }] },
        { addressType: 'IPv6', endpoints: [{ addresses: ['fd00::1'] }], ports: [] },
        { addressType: 'IPv4', endpoints: [], ports: [] },
      ]),
    ).toEqual(['IPv4 10.0.0.1 TCP:80', 'IPv4 10.0.0.1 UDP:53', 'IPv4 10.0.0.2 TCP:80', 'IPv4 10.0.0.2 UDP:53', 'IPv6 fd00::1 -']);
  });

  it('a core/v1 kind other than Service is refused, naming the object, before any request', async () => {
    const run = new ScenarioRun(unreachableCluster(), scenario);
    await expect(run.upsert({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'x' } })).rejects.toThrow('cannot apply v1 ConfigMap x/cfg: the runner applies no core/v1 kind but Service');
  });

  it('a Service that cannot be applied fails naming it', async () => {
    const run = new ScenarioRun(unreachableCluster(), scenario);
    await expect(run.upsert({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'x' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } })).rejects.toThrow(/^cannot apply v1 Service x\/web: /);
  });
});
