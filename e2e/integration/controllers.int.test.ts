/**
 * The controllers against the real API server, authenticated with a TokenRequest token of
 * their own ServiceAccount from manifests/ — so every read and write is checked by exactly
 * the RBAC the manifests grant.
 *
 * - In-process (`startControllers`): default tiers; orphans removed at start; Kubernetes
 *   NetworkPolicy create/update/delete mirrored to knp.default.*; hand edits reverted; an
 *   unconvertible rule yields an Event and the rest of the policy; Profiles and
 *   WorkloadEndpoints follow namespace, service-account and pod changes and deletions.
 * - As a separate process (`tessera controllers --kubeconfig <SA token>`) next to an
 *   in-process standby: only the leader writes; killing it (SIGKILL, no lease release)
 *   hands over within the lease duration plus one retry period.
 *
 * The admission policies for knp.default.* policies and WorkloadEndpoints from manifests/ are
 * unbound here (an admin's hand edit of a knp.default.* policy, and an endpoint written by
 * anyone but the controllers, are exactly what they forbid); manifests.int.test.ts and
 * admission-datastore.int.test.ts cover them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CoordinationV1Api, CoreV1Api, CustomObjectsApi, NetworkingV1Api, type V1NetworkPolicy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { canonicalJson } from '../../src/controllers/canonical-json.ts';
import { startControllers, type RunningControllers } from '../../src/controllers/controllers-process.ts';
import { convertNetworkPolicy } from '../../src/convert/policy-converter.ts';
import { podToWorkloadEndpoint } from '../../src/convert/workload-endpoint-builder.ts';
import { createRootLogger } from '../../src/runtime/logger.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import type { ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, controllersIdentity, REPO_ROOT } from './shared-control-plane.ts';
import type { K8sNetworkPolicy, K8sPod } from '../../src/api/index.ts';

const GROUP = 'projectcalico.org';
const VERSION = 'v3';
const LEASE = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const WAIT = { timeoutMs: 20_000, intervalMs: 100 };

type Obj = { metadata?: { name?: string; labels?: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string }> }; spec?: Record<string, unknown> };

async function orUndefined<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

/** A rule with port 6666 is treated as unconvertible: the API server's validation lets no real one through. */
function convertWithUnconvertiblePort(np: K8sNetworkPolicy): ReturnType<typeof convertNetworkPolicy> {
  const spec = np.spec ?? {};
  const bad = (r: { ports?: Array<{ port?: number | string | null } | null> | null } | null): boolean => (r?.ports ?? []).some((p) => p?.port === 6666);
  const result = convertNetworkPolicy({ ...np, spec: { ...spec, ingress: (spec.ingress ?? []).filter((r) => !bad(r)) } });
  (spec.ingress ?? []).forEach((r, index) => {
    if (bad(r)) result.errors.push({ direction: 'ingress', index, field: `spec.ingress[${index}].ports`, reason: 'k8s rule couldn\'t be converted: failed to parse k8s port: invalid port 6666: test' });
  });
  return result;
}

describe('tessera controllers on the real API server', () => {
  const ns = `ctl-${randomBytes(3).toString('hex')}`;
  const ns2 = `${ns}-gone`;
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const net = admin.makeApiClient(NetworkingV1Api);
  const custom = admin.makeApiClient(CustomObjectsApi);
  let dir: string;
  let unregister: () => void;
  let identity: ServiceAccountIdentity;
  let main: RunningControllers;
  const stopMain = new AbortController();

  const getCalico = (plural: string, name: string, namespace?: string): Promise<Obj | undefined> =>
    orUndefined(
      (namespace === undefined
        ? custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name })
        : custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural, namespace, name })) as Promise<Obj>,
    );
  const waitFor = <T>(description: string, probe: () => Promise<T | undefined>): Promise<T> => pollUntil(probe, { description, ...WAIT });
  const waitGone = (description: string, plural: string, name: string, namespace?: string): Promise<boolean> =>
    waitFor(description, async () => ((await getCalico(plural, name, namespace)) === undefined ? true : undefined));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-controllers-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await kubectlOk(['apply', '-f', 'manifests/']);
    await installCalicoCrds(admin);
    // The knp binding last: once its removal is seen (the retry below), the other's, deleted
    // before it, has been seen by the same informer too.
    await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicybinding', 'tessera-reserve-workload-endpoints', 'tessera-reserve-knp-policies']);
    await core.createNamespace({ body: { metadata: { name: ns, labels: { team: 'a' } } } });

    // Left behind "while the controllers were down". Retried: the admission plugin sees the
    // binding's removal through its own informer, a moment later.
    await pollUntil(
      () =>
        custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'networkpolicies',
          body: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'knp.default.ghost', namespace: ns }, spec: { selector: 'all()' } },
        }),
      { description: 'an orphan knp.default.ghost to be created', ...WAIT },
    );
    const wep = (name: string, managed: boolean): object => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name, namespace: ns, ...(managed ? { annotations: { 'tessera.io/managed-by': 'tessera-controllers' } } : {}) },
      spec: { pod: 'gone', node: 'n', interfaceName: 'cali0', ipNetworks: ['10.0.0.1/32'] },
    });
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'workloadendpoints', body: wep('n-k8s-gone-eth0', true) });
    await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'workloadendpoints', body: wep('cni-written', false) });

    identity = await controllersIdentity(join(dir, 'controllers.kubeconfig'));
    main = startControllers(
      {
        kubeConfig: identity.kubeConfig,
        leaseNamespace: 'tessera-system',
        identity: 'in-process-main',
        ...LEASE,
        convert: convertWithUnconvertiblePort,
        logger: createRootLogger({ level: process.env['TESSERA_TEST_LOG_LEVEL'] ?? 'silent' }),
      },
      stopMain.signal,
    );
    await waitFor('the in-process controllers to lead', async () => (main.isLeader() && main.ready() ? true : undefined));
  });

  afterAll(async () => {
    stopMain.abort();
    await main?.done;
    // Leave the shared cluster as other files expect it: nothing the controllers generated.
    const managed = '-l=app.kubernetes.io/managed-by=tessera-controllers';
    await kubectl(['delete', 'profiles.projectcalico.org,tiers.projectcalico.org', managed, '--ignore-not-found']);
    await kubectl(['delete', 'networkpolicies.projectcalico.org', '-A', managed, '--ignore-not-found']);
    await kubectl(['delete', 'workloadendpoints.projectcalico.org', '--all', '-n', ns, '--ignore-not-found']);
    for (const n of [ns, ns2]) await kubectl(['delete', 'namespace', n, '--wait=false', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('creates the default tiers', async () => {
    const tiers = await waitFor('the default tiers', async () => {
      const all = await Promise.all(['kube-admin', 'default', 'kube-baseline'].map((t) => getCalico('tiers', t)));
      return all.every((t) => t !== undefined) ? (all as Obj[]) : undefined;
    });
    expect(tiers.map((t) => [t.metadata?.name, t.spec?.['order'], t.spec?.['defaultAction']])).toEqual([
      ['kube-admin', 1_000, 'Pass'],
      ['default', 1_000_000, 'Deny'],
      ['kube-baseline', 10_000_000, 'Pass'],
    ]);
  });

  it('removes at start an orphan knp.default.* and an orphan endpoint it wrote, and leaves a CNI-written endpoint alone', async () => {
    await waitGone('knp.default.ghost to be deleted', 'networkpolicies', 'knp.default.ghost', ns);
    await waitGone('the orphan endpoint to be deleted', 'workloadendpoints', 'n-k8s-gone-eth0', ns);
    expect(await getCalico('workloadendpoints', 'cni-written', ns)).toBeDefined();
  });

  it('mirrors create, update and delete of a Kubernetes NetworkPolicy; reverts a hand edit', async () => {
    // JSON shape (`from`), not client-node's model names (`_from`).
    const body = {
      metadata: { name: 'web', namespace: ns },
      spec: {
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { role: 'fe' } } }], ports: [{ port: 8080 }, { port: 'metrics' }] }],
      },
    } as unknown as V1NetworkPolicy;
    const created = await net.createNamespacedNetworkPolicy({ namespace: ns, body });
    const want1 = convertNetworkPolicy(created as K8sNetworkPolicy).policy;
    const knp = await waitFor('knp.default.web', async () => {
      const p = await getCalico('networkpolicies', 'knp.default.web', ns);
      return p !== undefined && canonicalJson(p.spec) === canonicalJson(want1.spec) ? p : undefined;
    });
    expect(knp.spec).toEqual(want1.spec);
    expect(knp.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('tessera-controllers');
    expect(knp.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual(['NetworkPolicy/web']);

    const updated = await net.replaceNamespacedNetworkPolicy({
      name: 'web',
      namespace: ns,
      body: { ...created, spec: { ...created.spec, policyTypes: ['Ingress', 'Egress'], egress: [{ ports: [{ protocol: 'UDP', port: 53 }] }] } },
    });
    const want2 = convertNetworkPolicy(updated as K8sNetworkPolicy).policy;
    await waitFor('knp.default.web to follow the update', async () => {
      const p = await getCalico('networkpolicies', 'knp.default.web', ns);
      return canonicalJson(p?.spec) === canonicalJson(want2.spec) ? true : undefined;
    });

    // A hand edit: a changed field (owned by the converter) and an added one (owned by kubectl).
    await kubectlOk([
      'patch', 'networkpolicies.projectcalico.org', 'knp.default.web', '-n', ns, '--type', 'merge',
      '-p', JSON.stringify({ spec: { order: 5, serviceAccountSelector: 'all()' } }),
    ]);
    await waitFor('the hand edit to be reverted', async () => {
      const p = await getCalico('networkpolicies', 'knp.default.web', ns);
      return canonicalJson(p?.spec) === canonicalJson(want2.spec) ? true : undefined;
    });

    // Deleting the generated policy by hand only makes the converter write it again.
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'networkpolicies', name: 'knp.default.web' });
    await waitFor('a deleted knp.default.web to be recreated', async () => {
      const p = await getCalico('networkpolicies', 'knp.default.web', ns);
      return canonicalJson(p?.spec) === canonicalJson(want2.spec) ? true : undefined;
    });

    await net.deleteNamespacedNetworkPolicy({ name: 'web', namespace: ns });
    await waitGone('knp.default.web to be deleted with its source', 'networkpolicies', 'knp.default.web', ns);
  });

  it('an unconvertible rule yields a Warning Event on the Kubernetes policy and the rest of the policy', async () => {
    const created = await net.createNamespacedNetworkPolicy({
      namespace: ns,
      body: {
        metadata: { name: 'partial', namespace: ns },
        spec: { podSelector: {}, ingress: [{ ports: [{ port: 6666 }] }, { ports: [{ port: 443 }] }] },
      },
    });
    const p = await waitFor('knp.default.partial', () => getCalico('networkpolicies', 'knp.default.partial', ns));
    expect(p.spec?.['ingress']).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [443] } }]);
    const event = await waitFor('the Warning Event', async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=partial` });
      return events.items.find((e) => e.reason === 'RuleNotConverted');
    });
    expect(event.type).toBe('Warning');
    expect(event.involvedObject.kind).toBe('NetworkPolicy');
    expect(event.involvedObject.uid).toBe(created.metadata?.uid);
    expect(event.message).toMatch(/^spec\.ingress\[0\] dropped: k8s rule couldn't be converted/);
  });

  it('Namespace → kns.<ns> follows label changes and goes with the namespace', async () => {
    const profile = await waitFor('kns profile', async () => {
      const p = await getCalico('profiles', `kns.${ns}`);
      return p?.spec?.['labelsToApply'] !== undefined && (p.spec['labelsToApply'] as Record<string, string>)['pcns.team'] === 'a' ? p : undefined;
    });
    expect(profile.spec).toEqual({
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      labelsToApply: { 'pcns.team': 'a', 'pcns.kubernetes.io/metadata.name': ns, 'pcns.projectcalico.org/name': ns },
    });
    await kubectlOk(['label', 'namespace', ns, 'team=b', 'tier=gold', '--overwrite']);
    await waitFor('kns labels to follow', async () => {
      const l = (await getCalico('profiles', `kns.${ns}`))?.spec?.['labelsToApply'] as Record<string, string> | undefined;
      return l?.['pcns.team'] === 'b' && l['pcns.tier'] === 'gold' ? true : undefined;
    });

    await core.createNamespace({ body: { metadata: { name: ns2 } } });
    await waitFor('kns profile of the second namespace', () => getCalico('profiles', `kns.${ns2}`));
    await core.deleteNamespace({ name: ns2 });
    // No namespace controller here: finalize by hand, as it would.
    await core.replaceNamespaceFinalize({ name: ns2, body: { metadata: { name: ns2 }, spec: { finalizers: [] } } });
    await waitGone('kns profile to go with its namespace', 'profiles', `kns.${ns2}`);
  });

  it('ServiceAccount → ksa.<ns>.<sa> follows label changes and deletion', async () => {
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'api', labels: { role: 'backend' } } } });
    const p = await waitFor('ksa profile', () => getCalico('profiles', `ksa.${ns}.api`));
    expect(p.spec).toEqual({ labelsToApply: { 'pcsa.role': 'backend', 'pcsa.projectcalico.org/name': 'api' } });
    await kubectlOk(['label', 'serviceaccount', 'api', '-n', ns, 'role=frontend', '--overwrite']);
    await waitFor('ksa labels to follow', async () => {
      const l = (await getCalico('profiles', `ksa.${ns}.api`))?.spec?.['labelsToApply'] as Record<string, string> | undefined;
      return l?.['pcsa.role'] === 'frontend' ? true : undefined;
    });
    await core.deleteNamespacedServiceAccount({ name: 'api', namespace: ns });
    await waitGone('ksa profile to go with its service account', 'profiles', `ksa.${ns}.api`);
  });

  it('Pod → WorkloadEndpoint once it has IPs; follows labels; removed when finished or deleted', async () => {
    const pod = (name: string): object => ({
      metadata: { name, namespace: ns, labels: { app: 'shop' } },
      spec: {
        nodeName: 'node-1',
        serviceAccountName: 'web',
        containers: [{ name: 'c', image: 'registry.invalid/shop:1', ports: [{ name: 'http', containerPort: 8080 }] }],
      },
    });
    await core.createNamespacedPod({ namespace: ns, body: pod('shop-0') as never });
    await core.createNamespacedPod({ namespace: ns, body: pod('shop-1') as never });
    const wepName = (p: string): string => `node--1-k8s-${p.replace(/-/g, '--')}-eth0`;
    // No IPs yet: no endpoint.
    expect(await getCalico('workloadendpoints', wepName('shop-0'), ns)).toBeUndefined();

    for (const [p, ip] of [['shop-0', '10.9.0.10'], ['shop-1', '10.9.0.11']] as const) {
      await kubectlOk(['patch', 'pod', p, '-n', ns, '--subresource=status', '--type', 'merge', '-p',
        JSON.stringify({ status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } })]);
    }
    const stored = (await core.readNamespacedPod({ name: 'shop-0', namespace: ns })) as unknown as K8sPod;
    // startControllers' default `workloadInterfaceNaming: 'none'`: no interface name.
    const want = podToWorkloadEndpoint(stored, { interfaceNaming: 'none' });
    const wep = await waitFor('the endpoint of shop-0', () => getCalico('workloadendpoints', wepName('shop-0'), ns));
    expect(wep.spec).toEqual(want?.spec);
    expect(wep.metadata?.labels).toEqual(want?.metadata.labels);
    expect(wep.spec?.['ipNetworks']).toEqual(['10.9.0.10/32']);
    expect(wep.spec?.['interfaceName']).toBeUndefined();
    expect(wep.spec?.['profiles']).toEqual([`kns.${ns}`, `ksa.${ns}.web`]);

    await kubectlOk(['label', 'pod', 'shop-0', '-n', ns, 'app=checkout', '--overwrite']);
    await waitFor('endpoint labels to follow the pod', async () => {
      const w = await getCalico('workloadendpoints', wepName('shop-0'), ns);
      return w?.metadata?.labels?.['app'] === 'checkout' ? true : undefined;
    });

    await kubectlOk(['patch', 'pod', 'shop-0', '-n', ns, '--subresource=status', '--type', 'merge', '-p', JSON.stringify({ status: { phase: 'Succeeded' } })]);
    await waitGone('the endpoint of a finished pod to be deleted', 'workloadendpoints', wepName('shop-0'), ns);

    await waitFor('the endpoint of shop-1', () => getCalico('workloadendpoints', wepName('shop-1'), ns));
    await core.deleteNamespacedPod({ name: 'shop-1', namespace: ns, gracePeriodSeconds: 0 });
    await waitGone('the endpoint of a deleted pod to be deleted', 'workloadendpoints', wepName('shop-1'), ns);
  });

  describe('two replicas: a `tessera controllers` process and an in-process standby', () => {
    let child: ChildProcess | undefined;
    let killChild: () => void = () => undefined;
    let standby: RunningControllers | undefined;
    const stopStandby = new AbortController();
    const standbyRegistry = newRegistry();

    afterAll(async () => {
      killChild();
      stopStandby.abort();
      await standby?.done;
    });

    it('only the leader writes; killing it hands over, never before the lease expired', async () => {
      stopMain.abort();
      expect(await main.done).toBe('stopped'); // releases the lease

      let logs = '';
      child = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'controllers', '--kubeconfig', identity.kubeconfigPath, '--namespace', 'tessera-system',
          '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--lease-duration', String(LEASE.leaseDurationMs / 1000)],
        { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '' } },
      );
      const pid = child.pid;
      killChild = registerExitCleanup(() => {
        try {
          if (pid !== undefined) process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      });
      child.stdout?.setEncoding('utf8').on('data', (d: string) => (logs += d));
      child.stderr?.setEncoding('utf8').on('data', (d: string) => (logs += d));

      const leases = admin.makeApiClient(CoordinationV1Api);
      const holder = async (): Promise<string> =>
        (await leases.readNamespacedLease({ name: 'tessera-controllers', namespace: 'tessera-system' })).spec?.holderIdentity ?? '';
      const childIdentity = await pollUntil(
        async () => {
          const m = /"identity":"([^"]+)".*"msg":"became leader"/.exec(logs);
          return m?.[1];
        },
        { description: `the controllers process to lead; its output:\n${logs}`, timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(await holder()).toBe(childIdentity);

      // The process serves /livez, /readyz and /metrics (workqueue_* and reconcile metrics).
      const port = Number(/"port":(\d+)/.exec(logs)?.[1]);
      const get = async (path: string): Promise<{ status: number; text: string }> => {
        const r = await fetch(`http://127.0.0.1:${port}${path}`);
        return { status: r.status, text: await r.text() };
      };
      expect((await get('/livez')).status).toBe(200);
      await pollUntil(async () => ((await get('/readyz')).status === 200 ? true : undefined), { description: '/readyz', ...WAIT });
      const metrics = await pollUntil(
        async () => {
          const m = (await get('/metrics')).text;
          return m.includes('controller_runtime_reconcile_total{controller="policy-converter"') ? m : undefined;
        },
        { description: 'reconcile metrics on /metrics', ...WAIT },
      );
      for (const name of ['workqueue_depth{name="policy-converter"}', 'workqueue_adds_total', 'workqueue_queue_duration_seconds_bucket', 'controller_runtime_reconcile_time_seconds_bucket', 'process_resident_memory_bytes']) {
        expect(metrics).toContain(name);
      }

      standby = startControllers(
        { kubeConfig: identity.kubeConfig, leaseNamespace: 'tessera-system', identity: 'in-process-standby', registry: standbyRegistry, ...LEASE },
        stopStandby.signal,
      );
      const sb = standby;
      await waitFor('the standby caches to sync', async () => (sb.ready() ? true : undefined));
      expect(sb.isLeader()).toBe(false);

      await net.createNamespacedNetworkPolicy({ namespace: ns, body: { metadata: { name: 'le-1' }, spec: { podSelector: {} } } });
      await waitFor('the process leader to write knp.default.le-1', () => getCalico('networkpolicies', 'knp.default.le-1', ns));
      const reconciles = async (): Promise<number> =>
        ((await standbyRegistry.getSingleMetric('controller_runtime_reconcile_total')?.get())?.values ?? []).reduce((a, v) => a + v.value, 0);
      expect(await reconciles()).toBe(0);
      expect(sb.isLeader()).toBe(false);

      const leaseTimes = async () => {
        const spec = (await leases.readNamespacedLease({ name: 'tessera-controllers', namespace: 'tessera-system' })).spec;
        return { holder: spec?.holderIdentity ?? '', renewed: new Date(spec?.renewTime as unknown as string), acquired: new Date(spec?.acquireTime as unknown as string) };
      };
      const beforeKill = await leaseTimes();
      expect(beforeKill.holder).toBe(childIdentity);
      const killedAt = Date.now();
      child.kill('SIGKILL');
      await waitFor('the standby to take over', async () => (sb.isLeader() ? true : undefined));
      const handoverMs = Date.now() - killedAt;
      // A figure, not an assertion (tests never assert wall-clock time): the bound is a lease
      // duration plus a retry period or two.
      console.log(`leader handover after SIGKILL: ${handoverMs} ms (lease ${LEASE.leaseDurationMs} ms, retry ${LEASE.retryPeriodMs} ms)`);
      const afterHandover = await leaseTimes();
      expect(afterHandover.holder).toBe('in-process-standby');
      // Safety, from the times the Lease records: the standby took it no sooner than a full
      // lease duration after the last renewal it could have seen (never two leaders at once).
      expect(afterHandover.acquired.getTime() - beforeKill.renewed.getTime()).toBeGreaterThanOrEqual(LEASE.leaseDurationMs);

      await net.createNamespacedNetworkPolicy({ namespace: ns, body: { metadata: { name: 'le-2' }, spec: { podSelector: {} } } });
      await waitFor('the new leader to write knp.default.le-2', () => getCalico('networkpolicies', 'knp.default.le-2', ns));
      expect(await reconciles()).toBeGreaterThan(0);
    });

    it('SIGTERM: the process releases the lease and exits 0', async () => {
      stopStandby.abort();
      expect(await standby?.done).toBe('stopped');
      let logs = '';
      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'controllers', '--kubeconfig', identity.kubeconfigPath, '--namespace', 'tessera-system',
          '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--lease-duration', String(LEASE.leaseDurationMs / 1000)],
        { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '' } },
      );
      const unregisterProc = registerExitCleanup(() => proc.kill('SIGKILL'));
      proc.stdout.setEncoding('utf8').on('data', (d: string) => (logs += d));
      proc.stderr.setEncoding('utf8').on('data', (d: string) => (logs += d));
      const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
      try {
        await pollUntil(async () => (logs.includes('"msg":"starting controllers"') ? true : undefined), {
          description: `the process to lead; its output:\n${logs}`,
          timeoutMs: 30_000,
        });
        proc.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(logs).toContain('"msg":"released the lease"');
        const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'tessera-controllers', namespace: 'tessera-system' });
        expect(lease.spec?.holderIdentity ?? '').toBe('');
      } finally {
        unregisterProc();
      }
    });
  });
});
