import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ApiextensionsV1Api, type KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

import { KINDS, resourceName, type KindRow } from '../../src/api/kinds.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { kubectlOk } from './kubectl.ts';
import { REPO_ROOT } from './shared-control-plane.ts';

/** The CRDs Tessera serves (sorted): the kind table's `crd` rows — the projectcalico.org/v3 kinds and ClusterNetworkPolicy. */
export const CALICO_CRD_NAMES: readonly string[] = KINDS.filter((r: KindRow) => r.crd === true)
  .map(resourceName)
  .sort();

export const CRDS_DIR = join(REPO_ROOT, 'crds');

/** metadata.name of every CustomResourceDefinition in crds/*.yaml (what kubectl apply -f crds/ reads). */
export function crdNamesInRepo(): string[] {
  const names: string[] = [];
  for (const file of readdirSync(CRDS_DIR).filter((f) => /\.(ya?ml|json)$/.test(f))) {
    for (const doc of parseAllDocuments(readFileSync(join(CRDS_DIR, file), 'utf8'))) {
      const object = doc.toJS() as { kind?: unknown; metadata?: { name?: unknown } } | null;
      if (object?.kind === 'CustomResourceDefinition' && typeof object.metadata?.name === 'string') {
        names.push(object.metadata.name);
      }
    }
  }
  return names.sort();
}

/**
 * `kubectl apply -f crds/` on the cluster `admin` points at (the shared control plane or a
 * test's own), then waits until every CRD in there is Established and NamesAccepted (before
 * that, requests for its resources get 404). Idempotent, so every test file that needs the
 * CRDs can call it whatever order the files run in. Returns the CRDs.
 */
export async function installCalicoCrds(admin: KubeConfig, timeoutMs = 60_000): Promise<V1CustomResourceDefinition[]> {
  await kubectlOk(['apply', '-f', 'crds/'], { kubeConfig: admin });
  const api = admin.makeApiClient(ApiextensionsV1Api);
  return Promise.all(
    crdNamesInRepo().map((name) =>
      pollUntil(
        async () => {
          const crd = await api.readCustomResourceDefinition({ name });
          const conditions = crd.status?.conditions ?? [];
          const isTrue = (type: string): boolean => conditions.some((c) => c.type === type && c.status === 'True');
          return isTrue('Established') && isTrue('NamesAccepted') ? crd : undefined;
        },
        { description: `CRD ${name} to be Established and NamesAccepted`, timeoutMs },
      ),
    ),
  );
}
