/**
 * What a scenario run (run-scenario.ts) needs of a cluster. Two implement it:
 * - `E2eCluster` (cluster.ts): a real control plane with the agents as processes and pods as
 *   network namespaces the runner wires itself (no kubelet);
 * - `KindCluster` (kind-cluster.ts): a kind cluster with Tessera installed from manifests/,
 *   real kubelets and real pods running the probe-server image.
 * The run itself — namespaces, ServiceAccounts, policies, labels, probes and their
 * convergence — is the same code for both.
 */
import type { KubeConfig } from '@kubernetes/client-node';

import type { ScenarioNode, ScenarioPod } from './scenario.ts';

/** A running pod that probes others from its own network namespace. */
export interface PodProber {
  /** Whether a `protocol` connection from this pod to `host:port` is answered within `timeoutMs`. */
  probe(protocol: 'TCP' | 'UDP', host: string, port: number, timeoutMs: number): Promise<boolean>;
  /** Stops probing (the pod itself is removed by `ScenarioCluster.stopPod`). */
  stop(): void;
}

export interface StartNodeOptions {
  /**
   * Also serve the hostPorts at the addresses the Node object reports (`reportedNodeAddress`),
   * where probes of a scenario with a ClusterNetworkPolicy `nodes` peer go. @default false
   */
  readonly atReportedAddresses?: boolean;
}

export interface ScenarioCluster {
  /** Admin credentials: the run writes namespaces, pods' labels and policies with them. */
  readonly admin: KubeConfig;
  /**
   * Whether the cluster runs Kubernetes' namespace controller. Without one (the bare control
   * plane), deleted namespaces are finalized by hand.
   */
  readonly hasNamespaceController: boolean;
  /** Makes sure the scenario's nodes exist and have an agent (idempotent). */
  ensureNodes(nodes: readonly string[]): Promise<void>;
  /**
   * Creates `pod` in the API and whatever runs it; resolves once it serves its container ports
   * at its addresses (`ip`, and `ip6` when set), with a prober in it.
   */
  startPod(pod: ScenarioPod): Promise<PodProber>;
  /** Deletes `pod` and what runs it; resolves once its addresses are free for another pod. */
  stopPod(pod: ScenarioPod): Promise<void>;
  /**
   * Makes a scenario node (listed in `nodes`, already ensured) an endpoint: its Node object
   * carries the scenario's labels (exactly) and its addresses as InternalIPs, the node holds
   * those addresses where traffic between nodes reaches it, and serves its hostPorts in its host
   * network namespace. Resolves once it serves them, with a prober that connects from the node
   * (its host network, bound to its scenario address of the target's family).
   */
  startNode(node: ScenarioNode, opts?: StartNodeOptions): Promise<PodProber>;
  /** Undoes `startNode` (the prober is stopped by the caller): addresses, servers, labels. */
  stopNode(node: ScenarioNode): Promise<void>;
  /**
   * The IPv`family` address the Node object of scenario node `node` reports in
   * `status.addresses` — what a ClusterNetworkPolicy `nodes` peer matches: the scenario's own
   * address where the runner writes the Node's status, the node's real InternalIP where kubelet
   * owns it (kind). undefined: none of that family.
   */
  reportedNodeAddress(node: ScenarioNode, family: 4 | 6): string | undefined;
  /**
   * Makes the experimental-channel ClusterNetworkPolicy CRD the one the API server serves
   * (cluster-network-policies.ts); the run calls it before applying its first
   * ClusterNetworkPolicy. Idempotent.
   */
  ensureClusterNetworkPolicyCrd(): Promise<void>;
  /** The cluster's name for scenario node `node` (what a HostEndpoint's `spec.node` must say). */
  clusterNodeName(node: string): string;
  /** Resolves once every agent has programmed every calc-graph batch it computed. */
  agentsIdle(timeoutMs: number): Promise<void>;
}

/** The value of an un-labelled metric in a Prometheus text exposition, or undefined. */
export function metricValue(exposition: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(exposition);
  return m === null ? undefined : Number(m[1]);
}
