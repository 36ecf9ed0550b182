import { ApiException, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';

import { writeKubeconfig, type KubeconfigSpec } from './kubeconfig.ts';

/** Options for {@link issueServiceAccountToken}. */
export interface ServiceAccountTokenOptions {
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Where to write the identity's kubeconfig (for kubectl or a component under test). */
  readonly kubeconfigPath: string;
  /** API server URL and CA, as for the admin kubeconfig. */
  readonly server: string;
  readonly caPem?: string;
  /** Create the namespace and ServiceAccount when missing (no RBAC is granted). @default true */
  readonly create?: boolean;
  /** TokenRequest spec.expirationSeconds (the API's minimum is 600). @default 3600 */
  readonly expirationSeconds?: number;
  /** TokenRequest spec.audiences. @default the API server's own audience */
  readonly audiences?: readonly string[];
}

/** A bound service-account token and the ways to use it. */
export interface ServiceAccountIdentity {
  /** `system:serviceaccount:<namespace>:<name>`, the RBAC subject. */
  readonly username: string;
  readonly token: string;
  readonly expirationTimestamp: Date | undefined;
  readonly kubeConfig: KubeConfig;
  readonly kubeconfigPath: string;
}

/**
 * Issues a token for a ServiceAccount through the TokenRequest API
 * (`POST .../serviceaccounts/<name>/token`), so a test can run a component with exactly the
 * RBAC that manifests/ grant that ServiceAccount — no more (no system:masters), no less.
 *
 * `admin` must be allowed to create serviceaccounts/token (the control plane's admin is).
 */
export async function issueServiceAccountToken(
  admin: KubeConfig,
  options: ServiceAccountTokenOptions,
): Promise<ServiceAccountIdentity> {
  const { namespace, serviceAccount, kubeconfigPath, server, caPem, create = true, expirationSeconds = 3600, audiences } =
    options;
  if (!Number.isInteger(expirationSeconds) || expirationSeconds < 600) {
    throw new RangeError(`issueServiceAccountToken: expirationSeconds must be an integer ≥ 600, got ${expirationSeconds}`);
  }
  const core = admin.makeApiClient(CoreV1Api);
  if (create) {
    await createIfMissing(() => core.createNamespace({ body: { metadata: { name: namespace } } }));
    await createIfMissing(() =>
      core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: serviceAccount, namespace } } }),
    );
  }
  const response = await core.createNamespacedServiceAccountToken({
    name: serviceAccount,
    namespace,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds, audiences: audiences === undefined ? [] : [...audiences] },
    },
  });
  const token = response.status?.token;
  if (token === undefined || token === '') {
    throw new Error(`TokenRequest for ServiceAccount ${namespace}/${serviceAccount} returned no token`);
  }
  const username = `system:serviceaccount:${namespace}:${serviceAccount}`;
  const spec: KubeconfigSpec = {
    server,
    token,
    user: username,
    namespace,
    ...(caPem === undefined ? {} : { caPem }),
  };
  return {
    username,
    token,
    expirationTimestamp: response.status?.expirationTimestamp,
    kubeConfig: writeKubeconfig(kubeconfigPath, spec),
    kubeconfigPath,
  };
}

async function createIfMissing(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
  }
}
