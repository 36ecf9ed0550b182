import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';

import { pollUntil } from './poll-until.ts';

/**
 * Waits until the API server lists CRDs of `group` and every one of them is Established (their
 * resources are served only then): after `kubectl apply` of CRDs, before writing their objects.
 */
export async function waitForCrdsEstablished(kc: KubeConfig, group: string, timeoutMs = 60_000): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  await pollUntil(
    async () => {
      const crds = (await api.listCustomResourceDefinition()).items.filter((c) => c.spec.group === group);
      const ok = crds.length > 0 && crds.every((c) => (c.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True'));
      return ok ? true : undefined;
    },
    { description: `the ${group} CRDs to be Established`, timeoutMs },
  );
}
