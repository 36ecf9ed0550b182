import { describe, expect, it } from 'vitest';

import { kindRow, resourceName, type KindRow } from '../api/kinds.ts';
import type { KubeObject, KubeResource } from '../informers/index.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { AGENT_RESOURCES, InformerSyncer } from './informer-syncer.ts';
import { updateApiVersion, type AnyUpdate, type SyncStatus } from './update.ts';

async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** An InformerSyncer on scripted sources for `rows`, recording what it delivers. */
function syncer(rows: readonly KindRow[], lists: Record<string, KubeObject[]>) {
  const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
  for (const row of rows) {
    const lw = new ScriptedListerWatcher<KubeObject>(resourceName(row));
    lw.queueList({ items: lists[resourceName(row)] ?? [], resourceVersion: '1' });
    lws.set(resourceName(row), lw);
  }
  const updates: AnyUpdate[] = [];
  const statuses: SyncStatus[] = [];
  const s = new InformerSyncer<AnyUpdate>(
    { resources: rows, listerWatcherFor: (r) => lws.get(resourceName(r))! },
    { onUpdates: (u) => updates.push(...u), onStatusUpdated: (st) => statuses.push(st) },
  );
  return { s, lws, updates, statuses };
}

describe('InformerSyncer', () => {
  it('watches the agent\'s kind-table rows by default', () => {
    const seen: string[] = [];
    const listerWatcherFor = (r: KubeResource): ScriptedListerWatcher<KubeObject> => {
      seen.push(resourceName(r));
      return new ScriptedListerWatcher(r.plural);
    };
    new InformerSyncer({ listerWatcherFor }, { onUpdates: () => undefined, onStatusUpdated: () => undefined });
    expect(seen).toEqual(AGENT_RESOURCES.map(resourceName));
  });

  it('carries any group: each upsert gets its row\'s apiVersion and kind, each delete names its apiVersion; in-sync after every list', async () => {
    const rows = [kindRow('tiers.projectcalico.org'), kindRow('namespaces')];
    const { s, lws, updates, statuses } = syncer(rows, {
      'tiers.projectcalico.org': [{ metadata: { name: 'default', resourceVersion: '1' } }],
      namespaces: [{ metadata: { name: 'shop', resourceVersion: '1' } }],
    });
    const stop = new AbortController();
    const running = s.run(stop.signal);
    await until(() => statuses.includes('in-sync'), 'in-sync');
    expect(statuses).toEqual(['resync-in-progress', 'in-sync']);
    expect(updates.map((u) => (u.op === 'upsert' ? [u.op, u.resource.apiVersion, u.resource.kind, u.resource.metadata.name] : u.op)).sort()).toEqual([
      ['upsert', 'projectcalico.org/v3', 'Tier', 'default'],
      ['upsert', 'v1', 'Namespace', 'shop'],
    ]);

    const watch = await lws.get('namespaces')!.nextWatch();
    watch.send({ type: 'DELETED', object: { metadata: { name: 'shop', resourceVersion: '2' } } });
    await until(() => updates.length === 3, 'the delete');
    expect(updates[2]).toEqual({ op: 'delete', apiVersion: 'v1', kind: 'Namespace', name: 'shop' });
    expect(updateApiVersion(updates[2]!)).toBe('v1');
    stop.abort();
    await running;
  });

  it('an EndpointSlice upsert carries only what the calc graph reads: conditions, target refs, port names dropped', async () => {
    const full = {
      metadata: { name: 'web-abc', namespace: 'shop', resourceVersion: '3', uid: 'u', labels: { 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'x' }, ownerReferences: [{ kind: 'Service' }] },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: false }, nodeName: 'n1', targetRef: { kind: 'Pod', name: 'web-1' } }],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, appProtocol: 'http' }, { name: 'all', port: null }],
    };
    const { s, updates, statuses } = syncer([kindRow('endpointslices.discovery.k8s.io')], { 'endpointslices.discovery.k8s.io': [full as KubeObject] });
    const stop = new AbortController();
    const running = s.run(stop.signal);
    await until(() => statuses.includes('in-sync'), 'in-sync');
    expect(updates).toEqual([
      {
        op: 'upsert',
        resource: {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: 'web-abc', namespace: 'shop', resourceVersion: '3', labels: { 'kubernetes.io/service-name': 'web' } },
          addressType: 'IPv4',
          endpoints: [{ addresses: ['10.0.0.1'] }],
          ports: [{ protocol: 'TCP', port: 8080 }, {}],
        },
      },
    ]);
    stop.abort();
    await running;
  });

  it('a delete without apiVersion (an older Typha) means projectcalico.org/v3', () => {
    expect(updateApiVersion({ op: 'delete', kind: 'Tier', name: 'default' })).toBe('projectcalico.org/v3');
  });
});
