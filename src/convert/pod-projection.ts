/**
 * The controllers cache 20,000+ pods but read a handful of fields (workload-endpoint-
 * builder.ts). `projectPod` keeps only those; the controllers apply it at the source
 * (controllers/projecting-lister-watcher.ts), so their cache holds the small form.
 *
 * Keep `projectPod` in step with what `podToWorkloadEndpoint` reads; its unit test checks
 * that the endpoint built from a projected pod equals the one built from the full pod.
 */
import type { KubeObject } from '../informers/object.ts';
import type { K8sContainerPort, K8sPod } from '../api/index.ts';
import { isQoSAnnotation } from './pod-qos-annotations.ts';

type PodLike = K8sPod & KubeObject;

function ports(containers: Array<{ ports?: K8sContainerPort[] }> | undefined): Array<{ ports?: K8sContainerPort[] }> | undefined {
  if (containers === undefined) return undefined;
  return containers.map((c) => (c.ports === undefined ? {} : { ports: c.ports }));
}

/** Only the annotations QoS controls are read from (pod-qos-annotations.ts): most pods have none. */
function qosAnnotations(annotations: Record<string, string> | undefined): { annotations?: Record<string, string> } {
  if (annotations === undefined) return {};
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(annotations)) if (isQoSAnnotation(k)) (out ??= {})[k] = v;
  return out === undefined ? {} : { annotations: out };
}

export function projectPod(pod: PodLike): PodLike {
  const m = pod.metadata ?? {};
  const spec = pod.spec ?? {};
  const status = pod.status ?? {};
  const out: PodLike = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(m.name === undefined ? {} : { name: m.name }),
      ...(m.namespace === undefined ? {} : { namespace: m.namespace }),
      ...(m.uid === undefined ? {} : { uid: m.uid }),
      ...((m as { resourceVersion?: string }).resourceVersion === undefined ? {} : { resourceVersion: (m as { resourceVersion?: string }).resourceVersion }),
      ...(m.labels === undefined ? {} : { labels: m.labels }),
      ...qosAnnotations(m.annotations),
      ...(m.deletionTimestamp === undefined ? {} : { deletionTimestamp: m.deletionTimestamp }),
    } as PodLike['metadata'],
    spec: {
      ...(spec.nodeName === undefined ? {} : { nodeName: spec.nodeName }),
      ...(spec.hostNetwork === undefined ? {} : { hostNetwork: spec.hostNetwork }),
      ...(spec.serviceAccountName === undefined ? {} : { serviceAccountName: spec.serviceAccountName }),
      ...(spec.containers === undefined ? {} : { containers: ports(spec.containers) }),
      ...(spec.initContainers === undefined ? {} : { initContainers: ports(spec.initContainers) }),
    },
    status: {
      ...(status.phase === undefined ? {} : { phase: status.phase }),
      ...(status.podIP === undefined ? {} : { podIP: status.podIP }),
      ...(status.podIPs === undefined ? {} : { podIPs: status.podIPs.map((p) => ({ ip: p.ip })) }),
    },
  };
  return out;
}
