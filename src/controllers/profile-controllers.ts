/**
 * Namespace → Profile `kns.<ns>` and ServiceAccount → Profile `ksa.<ns>.<sa>`
 * (profile-builder.ts), each removed with its source. Both own every Profile with their
 * prefix. `kns.` profiles carry an ownerReference to their Namespace; `ksa.` ones cannot
 * (a cluster-scoped object may not be owned by a namespaced one).
 */
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { namespaceToProfile, profileSource, serviceAccountToProfile } from '../convert/profile-builder.ts';
import type { K8sMetaObject } from '../api/index.ts';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

const PROFILES = { group: 'projectcalico.org', version: 'v3', plural: 'profiles' };
const PROFILE_TYPE = { apiVersion: 'projectcalico.org/v3', kind: 'Profile' };

export function newNamespaceProfileController(factory: InformerFactory, writer: Writer, common: Common = {}): MirrorController<KubeObject, KubeObject> {
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'namespace-profiles',
    source: factory.informerFor({ group: '', version: 'v1', plural: 'namespaces' }),
    target: factory.informerFor(PROFILES),
    targetType: PROFILE_TYPE,
    writer,
    sourceKeyOf: (t) => {
      const s = profileSource(t.metadata?.name ?? '');
      return s?.kind === 'namespace' ? s.name : undefined;
    },
    desired: (ns) => {
      const p = namespaceToProfile(ns as K8sMetaObject);
      const owner = ownerReferenceTo({ apiVersion: 'v1', kind: 'Namespace', metadata: ns.metadata ?? {} });
      const out: WrittenObject = { ...p, metadata: { ...p.metadata, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: owner } };
      return [out];
    },
  });
}

export function newServiceAccountProfileController(factory: InformerFactory, writer: Writer, common: Common = {}): MirrorController<KubeObject, KubeObject> {
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: 'serviceaccount-profiles',
    source: factory.informerFor({ group: '', version: 'v1', plural: 'serviceaccounts' }),
    target: factory.informerFor(PROFILES),
    targetType: PROFILE_TYPE,
    writer,
    sourceKeyOf: (t) => {
      const s = profileSource(t.metadata?.name ?? '');
      return s?.kind === 'serviceaccount' ? `${s.namespace}/${s.name}` : undefined;
    },
    desired: (sa) => {
      const p = serviceAccountToProfile(sa as K8sMetaObject);
      const out: WrittenObject = { ...p, metadata: { ...p.metadata, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: [] } };
      return [out];
    },
  });
}
