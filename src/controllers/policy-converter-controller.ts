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
import { KNP_NAME_PREFIX } from '../api/names.ts';
import type { Logger } from '../runtime/logger.ts';
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { MirrorController, type MirrorControllerOptions } from './mirror-controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ownerReferenceTo } from './ownership.ts';
import { convertNetworkPolicy } from '../convert/policy-converter.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';

export const POLICY_CONVERTER = 'policy-converter';
export const CONVERSION_FAILED_REASON = 'RuleNotConverted';

type Common = Omit<MirrorControllerOptions<KubeObject, KubeObject>, 'name' | 'source' | 'target' | 'targetType' | 'sourceKeyOf' | 'desired' | 'writer'>;

/** The conversion function; injectable so tests can exercise paths a real apiserver's validation never lets through. */
export type ConvertFunc = typeof convertNetworkPolicy;

export function newPolicyConverterController(
  factory: InformerFactory,
  writer: Writer,
  common: Common = {},
  convert: ConvertFunc = convertNetworkPolicy,
): MirrorController<KubeObject, KubeObject> {
  const reported = new Map<string, string>();
  return new MirrorController<KubeObject, KubeObject>({
    ...common,
    name: POLICY_CONVERTER,
    source: factory.informerFor({ group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' }),
    target: factory.informerFor({ group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies' }),
    targetType: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy' },
    writer,
    sourceKeyOf: (t) => {
      const name = t.metadata?.name ?? '';
      if (!name.startsWith(KNP_NAME_PREFIX)) return undefined;
      return `${t.metadata?.namespace ?? ''}/${name.slice(KNP_NAME_PREFIX.length)}`;
    },
    forgetSource: (key) => reported.delete(key),
    desired: async (source, key, log: Logger) => {
      const np = source as K8sNetworkPolicy;
      const { policy, errors, warnings } = convert(np);
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
              apiVersion: 'networking.k8s.io/v1',
              kind: 'NetworkPolicy',
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
      const out: WrittenObject = {
        ...policy,
        metadata: {
          ...policy.metadata,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
          ownerReferences: ownerReferenceTo({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta }),
        },
      };
      return [out];
    },
  });
}
