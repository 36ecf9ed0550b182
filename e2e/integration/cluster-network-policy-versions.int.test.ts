/**
 * The node side reads ClusterNetworkPolicy at the version the real API server serves: the agent's
 * and Typha's InformerSyncer (the kind table's row: v1beta1, fallback v1alpha2, optional).
 *
 * - a cluster with only Calico 3.32's v0.2.0-style CRD (v1alpha2 alone; listing v1beta1 is a
 *   404) — the syncer reads the objects through v1alpha2, carries them as v1beta1, and logs the
 *   version: an "optional" kind that read nothing there would silently widen every policy;
 * - the same cluster after `kubectl apply -f crds/` upgrades the CRD to v0.3.0 — v1beta1;
 * - no CRD at all — an empty list, and the syncer is in sync (the only case that is empty).
 * The CRD is deleted and recreated, so this file restores crds/'s standard CRD at the end.
 */
import { ApiextensionsV1Api, CustomObjectsApi, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';

import { clusterNetworkPolicyCrd, CNP_CRD_NAME } from '../../src/api/cluster-network-policy-crd.ts';
import { kindRow } from '../../src/api/kinds.ts';
import { InformerSyncer } from '../../src/syncer/informer-syncer.ts';
import type { AnyUpdate } from '../../src/syncer/update.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { adminKubeConfig } from './shared-control-plane.ts';

const GROUP = 'policy.networking.k8s.io';
const ROW = kindRow('clusternetworkpolicies.policy.networking.k8s.io');

/** A CRD as Calico 3.32 bundles it: v1alpha2 only (served, storage), bundle v0.2.0. */
function v1alpha2OnlyCrd(): V1CustomResourceDefinition {
  const crd = clusterNetworkPolicyCrd('standard') as unknown as V1CustomResourceDefinition;
  const alpha = crd.spec.versions.find((v) => v.name === 'v1alpha2')!;
  return {
    ...crd,
    metadata: { ...crd.metadata, annotations: { ...crd.metadata?.annotations, 'policy.networking.k8s.io/bundle-version': 'v0.2.0' } },
    spec: { ...crd.spec, versions: [{ ...alpha, storage: true }] },
  };
}

async function deleteCrd(): Promise<void> {
  const api = adminKubeConfig().makeApiClient(ApiextensionsV1Api);
  await api.deleteCustomResourceDefinition({ name: CNP_CRD_NAME }).catch(() => undefined);
  await pollUntil(
    async () => {
      try {
        await api.readCustomResourceDefinition({ name: CNP_CRD_NAME });
        return undefined;
      } catch {
        return true;
      }
    },
    { description: 'the ClusterNetworkPolicy CRD to be gone', timeoutMs: 60_000 },
  );
}

async function createEstablished(body: V1CustomResourceDefinition): Promise<void> {
  const api = adminKubeConfig().makeApiClient(ApiextensionsV1Api);
  await api.createCustomResourceDefinition({ body });
  await pollUntil(
    async () => {
      const crd = await api.readCustomResourceDefinition({ name: CNP_CRD_NAME });
      return (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True') || undefined;
    },
    { description: 'the v1alpha2-only CRD to be Established', timeoutMs: 60_000 },
  );
}

/** Runs the node side's syncer on the CNP row until in-sync; returns what it delivered and logged. */
async function syncOnce(): Promise<{ upserts: Array<{ apiVersion: string; name: string }>; logs: Array<Record<string, unknown>> }> {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const upserts: Array<{ apiVersion: string; name: string }> = [];
  let synced!: () => void;
  const inSync = new Promise<void>((resolve) => (synced = resolve));
  const syncer = new InformerSyncer<AnyUpdate>(
    { kubeConfig: adminKubeConfig(), resources: [ROW], logger },
    {
      onUpdates: (us) => {
        for (const u of us) {
          if (u.op !== 'upsert') continue;
          const r = u.resource as { apiVersion: string; metadata: { name: string } };
          upserts.push({ apiVersion: r.apiVersion, name: r.metadata.name });
        }
      },
      onStatusUpdated: (s) => {
        if (s === 'in-sync') synced();
      },
    },
  );
  const stop = new AbortController();
  const running = syncer.run(stop.signal);
  await inSync;
  stop.abort();
  await running;
  return { upserts, logs: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('the node side reads ClusterNetworkPolicy at the served version (real API server)', () => {
  afterAll(async () => {
    await deleteCrd();
    await installCalicoCrds(adminKubeConfig());
  });

  it('no CRD at all: an empty list, in sync', async () => {
    await deleteCrd();
    const { upserts } = await syncOnce();
    expect(upserts).toEqual([]);
  });

  it('a v1alpha2-only CRD (Calico 3.32\'s): the object is read through v1alpha2, carried as v1beta1, and the version is logged', async () => {
    await createEstablished(v1alpha2OnlyCrd());
    const objects = adminKubeConfig().makeApiClient(CustomObjectsApi);
    await pollUntil(
      () =>
        objects
          .createClusterCustomObject({
            group: GROUP,
            version: 'v1alpha2',
            plural: 'clusternetworkpolicies',
            body: {
              apiVersion: `${GROUP}/v1alpha2`,
              kind: 'ClusterNetworkPolicy',
              metadata: { name: 'admin-deny-from-alpha' },
              spec: { tier: 'Admin', priority: 3, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
            },
          })
          .then(() => true),
      { description: 'a v1alpha2 ClusterNetworkPolicy to be created', timeoutMs: 30_000 },
    );
    // v1beta1 is not served here: what a v1beta1-only reader would have read as "no objects".
    await expect(objects.listClusterCustomObject({ group: GROUP, version: 'v1beta1', plural: 'clusternetworkpolicies' })).rejects.toMatchObject({ code: 404 });

    const { upserts, logs } = await syncOnce();
    expect(upserts).toEqual([{ apiVersion: `${GROUP}/v1beta1`, name: 'admin-deny-from-alpha' }]);
    expect(logs).toContainEqual(
      expect.objectContaining({ component: 'served-version-lister-watcher', resource: 'clusternetworkpolicies.policy.networking.k8s.io', version: 'v1alpha2', notServed: ['v1beta1'] }),
    );
  });

  it('after kubectl apply -f crds/ upgrades the CRD to v0.3.0: the same object, read through v1beta1', async () => {
    await installCalicoCrds(adminKubeConfig());
    await pollUntil(
      () =>
        adminKubeConfig()
          .makeApiClient(CustomObjectsApi)
          .listClusterCustomObject({ group: GROUP, version: 'v1beta1', plural: 'clusternetworkpolicies' })
          .then(() => true),
      { description: 'v1beta1 to be served', timeoutMs: 60_000 },
    );
    const { upserts, logs } = await syncOnce();
    expect(upserts).toEqual([{ apiVersion: `${GROUP}/v1beta1`, name: 'admin-deny-from-alpha' }]);
    expect(logs).toContainEqual(expect.objectContaining({ component: 'served-version-lister-watcher', version: 'v1beta1', msg: 'reading v1beta1' }));
  });
});
