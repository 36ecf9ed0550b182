import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl } from './kubectl.ts';
import { adminKubeConfig, sharedControlPlane } from './shared-control-plane.ts';

const group = 'projectcalico.org';
const version = 'v3';

async function httpStatusOf(call: Promise<unknown>): Promise<number> {
  return call.then(
    () => 200,
    (err: unknown) => {
      if (err instanceof ApiException) return err.code;
      throw err;
    },
  );
}

describe('issueServiceAccountToken: a component identity with exactly the RBAC it is granted', () => {
  const namespace = `sa-token-${randomBytes(3).toString('hex')}`;
  let dir: string;
  let unregister: () => void;
  let identity: ServiceAccountIdentity;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-sa-token-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    const admin = adminKubeConfig();
    await installCalicoCrds(admin);
    const { server, caPem } = sharedControlPlane();
    identity = await issueServiceAccountToken(admin, {
      namespace,
      serviceAccount: 'policy-reader',
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'kubeconfig'),
    });
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('authenticates as system:serviceaccount:<namespace>:<name>, through kubectl and its kubeconfig file', async () => {
    expect(identity.username).toBe(`system:serviceaccount:${namespace}:policy-reader`);
    expect(existsSync(identity.kubeconfigPath)).toBe(true);

    const result = await kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], {
      kubeconfigPath: identity.kubeconfigPath,
    });

    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(identity.username);
  });

  it('is forbidden everything until RBAC grants it, then allowed exactly what was granted', async () => {
    const custom = identity.kubeConfig.makeApiClient(CustomObjectsApi);
    const listOwn = (): Promise<unknown> => custom.listNamespacedCustomObject({ group, version, namespace, plural: 'networkpolicies' });
    expect(await httpStatusOf(listOwn())).toBe(403);

    const rbac = adminKubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'policy-reader' },
        rules: [{ apiGroups: [group], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'policy-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'policy-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'policy-reader', namespace }],
      },
    });

    // The RBAC authorizer reads through an informer: the grant becomes visible shortly after.
    await pollUntil(async () => ((await httpStatusOf(listOwn())) === 200 ? true : undefined), {
      description: 'the RoleBinding to take effect',
      timeoutMs: 30_000,
    });
    expect(
      await httpStatusOf(
        custom.createNamespacedCustomObject({
          group, version, namespace, plural: 'networkpolicies',
          body: { apiVersion: `${group}/${version}`, kind: 'NetworkPolicy', metadata: { name: 'nope' }, spec: {} },
        }),
      ),
    ).toBe(403);
    expect(await httpStatusOf(custom.listNamespacedCustomObject({ group, version, namespace: 'default', plural: 'networkpolicies' }))).toBe(403);
    expect(await httpStatusOf(custom.listClusterCustomObject({ group, version, plural: 'globalnetworkpolicies' }))).toBe(403);
    const canI = await kubectl(['auth', 'can-i', 'list', 'networkpolicies.projectcalico.org', '-n', namespace], {
      kubeconfigPath: identity.kubeconfigPath,
    });
    expect(canI.stdout.trim()).toBe('yes');
  });

  it('rejects an expirationSeconds below the API minimum of 600 before calling the API', async () => {
    await expect(
      issueServiceAccountToken(adminKubeConfig(), {
        namespace,
        serviceAccount: 'policy-reader',
        server: sharedControlPlane().server,
        kubeconfigPath: join(dir, 'unused'),
        expirationSeconds: 60,
      }),
    ).rejects.toThrow(RangeError);
  });
});
