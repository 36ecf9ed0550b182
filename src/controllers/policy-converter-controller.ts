/**
 * Kubernetes NetworkPolicy → `knp.default.<name>` (calico-semantics §3.1, etcd-mode
 * kube-controllers, but with KDD mode's partial conversion): the converter owns every
 * `knp.default.*` policy — it creates and updates them, reverts hand edits, and deletes
 * any whose Kubernetes policy is gone, whoever created it.
 *
 * A rule that cannot be converted is dropped and the rest written; a Warning Event on the
 * Kubernetes policy and a log line name the rule and the reason, once per distinct set of
 * errors per policy generation.
 */
import type { Logger } from '../runtime/logger.ts';
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { mirrorOf, MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { apiVersionOf } from '../api/kinds.ts';
import { CONVERSIONS, networkPolicyConversion } from '../convert/conversions.ts';
import type { convertNetworkPolicy } from '../convert/policy-converter.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';

export const POLICY_CONVERTER = 'policy-converter';
export const CONVERSION_FAILED_REASON = 'RuleNotConverted';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

/**
 * Replaces the table's NetworkPolicy conversion (convert/conversions.ts); injectable so tests
 * can exercise paths a real apiserver's validation never lets through.
 */
export type ConvertFunc = typeof convertNetworkPolicy;

export function newPolicyConverterController(
  factory: InformerFactory,
  writer: Writer,
  common: Common = {},
  convert?: ConvertFunc,
): MirrorController<KubeObject, KubeObject> {
  const conversion = convert === undefined ? CONVERSIONS['networkpolicies.networking.k8s.io'] : networkPolicyConversion(convert);
  const sourceType = { apiVersion: apiVersionOf(conversion.source), kind: conversion.source.kind };
  const reported = new Map<string, string>();
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: POLICY_CONVERTER,
    ...mirrorOf(factory, conversion),
    writer,
    forgetSource: (key) => reported.delete(key),
    desired: async (source, key, log: Logger) => {
      const np = source as K8sNetworkPolicy;
      const { resource: policy, errors, warnings } = conversion.convert(np);
      const meta = np.metadata ?? {};
      for (const w of warnings) log.warn({ kind: 'NetworkPolicy', namespace: meta.namespace, name: meta.name }, w);
      const signature = `${String((source.metadata as { generation?: number } | undefined)?.generation ?? meta.resourceVersion)}:${JSON.stringify(errors)}`;
      if (errors.length > 0 && reported.get(key) !== signature) {
        for (const e of errors) {
          const message = `spec.${e.direction}[${e.index}] dropped: ${e.reason}`;
          log.warn({ kind: 'NetworkPolicy', namespace: meta.namespace, name: meta.name, rule: `${e.direction}[${e.index}]`, reason: e.reason }, 'rule not converted; the rest of the policy is enforced');
          // The Event is a report, not a precondition: failing to write it must not keep the
          // rest of the policy from being enforced.
          await writer.warningEvent(
            {
              ...sourceType,
              namespace: meta.namespace ?? 'default',
              name: meta.name ?? '',
              ...(meta.uid === undefined ? {} : { uid: meta.uid }),
              ...(meta.resourceVersion === undefined ? {} : { resourceVersion: meta.resourceVersion }),
            },
            CONVERSION_FAILED_REASON,
            message,
          ).catch((err: unknown) => log.warn({ err, kind: 'NetworkPolicy', namespace: meta.namespace, name: meta.name }, 'could not record the Event'));
        }
      }
      if (errors.length > 0) reported.set(key, signature);
      else reported.delete(key);
      if (policy === undefined) return [];
      const out: WrittenObject = {
        ...policy,
        metadata: {
          ...policy.metadata,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
          ownerReferences: ownerReferenceTo({ ...sourceType, metadata: meta }),
        },
      };
      return [out];
    },
  });
}
