/**
 * Pod → WorkloadEndpoint (its entry of convert/conversions.ts), for clusters without Calico's
 * CNI. Owns only the endpoints it annotated `tessera.io/managed-by:
 * tessera-controllers`, so endpoints written by a CNI plugin are never touched. The
 * endpoint is deleted when its pod is gone, finished, or has lost its IPs; a pod moved
 * to another node (a new name) gets the new endpoint and loses the old. `interfaceNaming`
 * says whether endpoints name their host-side interface (`WorkloadInterfaceNaming`).
 */
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { mirrorOf, MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { isManaged, MANAGED_BY_ANNOTATION, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { apiVersionOf } from '../api/kinds.ts';
import { CONVERSIONS } from '../convert/conversions.ts';
import type { WorkloadEndpointBuildOptions } from '../convert/workload-endpoint-builder.ts';
import type { K8sPod } from '../api/index.ts';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

export function newWorkloadEndpointController(
  factory: InformerFactory,
  writer: Writer,
  common: Common = {},
  build: WorkloadEndpointBuildOptions = {},
): MirrorController<KubeObject, KubeObject> {
  const conversion = CONVERSIONS.pods;
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'workload-endpoints',
    ...mirrorOf(factory, conversion),
    writer,
    // Only endpoints this controller wrote: a CNI plugin's are never touched.
    sourceKeyOf: (t) => (isManaged(t) ? conversion.sourceKeyOf(t) : undefined),
    desired: (pod, _key, log) => {
      const { resource: wep, warnings } = conversion.convert(pod as K8sPod, build);
      // As Calico's converter: a QoS annotation it cannot use is a warning; the endpoint is built anyway.
      for (const w of warnings) log.warn({ kind: 'Pod', namespace: pod.metadata?.namespace, name: pod.metadata?.name }, `QoS annotation: ${w}`);
      if (wep === undefined) return [];
      const out: WrittenObject = {
        ...wep,
        metadata: {
          ...wep.metadata,
          annotations: { [MANAGED_BY_ANNOTATION]: MANAGED_BY_VALUE },
          ownerReferences: ownerReferenceTo({ apiVersion: apiVersionOf(conversion.source), kind: conversion.source.kind, metadata: pod.metadata ?? {} }),
        },
      };
      return [out];
    },
  });
}
