import { randomBytes } from 'node:crypto';

import { CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { installCalicoCrds } from './calico-crds.ts';
import { adminKubeConfig } from './shared-control-plane.ts';
import { isEvent, WatchRecorder } from './watch-recorder.ts';

const group = 'projectcalico.org';
const version = 'v3';

interface CalicoObject extends KubernetesObject {
  spec?: { order?: number; selector?: string; [field: string]: unknown };
}
interface CalicoList {
  metadata: { resourceVersion: string };
  items: CalicoObject[];
}

function networkPolicy(namespace: string, name: string, order: number): CalicoObject {
  return {
    apiVersion: `${group}/${version}`,
    kind: 'NetworkPolicy',
    metadata: { name, namespace, labels: { suite: 'round-trip' } },
    spec: { order, selector: `app == "${name}"`, types: ['Ingress'], ingress: [{ action: 'Allow' }] },
  };
}

describe('create / list / watch of projectcalico.org/v3 objects through @kubernetes/client-node', () => {
  const namespace = `round-trip-${randomBytes(3).toString('hex')}`;
  const gnpName = `round-trip-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    const admin = adminKubeConfig();
    await installCalicoCrds(admin);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  });

  afterAll(async () => {
    const custom = adminKubeConfig().makeApiClient(CustomObjectsApi);
    await custom
      .deleteClusterCustomObject({ group, version, plural: 'globalnetworkpolicies', name: gnpName })
      .catch(() => undefined);
    // Namespaced objects stay: without a controller-manager a namespace never finishes deleting.
  });

  it('a namespaced NetworkPolicy round-trips: create, list, then watch from the list sees ADDED, MODIFIED, DELETED', async () => {
    const kc = adminKubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const plural = 'networkpolicies';

    const created = (await custom.createNamespacedCustomObject({
      group, version, namespace, plural, body: networkPolicy(namespace, 'first', 10),
    })) as CalicoObject;
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.spec?.order).toBe(10);

    const list = (await custom.listNamespacedCustomObject({ group, version, namespace, plural })) as CalicoList;
    expect(list.items.map((o) => o.metadata?.name)).toEqual(['first']);
    expect(list.items[0]?.spec).toMatchObject({ order: 10, selector: 'app == "first"', tier: 'default' });

    await using watch = await WatchRecorder.start(kc, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`, {
      resourceVersion: list.metadata.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: 300,
    });

    await custom.createNamespacedCustomObject({ group, version, namespace, plural, body: networkPolicy(namespace, 'second', 20) });
    const added = await watch.next('ADDED second', isEvent('ADDED', 'second'));
    expect((added.object as CalicoObject).spec?.order).toBe(20);

    // JSON patch: the generated client's default patch content type (reference §2.5).
    await custom.patchNamespacedCustomObject({
      group, version, namespace, plural, name: 'first', body: [{ op: 'replace', path: '/spec/order', value: 5 }],
    });
    const modified = await watch.next('MODIFIED first', isEvent('MODIFIED', 'first'));
    expect((modified.object as CalicoObject).spec?.order).toBe(5);

    await custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'second' });
    const deleted = await watch.next('DELETED second', isEvent('DELETED', 'second'));
    expect(deleted.object.metadata?.name).toBe('second');

    // The watch started at the list's resourceVersion: the pre-existing object is not replayed.
    expect(watch.events.filter(isEvent('ADDED', 'first'))).toEqual([]);
    expect(watch.done).toBeUndefined();
  });

  it('a cluster-scoped GlobalNetworkPolicy round-trips through list and a cluster-wide watch', async () => {
    const kc = adminKubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const plural = 'globalnetworkpolicies';
    const before = (await custom.listClusterCustomObject({ group, version, plural })) as CalicoList;

    await using watch = await WatchRecorder.start(kc, `/apis/${group}/${version}/${plural}`, {
      resourceVersion: before.metadata.resourceVersion,
      allowWatchBookmarks: true,
    });
    await custom.createClusterCustomObject({
      group, version, plural,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'GlobalNetworkPolicy',
        metadata: { name: gnpName },
        spec: { order: 1, selector: 'all()', types: ['Egress'], egress: [{ action: 'Deny', protocol: 'UDP' }] },
      },
    });

    const added = await watch.next(`ADDED ${gnpName}`, isEvent('ADDED', gnpName));
    expect((added.object as CalicoObject).spec).toMatchObject({ order: 1, selector: 'all()', types: ['Egress'] });
    const after = (await custom.listClusterCustomObject({ group, version, plural })) as CalicoList;
    expect(after.items.map((o) => o.metadata?.name)).toContain(gnpName);
    expect(Number(after.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));
  });

  it('a watch from resourceVersion 0 starts with the current objects as ADDED events', async () => {
    const kc = adminKubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const plural = 'networkpolicies';
    await custom.createNamespacedCustomObject({ group, version, namespace, plural, body: networkPolicy(namespace, 'existing', 7) });

    await using watch = await WatchRecorder.start(kc, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`, {
      resourceVersion: '0',
    });

    const replayed = await watch.next('ADDED existing', isEvent('ADDED', 'existing'));
    expect((replayed.object as CalicoObject).spec?.order).toBe(7);
  });
});
