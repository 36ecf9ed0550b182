/**
 * EndpointSlices through `tessera typha` (issue 27): Typha watches the kind table's Typha
 * rows (EndpointSlice among them) and fans them out; an agent's calc graph behind it fills the
 * `services` sets from them exactly as from its own informers, deletes included (the key
 * carries the kind only; the delete gets its apiVersion back); a readiness-only slice write is
 * not fanned out (the informers deliver slices projected).
 */
import { afterEach, describe, expect, it } from 'vitest';

import { kindRow, resourceName } from '../api/kinds.ts';
import { CalcGraph } from '../calc/calc-graph.ts';
import type { KubeObject } from '../informers/index.ts';
import type { DataplaneMessage } from '../proto/index.ts';
import { FakeClock } from '../runtime/clock.ts';
import { InformerSyncer, TYPHA_RESOURCES } from '../syncer/index.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { waitFor } from '../../test/typha/wire-harness.ts';
import { decodeUpdate, serializeUpdate } from './serialized-update.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import { SyncClient } from './sync-client.ts';
import { SyncServer } from './sync-server.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SVC = 'svc:Jhwii46PCMT5NlhWsUqZmv7al8TeHFbNQMhoVg';
const slice = { metadata: { name: 'svc-abc', namespace: 'default', resourceVersion: '5', labels: { 'kubernetes.io/service-name': 'svc' } }, addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'] }], ports: [{ port: 80 }] };

describe('EndpointSlices through Typha', () => {
  it('Typha watches EndpointSlices (its rows come from the kind table)', () => {
    expect(TYPHA_RESOURCES.map(resourceName)).toContain('endpointslices.discovery.k8s.io');
  });

  it('a slice delete decodes with its apiVersion; a v3 delete stays without one', () => {
    const del = { op: 'delete', apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: 'default', name: 'svc-abc' } as const;
    expect(decodeUpdate(serializeUpdate(del))).toEqual(del);
    expect(decodeUpdate(serializeUpdate({ op: 'delete', kind: 'Tier', name: 't' }))).toEqual({ op: 'delete', kind: 'Tier', name: 't' });
  });

  it('informers → snapshot cache → sync server → sync client → calc graph: the services set is filled, changed and emptied', async () => {
    const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
    const lists: Record<string, KubeObject[]> = {
      'endpointslices.discovery.k8s.io': [slice],
      'globalnetworkpolicies.projectcalico.org': [
        { metadata: { name: 'svc-policy', resourceVersion: '1' }, spec: { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { services: { name: 'svc', namespace: 'default' } } }] } } as KubeObject,
      ],
      'workloadendpoints.projectcalico.org': [
        { metadata: { name: 'node--1-k8s-client-eth0', namespace: 'default', resourceVersion: '1', labels: {} }, spec: { node: 'node-1', pod: 'client', endpoint: 'eth0', interfaceName: 'cali1', ipNetworks: ['10.65.0.1/32'] } } as KubeObject,
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
    const members = new Map<string, Set<string>>();
    const apply = (msgs: readonly DataplaneMessage[]): void => {
      for (const m of msgs) {
        if (m.type === 'IPSetUpdate') members.set(m.id, new Set(m.members));
        else if (m.type === 'IPSetDeltaUpdate') {
          for (const r of m.removed) members.get(m.id)?.delete(r);
          for (const a of m.added) members.get(m.id)?.add(a);
        } else if (m.type === 'IPSetRemove') members.delete(m.id);
      }
    };
    let inSync = false;
    let sliceUpdates = 0;
    const client = new SyncClient(
      { hostname: 'node-1', addresses: () => [`127.0.0.1:${port}`], clock },
      {
        onUpdates: (u) => {
          sliceUpdates += u.filter((x) => (x.op === 'delete' ? x.kind : x.resource.kind) === ('EndpointSlice' as string)).length;
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

    await waitFor(() => inSync && members.has(SVC), 'the agent in sync with the services set');
    expect([...members.get(SVC)!]).toEqual(['10.0.0.1,tcp:80']);

    const watch = await lws.get(resourceName(kindRow('endpointslices.discovery.k8s.io')))!.nextWatch();
    // A readiness-only write: the projected value is unchanged, Typha skips it, the agent sees nothing.
    const before = sliceUpdates;
    watch.send({ type: 'MODIFIED', object: { ...slice, metadata: { ...slice.metadata, resourceVersion: '6' }, endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: false } }] } as KubeObject });
    const moved = { ...slice, metadata: { ...slice.metadata, resourceVersion: '7' }, endpoints: [{ addresses: ['10.0.0.2'] }] };
    watch.send({ type: 'MODIFIED', object: moved });
    await waitFor(() => members.get(SVC)?.has('10.0.0.2,tcp:80') === true, 'the changed slice');
    expect([...members.get(SVC)!]).toEqual(['10.0.0.2,tcp:80']);
    expect(sliceUpdates - before).toBe(1);
    watch.send({ type: 'DELETED', object: { ...moved, metadata: { ...moved.metadata, resourceVersion: '8' } } });
    await waitFor(() => members.get(SVC)?.size === 0, 'the deleted slice');
  });
});
