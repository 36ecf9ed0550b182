import { fileURLToPath } from 'node:url';

import type { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';

import { kubeConfigFor } from '../controlplane/kubeconfig.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import type { ProvidedControlPlane } from './provided-control-plane.ts';

/** The repository root (crds/ and examples/ are read from here). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The control plane started by global-setup.ts for this run. */
export type SharedControlPlane = Extract<ProvidedControlPlane, { ok: true }>;

/**
 * The run's shared control plane. Throws — failing the calling test or hook with the build
 * or start-up error — when global-setup could not provide one: integration tests never skip.
 */
export function sharedControlPlane(): SharedControlPlane {
  const provided = inject('tesseraControlPlane');
  if (provided === undefined) {
    throw new Error('no control plane was provided: run these tests through the vitest `integration` project');
  }
  if (!provided.ok) {
    throw new Error(`the integration control plane could not be built or started:\n${provided.error}`);
  }
  return provided;
}

/** A client-node KubeConfig for the shared control plane's admin (system:masters). */
export function adminKubeConfig(): KubeConfig {
  const { server, token, caPem } = sharedControlPlane();
  return kubeConfigFor({ server, token, user: 'tessera-admin', ...(caPem === null ? {} : { caPem }) });
}

/**
 * The identity of manifests/' tessera-controllers ServiceAccount on the shared control plane (a
 * TokenRequest token; the manifests must be applied), its kubeconfig written to `kubeconfigPath`:
 * every read and write is then checked by exactly the RBAC the manifests grant.
 */
export async function controllersIdentity(kubeconfigPath: string): Promise<ServiceAccountIdentity> {
  const { server, caPem } = sharedControlPlane();
  return issueServiceAccountToken(adminKubeConfig(), {
    namespace: 'tessera-system',
    serviceAccount: 'tessera-controllers',
    create: false,
    server,
    ...(caPem === null ? {} : { caPem }),
    kubeconfigPath,
  });
}
