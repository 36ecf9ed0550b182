/**
 * Pod → WorkloadEndpoint, as Calico's `workload_endpoint_default.go` builds it
 * (calico-semantics §2.1), for clusters whose CNI is not Calico's:
 *
 * - name `<node>-k8s-<pod>-eth0` with every `-` inside a part doubled;
 * - labels: the pod's, overridden by `projectcalico.org/namespace`,
 *   `projectcalico.org/orchestrator: k8s` and (SA name non-empty and < 63 characters)
 *   `projectcalico.org/serviceaccount`. The pod's other labels are kept as they are, `pcns.`/
 *   `pcsa.` ones included, as Calico's conversion keeps them: what Felix matches is decided
 *   by the update processor (calc/update-processor.ts `endpointLabels`), which drops those and
 *   sets the service-account label from `spec.serviceAccountName` whatever its length;
 * - profiles `[kns.<ns>, ksa.<ns>.<sa>]` (the second only with a service account);
 * - ipNetworks from `status.podIPs` (else `status.podIP`) as /32 or /128;
 * - ports: container and init-container ports with a number and a name or hostPort;
 *   protocol TCP (TCP or empty), UDP, SCTP; others skipped. (Calico's internal model
 *   lower-cases them; the v3 API — and crds/ — spell them in capitals, and Felix matches
 *   named ports case-insensitively);
 * - qosControls from the pod's QoS annotations (pod-qos-annotations.ts; `podToWorkloadEndpointWithWarnings`
 *   also returns what Calico would warn about them);
 * - interface `cali` + the first 11 hex characters of SHA-1(`<ns>.<pod>`), or none (see
 *   `WorkloadInterfaceNaming`).
 *
 * No endpoint (undefined) for a pod that is host-networked, unscheduled, finished
 * (`podIsFinished`), or has no IPs: Felix would never see one. A pod being deleted keeps its
 * endpoint until it is finished or gone (graceful termination, see `podIsFinished`).
 */
import { createHash } from 'node:crypto';

import type { WorkloadEndpoint, WorkloadEndpointPort } from '../api/types.ts';
import { API_VERSION } from '../api/types.ts';
import { formatIP, parseIP } from '../api/cidr.ts';
import { namespaceProfileName, serviceAccountProfileName } from './profile-builder.ts';
import type { K8sPod } from '../api/kubernetes.ts';
import { podQoSControls } from './pod-qos-annotations.ts';

/** Felix: the first entry of FELIX_INTERFACEPREFIX, default `cali`. */
export const DEFAULT_INTERFACE_PREFIX = 'cali';

/**
 * How an endpoint names its host-side interface:
 * - `calico`: `cali` + 11 hex of SHA-1(`<ns>.<pod>`), the name Calico's CNI plugin gives the
 *   host veth — right only for a CNI that names host veths that way;
 * - `none`: no `interfaceName`; the agent resolves the interface from the host route to the
 *   pod's address (`<ip>/32 dev <host veth>`, which Calico's CNI, kindnet and ptp all install),
 *   so any such CNI's naming (`veth…`) is enforced once the agent's `--interface-prefix`
 *   covers it.
 */
export type WorkloadInterfaceNaming = 'calico' | 'none';
export const WORKLOAD_INTERFACE_NAMINGS: readonly WorkloadInterfaceNaming[] = ['calico', 'none'];

export interface WorkloadEndpointBuildOptions {
  /** @default 'calico' (what Calico's converter writes; the offline tools render chains by it) */
  readonly interfaceNaming?: WorkloadInterfaceNaming;
}

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

/**
 * Pod phases after which the pod no longer owns its IPs. `Completed` is not an API phase;
 * Calico lists it too (libcalico-go `conversion.go`: "documented but doesn't seem to be in the
 * API"), so a pod that reports it is treated the same way here.
 */
const FINISHED_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed', 'Completed']);

/**
 * Whether the pod has released its IPs, so its endpoint must go: Calico's `IsFinished`
 * (libcalico-go `lib/backend/k8s/conversion/conversion.go`), as it applies without Calico's CNI.
 *
 * Being deleted is NOT being finished. A pod with `metadata.deletionTimestamp` is in its
 * termination grace period: its containers are still running their preStop hooks and draining
 * established connections, so its endpoint — the policy that admits that traffic, and the
 * pod's membership in other policies' IP sets — stays until the kubelet reports a terminal
 * phase or removes the object. Dropping it at the deletion cut every connection at once:
 * with no endpoint the pod's traffic meets the unknown-interface drop, and peers lose the allow
 * their selectors gave it.
 *
 * What differs from Calico, and why: Calico also counts a pod being deleted as finished as soon
 * as its CNI plugin has released the pod's network — Calico's CNI sets
 * `cni.projectcalico.org/podIP` to "" at CNI DEL, the AWS VPC CNI empties
 * `vpc.amazonaws.com/pod-ips` — and takes IPs from those annotations before the kubelet
 * reports them. This builder serves clusters whose CNI is not Calico's (with Calico's CNI the
 * controllers run with `--no-workload-endpoints`), and other CNIs (kindnet, flannel, bridge, ptp)
 * write nothing on the pod, so only the phase and the pod's IPs in `status` decide. The cost:
 * between the CNI's release of the IP and the kubelet's terminal-phase update (the status
 * write that follows the sandbox's teardown) the endpoint still claims the address; a new pod given
 * the same address on that node in that window would be matched as the old pod by other
 * policies' selectors until the update lands. host-local IPAM hands out addresses round-robin,
 * so an immediate reuse needs a nearly exhausted range.
 */
export function podIsFinished(pod: K8sPod): boolean {
  const phase = pod.status?.phase;
  return phase !== undefined && FINISHED_PHASES.has(phase);
}

export function podToWorkloadEndpoint(pod: K8sPod, opts: WorkloadEndpointBuildOptions = {}): WorkloadEndpoint | undefined {
  return podToWorkloadEndpointWithWarnings(pod, opts).endpoint;
}

/**
 * `podToWorkloadEndpoint`, with the problems Calico's converter logs and builds the endpoint
 * anyway: a QoS annotation it could not parse, clamped or dropped (pod-qos-annotations.ts),
 * each `<annotation>: <reason>`. None when there is no endpoint.
 */
export function podToWorkloadEndpointWithWarnings(pod: K8sPod, opts: WorkloadEndpointBuildOptions = {}): { endpoint: WorkloadEndpoint | undefined; warnings: readonly string[] } {
  const endpoint = buildEndpoint(pod, opts);
  if (endpoint === undefined) return { endpoint, warnings: [] };
  const { qosControls, errors } = podQoSControls(pod.metadata?.annotations);
  if (qosControls !== undefined) endpoint.spec.qosControls = qosControls;
  return { endpoint, warnings: errors };
}

function buildEndpoint(pod: K8sPod, opts: WorkloadEndpointBuildOptions): WorkloadEndpoint | undefined {
  const { interfaceNaming = 'calico' } = opts;
  const name = pod.metadata?.name;
  const namespace = pod.metadata?.namespace;
  const node = pod.spec?.nodeName;
  if (!name || !namespace || !node) return undefined;
  if (pod.spec?.hostNetwork === true) return undefined;
  if (podIsFinished(pod)) return undefined;
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
      ...(interfaceNaming === 'calico' ? { interfaceName: workloadInterfaceName(namespace, name) } : {}),
      ...(ports.length > 0 ? { ports } : {}),
    },
  };
}
