/**
 * Automatic host endpoints (Calico kube-controllers' node controller, `autoCreate`; reference
 * host-endpoints §C): while switched on, one HostEndpoint `<node>-auto-hep` per Node — `*`, the
 * Node's labels plus `projectcalico.org/created-by: calico-kube-controllers`, its addresses as
 * `expectedIPs`, profile `projectcalico-default-allow` (convert/auto-host-endpoint-builder.ts) —
 * updated when any of that drifts, deleted with its Node. Switched off (the default), it wants
 * none: at start (the initial lists enqueue every managed one) and whenever one appears, each
 * host endpoint it manages is deleted, as Calico's are when `autoCreate` is Disabled.
 *
 * It manages exactly the host endpoints carrying Calico's created-by label (so it also adopts
 * the ones Calico's kube-controllers made: running both with different settings makes them
 * fight). Any other HostEndpoint — one a user wrote by hand under a node's `<node>-auto-hep`
 * name included — is never written or deleted; that one is logged once. Writes are conditional
 * (`MirrorController` `leaveForeign`): created only if absent, updated at the cached
 * resourceVersion, deleted only if uid and resourceVersion still match.
 *
 * A MirrorController (work queue, rate-limited retries, sweeps, reconcile metrics) keyed by
 * node name; leader-elected with the other controllers. An ownerReference to the Node lets the
 * garbage collector remove a node's endpoint even when the controllers are down.
 */
import { apiVersionOf, kindRow, resourceOf } from '../api/kinds.ts';
import type { K8sNode } from '../api/kubernetes.ts';
import { CREATED_BY_LABEL, isAutoHostEndpoint, nodeToAutoHostEndpoint } from '../convert/auto-host-endpoint-builder.ts';
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { ownerReferenceTo } from './ownership.ts';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer' | 'leaveForeign'>;

const NODES = kindRow('nodes');
const HOST_ENDPOINTS = kindRow('hostendpoints.projectcalico.org');

export const AUTO_HOST_ENDPOINT_CONTROLLER = 'auto-host-endpoints';

export interface AutoHostEndpointOptions {
  /** Keep a host endpoint per node (true), or remove every managed one (false). */
  readonly enabled: boolean;
}

/**
 * The node a managed host endpoint belongs to (its `spec.node`), or undefined for a host
 * endpoint without Calico's created-by label, which is not this controller's.
 */
export function managedHostEndpointNode(hep: KubeObject & { spec?: unknown }): string | undefined {
  if (!isAutoHostEndpoint(hep)) return undefined;
  const node = (hep.spec as { node?: unknown } | undefined)?.node;
  return typeof node === 'string' && node !== '' ? node : undefined;
}

export function newAutoHostEndpointController(
  factory: InformerFactory,
  writer: Writer,
  common: Common,
  { enabled }: AutoHostEndpointOptions,
): MirrorController<KubeObject, KubeObject> {
  // Names of foreign host endpoints already reported: one line each, not one per reconcile.
  const reported = new Set<string>();
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: AUTO_HOST_ENDPOINT_CONTROLLER,
    source: factory.informerFor(resourceOf(NODES)),
    target: factory.informerFor(resourceOf(HOST_ENDPOINTS)),
    targetType: { apiVersion: apiVersionOf(HOST_ENDPOINTS), kind: HOST_ENDPOINTS.kind },
    writer,
    sourceKeyOf: (t) => managedHostEndpointNode(t),
    leaveForeign: (t, log) => {
      const name = t.metadata?.name ?? '';
      if (reported.has(name)) return;
      reported.add(name);
      log.warn(
        { kind: HOST_ENDPOINTS.kind, name },
        `a HostEndpoint without the ${CREATED_BY_LABEL} label holds this node's automatic host endpoint name; it is left alone, and the node gets no automatic host endpoint while it exists`,
      );
    },
    desired: (node) => {
      if (!enabled) return [];
      const hep = nodeToAutoHostEndpoint(node as K8sNode);
      if (hep === undefined) return [];
      const owner = ownerReferenceTo({ apiVersion: apiVersionOf(NODES), kind: NODES.kind, metadata: node.metadata ?? {} });
      const out: WrittenObject = { ...hep, metadata: { ...hep.metadata, ownerReferences: owner } };
      return [out];
    },
  });
}
