/**
 * The EndpointSlices Kubernetes' EndpointSlice controller gives a Service, derived from the
 * Service and the pods: what `tessera simulate` uses where no controller ran (files, scenario
 * files). Calico's `services` rule match reads only EndpointSlices, so this is what gives a
 * Service its meaning in a simulation.
 *
 * The controller's rules (k8s.io/endpointslice `reconciler.go`, `utils.go`,
 * `util/controller_utils.go`), each kept here:
 * - Only a Service with a selector gets slices; an absent or empty one (the API server stores
 *   `{}` as no selector) means someone else manages its endpoints: none.
 * - The pods are those of the Service's namespace whose labels match every selector pair, that
 *   have an IP (`podIP` or `podIPs`) and are not terminal (phase Succeeded or Failed).
 *   Terminating pods stay (`terminating: true`). Every pod's node is taken to exist (the
 *   controller leaves out a pod whose Node object is missing).
 * - One group of slices per address type of the Service — its `ipFamilies`; else the family
 *   of its `clusterIP`; else what the API server would default in an IPv4-first dual-stack
 *   cluster (kind's layout): `PreferDualStack`/`RequireDualStack` both families, otherwise IPv4.
 *   A pod contributes, per address type, its addresses of that family (a dual-stack pod is in
 *   both families' slices; a pod without an address of a family is in none of its slices).
 * - A pod's ports: per Service port (protocol default TCP), `targetPort` a number (default
 *   `port`) as is, or a name looked up in the pod's containers — then sidecar init containers
 *   (`restartPolicy: Always`) — among the ports of that name AND the Service port's protocol.
 *   A name the pod does not have leaves that port out for that pod.
 * - Pods are grouped by their port list: pods whose named port resolves differently are in
 *   different slices. A slice holds at most 100 endpoints (`--max-endpoints-per-slice`).
 * - An address type with no endpoint at all gets one placeholder slice (no ports, no
 *   endpoints), as the controller creates.
 *
 * Slice names are deterministic (`<service>-<ipv4|ipv6>-<n>`), standing for the controller's
 * generated ones. The result is pure: same input, same slices, in a stable order.
 */
import { isIPv4, isIPv6 } from 'node:net';

import { SERVICE_NAME_LABEL, type K8sEndpointSlice, type K8sPod, type K8sService } from '../api/index.ts';
import type { ClusterObjects } from './cluster-objects.ts';

/** The label naming the slice's manager (`discovery.LabelManagedBy`). */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/** The EndpointSlice controller's `controllerName`. */
export const ENDPOINTSLICE_CONTROLLER = 'endpointslice-controller.k8s.io';
/** The controller's default `--max-endpoints-per-slice`. */
export const MAX_ENDPOINTS_PER_SLICE = 100;

type AddressType = 'IPv4' | 'IPv6';
type ServicePort = NonNullable<NonNullable<NonNullable<K8sService['spec']>['ports']>[number]>;

/** An endpoint as the controller writes it (conditions, node and pod reference included). */
export interface DerivedEndpoint {
  readonly addresses: string[];
  readonly conditions: { readonly ready: boolean; readonly serving: boolean; readonly terminating: boolean };
  readonly nodeName?: string;
  readonly targetRef: { readonly kind: 'Pod'; readonly namespace: string; readonly name: string; readonly uid?: string };
}

/** A port of a derived slice: the Service port's name and protocol, the pod's numeric port. */
export interface DerivedEndpointPort {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  readonly appProtocol?: string;
}

/** A slice as the controller would write it: a `K8sEndpointSlice` with every field set. */
export interface DerivedEndpointSlice extends K8sEndpointSlice {
  readonly apiVersion: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: { name: string; namespace: string; labels: Record<string, string> };
  readonly addressType: AddressType;
  readonly endpoints: DerivedEndpoint[];
  readonly ports: DerivedEndpointPort[];
}

/** Every EndpointSlice the controller would keep for `services`, given `pods`. */
export function deriveEndpointSlices(services: readonly K8sService[], pods: readonly K8sPod[]): DerivedEndpointSlice[] {
  return services.flatMap((svc) => slicesForService(svc, pods));
}

/**
 * `slices` plus the derived slices of every Service that has none among them (matched by
 * namespace and `kubernetes.io/service-name`): slices listed from a cluster, or given in the
 * input, stand; a Service no controller has seen gets what the controller would give it.
 */
export function withDerivedEndpointSlices(services: readonly K8sService[], pods: readonly K8sPod[], slices: readonly K8sEndpointSlice[]): K8sEndpointSlice[] {
  const covered = new Set(slices.map((s) => `${s.metadata?.namespace || 'default'}/${s.metadata?.labels?.[SERVICE_NAME_LABEL] ?? ''}`));
  const missing = services.filter((s) => !covered.has(`${s.metadata?.namespace || 'default'}/${s.metadata?.name ?? ''}`));
  return [...slices, ...deriveEndpointSlices(missing, pods)];
}

/**
 * `objs` with the EndpointSlices the EndpointSlice controller would give each of its Services
 * that has none (`withDerivedEndpointSlices`): the last step of every loader (files, a cluster,
 * a scenario's state), once pods and Services are all known.
 */
export function withServiceEndpoints(objs: ClusterObjects): ClusterObjects {
  const services = objs.services ?? [];
  if (services.length === 0) return objs;
  return { ...objs, endpointSlices: withDerivedEndpointSlices(services, objs.pods, objs.endpointSlices ?? []) };
}

function slicesForService(svc: K8sService, pods: readonly K8sPod[]): DerivedEndpointSlice[] {
  const name = svc.metadata?.name;
  const namespace = svc.metadata?.namespace ?? 'default';
  const selector = svc.spec?.selector ?? {};
  if (!name || Object.keys(selector).length === 0) return [];
  const members = pods.filter((p) => (p.metadata?.namespace ?? 'default') === namespace && selects(selector, p.metadata?.labels ?? {}) && inEndpoints(p));
  const out: DerivedEndpointSlice[] = [];
  for (const addressType of addressTypes(svc)) {
    const family = addressType === 'IPv4' ? 'ipv4' : 'ipv6';
    /** Port-list key → the group's ports and endpoints, in first-seen order. */
    const groups = new Map<string, { ports: DerivedEndpointPort[]; endpoints: DerivedEndpoint[] }>();
    for (const pod of members) {
      const ports = endpointPorts(svc, pod);
      const key = JSON.stringify(ports.map((p) => [p.name, p.port, p.protocol, p.appProtocol ?? null]).sort());
      let group = groups.get(key);
      if (group === undefined) groups.set(key, (group = { ports, endpoints: [] }));
      const endpoint = podEndpoint(pod, svc, addressType);
      if (endpoint.addresses.length > 0) group.endpoints.push(endpoint);
    }
    const before = out.length;
    for (const { ports, endpoints } of groups.values()) {
      for (let i = 0; i < endpoints.length; i += MAX_ENDPOINTS_PER_SLICE) {
        out.push(slice(svc, name, namespace, `${family}-${out.length - before}`, addressType, ports, endpoints.slice(i, i + MAX_ENDPOINTS_PER_SLICE)));
      }
    }
    if (out.length === before) out.push(slice(svc, name, namespace, `${family}-0`, addressType, [], []));
  }
  return out;
}

function slice(svc: K8sService, name: string, namespace: string, suffix: string, addressType: AddressType, ports: DerivedEndpointPort[], endpoints: DerivedEndpoint[]): DerivedEndpointSlice {
  // The Service's own labels, then the reserved ones the controller always sets.
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(svc.metadata?.labels ?? {})) {
    if (k !== SERVICE_NAME_LABEL && k !== MANAGED_BY_LABEL && k !== HEADLESS_LABEL) labels[k] = v;
  }
  if (!hasClusterIP(svc)) labels[HEADLESS_LABEL] = '';
  labels[SERVICE_NAME_LABEL] = name;
  labels[MANAGED_BY_LABEL] = ENDPOINTSLICE_CONTROLLER;
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-${suffix}`, namespace, labels },
    addressType,
    endpoints,
    ports,
  };
}

/** `service.kubernetes.io/headless`, set on the slices of a Service without a cluster IP. */
const HEADLESS_LABEL = 'service.kubernetes.io/headless';

function hasClusterIP(svc: K8sService): boolean {
  const ip = svc.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

function selects(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** `ShouldPodBeInEndpoints(pod, includeTerminating=true)`. */
function inEndpoints(pod: K8sPod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  return Boolean(pod.status?.podIP) || (pod.status?.podIPs ?? []).length > 0;
}

function addressTypes(svc: K8sService): AddressType[] {
  const families = (svc.spec?.ipFamilies ?? []).filter((f): f is AddressType => f === 'IPv4' || f === 'IPv6');
  if (families.length > 0) return [...new Set(families)];
  const clusterIP = svc.spec?.clusterIP;
  if (clusterIP !== undefined && clusterIP !== '' && clusterIP !== 'None') return [isIPv6(clusterIP) ? 'IPv6' : 'IPv4'];
  const policy = svc.spec?.ipFamilyPolicy;
  return policy === 'PreferDualStack' || policy === 'RequireDualStack' ? ['IPv4', 'IPv6'] : ['IPv4'];
}

/** `getEndpointPorts`: the pod's numeric port per Service port; unresolvable names left out. */
function endpointPorts(svc: K8sService, pod: K8sPod): DerivedEndpointPort[] {
  const out: DerivedEndpointPort[] = [];
  for (const sp of svc.spec?.ports ?? []) {
    if (sp === null) continue;
    const protocol = sp.protocol ?? 'TCP';
    const port = findPort(pod, sp, protocol);
    if (port === undefined) continue;
    out.push({ name: sp.name ?? '', port, protocol, ...(sp.appProtocol === undefined ? {} : { appProtocol: sp.appProtocol }) });
  }
  return out;
}

/** `FindPort`: a numeric targetPort as is; a name among containers', then sidecars', ports. */
function findPort(pod: K8sPod, sp: ServicePort, protocol: string): number | undefined {
  const target = sp.targetPort ?? sp.port;
  if (target === undefined) return undefined;
  if (typeof target === 'number') return target === 0 ? sp.port : target;
  const candidates = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')];
  for (const c of candidates) {
    for (const p of c.ports ?? []) {
      if (p.name === target && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
    }
  }
  return undefined;
}

/** `podToEndpoint` for one address type. */
function podEndpoint(pod: K8sPod, svc: K8sService, addressType: AddressType): DerivedEndpoint {
  const serving = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const terminating = pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null;
  const ready = svc.spec?.publishNotReadyAddresses === true || (serving && !terminating);
  const nodeName = pod.spec?.nodeName;
  const uid = pod.metadata?.uid;
  return {
    addresses: podAddresses(pod, addressType),
    conditions: { ready, serving, terminating },
    ...(nodeName ? { nodeName } : {}),
    targetRef: { kind: 'Pod', namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '', ...(uid ? { uid } : {}) },
  };
}

/** The pod's addresses of `addressType` (`status.podIPs`, else `podIP`), in canonical form. */
function podAddresses(pod: K8sPod, addressType: AddressType): string[] {
  const listed = (pod.status?.podIPs ?? []).map((p) => p.ip);
  const ips = listed.length > 0 ? listed : pod.status?.podIP ? [pod.status.podIP] : [];
  const out: string[] = [];
  for (const ip of ips) {
    if (addressType === 'IPv4' && isIPv4(ip)) out.push(ip);
    // The WHATWG URL serializer writes IPv6 in RFC 5952 form, as Go's net.IP.String does.
    else if (addressType === 'IPv6' && isIPv6(ip)) out.push(new URL(`http://[${ip}]/`).hostname.slice(1, -1));
  }
  return out;
}
