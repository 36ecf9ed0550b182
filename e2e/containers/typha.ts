/**
 * Typha for the agent's node, when the applied DaemonSet says so: manifests/40-agent.yaml
 * passes `--typha-service=<namespace>/<name>`, and the agent then takes its updates from the
 * ready endpoints of that Service (manifests/45-typha.yaml) instead of watching the API server.
 * There is no kubelet and no EndpointSlice controller in the suite, so this does their part:
 * it runs the Typha Deployment's pod template (hostNetwork: in the node's network namespace,
 * with the tessera-typha ServiceAccount) and, once Typha's readinessProbe would pass, writes
 * the Service's EndpointSlice naming the node's address and the template's named port, as the
 * EndpointSlice controller would for a ready pod.
 */
import { DiscoveryV1Api, type KubeConfig, type V1PodTemplateSpec } from '@kubernetes/client-node';
import type { StartedTestContainer } from 'testcontainers';

import { TESSERA_NAMESPACE } from './control-plane-containers.ts';
import { containerForTemplate, onlyContainer, readPodTemplate, waitPodReady, type ManifestPodOptions } from './manifest-pod.ts';

/** `<namespace>/<name>` of `--typha-service` in the agent's args, if any. */
export function typhaServiceOf(agentTemplate: V1PodTemplateSpec): { namespace: string; name: string } | undefined {
  for (const arg of onlyContainer(agentTemplate).args ?? []) {
    const m = /^--typha-service=([^/]+)\/(.+)$/.exec(arg);
    if (m !== null) return { namespace: m[1]!, name: m[2]! };
  }
  return undefined;
}

/** A Typha pod on a node, and the EndpointSlice that announces it. */
export interface NodeTypha {
  readonly container: StartedTestContainer;
  readonly logs: string[];
}

/**
 * Starts the Deployment `service.name`'s pod template on the node (network namespace
 * `options.nodeNetns`, address `nodeAddress`), waits until it is ready, and publishes it in
 * the Service's EndpointSlice.
 */
export async function startNodeTypha(
  admin: KubeConfig,
  service: { namespace: string; name: string },
  nodeAddress: string,
  options: Omit<ManifestPodOptions, 'podName' | 'onLog'>,
): Promise<NodeTypha> {
  if (service.namespace !== TESSERA_NAMESPACE) throw new Error(`--typha-service ${service.namespace}/${service.name}: expected namespace ${TESSERA_NAMESPACE}`);
  const template = await readPodTemplate(admin, 'Deployment', service.name);
  const container = onlyContainer(template);
  const port = container.ports?.find((p) => p.name === 'tessera-typha');
  const metrics = container.ports?.find((p) => p.name === 'metrics');
  if (port === undefined || metrics === undefined) throw new Error(`Deployment ${service.name}: no ports named tessera-typha and metrics`);
  const logs: string[] = [];
  const started = await containerForTemplate(template, { ...options, podName: `${service.name}-${options.nodeName}`, onLog: (l) => logs.push(l) }).start();
  await waitPodReady(started, metrics.containerPort, `${service.name} on ${options.nodeName}`, () => logs);
  await admin.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace: service.namespace,
    body: {
      metadata: { name: `${service.name}-${options.nodeName}`, namespace: service.namespace, labels: { 'kubernetes.io/service-name': service.name } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [nodeAddress], conditions: { ready: true, serving: true, terminating: false }, nodeName: options.nodeName }],
      ports: [{ name: port.name!, port: port.containerPort, protocol: 'TCP' }],
    },
  });
  return { container: started, logs };
}
