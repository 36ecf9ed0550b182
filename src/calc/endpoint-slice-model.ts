/**
 * A `discovery.k8s.io/v1` EndpointSlice → the model the service index reads (Felix
 * `serviceindex.membersFromEndpointSlice`, reference §D.3):
 *
 * - the slice belongs to `<metadata.namespace>/<label kubernetes.io/service-name>`; a slice
 *   without that label belongs to no Service and is held as nothing (`undefined`);
 * - every endpoint address that is an IP address is kept, canonical (`fd00:0::1` → `fd00::1`,
 *   an IPv4-mapped address as IPv4), whatever the slice's `addressType` says; FQDNs and
 *   anything else that does not parse are dropped;
 * - every slice port with a number is kept with its protocol: `UDP`, `SCTP`, otherwise TCP
 *   (absent included); its name is dropped (Kubernetes already resolved named target ports);
 *   a port without a number (Kubernetes' "all ports") contributes nothing;
 * - endpoint conditions (ready, serving, terminating) are ignored: every listed address counts.
 */
import { formatIP, parseIP, SERVICE_NAME_LABEL, type K8sEndpointSlice } from '../api/index.ts';
import type { EndpointSlicePort, ModelEndpointSlice } from './model.ts';

/** The `apiVersion` and `kind` an EndpointSlice update carries. */
export const ENDPOINT_SLICE_API_VERSION = 'discovery.k8s.io/v1';
export const ENDPOINT_SLICE_KIND = 'EndpointSlice';

/** `<namespace>/<name>` of a slice (namespace `default` when absent, as the API server would set it). */
export function endpointSliceKey(namespace: string | undefined, name: string): string {
  return `${namespace || 'default'}/${name}`;
}

/** The model of `slice`, or `undefined` when it belongs to no Service (no name or no service-name label). */
export function endpointSliceModel(slice: K8sEndpointSlice): ModelEndpointSlice | undefined {
  const name = slice.metadata?.name;
  const svc = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (typeof name !== 'string' || name === '' || typeof svc !== 'string' || svc === '') return undefined;
  const namespace = slice.metadata?.namespace || 'default';
  const addresses = new Set<string>();
  for (const ep of slice.endpoints ?? []) {
    for (const text of ep?.addresses ?? []) {
      const ip = parseIP(text);
      if (ip.ok) addresses.add(formatIP(ip.value.bytes));
    }
  }
  const ports: EndpointSlicePort[] = [];
  for (const p of slice.ports ?? []) {
    const port = p?.port;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) continue;
    const proto = typeof p?.protocol === 'string' ? p.protocol.toUpperCase() : '';
    ports.push({ protocol: proto === 'UDP' ? 'udp' : proto === 'SCTP' ? 'sctp' : 'tcp', port });
  }
  return { key: endpointSliceKey(namespace, name), service: `${namespace}/${svc}`, addresses: [...addresses], ports };
}
