/**
 * manifests/ against the real API server: `kubectl apply -f manifests/` installs (the
 * workloads never run — there is no kubelet), a second apply changes nothing, the RBAC
 * is least-privilege (the agent cannot write), the admission policy reserves
 * knp.default.* policies for the controllers' ServiceAccount, and the workloads' pods are
 * admitted with their priority classes, RuntimeDefault seccomp and memory bounds.
 *
 * The admission policies are cluster-wide, so this file removes them at the end: other
 * files' tests must not depend on them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  NetworkingV1Api,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  SchedulingV1Api,
  type KubeConfig,
  type V1ClusterRole,
  type V1Pod,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { apiVersionOf, KINDS, kindsWatchedBy, resourceName, resourceOf, type KindRow, type KindWatcher } from '../../src/api/kinds.ts';
import { UNENFORCED_RESOURCES, unreadKind } from '../../src/api/unenforced-kinds.ts';
import { KubeListerWatcher } from '../../src/informers/kube-lister-watcher.ts';
import { StatusError } from '../../src/informers/lister-watcher.ts';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, REPO_ROOT, sharedControlPlane } from './shared-control-plane.ts';
import { removeTesseraAdmission } from './tessera-admission.ts';

/** Each process's ClusterRole in manifests/, by the kind-table watcher it serves. */
const CLUSTER_ROLES: ReadonlyArray<{ readonly watcher: KindWatcher; readonly role: string }> = [
  { watcher: 'agent', role: 'tessera-agent' },
  { watcher: 'typha', role: 'tessera-typha' },
  { watcher: 'controllers', role: 'tessera-controllers' },
];

/** The ClusterRoles in manifests/*.yaml, by name (read from the files `kubectl apply` reads). */
function manifestClusterRoles(): Map<string, V1ClusterRole> {
  const dir = join(REPO_ROOT, 'manifests');
  const roles = new Map<string, V1ClusterRole>();
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const o = doc.toJS() as V1ClusterRole | null;
      if (o?.kind === 'ClusterRole' && o.metadata?.name !== undefined) roles.set(o.metadata.name, o);
    }
  }
  return roles;
}

/** `<plural>.<group>` of every resource `role` lets its holder both list and watch. */
function listedAndWatched(role: V1ClusterRole): string[] {
  const out = new Set<string>();
  for (const rule of role.rules ?? []) {
    if (!(rule.verbs.includes('list') && rule.verbs.includes('watch'))) continue;
    for (const group of rule.apiGroups ?? []) for (const plural of rule.resources ?? []) out.add(resourceName({ group, plural }));
  }
  return [...out].sort();
}

/** The HTTP status of listing `row`'s resource (all namespaces) as `kubeConfig`'s identity: 200 or the server's error. */
async function listStatus(kubeConfig: KubeConfig, row: KindRow): Promise<number> {
  try {
    await new KubeListerWatcher({ kubeConfig, resource: resourceOf(row) }).list({ limit: 1 });
    return 200;
  } catch (err) {
    if (err instanceof StatusError) return err.code;
    throw err;
  }
}

/** `<plural>.<group>` → list status, for every kind `watcher` watches. */
async function listStatuses(kubeConfig: KubeConfig, watcher: KindWatcher): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const row of kindsWatchedBy(watcher)) out[resourceName(row)] = await listStatus(kubeConfig, row);
  return out;
}

/** Every kind `watcher` watches, listed with 200. */
function allListed(watcher: KindWatcher): Record<string, number> {
  return Object.fromEntries(kindsWatchedBy(watcher).map((row) => [resourceName(row), 200]));
}

async function statusOf(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  return call.then(
    () => ({ code: 200, message: '' }),
    (err: unknown) => {
      if (err instanceof ApiException) return { code: err.code, message: String(err.body) };
      throw err;
    },
  );
}

/** Mebibytes in a memory quantity the manifests use (`128Mi`, `1Gi`). */
function mebibytes(quantity: string | undefined): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
  if (m === null) throw new Error(`memory quantity ${JSON.stringify(quantity)}: expected <n>Mi or <n>Gi`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

/**
 * Creates a pod from a workload's template, as its controller would, and returns it as the
 * API server admitted it (priority resolved from the class, defaults applied); then deletes
 * it. With no scheduler it stays unbound, so the delete is immediate.
 */
async function admitPod(template: V1PodTemplateSpec | undefined, name: string): Promise<V1Pod> {
  if (template === undefined) throw new Error(`${name}: the workload has no spec.template`);
  const core = adminKubeConfig().makeApiClient(CoreV1Api);
  const namespace = 'tessera-system';
  const body: V1Pod = { metadata: { ...template.metadata, name: `${name}-${randomBytes(3).toString('hex')}` }, spec: template.spec };
  const pod = await core.createNamespacedPod({ namespace, body });
  await core.deleteNamespacedPod({ namespace, name: pod.metadata?.name ?? '', gracePeriodSeconds: 0 });
  return pod;
}

function knp(name: string, namespace: string): object {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec: { tier: 'default', order: 1000, selector: 'all()', types: ['Ingress'] },
  };
}

describe('kubectl apply -f manifests/', () => {
  const namespace = `manifests-${randomBytes(3).toString('hex')}`;
  let dir: string;
  let unregister: () => void;
  const identities: Record<string, ServiceAccountIdentity> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-manifests-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  });

  afterAll(async () => {
    await removeTesseraAdmission();
    await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('each process\'s ClusterRole lets it list and watch exactly the kinds it watches (the kind table)', () => {
    const roles = manifestClusterRoles();
    for (const { watcher, role } of CLUSTER_ROLES) {
      const clusterRole = roles.get(role);
      expect(clusterRole, `ClusterRole ${role} in manifests/`).toBeDefined();
      // The agent also lists and watches the policy kinds it does not enforce, only to report them;
      // the agent and Typha may list and watch a kind the table declares but the tools still report
      // not enforced (HostEndpoint), so that enforcing it needs no RBAC change.
      const reported = watcher === 'agent' ? UNENFORCED_RESOURCES.map((r) => resourceName(r.resource)) : [];
      const ahead = watcher === 'controllers' ? [] : KINDS.filter((r: KindRow) => r.crd === true && unreadKind(apiVersionOf(r), r.kind).status === 'not-enforced').map(resourceName);
      const expected = [...new Set([...kindsWatchedBy(watcher).map(resourceName), ...reported, ...ahead])].sort();
      expect({ role, resources: listedAndWatched(clusterRole!) }).toEqual({ role, resources: expected });
    }
  });

  it('installs against the real API server', async () => {
    const result = await kubectl(['apply', '-f', 'manifests/']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    for (const kind of [
      'namespace/tessera-system',
      'customresourcedefinition.apiextensions.k8s.io/networkpolicies.projectcalico.org',
      'serviceaccount/tessera-controllers',
      'serviceaccount/tessera-agent',
      'clusterrole.rbac.authorization.k8s.io/tessera-controllers',
      'clusterrole.rbac.authorization.k8s.io/tessera-agent',
      'validatingadmissionpolicy.admissionregistration.k8s.io/tessera-reserve-knp-policies',
      'priorityclass.scheduling.k8s.io/tessera-controllers',
      'deployment.apps/tessera-controllers',
      'poddisruptionbudget.policy/tessera-controllers',
      'daemonset.apps/tessera-agent',
      'serviceaccount/tessera-typha',
      'clusterrole.rbac.authorization.k8s.io/tessera-typha',
      'role.rbac.authorization.k8s.io/tessera-typha',
      'service/tessera-typha',
      'deployment.apps/tessera-typha',
      'poddisruptionbudget.policy/tessera-typha',
    ]) {
      expect(result.stdout).toContain(kind);
    }
    await installCalicoCrds(adminKubeConfig()); // waits for Established
    const deploy = await kubectlOk(['get', '-n', 'tessera-system', 'deployment/tessera-controllers', '-o', 'jsonpath={.spec.replicas}']);
    expect(deploy).toBe('2');
  });

  it('applying it a second time changes nothing', async () => {
    const pdbVersion = (): Promise<string> =>
      kubectlOk(['get', '-n', 'tessera-system', 'poddisruptionbudget/tessera-controllers', '-o', 'jsonpath={.metadata.resourceVersion}']);
    const before = await pdbVersion();
    const out = await kubectlOk(['apply', '-f', 'manifests/']);
    const lines = out.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(15);
    // kubectl's client-side apply reports a PodDisruptionBudget "configured" every time: its
    // spec.selector has patch strategy "replace", so the computed patch is never empty. The
    // API server finds nothing to change: the resourceVersion stays.
    const pdbs = ['poddisruptionbudget.policy/tessera-controllers', 'poddisruptionbudget.policy/tessera-typha'];
    for (const pdb of pdbs) expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${pdb} (unchanged|configured)$`)));
    for (const line of lines.filter((l) => !pdbs.some((pdb) => l.startsWith(`${pdb} `)))) expect(line).toMatch(/ unchanged$/);
    expect(await pdbVersion()).toBe(before);
  });

  it('the controllers have their PriorityClass and a PodDisruptionBudget; both workloads are admitted with RuntimeDefault seccomp and memory bounds', async () => {
    const admin = adminKubeConfig();
    const apps = admin.makeApiClient(AppsV1Api);
    const deployment = await apps.readNamespacedDeployment({ namespace: 'tessera-system', name: 'tessera-controllers' });
    const daemonSet = await apps.readNamespacedDaemonSet({ namespace: 'tessera-system', name: 'tessera-agent' });

    const priorityClass = await admin.makeApiClient(SchedulingV1Api).readPriorityClass({ name: 'tessera-controllers' });
    expect(priorityClass.value).toBe(1_000_000_000); // the highest a user may set
    expect(priorityClass.globalDefault ?? false).toBe(false); // not every pod's class

    const pdb = await admin.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({ namespace: 'tessera-system', name: 'tessera-controllers' });
    expect(pdb.spec?.maxUnavailable).toBe(1);
    expect(pdb.spec?.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
    expect(deployment.spec?.template.metadata?.labels).toMatchObject(pdb.spec?.selector?.matchLabels ?? { selector: 'missing' });

    const controllersPod = await admitPod(deployment.spec?.template, 'tessera-controllers');
    expect(controllersPod.spec?.priorityClassName).toBe('tessera-controllers');
    expect(controllersPod.spec?.priority).toBe(1_000_000_000);
    const agentPod = await admitPod(daemonSet.spec?.template, 'tessera-agent');
    expect(agentPod.spec?.priorityClassName).toBe('system-node-critical');
    expect(agentPod.spec?.priority).toBe(2_000_001_000);
    const typha = await apps.readNamespacedDeployment({ namespace: 'tessera-system', name: 'tessera-typha' });
    expect(typha.spec?.replicas).toBe(2);
    const typhaPdb = await admin.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({ namespace: 'tessera-system', name: 'tessera-typha' });
    expect(typha.spec?.template.metadata?.labels).toMatchObject(typhaPdb.spec?.selector?.matchLabels ?? { selector: 'missing' });
    const typhaPod = await admitPod(typha.spec?.template, 'tessera-typha');
    expect(typhaPod.spec?.priorityClassName).toBe('system-cluster-critical');
    expect(typhaPod.spec?.securityContext?.runAsUser).toBe(65532);
    expect(typhaPod.spec?.securityContext?.runAsNonRoot).toBe(true);

    for (const pod of [controllersPod, agentPod, typhaPod]) {
      expect(pod.spec?.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
      for (const c of pod.spec?.containers ?? []) {
        // The image's entrypoint (the compiled `tessera`) runs; the manifest only picks the sub-command.
        expect(c.command).toBeUndefined();
        const { requests, limits } = c.resources ?? {};
        expect(mebibytes(requests?.['memory'])).toBeGreaterThanOrEqual(128);
        expect(mebibytes(limits?.['memory'])).toBeGreaterThan(mebibytes(requests?.['memory']));
        expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
        expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
        expect(c.securityContext?.capabilities?.drop).toEqual(['ALL']);
      }
    }
  });

  it('the agent ServiceAccount is read-only: creating a NetworkPolicy is forbidden (403), listing every kind it watches is allowed', async () => {
    const admin = adminKubeConfig();
    const { server, caPem } = sharedControlPlane();
    identities['agent'] = await issueServiceAccountToken(admin, {
      namespace: 'tessera-system',
      serviceAccount: 'tessera-agent',
      create: false,
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'agent'),
    });
    const agent = identities['agent'].kubeConfig;
    await kubectlOk(['create', 'namespace', namespace]);
    const net = agent.makeApiClient(NetworkingV1Api);
    const denied = await statusOf(
      net.createNamespacedNetworkPolicy({ namespace, body: { metadata: { name: 'x' }, spec: { podSelector: {} } } }),
    );
    expect(denied.code).toBe(403);
    const custom = agent.makeApiClient(CustomObjectsApi);
    const write = await statusOf(
      custom.createNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace, plural: 'networkpolicies', body: knp('y', namespace) }),
    );
    expect(write.code).toBe(403);
    expect(await listStatuses(agent, 'agent')).toEqual(allListed('agent'));
  });

  it('the Typha ServiceAccount may list/watch the kinds it watches, list nodes and its namespace\'s EndpointSlices, and nothing more', async () => {
    const admin = adminKubeConfig();
    const { server, caPem } = sharedControlPlane();
    const typha = await issueServiceAccountToken(admin, {
      namespace: 'tessera-system',
      serviceAccount: 'tessera-typha',
      create: false,
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'typha'),
    });
    const custom = typha.kubeConfig.makeApiClient(CustomObjectsApi);
    expect(await listStatuses(typha.kubeConfig, 'typha')).toEqual(allListed('typha'));
    const core = typha.kubeConfig.makeApiClient(CoreV1Api);
    expect((await statusOf(core.listNode())).code).toBe(200);
    const discovery = typha.kubeConfig.makeApiClient(DiscoveryV1Api);
    expect((await statusOf(discovery.listNamespacedEndpointSlice({ namespace: 'tessera-system', labelSelector: 'kubernetes.io/service-name=tessera-typha' }))).code).toBe(200);
    // Typha carries every namespace's EndpointSlices to the agents (`services` rule matches).
    expect((await statusOf(discovery.listNamespacedEndpointSlice({ namespace: 'default' }))).code).toBe(200);
    expect((await statusOf(discovery.createNamespacedEndpointSlice({ namespace: 'default', body: { addressType: 'IPv4', endpoints: [], metadata: { name: 'typha-may-not' } } }))).code).toBe(403);
    expect((await statusOf(core.listNamespacedSecret({ namespace: 'tessera-system' }))).code).toBe(403);
    expect((await statusOf(core.listPodForAllNamespaces())).code).toBe(403);
    expect((await statusOf(custom.getClusterCustomObject({ group: 'projectcalico.org', version: 'v3', plural: 'tiers', name: 'default' }))).code).toBe(403);
    const write = await statusOf(
      custom.createNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: 'default', plural: 'networkpolicies', body: knp('z', 'default') }),
    );
    expect(write.code).toBe(403);
  });

  it('the controllers ServiceAccount may list every kind the controllers watch', async () => {
    const admin = adminKubeConfig();
    const { server, caPem } = sharedControlPlane();
    const controllers = await issueServiceAccountToken(admin, {
      namespace: 'tessera-system',
      serviceAccount: 'tessera-controllers',
      create: false,
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'controllers-lists'),
    });
    expect(await listStatuses(controllers.kubeConfig, 'controllers')).toEqual(allListed('controllers'));
  });

  it('only the controllers ServiceAccount may create knp.default.* policies (ValidatingAdmissionPolicy)', async () => {
    const admin = adminKubeConfig();
    const { server, caPem } = sharedControlPlane();
    // A user with full RBAC on Calico policies in the namespace, who is not the controllers.
    const intruder = await issueServiceAccountToken(admin, {
      namespace,
      serviceAccount: 'intruder',
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'intruder'),
    });
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'calico-policy-writer' },
        rules: [{ apiGroups: ['projectcalico.org'], resources: ['networkpolicies'], verbs: ['create', 'update', 'patch', 'get'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'calico-policy-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'calico-policy-writer' },
        subjects: [{ kind: 'ServiceAccount', name: 'intruder', namespace }],
      },
    });
    const custom = intruder.kubeConfig.makeApiClient(CustomObjectsApi);
    const create = (name: string): Promise<{ code: number; message: string }> =>
      statusOf(
        custom.createNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace, plural: 'networkpolicies', body: knp(name, namespace) }),
      );
    // RBAC bindings and the policy's type checking take a moment to reach the authorizer/admission.
    let attempt = 0;
    await pollUntil(async () => ((await create(`ordinary-${attempt++}`)).code === 200 ? true : undefined), {
      description: 'the intruder RBAC to take effect',
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    const denied = await pollUntil(
      async () => {
        const r = await create('knp.default.x');
        return r.code === 200 ? undefined : r;
      },
      { description: 'the admission policy to deny knp.default.x', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(denied.code).toBe(403);
    expect(denied.message).toMatch(/knp\.default\.\* policies are written by Tessera/);

    // The controllers' own identity is allowed through.
    const controllers = await issueServiceAccountToken(admin, {
      namespace: 'tessera-system',
      serviceAccount: 'tessera-controllers',
      create: false,
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'controllers'),
    });
    const allowed = await statusOf(
      controllers.kubeConfig
        .makeApiClient(CustomObjectsApi)
        .createNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace, plural: 'networkpolicies', body: knp('knp.default.x', namespace) }),
    );
    expect(allowed.code).toBe(200);
  });
});
