/**
 * manifests/21-admission-datastore.yaml against the real API server: who may write
 * WorkloadEndpoints. Identities are real ServiceAccount tokens (TokenRequest) or the admin
 * impersonating (`kubectl --as/--as-group`), each with RBAC that would let it write
 * endpoints — so every refusal below is admission's, not RBAC's.
 *
 * - an ordinary user is refused create, update and delete; so is a cluster admin;
 * - the controllers' ServiceAccount may create, update and delete;
 * - a user name or a group listed in the policy's `writerUsernames`/`writerGroups` may write
 *   (a CNI plugin that writes endpoints itself), and is refused again once unlisted;
 * - the Kubernetes garbage collector may delete (ownerReferences to pods) but not create.
 *
 * (Before: anyone who could write a WorkloadEndpoint could claim another pod's interface.)
 * The bindings are cluster-wide: this file removes them at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, sharedControlPlane } from './shared-control-plane.ts';
import { removeTesseraAdmission } from './tessera-admission.ts';

const WAIT = { timeoutMs: 30_000, intervalMs: 200 };
const POLICY = 'tessera-reserve-workload-endpoints';
const REFUSED = /WorkloadEndpoints are written only by the Tessera controllers and the writers listed in ValidatingAdmissionPolicy tessera-reserve-workload-endpoints/;

interface Outcome {
  readonly code: number;
  readonly message: string;
}

async function outcome(call: Promise<unknown>): Promise<Outcome> {
  return call.then(
    () => ({ code: 200, message: '' }),
    (err: unknown) => {
      if (err instanceof ApiException) return { code: err.code, message: String(err.body) };
      throw err;
    },
  );
}

describe('admission for WorkloadEndpoints (manifests/21-admission-datastore.yaml)', () => {
  const ns = `tp-adm-${randomBytes(3).toString('hex')}`;
  const admin = adminKubeConfig();
  let dir: string;
  let unregister: () => void;
  let intruder: ServiceAccountIdentity;
  let controllers: ServiceAccountIdentity;
  let cni: ServiceAccountIdentity;

  const wep = (name: string, ip: string, dryRun = false) => ({
    group: 'projectcalico.org',
    version: 'v3',
    namespace: ns,
    plural: 'workloadendpoints',
    ...(dryRun ? { dryRun: 'All' } : {}),
    body: {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name, namespace: ns },
      spec: { orchestrator: 'k8s', node: 'tp-node', pod: name, endpoint: 'eth0', interfaceName: `tp${name}`.slice(0, 15), ipNetworks: [`${ip}/32`] },
    },
  });
  const api = (kc: KubeConfig): CustomObjectsApi => kc.makeApiClient(CustomObjectsApi);
  const create = (kc: KubeConfig, name: string, ip: string, dryRun = false): Promise<Outcome> => outcome(api(kc).createNamespacedCustomObject(wep(name, ip, dryRun)));
  const replace = async (kc: KubeConfig, name: string, ip: string): Promise<Outcome> => {
    const live = (await api(admin).getNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: ns, plural: 'workloadendpoints', name })) as { metadata: { resourceVersion: string } };
    const req = wep(name, ip);
    return outcome(api(kc).replaceNamespacedCustomObject({ ...req, name, body: { ...req.body, metadata: { ...req.body.metadata, resourceVersion: live.metadata.resourceVersion } } }));
  };
  const remove = (kc: KubeConfig, name: string): Promise<Outcome> =>
    outcome(api(kc).deleteNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: ns, plural: 'workloadendpoints', name }));
  /** Sets the policy's writer lists (variables 1 and 2 of manifests/21-admission-datastore.yaml), as an admin editing it would. */
  const writers = (usernames: readonly string[], groups: readonly string[]): Promise<string> => {
    const cel = (list: readonly string[]): string => `[${list.map((x) => `'${x}'`).join(', ')}]`;
    const patch = [
      { op: 'test', path: '/spec/variables/1/name', value: 'writerUsernames' },
      { op: 'replace', path: '/spec/variables/1/expression', value: cel(usernames) },
      { op: 'test', path: '/spec/variables/2/name', value: 'writerGroups' },
      { op: 'replace', path: '/spec/variables/2/expression', value: cel(groups) },
    ];
    return kubectlOk(['patch', 'validatingadmissionpolicy', POLICY, '--type=json', '-p', JSON.stringify(patch)]);
  };
  /** A WorkloadEndpoint manifest, for `kubectl create -f -` under impersonation. */
  const manifest = (name: string, ip: string): string => JSON.stringify(wep(name, ip).body);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-tp-adm-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await installCalicoCrds(admin);
    await kubectlOk(['apply', '-f', 'manifests/00-namespace.yaml', '-f', 'manifests/10-rbac-controllers.yaml', '-f', 'manifests/21-admission-datastore.yaml']);
    await kubectlOk(['create', 'namespace', ns]);
    const { server, caPem } = sharedControlPlane();
    const identity = (namespace: string, serviceAccount: string, create = true) =>
      issueServiceAccountToken(admin, { namespace, serviceAccount, create, server, ...(caPem === null ? {} : { caPem }), kubeconfigPath: join(dir, serviceAccount) });
    intruder = await identity(ns, 'tp-intruder');
    cni = await identity(ns, 'tp-cni');
    controllers = await identity('tessera-system', 'tessera-controllers', false);
    // Full RBAC on endpoints in the namespace for the intruder, the CNI, the group
    // tp-cni-writers and the garbage collector (whose own role has no create).
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'tp-wep-writer' }, rules: [{ apiGroups: ['projectcalico.org'], resources: ['workloadendpoints'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'tp-wep-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tp-wep-writer' },
        subjects: [
          { kind: 'ServiceAccount', name: 'tp-intruder', namespace: ns },
          { kind: 'ServiceAccount', name: 'tp-cni', namespace: ns },
          { kind: 'Group', name: 'tp-cni-writers', apiGroup: 'rbac.authorization.k8s.io' },
          { kind: 'ServiceAccount', name: 'generic-garbage-collector', namespace: 'kube-system' },
        ],
      },
    });
    // The policy and its binding reach the admission plugin through its own informers, and
    // the RBAC binding the authorizer: wait until a dry run is refused by admission itself.
    await pollUntil(
      async () => {
        const r = await create(intruder.kubeConfig, 'probe', '10.78.0.99', true);
        return r.code === 403 && REFUSED.test(r.message) ? true : undefined;
      },
      { description: 'the tessera-reserve-workload-endpoints binding to refuse the intruder', ...WAIT },
    );
  });

  afterAll(async () => {
    // The policies go too: one may still carry this file's writer lists.
    await removeTesseraAdmission();
    await kubectl(['delete', 'workloadendpoints.projectcalico.org', '--all', '-n', ns, '--ignore-not-found'], { kubeconfigPath: controllers?.kubeconfigPath });
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it("an ordinary user with RBAC for endpoints may not create, update or delete one (claiming another pod's interface)", async () => {
    const created = await create(intruder.kubeConfig, 'tp-evil', '10.78.0.1');
    expect(created.code).toBe(403);
    expect(created.message).toContain(`${intruder.username} may not create ${ns}/tp-evil`);

    expect((await create(controllers.kubeConfig, 'tp-victim', '10.78.0.2')).code).toBe(200);
    const updated = await replace(intruder.kubeConfig, 'tp-victim', '10.78.0.3');
    expect(updated.code).toBe(403);
    expect(updated.message).toContain(`${intruder.username} may not update ${ns}/tp-victim`);
    const deleted = await remove(intruder.kubeConfig, 'tp-victim');
    expect(deleted.code).toBe(403);
    expect(deleted.message).toContain(`may not delete ${ns}/tp-victim`);
  });

  it('a cluster admin (system:masters) is refused too', async () => {
    const r = await kubectl(['create', '-f', '-', '--as=tp-admin', '--as-group=system:masters'], { stdin: manifest('tp-by-admin', '10.78.0.4') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(REFUSED);
    expect(r.stderr).toContain('tp-admin may not create');
  });

  it("the controllers' ServiceAccount creates, updates and deletes endpoints", async () => {
    expect((await create(controllers.kubeConfig, 'tp-ctl', '10.78.0.5')).code).toBe(200);
    expect((await replace(controllers.kubeConfig, 'tp-ctl', '10.78.0.6')).code).toBe(200);
    expect((await remove(controllers.kubeConfig, 'tp-ctl')).code).toBe(200);
  });

  it("a user name or group listed in the policy's writers may write; unlisted, it is refused again", async () => {
    await writers(['system:serviceaccount:kube-system:calico-cni-plugin', cni.username], ['tp-cni-writers']);
    await pollUntil(async () => ((await create(cni.kubeConfig, 'probe', '10.78.0.98', true)).code === 200 ? true : undefined), {
      description: 'the listed user name to be admitted',
      ...WAIT,
    });
    expect((await create(cni.kubeConfig, 'tp-cni-ep', '10.78.0.7')).code).toBe(200);
    expect((await replace(cni.kubeConfig, 'tp-cni-ep', '10.78.0.8')).code).toBe(200);
    const byGroup = await kubectl(['create', '-f', '-', '--as=tp-cni-other', '--as-group=tp-cni-writers'], { stdin: manifest('tp-group-ep', '10.78.0.9') });
    expect(byGroup.stderr).toBe('');
    expect(byGroup.code).toBe(0);
    expect((await create(intruder.kubeConfig, 'tp-evil-2', '10.78.0.10')).code).toBe(403);

    await writers([], []);
    await pollUntil(async () => ((await create(cni.kubeConfig, 'probe', '10.78.0.98', true)).code === 403 ? true : undefined), {
      description: 'the unlisted user name to be refused',
      ...WAIT,
    });
    expect((await remove(cni.kubeConfig, 'tp-cni-ep')).code).toBe(403);
  });

  it('the garbage collector may delete an endpoint (its pod is gone) but not create one', async () => {
    const gc = ['--as=system:serviceaccount:kube-system:generic-garbage-collector'];
    expect((await create(controllers.kubeConfig, 'tp-orphan', '10.78.0.11')).code).toBe(200);
    const created = await kubectl(['create', '-f', '-', ...gc], { stdin: manifest('tp-by-gc', '10.78.0.12') });
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(REFUSED);
    const deleted = await kubectl(['delete', 'workloadendpoints.projectcalico.org', 'tp-orphan', '-n', ns, ...gc]);
    expect(deleted.stderr).toBe('');
    expect(deleted.code).toBe(0);
  });
});
