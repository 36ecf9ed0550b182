/**
 * The Kubernetes objects Tessera reads, as structural types: the subset of client-node's
 * `V1NetworkPolicy`, `V1Pod`, `V1Namespace`/`V1ServiceAccount` the conversion library
 * (src/convert) reads, declared here so that `api/`, `convert/`, `calc/` and the simulator
 * share them without importing @kubernetes/client-node or each other.
 */
import type { K8sLabelSelector } from '../selector/k8s-label-selector.ts';

/**
 * The structural shape of a Kubernetes NetworkPolicy (compatible with client-node's
 * `V1NetworkPolicy`, which this pure module does not import). `null` is allowed wherever
 * hand-written YAML can put it; the converter decodes it as Go would.
 */
export interface K8sNetworkPolicy {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: K8sNetworkPolicySpec;
}

export interface K8sNetworkPolicySpec {
  podSelector?: K8sLabelSelector | null;
  policyTypes?: Array<string | null> | null;
  ingress?: Array<{ from?: Array<K8sPeer | null> | null; ports?: Array<K8sPort | null> | null } | null> | null;
  egress?: Array<{ to?: Array<K8sPeer | null> | null; ports?: Array<K8sPort | null> | null } | null> | null;
}

export interface K8sPeer {
  podSelector?: K8sLabelSelector | null;
  namespaceSelector?: K8sLabelSelector | null;
  ipBlock?: { cidr: string; except?: Array<string | null> | null } | null;
}

export interface K8sPort {
  protocol?: string | null;
  port?: number | string | null;
  endPort?: number | null;
}

export interface K8sContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
  hostPort?: number;
  hostIP?: string;
}

/** The structural subset of a core/v1 Pod this module reads. */
export interface K8sPod {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: unknown };
  spec?: {
    nodeName?: string;
    hostNetwork?: boolean;
    serviceAccountName?: string;
    containers?: Array<{ ports?: K8sContainerPort[] }>;
    /** `restartPolicy: Always` makes an init container a sidecar, whose ports a Service can name. */
    initContainers?: Array<{ ports?: K8sContainerPort[]; restartPolicy?: string }>;
  };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip: string }>; conditions?: Array<{ type?: string; status?: string }> };
}

/** The structural subset of a core/v1 Node that automatic host endpoints read. */
export interface K8sNode {
  metadata?: { name?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { addresses?: Array<{ type?: string; address?: string }> };
}

/** The metadata every Kubernetes object carries (Namespace, ServiceAccount, …). */
export interface K8sMetaObject {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
}

/** The label an EndpointSlice names its Service by (`discovery.k8s.io/v1`). */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/**
 * The structural subset of a `discovery.k8s.io/v1` EndpointSlice that `services` rule
 * matches read (Felix `serviceindex`): the Service it belongs to (`metadata.namespace` and the
 * `kubernetes.io/service-name` label), its address family, its endpoints' addresses and its
 * ports. Endpoint conditions are deliberately absent: Felix ignores them.
 */
export interface K8sEndpointSlice {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string; uid?: string };
  /** `IPv4`, `IPv6` or `FQDN`; FQDN slices hold names, not addresses, and match nothing. */
  addressType?: string;
  endpoints?: Array<{ addresses?: string[] | null } | null> | null;
  /** A nil `port` means "all ports" to Kubernetes and contributes nothing to a ports set. */
  ports?: Array<{ name?: string | null; protocol?: string | null; port?: number | null } | null> | null;
}

/** The structural subset of a core/v1 Service the simulator reads (it derives EndpointSlices from one and its pods). */
export interface K8sService {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; uid?: string };
  spec?: {
    /** Absent or empty: the Service's endpoints are managed by someone else (no EndpointSlices). */
    selector?: Record<string, string> | null;
    clusterIP?: string;
    ipFamilies?: string[] | null;
    ipFamilyPolicy?: string;
    publishNotReadyAddresses?: boolean;
    /** `protocol` defaults to TCP and `targetPort` (a number or a container port's name) to `port`, as the API server defaults them. */
    ports?: Array<{ name?: string; protocol?: string; port?: number; targetPort?: number | string; appProtocol?: string } | null> | null;
  };
}
