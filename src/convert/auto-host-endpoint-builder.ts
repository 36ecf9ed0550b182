/**
 * Node → its automatic HostEndpoint, as Calico's kube-controllers build the default one
 * (kube-controllers/pkg/controllers/node/hostendpoints.go; reference host-endpoints §C):
 *
 * - name `<node>-auto-hep`; when that exceeds 253 bytes (a DNS-1123 subdomain), the lower-cased
 *   unpadded base64url SHA-256 of it with '-', '_' and '.' removed, then `-auto-hep`, cut to 253
 *   (`hashNameIfTooLong`);
 * - labels: the Node's, plus `projectcalico.org/created-by: calico-kube-controllers`, Calico's own
 *   mark of a managed host endpoint (so selectors written for Calico's auto host endpoints carry
 *   over, and so do the HEPs Calico made);
 * - `spec.node` the node, `interfaceName: "*"`, `profiles: [projectcalico-default-allow]`;
 * - `spec.expectedIPs`: the addresses calico-node records on the Node, in Calico's order — the
 *   BGP `projectcalico.org/IPv4Address` and `IPv6Address` annotations (prefix length stripped),
 *   the IPIP, VXLAN (v4, v6) and WireGuard (v4, v6) tunnel address annotations — then the Node's
 *   `InternalIP` addresses; each in its canonical form, once, and only when it parses as an
 *   address of the right family (Calico drops what does not parse; it also keeps a CIDR, which
 *   a HostEndpoint's `expectedIPs` then refuses, so Tessera drops that too). Omitted when empty.
 *
 * Not built: Calico's templates (`KubeControllersConfiguration` `autoCreate` templates), its
 * labels from the `projectcalico.org/labels` annotation, and the host-local IPAM tunnel address
 * derived from `spec.podCIDR`. Tessera has no KubeControllersConfiguration.
 */
import { createHash } from 'node:crypto';

import { formatIP, parseIP } from '../api/cidr.ts';
import type { K8sNode } from '../api/kubernetes.ts';
import { DEFAULT_ALLOW_PROFILE, DNS1123_SUBDOMAIN_MAX_LENGTH } from '../api/names.ts';
import { API_VERSION, type HostEndpoint } from '../api/types.ts';

/** The label that marks a host endpoint as automatic (Calico's `hepCreatedLabelKey`). */
export const CREATED_BY_LABEL = 'projectcalico.org/created-by';
export const CREATED_BY_VALUE = 'calico-kube-controllers';

export { DEFAULT_ALLOW_PROFILE };

const SUFFIX = 'auto-hep';

/**
 * The Node annotations calico-node writes its addresses to (libcalico-go k8s/resources/node.go),
 * in the order Calico adds them to `expectedIPs`, with the family each must have. The BGP ones
 * carry a prefix length.
 */
export const NODE_ADDRESS_ANNOTATIONS: ReadonlyArray<readonly [annotation: string, version: 4 | 6]> = [
  ['projectcalico.org/IPv4Address', 4],
  ['projectcalico.org/IPv6Address', 6],
  ['projectcalico.org/IPv4IPIPTunnelAddr', 4],
  ['projectcalico.org/IPv4VXLANTunnelAddr', 4],
  ['projectcalico.org/IPv6VXLANTunnelAddr', 6],
  ['projectcalico.org/IPv4WireguardInterfaceAddr', 4],
  ['projectcalico.org/IPv6WireguardInterfaceAddr', 6],
];

/** The Node address type that becomes an expected IP. */
export const INTERNAL_IP = 'InternalIP';

/** `<node>-auto-hep`, hashed as Calico hashes it when longer than 253 bytes. */
export function autoHostEndpointName(nodeName: string): string {
  const name = `${nodeName}-${SUFFIX}`;
  if (Buffer.byteLength(name) <= DNS1123_SUBDOMAIN_MAX_LENGTH) return name;
  const hash = createHash('sha256').update(name).digest('base64url').replace(/[-_.]/g, '');
  return `${hash}-${SUFFIX}`.toLowerCase().slice(0, DNS1123_SUBDOMAIN_MAX_LENGTH);
}

/**
 * The node whose automatic host endpoint `hep` is by its name and `spec.node` (the name may
 * be a hash, so it is checked against the node's), else undefined. Says nothing of who made
 * it: that is `isAutoHostEndpoint`.
 */
export function autoHostEndpointNode(hep: { readonly metadata?: { readonly name?: string }; readonly spec?: unknown }): string | undefined {
  const node = (hep.spec as { node?: unknown } | undefined)?.node;
  return typeof node === 'string' && node !== '' && hep.metadata?.name === autoHostEndpointName(node) ? node : undefined;
}

/** Whether `hep` carries Calico's mark of an automatic host endpoint. */
export function isAutoHostEndpoint(hep: { readonly metadata?: { readonly labels?: Readonly<Record<string, string>> } }): boolean {
  return hep.metadata?.labels?.[CREATED_BY_LABEL] === CREATED_BY_VALUE;
}

/** `text` (an address, or with `stripPrefix` also `address/len`) in canonical form, if it is one of `version`. */
function address(text: string | undefined, version: 4 | 6 | undefined, stripPrefix: boolean): string | undefined {
  if (text === undefined || text === '') return undefined;
  const slash = text.indexOf('/');
  const ip = parseIP(stripPrefix && slash >= 0 ? text.slice(0, slash) : text);
  if (!ip.ok || (version !== undefined && ip.value.version !== version)) return undefined;
  return formatIP(ip.value.bytes);
}

/** The node's expected IPs (see the module comment), in Calico's order, each once. */
export function autoHostEndpointExpectedIPs(node: K8sNode): string[] {
  const out = new Set<string>();
  const annotations = node.metadata?.annotations ?? {};
  for (const [key, version] of NODE_ADDRESS_ANNOTATIONS) {
    const ip = address(annotations[key], version, true);
    if (ip !== undefined) out.add(ip);
  }
  for (const a of node.status?.addresses ?? []) {
    if (a.type !== INTERNAL_IP) continue;
    const ip = address(a.address, undefined, false);
    if (ip !== undefined) out.add(ip);
  }
  return [...out];
}

/** The automatic host endpoint of `node`; undefined for a node without a name. */
export function nodeToAutoHostEndpoint(node: K8sNode): HostEndpoint | undefined {
  const nodeName = node.metadata?.name;
  if (nodeName === undefined || nodeName === '') return undefined;
  const expectedIPs = autoHostEndpointExpectedIPs(node);
  return {
    apiVersion: API_VERSION,
    kind: 'HostEndpoint',
    metadata: { name: autoHostEndpointName(nodeName), labels: { ...(node.metadata?.labels ?? {}), [CREATED_BY_LABEL]: CREATED_BY_VALUE } },
    spec: {
      node: nodeName,
      interfaceName: '*',
      ...(expectedIPs.length === 0 ? {} : { expectedIPs }),
      profiles: [DEFAULT_ALLOW_PROFILE],
    },
  };
}
