/**
 * Figure: time from a Kubernetes NetworkPolicy change (the API call returning) to its
 * knp.default.* policy being written (its watch event arriving), p50/p99 over 200
 * sequential changes (20 creates, 180 updates), controllers in-process with their own
 * ServiceAccount token. Prints the figure; asserts only that every change arrived.
 * The changes come back to back (~50/s), so the 50 writes/s throttle is part of the
 * figure; TESSERA_FIGURE_WRITES_PER_SECOND=1000 measures without it.
 *
 *   npx vitest run --project integration e2e/integration/controllers-latency.int.test.ts
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CustomObjectsApi, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InformerFactory } from '../../src/informers/informer-factory.ts';
import type { KubeObject } from '../../src/informers/object.ts';
import { startControllers, type RunningControllers } from '../../src/controllers/controllers-process.ts';
import { createRootLogger } from '../../src/runtime/logger.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken } from '../controlplane/service-account-token.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, sharedControlPlane } from './shared-control-plane.ts';

const POLICIES = 20;
const ROUNDS = 10; // 20 creates + 20 × 9 updates = 200 changes

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

describe('figure: NetworkPolicy change → knp.default.* write latency', () => {
  const ns = `lat-${randomBytes(3).toString('hex')}`;
  const admin = adminKubeConfig();
  const stop = new AbortController();
  let running: RunningControllers;
  let dir: string;
  let unregister: () => void;
  let observer: InformerFactory | undefined;
  // selector value → arrival time of the knp carrying it
  const arrivals = new Map<string, number>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-latency-'));
    unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await kubectlOk(['apply', '-f', 'manifests/00-namespace.yaml', '-f', 'manifests/01-crds.yaml', '-f', 'manifests/10-rbac-controllers.yaml']);
    await installCalicoCrds(admin);
    await kubectlOk(['create', 'namespace', ns]);
    const { server, caPem } = sharedControlPlane();
    const identity = await issueServiceAccountToken(admin, {
      namespace: 'tessera-system',
      serviceAccount: 'tessera-controllers',
      create: false,
      server,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'kubeconfig'),
    });
    running = startControllers(
      {
        kubeConfig: identity.kubeConfig,
        leaseNamespace: 'tessera-system',
        identity: 'latency',
        retryPeriodMs: 500,
        // The write throttle (50/s) is part of what is measured; override to see without it.
        ...(process.env['TESSERA_FIGURE_WRITES_PER_SECOND'] ? { writesPerSecond: Number(process.env['TESSERA_FIGURE_WRITES_PER_SECOND']) } : {}),
        logger: createRootLogger({ level: process.env['TESSERA_TEST_LOG_LEVEL'] ?? 'silent' }),
      },
      stop.signal,
    );
    await pollUntil(async () => (running.isLeader() && running.ready() ? true : undefined), { description: 'controllers to lead', timeoutMs: 30_000 });
    // Observed through Tessera's own informer (reconnects, relists), not a bare watch: an
    // earlier file may have re-created the CRDs, which ends open watches on them.
    observer = new InformerFactory({ kubeConfig: admin });
    const informer = observer.informerFor<KubeObject & { spec?: { selector?: string } }>({ group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies', namespace: ns });
    const record = (obj: { spec?: { selector?: string } }): void => {
      const m = /v == '([^']+)'/.exec(obj.spec?.selector ?? '');
      if (m?.[1] !== undefined && !arrivals.has(m[1])) arrivals.set(m[1], performance.now());
    };
    informer.addEventHandler({ onAdd: record, onUpdate: (_old, obj) => record(obj) });
    observer.start();
    await observer.waitForCacheSync();
    // Steady state: the controllers are running once the namespace's profile is written.
    const custom = admin.makeApiClient(CustomObjectsApi);
    await pollUntil(() => custom.getClusterCustomObject({ group: 'projectcalico.org', version: 'v3', plural: 'profiles', name: `kns.${ns}` }), {
      description: `kns.${ns}`,
      timeoutMs: 30_000,
    });
  });

  afterAll(async () => {
    await observer?.stop();
    stop.abort();
    await running?.done;
    await kubectl(['delete', 'profiles.projectcalico.org,tiers.projectcalico.org', '-l=app.kubernetes.io/managed-by=tessera-controllers', '--ignore-not-found']);
    await kubectl(['delete', 'networkpolicies.projectcalico.org', '-A', '-l=app.kubernetes.io/managed-by=tessera-controllers', '--ignore-not-found']);
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
    rmSync(dir, { recursive: true, force: true });
    unregister();
  });

  it('200 changes, p50/p99 printed', async () => {
    const net = admin.makeApiClient(NetworkingV1Api);
    const latencies: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < POLICIES; i++) {
        const value = `r${round}-p${i}`;
        const body = { metadata: { name: `p${i}`, namespace: ns }, spec: { podSelector: { matchLabels: { v: value } }, policyTypes: ['Ingress'] } };
        const start = performance.now();
        if (round === 0) await net.createNamespacedNetworkPolicy({ namespace: ns, body });
        else await net.replaceNamespacedNetworkPolicy({ name: `p${i}`, namespace: ns, body });
        const arrived = await pollUntil(() => arrivals.get(value), { description: `knp for ${value}`, timeoutMs: 20_000, intervalMs: 1 });
        latencies.push(arrived - start);
      }
    }
    expect(latencies).toHaveLength(POLICIES * ROUNDS);
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `NetworkPolicy → knp.default.* write: n=${sorted.length} p50=${percentile(sorted, 50).toFixed(1)} ms ` +
        `p99=${percentile(sorted, 99).toFixed(1)} ms max=${(sorted.at(-1) ?? NaN).toFixed(1)} ms; ` +
        `slowest (change #: ms) ${latencies.map((l, i) => [i, l] as const).sort((a, b) => b[1] - a[1]).slice(0, 5).map(([i, l]) => `${i}: ${l.toFixed(0)}`).join(", ")}`,
    );
  });
});
