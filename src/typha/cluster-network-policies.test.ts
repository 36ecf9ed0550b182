/**
 * ClusterNetworkPolicies and Nodes through `tessera typha` (issue 30): Typha watches both (the
 * kind table's rows), carries them unchanged — a CNP of either served version, deletes with
 * their apiVersion back — and an agent's calc graph behind it enforces the CNP in kube-admin,
 * its egress `nodes` peer following the Nodes; a Node heartbeat (status conditions only) is
 * not fanned out (the informers deliver Nodes projected to name, labels and addresses).
 */
import { afterEach, describe, expect, it } from 'vitest';

import { kindRow, resourceName } from '../api/kinds.ts';
import { CalcGraph } from '../calc/calc-graph.ts';
import type { KubeObject } from '../informers/index.ts';
import type { DataplaneMessage, Policy } from '../proto/index.ts';
import { FakeClock } from '../runtime/clock.ts';
import { AGENT_RESOURCES, InformerSyncer, TYPHA_RESOURCES } from '../syncer/index.ts';
import type { AnyUpdate } from '../syncer/update.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { waitFor } from '../../test/typha/wire-harness.ts';
import { decodeUpdate, serializeUpdate, wouldBeNoOp } from './serialized-update.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import { SyncClient } from './sync-client.ts';
import { SyncServer } from './sync-server.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const CNP_RESOURCE = 'clusternetworkpolicies.policy.networking.k8s.io';
const cnp = {
  metadata: { name: 'no-workers', resourceVersion: '3' },
  spec: { tier: 'Admin', priority: 5, subject: { namespaces: {} }, egress: [{ name: 'kubelets', action: 'Deny', to: [{ nodes: { matchLabels: { role: 'worker' } } }] }] },
};
const worker = (rv: string, address: string, extra: Record<string, unknown> = {}): KubeObject =>
  ({ metadata: { name: 'w1', resourceVersion: rv, labels: { role: 'worker' } }, status: { addresses: [{ type: 'InternalIP', address }, { type: 'Hostname', address: 'w1' }], ...extra } }) as KubeObject;

describe('ClusterNetworkPolicies and Nodes through Typha', () => {
  it('Typha and the agent (without Typha) watch ClusterNetworkPolicies and Nodes (rows of the kind table)', () => {
    expect(TYPHA_RESOURCES.map(resourceName)).toEqual(expect.arrayContaining([CNP_RESOURCE, 'nodes']));
    expect(AGENT_RESOURCES.map(resourceName)).toEqual(expect.arrayContaining([CNP_RESOURCE, 'nodes']));
  });

  it('updates round-trip unchanged; deletes get their apiVersion back', () => {
    for (const apiVersion of ['policy.networking.k8s.io/v1beta1', 'policy.networking.k8s.io/v1alpha2']) {
      const up = { op: 'upsert', resource: { apiVersion, kind: 'ClusterNetworkPolicy', ...cnp } } as AnyUpdate;
      expect(decodeUpdate(serializeUpdate(up))).toEqual(up);
    }
    const del = { op: 'delete', apiVersion: 'policy.networking.k8s.io/v1beta1', kind: 'ClusterNetworkPolicy', name: 'no-workers' } as const;
    expect(decodeUpdate(serializeUpdate(del))).toEqual(del);
    const nodeDel = { op: 'delete', apiVersion: 'v1', kind: 'Node', name: 'w1' } as const;
    expect(decodeUpdate(serializeUpdate(nodeDel))).toEqual(nodeDel);
  });

  it('informers → snapshot cache → sync server → sync client → calc graph: the nodes peer follows the Node; a heartbeat is skipped', async () => {
    const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
    const lists: Record<string, KubeObject[]> = {
      [CNP_RESOURCE]: [cnp as KubeObject],
      nodes: [worker('1', '10.0.0.11')],
      'tiers.projectcalico.org': [{ metadata: { name: 'kube-admin', resourceVersion: '1' }, spec: { order: 1000, defaultAction: 'Pass' } } as KubeObject],
      'workloadendpoints.projectcalico.org': [
        { metadata: { name: 'node--1-k8s-client-eth0', namespace: 'default', resourceVersion: '1', labels: {} }, spec: { node: 'node-1', pod: 'client', endpoint: 'eth0', interfaceName: 'cali1', ipNetworks: ['10.65.0.1/32'], orchestrator: 'k8s' } } as KubeObject,
      ],
    };
    for (const row of TYPHA_RESOURCES) {
      const lw = new ScriptedListerWatcher<KubeObject>(resourceName(row));
      lw.queueList({ items: lists[resourceName(row)] ?? [], resourceVersion: '1' });
      lws.set(resourceName(row), lw);
    }
    const clock = new FakeClock();
    const abort = new AbortController();
    const cache = new SnapshotCache({ clock });
    const cacheRunning = cache.start(abort.signal);
    const syncer = new InformerSyncer({ resources: TYPHA_RESOURCES, listerWatcherFor: (r) => lws.get(resourceName(r))! }, cache);
    const syncing = syncer.run(abort.signal);
    cleanups.push(async () => {
      abort.abort();
      await syncing;
      await cacheRunning;
    });
    const server = new SyncServer({ source: cache, host: '127.0.0.1', port: 0, clock, pingIntervalMs: 1e9 });
    const { port } = await server.listen();
    cleanups.push(() => server.close());

    const graph = new CalcGraph({ nodeName: 'node-1' });
    const policies = new Map<string, Policy>();
    const apply = (msgs: readonly DataplaneMessage[]): void => {
      for (const m of msgs) {
        if (m.type === 'ActivePolicyUpdate') policies.set(`${m.id.kind}/${m.id.name}`, m.policy);
        else if (m.type === 'ActivePolicyRemove') policies.delete(`${m.id.kind}/${m.id.name}`);
      }
    };
    let inSync = false;
    let nodeUpdates = 0;
    const client = new SyncClient(
      { hostname: 'node-1', addresses: () => [`127.0.0.1:${port}`], clock },
      {
        onUpdates: (u) => {
          nodeUpdates += u.filter((x) => (x.op === 'delete' ? x.kind : x.resource.kind) === ('Node' as string)).length;
          graph.onUpdates(u);
          apply(graph.flush());
        },
        onStatusUpdated: (s) => {
          graph.onStatusUpdated(s);
          if (s === 'in-sync') inSync = true;
          apply(graph.flush());
        },
      },
    );
    const clientAbort = new AbortController();
    const clientRunning = client.run(clientAbort.signal);
    cleanups.push(async () => {
      clientAbort.abort();
      await clientRunning;
    });

    const key = 'KubernetesClusterNetworkPolicy/no-workers';
    const dstNets = (): readonly string[] | undefined => policies.get(key)?.outboundRules.flatMap((r) => r.dstNets);
    await waitFor(() => inSync && policies.has(key), 'the agent in sync with the CNP');
    expect(dstNets()).toEqual(['10.0.0.11/32']);
    expect(policies.get(key)?.outboundRules.map((r) => r.action)).toEqual(['deny']);

    const watch = await lws.get(resourceName(kindRow('nodes')))!.nextWatch();
    const before = nodeUpdates;
    // The kubelet's heartbeat: conditions only. Projected away, so Typha skips it.
    watch.send({ type: 'MODIFIED', object: worker('2', '10.0.0.11', { conditions: [{ type: 'Ready', lastHeartbeatTime: '2026-11-28T00:00:10Z' }] }) });
    watch.send({ type: 'MODIFIED', object: worker('3', '10.0.0.12') });
    await waitFor(() => dstNets()?.[0] === '10.0.0.12/32', 'the moved node address');
    expect(nodeUpdates - before).toBe(1);
    watch.send({ type: 'DELETED', object: worker('4', '10.0.0.12') });
    await waitFor(() => dstNets()?.length === 0, 'the deleted node');

    const cnpWatch = await lws.get(CNP_RESOURCE)!.nextWatch();
    cnpWatch.send({ type: 'DELETED', object: { ...cnp, metadata: { ...cnp.metadata, resourceVersion: '9' } } as KubeObject });
    await waitFor(() => !policies.has(key), 'the deleted CNP');
  });

  it('wouldBeNoOp: two projected Node writes differing only in resourceVersion', () => {
    const a = serializeUpdate({ op: 'upsert', resource: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w1', resourceVersion: '1', labels: {} } } } as AnyUpdate);
    expect(wouldBeNoOp(a, serializeUpdate({ op: 'upsert', resource: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w1', resourceVersion: '2', labels: {} } } } as AnyUpdate, a))).toBe(true);
  });
});
