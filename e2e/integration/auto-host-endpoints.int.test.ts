/**
 * Automatic host endpoints against the real API server, as the controllers' own ServiceAccount
 * (a TokenRequest token; so the RBAC of manifests/ is what allows reading Nodes and writing
 * HostEndpoints):
 *
 * - switched on the way Calico switches it on (`AUTO_HOST_ENDPOINTS=enabled`), in the real
 *   `tessera controllers` process: every Node gets `<node>-auto-hep`; a relabelled node and a
 *   changed address are followed; a deleted node loses its endpoint; a user's HostEndpoint that
 *   holds a node's auto name (without the created-by label) is never written;
 * - restarted switched off (the default, in-process): every managed endpoint is removed at
 *   start, the user's stays.
 *
 * Nodes here are API objects only (no kubelet); the shared control plane runs no garbage
 * collector, so a removal is the controller's own.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startControllers } from '../../src/controllers/controllers-process.ts';
import { createRootLogger } from '../../src/runtime/logger.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import type { ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, controllersIdentity, REPO_ROOT } from './shared-control-plane.ts';
import { removeTesseraAdmission } from './tessera-admission.ts';

const GROUP = 'projectcalico.org';
const VERSION = 'v3';
const PLURAL = 'hostendpoints';
const LEASE = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };
const CREATED_BY = { 'projectcalico.org/created-by': 'calico-kube-controllers' };

interface Hep {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string; uid: string }> };
  spec?: { node?: string; interfaceName?: string; expectedIPs?: string[]; profiles?: string[] };
}

describe('automatic host endpoints on the real API server', () => {
  const suffix = randomBytes(3).toString('hex');
  const [a, b, c] = ['a', 'b', 'c'].map((n) => `ahep-${suffix}-${n}`) as [string, string, string];
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const custom = admin.makeApiClient(CustomObjectsApi);
  let dir: string;
  let unregister: () => void;
  let identity: ServiceAccountIdentity;

  const getHep = async (name: string): Promise<Hep | undefined> => {
    try {
      return (await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name })) as Hep;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      throw err;
    }
  };
  const waitFor = <T>(description: string, probe: () => Promise<T | undefined>): Promise<T> => pollUntil(probe, { description, ...WAIT });
  const waitHep = (description: string, name: string, ok: (h: Hep) => boolean): Promise<Hep> =>
    waitFor(description, async () => {
      const h = await getHep(name);
      return h !== undefined && ok(h) ? h : undefined;
    });
  const waitGone = (description: string, name: string): Promise<boolean> => waitFor(description, async () => ((await getHep(name)) === undefined ? true : undefined));

  /** A Node with `labels`, InternalIP `ip` and (optionally) calico-node's BGP address annotation. */
  async function createNode(name: string, labels: Record<string, string>, ip: string, bgp?: string): Promise<V1Node> {
    const node = await core.createNode({ body: { metadata: { name, labels, ...(bgp === undefined ? {} : { annotations: { 'projectcalico.org/IPv4Address': bgp } }) } } });
    return setAddress(node, ip);
  }
  async function setAddress(node: V1Node, ip: string): Promise<V1Node> {
    const fresh = await core.readNode({ name: node.metadata?.name ?? '' });
    return core.replaceNodeStatus({ name: node.metadata?.name ?? '', body: { ...fresh, status: { addresses: [{ type: 'InternalIP', address: ip }, { type: 'Hostname', address: node.metadata?.name ?? '' }] } } });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-auto-hep-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await kubectlOk(['apply', '-f', 'manifests/']);
    await installCalicoCrds(admin);
    identity = await controllersIdentity(join(dir, 'controllers.kubeconfig'));
    await createNode(a, { zone: 'east', 'kubernetes.io/hostname': a }, '172.18.0.2', '172.18.0.2/16');
    await createNode(b, { zone: 'west' }, '172.18.0.3');
    await createNode(c, { zone: 'north' }, '172.18.0.4');
    // A user's own host endpoint under node c's automatic name, without the created-by label.
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      body: { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: `${c}-auto-hep`, labels: { owner: 'me' } }, spec: { node: c, interfaceName: 'eth0' } },
    });
  });

  afterAll(async () => {
    // manifests/ brought its admission policies: other files expect the API server without them.
    await removeTesseraAdmission();
    await kubectl(['delete', 'hostendpoints.projectcalico.org', `${a}-auto-hep`, `${b}-auto-hep`, `${c}-auto-hep`, '--ignore-not-found']);
    await kubectl(['delete', 'nodes', a, b, c, '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('switched on with AUTO_HOST_ENDPOINTS=enabled: creates, follows and deletes each node\'s endpoint, and leaves a user\'s alone', async () => {
    const userBefore = await getHep(`${c}-auto-hep`);
    let logs = '';
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'controllers', '--kubeconfig', identity.kubeconfigPath, '--namespace', 'tessera-system',
        '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--lease-duration', String(LEASE.leaseDurationMs / 1000)],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '', AUTO_HOST_ENDPOINTS: 'enabled' } },
    );
    const unregisterProc = registerExitCleanup(() => proc.kill('SIGKILL'));
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (logs += d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (logs += d));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    try {
      const nodeA = await core.readNode({ name: a });
      const hepA = await waitHep(`${a}-auto-hep to be created`, `${a}-auto-hep`, () => true);
      expect(hepA.metadata?.labels).toEqual({ zone: 'east', 'kubernetes.io/hostname': a, ...CREATED_BY });
      // The BGP annotation's address (prefix stripped) and the InternalIP are one address: listed once.
      expect(hepA.spec).toEqual({ node: a, interfaceName: '*', expectedIPs: ['172.18.0.2'], profiles: ['projectcalico-default-allow'] });
      expect(hepA.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid])).toEqual([['Node', a, nodeA.metadata?.uid]]);
      await waitHep(`${b}-auto-hep to be created`, `${b}-auto-hep`, (h) => h.spec?.expectedIPs?.[0] === '172.18.0.3');

      await core.patchNode({ name: a, body: { metadata: { labels: { zone: 'south' } } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch));
      await waitHep(`${a}-auto-hep to follow the relabel`, `${a}-auto-hep`, (h) => h.metadata?.labels?.['zone'] === 'south');

      await setAddress(await core.readNode({ name: b }), '172.18.0.33');
      await waitHep(`${b}-auto-hep to follow the new address`, `${b}-auto-hep`, (h) => JSON.stringify(h.spec?.expectedIPs) === JSON.stringify(['172.18.0.33']));

      await core.deleteNode({ name: b });
      await waitGone(`${b}-auto-hep to be deleted with its node`, `${b}-auto-hep`);

      const userAfter = await getHep(`${c}-auto-hep`);
      expect(userAfter?.metadata?.resourceVersion).toBe(userBefore?.metadata?.resourceVersion);
      expect(userAfter?.metadata?.labels).toEqual({ owner: 'me' });
      expect(logs).toContain('a HostEndpoint without the projectcalico.org/created-by label holds');
      proc.kill('SIGTERM');
      expect(await exited).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nthe controllers' output:\n${logs}`, { cause: err });
    } finally {
      proc.kill('SIGKILL');
      unregisterProc();
    }
  });

  it('restarted switched off (the default): removes every endpoint it made at start, and leaves the user\'s', async () => {
    expect(await getHep(`${a}-auto-hep`)).toBeDefined();
    const stop = new AbortController();
    const running = startControllers(
      { kubeConfig: identity.kubeConfig, leaseNamespace: 'tessera-system', identity: 'auto-hep-off', ...LEASE, logger: createRootLogger({ level: process.env['TESSERA_TEST_LOG_LEVEL'] ?? 'silent' }) },
      stop.signal,
    );
    try {
      await waitGone(`${a}-auto-hep to be removed`, `${a}-auto-hep`);
      expect((await getHep(`${c}-auto-hep`))?.metadata?.labels).toEqual({ owner: 'me' });
      // Node a still exists: switched off, nothing is re-created.
      expect(await core.readNode({ name: a })).toBeDefined();
      expect(await getHep(`${a}-auto-hep`)).toBeUndefined();
    } finally {
      stop.abort();
      await running.done;
    }
  });
});
