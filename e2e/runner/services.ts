/**
 * A scenario's `v1 Service` objects on a cluster (../../../shared/scenarios/README.md,
 * "Services"): applied through the core API, and given their meaning by the cluster's own
 * EndpointSlice controller — kube-controller-manager's in the process cluster
 * (e2e/controlplane/kube-controller-manager.ts), kind's in kind.
 *
 * - `applyService` creates or replaces one (a replace keeps what the API server allocated:
 *   it fills an unset clusterIP from the stored object).
 * - `deleteService` deletes it and its EndpointSlices: the slices' owner reference would have
 *   the garbage collector delete them, which the process cluster does not run; a stale slice
 *   would otherwise keep old pod addresses in a later scenario's Service of the same name.
 * - `waitForServiceEndpoints` waits until each Service's slices hold exactly the endpoints
 *   `tessera simulate` derives from the pods as they are in the API (src/simulate/
 *   endpoint-slices.ts; compared as `addressType address protocol:port` members, which is all
 *   Calico's `services` match reads). So a step's probes start once the controller has caught up,
 *   and a cluster without an EndpointSlice controller — or a derivation that disagrees with the
 *   real one — fails the scenario naming the Service, instead of probing a wrong state.
 */
import { CoreV1Api, DiscoveryV1Api, type KubeConfig, type V1Service } from '@kubernetes/client-node';

import { SERVICE_NAME_LABEL, type K8sEndpointSlice, type K8sPod, type K8sService } from '../../src/api/index.ts';
import { deriveEndpointSlices } from '../../src/simulate/endpoint-slices.ts';
import { pollUntil } from '../controlplane/index.ts';
import type { ManifestObject, PolicyRef } from './scenario.ts';

/** Whether `o` is a core/v1 Service. */
export function isService(o: { apiVersion: string; kind: string }): boolean {
  return o.apiVersion === 'v1' && o.kind === 'Service';
}

function isNotFound(e: unknown): boolean {
  const err = e as { code?: number; statusCode?: number };
  return err.code === 404 || err.statusCode === 404;
}

/** Creates the Service `o` in its namespace, or replaces the one there. */
export async function applyService(admin: KubeConfig, o: ManifestObject): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const namespace = o.metadata.namespace;
  if (namespace === undefined) throw new Error(`v1 Service ${o.metadata.name}: metadata.namespace is required`);
  const body = structuredClone(o) as unknown as V1Service;
  try {
    const existing = await core.readNamespacedService({ name: o.metadata.name, namespace });
    body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion ?? '' };
    await core.replaceNamespacedService({ name: o.metadata.name, namespace, body });
  } catch (e) {
    if (!isNotFound(e)) throw e;
    await core.createNamespacedService({ namespace, body });
  }
}

/** Deletes the Service `r` (if there) and every EndpointSlice labelled as its. */
export async function deleteService(admin: KubeConfig, r: PolicyRef): Promise<void> {
  const namespace = r.namespace ?? 'default';
  try {
    await admin.makeApiClient(CoreV1Api).deleteNamespacedService({ name: r.name, namespace });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  await admin.makeApiClient(DiscoveryV1Api).deleteCollectionNamespacedEndpointSlice({ namespace, labelSelector: `${SERVICE_NAME_LABEL}=${r.name}` });
}

/** `addressType address protocol:port` per endpoint address and port (`-` for a slice without ports). */
export function sliceMembers(slices: readonly K8sEndpointSlice[]): string[] {
  const out = new Set<string>();
  for (const s of slices) {
    const ports = (s.ports ?? []).flatMap((p) => (p === null ? [] : [`${p.protocol ?? 'TCP'}:${p.port ?? '-'}`]));
    for (const e of s.endpoints ?? []) {
      for (const a of e?.addresses ?? []) for (const p of ports.length > 0 ? ports : ['-']) out.add(`${s.addressType ?? '?'} ${a} ${p}`);
    }
  }
  return [...out].sort();
}

/**
 * Resolves once the EndpointSlices of every Service in `refs` have the members
 * `deriveEndpointSlices` gives for it from its namespace's pods (both read from the API).
 * @throws Error naming the first Service still differing after `timeoutMs`, with the difference.
 */
export async function waitForServiceEndpoints(admin: KubeConfig, refs: readonly PolicyRef[], timeoutMs = 30_000): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const discovery = admin.makeApiClient(DiscoveryV1Api);
  for (const r of refs) {
    const namespace = r.namespace ?? 'default';
    let last = { want: [] as string[], got: [] as string[] };
    try {
      await pollUntil(
        async () => {
          const svc = (await core.readNamespacedService({ name: r.name, namespace })) as unknown as K8sService;
          const pods = (await core.listNamespacedPod({ namespace })).items as unknown as K8sPod[];
          const live = (await discovery.listNamespacedEndpointSlice({ namespace, labelSelector: `${SERVICE_NAME_LABEL}=${r.name}` })).items as unknown as K8sEndpointSlice[];
          last = { want: sliceMembers(deriveEndpointSlices([svc], pods)), got: sliceMembers(live) };
          return last.want.join('\n') === last.got.join('\n') && live.length > 0 ? true : undefined;
        },
        { description: `the EndpointSlices of Service ${namespace}/${r.name}`, timeoutMs, intervalMs: 100 },
      );
    } catch (e) {
      const missing = last.want.filter((m) => !last.got.includes(m));
      const extra = last.got.filter((m) => !last.want.includes(m));
      throw new Error(
        `v1 Service ${namespace}/${r.name}: its EndpointSlices did not reach the endpoints derived from its pods within ${timeoutMs} ms ` +
          `(missing: ${missing.join(', ') || 'none'}; unexpected: ${extra.join(', ') || 'none'}; is an EndpointSlice controller running?)`,
        { cause: e },
      );
    }
  }
}
