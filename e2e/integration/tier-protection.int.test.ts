/**
 * Tier deletion against the real API server, with the controllers running in-process under
 * their own ServiceAccount (manifests/' RBAC) and manifests/21-admission-datastore.yaml bound:
 *
 * - a Tier that still holds a policy is not removed: `kubectl delete tier` leaves it
 *   Terminating with the controllers' finalizer, its Deny keeps deciding in its place (the
 *   agent's engine on the live objects), the hold is logged naming the policy and counted;
 *   once the policy is deleted the tier disappears. (Before: the tier went at once and its
 *   Deny was ordered after the default tier's Allow — a→b turned from denied to allowed.)
 * - `kubectl delete tier default` is refused by admission, even for a cluster admin.
 * - a default tier removed anyway (finalizer stripped, admission unbound) is created again by
 *   the running controllers.
 *
 * The admission bindings are cluster-wide: this file removes them at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startControllers, type RunningControllers } from '../../src/controllers/controllers-process.ts';
import { TIER_FINALIZER } from '../../src/controllers/tier-reconciler.ts';
import { createRootLogger } from '../../src/runtime/logger.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { describeDecision, loadFromCluster, Simulation, translateCluster, type Verdict } from '../../src/simulate/index.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, controllersIdentity } from './shared-control-plane.ts';
import { removeTesseraAdmission } from './tessera-admission.ts';

const GROUP = 'projectcalico.org';
const VERSION = 'v3';
const LEASE = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };

interface TierObj {
  metadata?: { name?: string; uid?: string; finalizers?: string[]; deletionTimestamp?: string };
  spec?: { order?: number; defaultAction?: string };
}

interface LogLine {
  msg: string;
  name?: string;
  policies?: string[];
}

describe('Tier protection on the real API server', () => {
  const ns = `tp-${randomBytes(3).toString('hex')}`;
  const tierName = `tp-security-${randomBytes(2).toString('hex')}`;
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const custom = admin.makeApiClient(CustomObjectsApi);
  const registry = newRegistry();
  const logs: LogLine[] = [];
  const stop = new AbortController();
  let running: RunningControllers;
  let dir: string;
  let unregister: () => void;

  const getTier = async (name: string): Promise<TierObj | undefined> => {
    try {
      return (await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: 'tiers', name })) as TierObj;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      throw err;
    }
  };
  const metric = async (name: string, labels: Record<string, string>): Promise<number | undefined> =>
    (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;

  /** a → b on TCP/80 as the agents would decide it, from the objects on the API server now. */
  const verdict = async (): Promise<Verdict> => {
    const notes: string[] = [];
    const { resources } = translateCluster(await loadFromCluster(admin, notes), { skipInvalid: true });
    const sim = new Simulation(resources);
    const a = sim.endpointFor(`${ns}/a`);
    const b = sim.endpointFor(`${ns}/b`);
    if (a === undefined || b === undefined) throw new Error(`no endpoint for ${ns}/a or ${ns}/b (${notes.join('; ')})`);
    return sim.verdict(a, b, 'TCP', 80, true);
  };

  const pod = async (name: string, ip: string): Promise<void> => {
    await core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name, namespace: ns, labels: { app: name } }, spec: { nodeName: 'tp-node', containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } },
    });
    await core.patchNamespacedPodStatus(
      { name, namespace: ns, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };

  const policy = (name: string, tier: string, order: number, action: 'Allow' | 'Deny', source?: string): object => ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec: { tier, order, selector: "app == 'b'", types: ['Ingress'], ingress: [{ action, ...(source === undefined ? {} : { source: { selector: source } }) }] },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-tp-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await installCalicoCrds(admin);
    await kubectlOk(['apply', '-f', 'manifests/00-namespace.yaml', '-f', 'manifests/10-rbac-controllers.yaml', '-f', 'manifests/21-admission-datastore.yaml']);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // An earlier file may have deleted the default tiers while no controllers ran, leaving them
    // Terminating behind the finalizer: let them go; the controllers create them again.
    for (const name of ['default', 'kube-admin', 'kube-baseline']) {
      if ((await getTier(name))?.metadata?.deletionTimestamp === undefined) continue;
      await kubectlOk(['patch', 'tiers.projectcalico.org', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
    const identity = await controllersIdentity(join(dir, 'controllers.kubeconfig'));
    running = startControllers(
      {
        kubeConfig: identity.kubeConfig,
        leaseNamespace: 'tessera-system',
        identity: 'tp-controllers',
        ...LEASE,
        registry,
        logger: createRootLogger({ level: 'info', destination: { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) } }),
      },
      stop.signal,
    );
    await pollUntil(async () => (running.isLeader() && running.ready() ? true : undefined), { description: 'the in-process controllers to lead', ...WAIT });
    await pod('a', '10.77.0.1');
    await pod('b', '10.77.0.2');
  });

  afterAll(async () => {
    stop.abort();
    await running?.done;
    await kubectl(['delete', 'networkpolicies.projectcalico.org', '--all', '-n', ns, '--ignore-not-found']);
    // With the controllers stopped nothing would release the finalizer: strip it.
    await kubectl(['patch', 'tiers.projectcalico.org', tierName, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await kubectl(['delete', 'tiers.projectcalico.org', tierName, '--ignore-not-found', '--wait=false']);
    await removeTesseraAdmission();
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('a Tier that holds a policy stays Terminating with the finalizer, its Deny still deciding first; it goes once the policy is deleted', async () => {
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'tiers',
      body: { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: tierName }, spec: { order: 100, defaultAction: 'Pass' } },
    });
    await pollUntil(async () => ((await getTier(tierName))?.metadata?.finalizers?.includes(TIER_FINALIZER) ? true : undefined), {
      description: `the controllers to put ${TIER_FINALIZER} on Tier ${tierName}`,
      ...WAIT,
    });
    const deny = `${tierName}.deny-a`;
    const create = (body: object) => custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'networkpolicies', body });
    await create(policy('tp-allow-all', 'default', 1000, 'Allow'));
    await create(policy(deny, tierName, 100, 'Deny', "app == 'a'"));
    await pollUntil(async () => ((await verdict()).allowed ? undefined : true), { description: 'a → b to be denied', ...WAIT });

    // At once, as a script would: the controllers' policy cache may not have the policy yet.
    await kubectlOk(['delete', 'tiers.projectcalico.org', tierName, '--wait=false']);
    await pollUntil(async () => ((await metric('tessera_controllers_tier_deletion_held_policies', { tier: tierName })) === 1 ? true : undefined), {
      description: `the deletion of ${tierName} to be held`,
      ...WAIT,
    });
    const held = await getTier(tierName);
    expect(held?.metadata?.deletionTimestamp).toBeDefined();
    expect(held?.metadata?.finalizers).toContain(TIER_FINALIZER);
    expect(logs.find((l) => l.msg.startsWith('deletion of the tier is held') && l.name === tierName)?.policies).toEqual([`NetworkPolicy ${ns}/${deny}`]);

    const v = await verdict();
    expect(v.allowed).toBe(false);
    expect(describeDecision(v.ingress.decision, 'ingress')).toBe(`denied by NetworkPolicy ${ns}/${deny} ingress[0] (Deny) in tier ${tierName}`);

    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'networkpolicies', name: deny });
    await pollUntil(async () => ((await getTier(tierName)) === undefined ? true : undefined), { description: `Tier ${tierName} to be gone`, ...WAIT });
    expect(await metric('tessera_controllers_tier_deletion_held_policies', { tier: tierName })).toBeUndefined();
  });

  it('kubectl delete tier default is refused by admission, for a cluster admin too', async () => {
    // Dry runs pass through admission without deleting anything: wait until the binding is live.
    await pollUntil(async () => ((await kubectl(['delete', 'tiers.projectcalico.org', 'default', '--dry-run=server'])).code !== 0 ? true : undefined), {
      description: 'the tessera-keep-default-tiers binding to take effect',
      ...WAIT,
    });
    for (const name of ['default', 'kube-admin', 'kube-baseline']) {
      const r = await kubectl(['delete', 'tiers.projectcalico.org', name, '--wait=false']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`Tier ${name} is one of the tiers Calico defines (default, kube-admin, kube-baseline) and cannot be deleted`);
      expect((await getTier(name))?.metadata?.deletionTimestamp).toBeUndefined();
    }
  });

  it('a default tier removed anyway (finalizer stripped, admission unbound) is created again by the running controllers', async () => {
    await kubectlOk(['delete', 'validatingadmissionpolicybinding', 'tessera-keep-default-tiers']);
    await pollUntil(async () => ((await kubectl(['delete', 'tiers.projectcalico.org', 'kube-baseline', '--dry-run=server'])).code === 0 ? true : undefined), {
      description: 'the tessera-keep-default-tiers binding to be gone',
      ...WAIT,
    });
    const before = await getTier('kube-baseline');
    expect(before?.metadata?.uid).toBeDefined();
    await kubectlOk(['patch', 'tiers.projectcalico.org', 'kube-baseline', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await kubectlOk(['delete', 'tiers.projectcalico.org', 'kube-baseline', '--wait=false']);
    const again = await pollUntil(
      async () => {
        const t = await getTier('kube-baseline');
        return t !== undefined && t.metadata?.uid !== before?.metadata?.uid && t.metadata?.deletionTimestamp === undefined ? t : undefined;
      },
      { description: 'kube-baseline to be created again', ...WAIT },
    );
    expect(again.spec).toEqual({ order: 10_000_000, defaultAction: 'Pass' });
    expect(again.metadata?.finalizers).toEqual([TIER_FINALIZER]);
    expect(await metric('tessera_controllers_default_tiers_recreated_total', { tier: 'kube-baseline' })).toBeGreaterThanOrEqual(1);
  });
});
