/**
 * The ready endpoints of a Kubernetes Service, from its EndpointSlices
 * (`discovery.k8s.io/v1`, label `kubernetes.io/service-name`): how agents find Typha
 * (`tessera agent --typha-service <namespace>/<name>`, Felix's `TyphaK8sServiceName`) and how
 * Typha counts its peers for the connection target (rebalance.ts).
 *
 * Invariants:
 * - an endpoint counts only when its `conditions.ready` is not false (absent means ready, as
 *   the EndpointSlice API defines) and it is not terminating;
 * - the port is the one named `portName`, else the slice's only port; a slice without such a
 *   port contributes nothing;
 * - addresses are `host:port`, IPv6 hosts bracketed, de-duplicated (an endpoint appears in one
 *   slice per address family), in a stable order: callers shuffle if they want to.
 */
import { DiscoveryV1Api, type KubeConfig, type V1Endpoint, type V1EndpointSlice } from '@kubernetes/client-node';

/** The part of the API this reads (a test seam). */
export interface EndpointSliceLister {
  listNamespacedEndpointSlice(param: { namespace: string; labelSelector: string }): Promise<{ items: V1EndpointSlice[] }>;
}

export function endpointSliceLister(kubeConfig: KubeConfig): EndpointSliceLister {
  return kubeConfig.makeApiClient(DiscoveryV1Api);
}

/** Typha's Service port name in manifests/ (Calico: `calico-typha`). */
export const TYPHA_PORT_NAME = 'tessera-typha';

/** Formats `host:port`, bracketing an IPv6 host. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** One ready endpoint of a slice, with the port number of the Service port it serves. */
export interface ReadyEndpoint {
  readonly endpoint: V1Endpoint;
  readonly port: number;
}

/** The ready endpoints of `slices` on the port named `portName` (see the invariants above). */
export function* readyEndpoints(slices: readonly V1EndpointSlice[], portName = TYPHA_PORT_NAME): Generator<ReadyEndpoint> {
  for (const slice of slices) {
    const ports = slice.ports ?? [];
    const port = ports.find((p) => p.name === portName) ?? (ports.length === 1 ? ports[0] : undefined);
    if (port?.port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      yield { endpoint, port: port.port };
    }
  }
}

/** The Service's ready `host:port` addresses. Rejects when the list fails (the caller decides). */
export async function readyServiceAddresses(api: EndpointSliceLister, namespace: string, service: string, portName = TYPHA_PORT_NAME): Promise<string[]> {
  const list = await api.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${service}` });
  const out = new Set<string>();
  for (const { endpoint, port } of readyEndpoints(list.items, portName)) {
    for (const a of endpoint.addresses) out.add(hostPort(a, port));
  }
  return [...out].sort();
}
