/**
 * Pod → WorkloadEndpoint (workload-endpoint-builder.ts), for clusters without Calico's
 * CNI. Owns only the endpoints it annotated `tessera.io/managed-by:
 * tessera-controllers`, so endpoints written by a CNI plugin are never touched. The
 * endpoint is deleted when its pod is gone, finished, or has lost its IPs; a pod moved
 * to another node (a new name) gets the new endpoint and loses the old. `interfaceNaming`
 * says whether endpoints name their host-side interface (`WorkloadInterfaceNaming`).
 */
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { isManaged, MANAGED_BY_ANNOTATION, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { podToWorkloadEndpoint, type WorkloadEndpointBuildOptions } from '../convert/workload-endpoint-builder.ts';
import type { K8sPod } from '../api/index.ts';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

export function newWorkloadEndpointController(
  factory: InformerFactory,
  writer: Writer,
  common: Common = {},
  build: WorkloadEndpointBuildOptions = {},
): MirrorController<KubeObject, KubeObject> {
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'workload-endpoints',
    source: factory.informerFor({ group: '', version: 'v1', plural: 'pods' }),
    target: factory.informerFor({ group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' }),
    targetType: { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint' },
    writer,
    sourceKeyOf: (t) => {
      if (!isManaged(t)) return undefined;
      const pod = (t as { spec?: { pod?: string } }).spec?.pod;
      return pod === undefined ? undefined : `${t.metadata?.namespace ?? ''}/${pod}`;
    },
    desired: (pod) => {
      const wep = podToWorkloadEndpoint(pod as K8sPod, build);
      if (wep === undefined) return [];
      const out: WrittenObject = {
        ...wep,
        metadata: {
          ...wep.metadata,
          annotations: { [MANAGED_BY_ANNOTATION]: MANAGED_BY_VALUE },
          ownerReferences: ownerReferenceTo({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata ?? {} }),
        },
      };
      return [out];
    },
  });
}
