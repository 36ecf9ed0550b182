/**
 * `tessera simulate --kubeconfig` against the real kube-apiserver never answers from a
 * partial cluster: a kind its identity may not list fails the command (exit 3) naming that
 * kind, a wrong token fails it with the server's 401, and only a kind the server does not
 * serve (404, a CRD not installed) is a note.
 *
 * The shared control plane has every Calico CRD installed (test files install them and
 * never remove them, so other files can rely on them), so the 404 case asks the real server
 * for a projectcalico.org/v3 resource it does not serve — the same request and answer as
 * for an uninstalled CRD — through the loader `simulate --kubeconfig` uses
 * (`loadFromListers` with `KubeListerWatcher`s). The scripted-ListerWatcher unit test of the
 * same path is in src/simulate/load-objects.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { kindsWatchedBy, resourceName } from '../../src/api/kinds.ts';
import { runSimulate } from '../../src/cli/simulate.ts';
import { capture } from '../../src/cli/testdata/capture.ts';
import { KubeListerWatcher } from '../../src/informers/kube-lister-watcher.ts';
import type { KubeObject } from '../../src/informers/object.ts';
import { loadFromListers } from '../../src/simulate/load-objects.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { writeKubeconfig } from '../controlplane/kubeconfig.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl } from './kubectl.ts';
import { adminKubeConfig, sharedControlPlane } from './shared-control-plane.ts';

/** The kind `simulate`'s identity may not list. */
const WITHHELD = 'workloadendpoints.projectcalico.org';

/** Everything `simulate` lists (the kind table's `simulate` rows) except `WITHHELD`, one rule per API group. */
const GRANTED: ReadonlyArray<{ apiGroups: string[]; resources: string[] }> = (() => {
  const byGroup = new Map<string, string[]>();
  for (const row of kindsWatchedBy('simulate')) {
    if (resourceName(row) !== WITHHELD) byGroup.set(row.group, [...(byGroup.get(row.group) ?? []), row.plural]);
  }
  return [...byGroup].map(([group, resources]) => ({ apiGroups: [group], resources }));
})();

describe('tessera simulate --kubeconfig on a real API server', () => {
  const name = `cx-exit-${randomBytes(3).toString('hex')}`;
  let dir: string;
  let unregister: () => void;
  let reader: ServiceAccountIdentity;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cx-exit-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    const admin = adminKubeConfig();
    await installCalicoCrds(admin);
    const { server, caPem } = sharedControlPlane();
    reader = await issueServiceAccountToken(admin, {
      namespace: name,
      serviceAccount: 'cx-reader',
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'reader.kubeconfig'),
    });
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({ body: { metadata: { name }, rules: GRANTED.map((r) => ({ ...r, verbs: ['list'] })) } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name: 'cx-reader', namespace: name }],
      },
    });
    // The RBAC authorizer reads through an informer: wait until every grant is visible.
    const resources = GRANTED.flatMap((g) => g.resources.map((plural) => resourceName({ group: g.apiGroups[0] ?? '', plural })));
    await pollUntil(
      async () => {
        for (const r of resources) {
          const canI = await kubectl(['auth', 'can-i', 'list', r, '--all-namespaces'], { kubeconfigPath: reader.kubeconfigPath });
          if (canI.stdout.trim() !== 'yes') return undefined;
        }
        return true;
      },
      { description: `the ClusterRoleBinding ${name} to take effect`, timeoutMs: 30_000 },
    );
  });

  afterAll(async () => {
    const admin = adminKubeConfig();
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteClusterRoleBinding({ name });
    await rbac.deleteClusterRole({ name });
    await admin.makeApiClient(CoreV1Api).deleteNamespace({ name });
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('exits 3 naming the one kind its ServiceAccount may not list, with the server\'s reason, and prints no matrix', async () => {
    const r = await capture(runSimulate, ['--kubeconfig', reader.kubeconfigPath]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `tessera simulate: cannot list projectcalico.org/v3 WorkloadEndpoint: 403 Forbidden: workloadendpoints.projectcalico.org is forbidden: ` +
        `User "${reader.username}" cannot list resource "workloadendpoints" in API group "projectcalico.org" at the cluster scope\n`,
    );
    expect(r.code).toBe(3);
  });

  it('answers (exit 0) for an identity that may list every kind', async () => {
    const { server, token, caPem } = sharedControlPlane();
    const path = join(dir, 'admin.kubeconfig');
    writeKubeconfig(path, { server, token, user: 'tessera-admin', ...(caPem === null ? {} : { caPem }) });
    // Other files share this cluster and may leave objects behind (pods no node runs, objects
    // only Calico's validation rejects): those are notes here, the point is the exit status.
    const r = await capture(runSimulate, ['--kubeconfig', path, '--output', 'json', '--skip-invalid']);
    expect(r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('note: '))).toEqual([]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ protocol: 'TCP', port: 80 });
  });

  it('exits 3 with the server\'s 401 for a token it does not accept', async () => {
    const { server, caPem } = sharedControlPlane();
    const path = join(dir, 'bogus.kubeconfig');
    writeKubeconfig(path, { server, token: 'cx-not-a-token', user: 'nobody', ...(caPem === null ? {} : { caPem }) });
    const r = await capture(runSimulate, ['--kubeconfig', path]);
    expect(r).toEqual({ code: 3, stdout: '', stderr: 'tessera simulate: cannot list v1 Namespace: 401 Unauthorized: Unauthorized\n' });
  });

  it('a kind the server does not serve (404, as for a CRD not installed) is only a note', async () => {
    const kubeConfig = adminKubeConfig();
    const notes: string[] = [];
    const objs = await loadFromListers(
      (k) =>
        new KubeListerWatcher<KubeObject>({
          kubeConfig,
          resource: k.kind === 'Tier' ? { ...k.resource, plural: 'cxnotinstalledtiers' } : k.resource,
        }),
      notes,
      sharedControlPlane().server,
    );
    expect(notes).toEqual(['projectcalico.org/v3 Tier: not served by the API server (is its CRD installed?); none listed']);
    expect(objs.namespaces.map((n) => n.metadata?.name)).toContain(name);
  });
});
