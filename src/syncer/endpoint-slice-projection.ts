/**
 * The part of an EndpointSlice the node side reads, and nothing else: what the agent's and
 * Typha's informers deliver for `discovery.k8s.io/v1` EndpointSlices (informer-syncer.ts).
 *
 * The calc graph reads a slice's namespace, name, `kubernetes.io/service-name` label,
 * endpoint addresses and ports' protocol and number (calc/endpoint-slice-model.ts, Felix's
 * `membersFromEndpointSlice`); it ignores conditions, hostnames, zones, target refs and port
 * names. Dropping them here changes no verdict and:
 * - makes a slice write that changes only what is dropped (a pod turning ready, the common
 *   case under churn) equal to the previous value, so Typha skips it (`wouldBeNoOp`) instead of
 *   fanning the whole slice out to every agent;
 * - shrinks what Typha holds and sends for each slice (bench/typha-endpointslice-fanout.ts).
 *
 * `resourceVersion` is kept (Typha carries it apart from the value).
 */
import { SERVICE_NAME_LABEL, type K8sEndpointSlice } from '../api/index.ts';

export function projectEndpointSlice(slice: K8sEndpointSlice): K8sEndpointSlice {
  const m = slice.metadata ?? {};
  const svc = m.labels?.[SERVICE_NAME_LABEL];
  return {
    ...(slice.apiVersion === undefined ? {} : { apiVersion: slice.apiVersion }),
    ...(slice.kind === undefined ? {} : { kind: slice.kind }),
    metadata: {
      ...(m.name === undefined ? {} : { name: m.name }),
      ...(m.namespace === undefined ? {} : { namespace: m.namespace }),
      ...(m.resourceVersion === undefined ? {} : { resourceVersion: m.resourceVersion }),
      ...(svc === undefined ? {} : { labels: { [SERVICE_NAME_LABEL]: svc } }),
    },
    ...(slice.addressType === undefined ? {} : { addressType: slice.addressType }),
    endpoints: (slice.endpoints ?? []).map((e) => ({ addresses: [...(e?.addresses ?? [])] })),
    ports: (slice.ports ?? []).map((p) => ({
      ...(typeof p?.protocol === 'string' ? { protocol: p.protocol } : {}),
      ...(typeof p?.port === 'number' ? { port: p.port } : {}),
    })),
  };
}
