/**
 * Namespace → Profile `kns.<ns>` and ServiceAccount → Profile `ksa.<ns>.<sa>` (their entries
 * of convert/conversions.ts), each removed with its source. Both own every Profile with their
 * prefix. `kns.` profiles carry an ownerReference to their Namespace; `ksa.` ones cannot
 * (a cluster-scoped object may not be owned by a namespaced one).
 */
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { mirrorOf, MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { apiVersionOf } from '../api/kinds.ts';
import { CONVERSIONS } from '../convert/conversions.ts';
import type { K8sMetaObject } from '../api/index.ts';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

export function newNamespaceProfileController(factory: InformerFactory, writer: Writer, common: Common = {}): MirrorController<KubeObject, KubeObject> {
  const conversion = CONVERSIONS.namespaces;
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'namespace-profiles',
    ...mirrorOf(factory, conversion),
    writer,
    desired: (ns) => {
      const p = conversion.convert(ns as K8sMetaObject).resource;
      if (p === undefined) return [];
      const owner = ownerReferenceTo({ apiVersion: apiVersionOf(conversion.source), kind: conversion.source.kind, metadata: ns.metadata ?? {} });
      const out: WrittenObject = { ...p, metadata: { ...p.metadata, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: owner } };
      return [out];
    },
  });
}

export function newServiceAccountProfileController(factory: InformerFactory, writer: Writer, common: Common = {}): MirrorController<KubeObject, KubeObject> {
  const conversion = CONVERSIONS.serviceaccounts;
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'serviceaccount-profiles',
    ...mirrorOf(factory, conversion),
    writer,
    desired: (sa) => {
      const p = conversion.convert(sa as K8sMetaObject).resource;
      if (p === undefined) return [];
      const out: WrittenObject = { ...p, metadata: { ...p.metadata, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: [] } };
      return [out];
    },
  });
}
