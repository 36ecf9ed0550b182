/**
 * The controllers cache every Node but read a handful of its fields (auto-host-endpoint-
 * builder.ts): name, uid, labels, the address annotations calico-node writes, and the
 * InternalIP addresses. `projectNode` keeps only those — a Node's status (images, conditions,
 * volumes) is most of its size — and the controllers apply it at the source
 * (controllers/projecting-lister-watcher.ts).
 *
 * Keep `projectNode` in step with what `nodeToAutoHostEndpoint` reads; its unit test checks
 * that the host endpoint built from a projected node equals the one built from the full node.
 */
import type { K8sNode } from '../api/kubernetes.ts';
import type { KubeObject } from '../informers/object.ts';
import { INTERNAL_IP, NODE_ADDRESS_ANNOTATIONS } from './auto-host-endpoint-builder.ts';

type NodeLike = K8sNode & KubeObject;

const READ_ANNOTATIONS: ReadonlySet<string> = new Set(NODE_ADDRESS_ANNOTATIONS.map(([key]) => key));

function addressAnnotations(annotations: Record<string, string> | undefined): { annotations?: Record<string, string> } {
  if (annotations === undefined) return {};
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(annotations)) if (READ_ANNOTATIONS.has(k)) (out ??= {})[k] = v;
  return out === undefined ? {} : { annotations: out };
}

export function projectNode(node: NodeLike): NodeLike {
  const m = node.metadata ?? {};
  const addresses = node.status?.addresses?.filter((a) => a.type === INTERNAL_IP).map((a) => ({ type: a.type, address: a.address }));
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      ...(m.name === undefined ? {} : { name: m.name }),
      ...(m.uid === undefined ? {} : { uid: m.uid }),
      ...(m.resourceVersion === undefined ? {} : { resourceVersion: m.resourceVersion }),
      ...(m.labels === undefined ? {} : { labels: m.labels }),
      ...addressAnnotations(m.annotations),
    } as NodeLike['metadata'],
    status: addresses === undefined ? {} : { addresses },
  };
}
