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

/** The metadata every Kubernetes object carries (Namespace, ServiceAccount, …). */
export interface K8sMetaObject {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
}

/** One port of a core/v1 Service. `targetPort` is a number or the name of a container port. */
export interface K8sServicePort {
  name?: string;
  /** @default 'TCP' (the API server's default) */
  protocol?: string;
  port: number;
  /** @default port (the API server's default) */
  targetPort?: number | string;
  appProtocol?: string;
}

/** The structural subset of a core/v1 Service that EndpointSlices are made from. */
export interface K8sService {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
  spec?: {
    /** Absent or empty: the Service's endpoints are managed by someone else (no EndpointSlices). */
    selector?: Record<string, string> | null;
    ports?: K8sServicePort[] | null;
    clusterIP?: string;
    clusterIPs?: string[];
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    publishNotReadyAddresses?: boolean;
  };
}

/** One port of a discovery.k8s.io/v1 EndpointSlice: the numeric target port of the endpoints. */
export interface K8sEndpointPort {
  name?: string;
  port?: number | null;
  protocol?: string;
  appProtocol?: string;
}

/** One endpoint of an EndpointSlice (a pod's addresses of the slice's family). */
export interface K8sEndpoint {
  addresses: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  nodeName?: string;
  targetRef?: { kind?: string; namespace?: string; name?: string; uid?: string };
}

/**
 * The structural subset of a discovery.k8s.io/v1 EndpointSlice. It belongs to the Service
 * named by its `kubernetes.io/service-name` label in its namespace.
 */
export interface K8sEndpointSlice {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  /** `IPv4`, `IPv6` or `FQDN`. */
  addressType: string;
  endpoints?: K8sEndpoint[] | null;
  ports?: K8sEndpointPort[] | null;
}
