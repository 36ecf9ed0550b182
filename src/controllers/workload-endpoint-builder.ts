/**
 * Pod → WorkloadEndpoint, as Calico's `workload_endpoint_default.go` builds it
 * (calico-semantics §2.1), for clusters whose CNI is not Calico's:
 *
 * - name `<node>-k8s-<pod>-eth0` with every `-` inside a part doubled;
 * - labels: the pod's, overridden by `projectcalico.org/namespace`,
 *   `projectcalico.org/orchestrator: k8s` and (SA name non-empty and < 63 characters)
 *   `projectcalico.org/serviceaccount`;
 * - profiles `[kns.<ns>, ksa.<ns>.<sa>]` (the second only with a service account);
 * - ipNetworks from `status.podIPs` (else `status.podIP`) as /32 or /128;
 * - ports: container and init-container ports with a number and a name or hostPort;
 *   protocol TCP (TCP or empty), UDP, SCTP; others skipped. (Calico's internal model
 *   lower-cases them; the v3 API — and crds/ — spell them in capitals, and Felix matches
 *   named ports case-insensitively);
 * - interface `cali` + the first 11 hex characters of SHA-1(`<ns>.<pod>`).
 *
 * No endpoint (undefined) for a pod that is host-networked, unscheduled, finished
 * (Succeeded/Failed), being deleted, or has no IPs: Felix would never see one.
 */
import { createHash } from 'node:crypto';

import type { WorkloadEndpoint, WorkloadEndpointPort } from '../api/types.ts';
import { API_VERSION } from '../api/types.ts';
import { formatIP, parseIP } from '../api/cidr.ts';
import { namespaceProfileName, serviceAccountProfileName } from './profile-builder.ts';

export interface K8sContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
  hostPort?: number;
  hostIP?: string;
}

/** The structural subset of a core/v1 Pod this module reads. */
export interface K8sPod {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string>; deletionTimestamp?: unknown };
  spec?: {
    nodeName?: string;
    hostNetwork?: boolean;
    serviceAccountName?: string;
    containers?: Array<{ ports?: K8sContainerPort[] }>;
    initContainers?: Array<{ ports?: K8sContainerPort[] }>;
  };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip: string }> };
}

/** Felix: the first entry of FELIX_INTERFACEPREFIX, default `cali`. */
export const DEFAULT_INTERFACE_PREFIX = 'cali';

export function workloadEndpointName(node: string, pod: string, endpoint = 'eth0'): string {
  const esc = (s: string): string => s.replaceAll('-', '--');
  return `${esc(node)}-k8s-${esc(pod)}-${esc(endpoint)}`;
}

export function workloadInterfaceName(namespace: string, pod: string, prefix = DEFAULT_INTERFACE_PREFIX): string {
  return prefix + createHash('sha1').update(`${namespace}.${pod}`).digest('hex').slice(0, 11);
}

function endpointPorts(pod: K8sPod): WorkloadEndpointPort[] {
  const out: WorkloadEndpointPort[] = [];
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (!p.containerPort) continue;
      if (!p.name && !p.hostPort) continue;
      const protocol = p.protocol === undefined || p.protocol === '' || p.protocol === 'TCP' ? 'TCP' : p.protocol === 'UDP' ? 'UDP' : p.protocol === 'SCTP' ? 'SCTP' : undefined;
      if (protocol === undefined) continue;
      const port: WorkloadEndpointPort = { protocol, port: p.containerPort };
      if (p.name) port.name = p.name;
      if (p.hostPort) port.hostPort = p.hostPort;
      if (p.hostIP) port.hostIP = p.hostIP;
      out.push(port);
    }
  }
  return out;
}

function podNetworks(pod: K8sPod): string[] {
  const ips = pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
  const nets: string[] = [];
  for (const ip of ips) {
    const parsed = parseIP(ip);
    if (!parsed.ok) continue;
    nets.push(`${formatIP(parsed.value.bytes)}/${parsed.value.version === 4 ? 32 : 128}`);
  }
  return nets;
}

export function podToWorkloadEndpoint(pod: K8sPod): WorkloadEndpoint | undefined {
  const name = pod.metadata?.name;
  const namespace = pod.metadata?.namespace;
  const node = pod.spec?.nodeName;
  if (!name || !namespace || !node) return undefined;
  if (pod.spec?.hostNetwork === true) return undefined;
  if (pod.metadata?.deletionTimestamp) return undefined;
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return undefined;
  const ipNetworks = podNetworks(pod);
  if (ipNetworks.length === 0) return undefined;

  const sa = pod.spec?.serviceAccountName ?? '';
  const labels: Record<string, string> = { ...(pod.metadata?.labels ?? {}) };
  labels['projectcalico.org/namespace'] = namespace;
  labels['projectcalico.org/orchestrator'] = 'k8s';
  if (sa !== '' && sa.length < 63) labels['projectcalico.org/serviceaccount'] = sa;

  const ports = endpointPorts(pod);
  return {
    apiVersion: API_VERSION,
    kind: 'WorkloadEndpoint',
    metadata: { name: workloadEndpointName(node, name), namespace, labels },
    spec: {
      orchestrator: 'k8s',
      node,
      pod: name,
      endpoint: 'eth0',
      ...(sa !== '' ? { serviceAccountName: sa } : {}),
      ipNetworks,
      profiles: [namespaceProfileName(namespace), ...(sa !== '' ? [serviceAccountProfileName(namespace, sa)] : [])],
      interfaceName: workloadInterfaceName(namespace, name),
      ...(ports.length > 0 ? { ports } : {}),
    },
  };
}
