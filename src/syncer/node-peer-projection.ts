/**
 * The part of a Node the node side reads, and nothing else: what the agent's and Typha's
 * informers deliver for core `v1` Nodes (informer-syncer.ts).
 *
 * The calc graph reads a Node only for the experimental egress `nodes` peer of a
 * ClusterNetworkPolicy (calc/cluster-network-policy-processor.ts): its name, its labels and
 * the addresses of `status.addresses` (`NodePeerInfo`). Everything else — conditions and their
 * heartbeat times, images, capacity, annotations — changes often and decides nothing here.
 * Dropping it:
 * - makes the kubelet's status heartbeat (a write every ~10 s per node, the bulk of Node
 *   writes) equal to the previous value, so Typha skips it (`wouldBeNoOp`) instead of fanning
 *   it out to every agent, and the calc graph re-converts nothing;
 * - keeps what Typha holds per Node to a few hundred bytes.
 *
 * Addresses keep their `type` and order (the API server's); host names are dropped later, by
 * the reader (they are not IPs). `resourceVersion` is kept (Typha carries it apart from the
 * value).
 */
import type { K8sNode } from '../api/kubernetes.ts';

export function projectNodeForPeers(node: K8sNode & { apiVersion?: string; kind?: string }): K8sNode & { apiVersion?: string; kind?: string } {
  const m = node.metadata ?? {};
  return {
    ...(node.apiVersion === undefined ? {} : { apiVersion: node.apiVersion }),
    ...(node.kind === undefined ? {} : { kind: node.kind }),
    metadata: {
      ...(m.name === undefined ? {} : { name: m.name }),
      ...(m.resourceVersion === undefined ? {} : { resourceVersion: m.resourceVersion }),
      ...(m.labels === undefined ? {} : { labels: { ...m.labels } }),
    },
    status: { addresses: (node.status?.addresses ?? []).map((a) => ({ ...(a?.type === undefined ? {} : { type: a.type }), ...(a?.address === undefined ? {} : { address: a.address }) })) },
  };
}
