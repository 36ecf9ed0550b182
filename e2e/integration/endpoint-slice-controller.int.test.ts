import { CoreV1Api, DiscoveryV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { K8sEndpointSlice, K8sPod, K8sService } from '../../src/api/index.ts';
import { deriveEndpointSlices } from '../../src/simulate/endpoint-slices.ts';
import { ControlPlane } from '../controlplane/control-plane.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { sliceMembers, waitForServiceEndpoints } from '../runner/services.ts';

// The real EndpointSlice controller (kube-controller-manager --controllers=endpointslice, as
// the scenario runner starts it) against the slices `tessera simulate` derives: its own control
// plane, since the run's shared one has no controller-manager.

const NS = 'svc-shop';

async function createPod(kc: KubeConfig, name: string, labels: Record<string, string>, port: number, ips: readonly string[]): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedPod({
    namespace: NS,
    body: { metadata: { name, namespace: NS, labels }, spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'pause', ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }] }] } },
  });
  await core.patchNamespacedPodStatus(
    { name, namespace: NS, body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function liveMembers(kc: KubeConfig, service: string): Promise<string[]> {
  const slices = await kc.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({ namespace: NS, labelSelector: `kubernetes.io/service-name=${service}` });
  return sliceMembers(slices.items as unknown as K8sEndpointSlice[]);
}

describe('the EndpointSlice controller of the test control plane', () => {
  let controlPlane: ControlPlane;
  let kc: KubeConfig;

  beforeAll(async () => {
    controlPlane = await ControlPlane.start({ controllers: ['endpointslice'], apiserverArgs: ['--service-cluster-ip-range=10.0.0.0/24,fd00:10:96::/112'] });
    kc = controlPlane.connection.kubeConfig;
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await core.createNode({ body: { metadata: { name: 'node-1' } } });
    await createPod(kc, 'a', { app: 'web' }, 8080, ['10.70.0.1']);
    await createPod(kc, 'b', { app: 'web' }, 8081, ['10.70.0.2', 'fd00:70::2']);
    await createPod(kc, 'c', { app: 'other' }, 8080, ['10.70.0.3']);
  }, 120_000);

  afterAll(async () => {
    await controlPlane?.stop();
  });

  it('gives a Service the slices simulate derives: named targetPort per pod, both families of a dual-stack Service; relabelling moves pods out and in', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'web', namespace: NS }, spec: { selector: { app: 'web' }, ipFamilyPolicy: 'PreferDualStack', ports: [{ name: 'http', port: 80, targetPort: 'http' }] } },
    });
    const ref = { apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'web' };
    await waitForServiceEndpoints(kc, [ref]);
    expect(await liveMembers(kc, 'web')).toEqual(['IPv4 10.70.0.1 TCP:8080', 'IPv4 10.70.0.2 TCP:8081', 'IPv6 fd00:70::2 TCP:8081']);
    const svc = (await core.readNamespacedService({ name: 'web', namespace: NS })) as unknown as K8sService;
    expect(svc.spec?.ipFamilies).toEqual(['IPv4', 'IPv6']);

    for (const [pod, labels, want] of [
      ['a', { app: 'gone' }, ['IPv4 10.70.0.2 TCP:8081', 'IPv6 fd00:70::2 TCP:8081']],
      ['c', { app: 'web' }, ['IPv4 10.70.0.2 TCP:8081', 'IPv4 10.70.0.3 TCP:8080', 'IPv6 fd00:70::2 TCP:8081']],
    ] as const) {
      await core.patchNamespacedPod({ name: pod, namespace: NS, body: { metadata: { labels } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      await pollUntil(async () => ((await liveMembers(kc, 'web')).join() === want.join() ? true : undefined), { description: `Service web after relabelling ${pod}`, timeoutMs: 30_000 });
      await waitForServiceEndpoints(kc, [ref]);
      const pods = (await core.listNamespacedPod({ namespace: NS })).items as unknown as K8sPod[];
      expect(sliceMembers(deriveEndpointSlices([svc], pods))).toEqual(want);
    }
  }, 120_000);
});
