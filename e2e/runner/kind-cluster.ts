/**
 * The runner's cluster when it is a real one (`npm run e2e -- --cluster kind`): the kind cluster
 * e2e/kind/up.sh made, with Tessera installed from manifests/ (e2e/kind/deploy.sh). Nothing of
 * Tessera runs here: the agents are the DaemonSet's pods, the controllers the Deployment's.
 *
 * Pods are real: kubelet starts them from the probe-server image (images/probe.Containerfile,
 * `localhost/tessera-probe:<version>`, loaded into the nodes), their main process serving the
 * scenario's container ports. The scenario's addresses are requested with Calico's
 * `cni.projectcalico.org/ipAddrs` annotation, which the nodes' IPAM honours
 * (e2e/kind/node/files/tessera-ipam.sh): scenario policies name those addresses. As a routing
 * daemon would, the runner then routes each pinned address from the other nodes to the pod's
 * node (`ip route` in the node containers), and removes the routes with the pod. Probes run
 * inside the source pod through one `kubectl exec -i` session per pod (pod-server.ts), which
 * does not cross the pod network, so no policy can cut the runner off from its probes.
 *
 * Scenario `nodes` ("Hosts as endpoints", `startNode`): the scenario node's address is added to
 * its kind node's `eth0` (the interface the nodes reach each other on) and routed from every
 * other node via that node's InternalIP, as pods' addresses are; its hostPorts are served by a
 * hostNetwork pod on that node (`tessera-e2e-host-<node>` in `default`, the probe-server image,
 * so in the node's host network namespace), and probes from the node run in that pod, each
 * socket bound to the scenario address. The scenario's node labels are set on top of the kind
 * node's own (which a real node keeps) and the originals restored after the scenario. The Node's
 * status addresses stay kubelet's: it owns them and would overwrite a patch. So a scenario with a
 * ClusterNetworkPolicy `nodes` peer (which matches those addresses) is probed at the kind node's
 * own InternalIP (`reportedNodeAddress`), where the host pod then serves the hostPorts as well.
 *
 * ClusterNetworkPolicies: before the first, the run applies
 * manifests/experimental/clusternetworkpolicies.yaml (the experimental-channel CRD over the
 * standard one e2e/kind/deploy.sh installed) and waits until it is served.
 *
 * Scenario node names (`node-1`, `node-2`, …) map in sorted order onto the workers (sorted),
 * then the control plane; pods tolerate every taint. "Every agent has applied the change" is
 * each agent pod's own `tessera_agent_sent_generation` = `tessera_agent_applied_generation`,
 * read through the API server's pod proxy.
 */
import { existsSync } from 'node:fs';

import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';

import { PollAbort, pollUntil } from '../controlplane/index.ts';
import { KIND_KUBECONFIG, KIND_KUBECTL, onNode, TESSERA_VERSION } from '../kind/kind-tools.ts';
import { PodServer, sourceList, type ProbeSources } from './pod-server.ts';
import { installExperimentalCnpCrd } from './cluster-network-policies.ts';
import { metricValue, type PodProber, type ScenarioCluster, type StartNodeOptions } from './scenario-cluster.ts';
import { scenarioNodeAddresses, type NodeAddresses } from './node-addresses.ts';
import { podKey, type ScenarioNode, type ScenarioPod } from './scenario.ts';

export const PINNED_ADDRESSES_ANNOTATION = 'cni.projectcalico.org/ipAddrs';
const TESSERA_NAMESPACE = 'tessera-system';
const AGENT_SELECTOR = 'app.kubernetes.io/name=tessera-agent';
const PROBE_AGENT = '/probe/probe-agent.mjs';
/** Where the hostNetwork pods serving scenario nodes' hostPorts run. */
const HOST_POD_NAMESPACE = 'default';
/** The interface kind nodes reach each other on: scenario node addresses go there. */
const NODE_INTERFACE = 'eth0';

/** The hostNetwork pod that serves a kind node's scenario hostPorts and probes from it. */
export function hostPodName(kindNode: string): string {
  return `tessera-e2e-host-${kindNode}`;
}

export interface KindClusterOptions {
  /** @default what `make kind-up` writes ($HOME/.cache/tessera/kind/tessera.kubeconfig) */
  readonly kubeconfig?: string;
  /** The probe-server image, already on every node. @default localhost/tessera-probe:<package version> */
  readonly probeImage?: string;
  /** The agents' metrics port (manifests/40-agent.yaml's --metrics-port). @default 9095 */
  readonly agentMetricsPort?: number;
  /** How long a pod may take to run and serve its ports. @default 120_000 */
  readonly podStartTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

export interface KindNode {
  readonly name: string;
  readonly ipv4: string | undefined;
  readonly ipv6: string | undefined;
}

/** kubectl for the kind cluster: KUBECTL_BIN, else the one e2e/kind built, else PATH's. */
function kindKubectl(): string {
  return process.env['KUBECTL_BIN'] ?? (existsSync(KIND_KUBECTL) ? KIND_KUBECTL : 'kubectl');
}

function isNotFound(e: unknown): boolean {
  return (e as { code?: number }).code === 404;
}

/** Why a pod is not running yet, from its status: phase, conditions and container states. */
function podState(pod: V1Pod): string {
  const s = pod.status;
  const containers = (s?.containerStatuses ?? []).map((c) => {
    const st = c.state?.waiting ?? c.state?.terminated;
    return `${c.name}: ${c.state?.running !== undefined ? 'running' : `${st?.reason ?? 'unknown'}${st?.message === undefined ? '' : ` (${st.message})`}`}${c.ready ? ', ready' : ''}`;
  });
  const conditions = (s?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `${c.type}=False${c.message === undefined ? '' : ` (${c.message})`}`);
  return [`phase ${s?.phase ?? 'unknown'}`, ...conditions, ...containers].join('; ');
}

/**
 * A hostNetwork pod on `node` from the probe-server image, serving `ports` in the node's host
 * network on exactly the scenario node's `addresses` (so a UDP echo leaves from the address
 * probed, not eth0's primary one).
 */
export function hostPodManifest(name: string, node: string, image: string, ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>, addresses: readonly string[]): V1Pod {
  return {
    metadata: { name, namespace: HOST_POD_NAMESPACE, labels: { 'app.kubernetes.io/name': 'tessera-e2e-host' } },
    spec: {
      nodeName: node,
      hostNetwork: true,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 5,
      tolerations: [{ operator: 'Exists' }],
      containers: [{ name: 'app', image, imagePullPolicy: 'Never', args: [JSON.stringify(ports), JSON.stringify({ serve: true, bind: addresses })], securityContext: { runAsUser: 0 } }],
    },
  };
}

/** `ip` commands (on the scenario node's kind node) adding or deleting its addresses on eth0. */
export function kindNodeAddressCommands(addrs: NodeAddresses, op: 'add' | 'del'): string[][] {
  const verb = op === 'add' ? 'replace' : 'del';
  return [
    ...(addrs.ipv4 === undefined ? [] : [['ip', '-4', 'addr', verb, `${addrs.ipv4}/32`, 'dev', NODE_INTERFACE]]),
    ...(addrs.ipv6 === undefined ? [] : [['ip', '-6', 'addr', verb, `${addrs.ipv6}/128`, 'dev', NODE_INTERFACE, ...(op === 'add' ? ['nodad'] : [])]]),
  ];
}

/**
 * `ip` commands (on every other kind node) routing a scenario node's addresses via its kind
 * node's InternalIP of the same family; a family the kind node has no InternalIP of is refused.
 */
export function kindNodeRouteCommands(addrs: NodeAddresses, home: KindNode, op: 'add' | 'del'): string[][] {
  const out: string[][] = [];
  for (const [address, via, family, len] of [[addrs.ipv4, home.ipv4, '-4', 32], [addrs.ipv6, home.ipv6, '-6', 128]] as const) {
    if (address === undefined) continue;
    if (op === 'del') {
      out.push(['ip', family, 'route', 'del', `${address}/${len}`]);
      continue;
    }
    if (via === undefined) throw new Error(`scenario node address ${address}: kind node ${home.name} has no InternalIP of that family (the kind cluster is not dual-stack)`);
    out.push(['ip', family, 'route', 'replace', `${address}/${len}`, 'via', via]);
  }
  return out;
}

export class KindCluster implements ScenarioCluster {
  readonly hasNamespaceController = true;
  readonly admin: KubeConfig;
  readonly kubeconfigPath: string;
  private readonly core: CoreV1Api;
  private readonly kubectl = kindKubectl();
  private readonly probeImage: string;
  private readonly metricsPort: number;
  private readonly podStartTimeoutMs: number;
  private readonly log: (line: string) => void;
  /** Scenario node name → cluster node. */
  private readonly nodeMap = new Map<string, KindNode>();
  /** Kind node name → its labels before `startNode` added the scenario's (restored by `stopNode`). */
  private readonly originalLabels = new Map<string, Record<string, string>>();
  /** The experimental ClusterNetworkPolicy CRD's install, once per run (`ensureClusterNetworkPolicyCrd`). */
  private cnpCrd: Promise<void> | undefined;
  /** The cluster's nodes: workers by name, then the control plane. */
  nodes: KindNode[] = [];

  private constructor(opts: KindClusterOptions) {
    this.kubeconfigPath = opts.kubeconfig ?? KIND_KUBECONFIG;
    this.admin = new KubeConfig();
    this.admin.loadFromFile(this.kubeconfigPath);
    this.core = this.admin.makeApiClient(CoreV1Api);
    this.probeImage = opts.probeImage ?? `localhost/tessera-probe:${TESSERA_VERSION}`;
    this.metricsPort = opts.agentMetricsPort ?? 9095;
    this.podStartTimeoutMs = opts.podStartTimeoutMs ?? 120_000;
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** Connects to the cluster and checks that every node runs a Ready agent. */
  static async connect(opts: KindClusterOptions = {}): Promise<KindCluster> {
    const c = new KindCluster(opts);
    const nodes = (await c.core.listNode()).items;
    const internal = (n: (typeof nodes)[number], v6: boolean) => n.status?.addresses?.find((a) => a.type === 'InternalIP' && a.address.includes(':') === v6)?.address;
    const isControlPlane = (n: (typeof nodes)[number]) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] !== undefined;
    const byName = (a: (typeof nodes)[number], b: (typeof nodes)[number]) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
    c.nodes = [...nodes.filter((n) => !isControlPlane(n)).sort(byName), ...nodes.filter(isControlPlane).sort(byName)].map((n) => ({
      name: n.metadata?.name ?? '',
      ipv4: internal(n, false),
      ipv6: internal(n, true),
    }));
    c.log(`kind cluster at ${c.admin.getCurrentCluster()?.server}: nodes ${c.nodes.map((n) => `${n.name} (${[n.ipv4, n.ipv6].filter(Boolean).join(', ')})`).join('; ')}`);
    await pollUntil(
      async () => {
        const agents = await c.agentPods();
        const ready = new Set(agents.filter((p) => p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')).map((p) => p.spec?.nodeName));
        const missing = c.nodes.filter((n) => !ready.has(n.name)).map((n) => n.name);
        if (missing.length > 0) throw new Error(`no Ready tessera-agent pod on ${missing.join(', ')} (install Tessera: e2e/kind/deploy.sh)`);
        return true;
      },
      { description: 'a Ready agent on every node', timeoutMs: 60_000, intervalMs: 1_000 },
    );
    return c;
  }

  async ensureNodes(scenarioNodes: readonly string[]): Promise<void> {
    const wanted = [...new Set([...this.nodeMap.keys(), ...scenarioNodes])].sort();
    if (wanted.length > this.nodes.length) throw new Error(`the scenarios name ${wanted.length} nodes (${wanted.join(', ')}); the kind cluster has ${this.nodes.length}`);
    wanted.forEach((n, i) => {
      if (!this.nodeMap.has(n)) {
        const node = this.nodes[i] as KindNode;
        this.nodeMap.set(n, node);
        this.log(`scenario node ${n} → ${node.name}`);
      }
    });
  }

  private node(scenarioNode: string): KindNode {
    const n = this.nodeMap.get(scenarioNode);
    if (n === undefined) throw new Error(`scenario node ${scenarioNode} is not mapped onto the cluster (ensureNodes first)`);
    return n;
  }

  /** Routes (or, with `del`, unroutes) the pod's pinned addresses from every other node. */
  private async routes(p: ScenarioPod, del: boolean): Promise<void> {
    const home = this.node(p.node);
    const jobs: Array<Promise<void>> = [];
    for (const other of this.nodes) {
      if (other.name === home.name) continue;
      const families: Array<[string | undefined, string | undefined, string]> = [[p.ip, home.ipv4, '-4'], [p.ip6, home.ipv6, '-6']];
      for (const [address, via, family] of families) {
        if (address === undefined) continue;
        if (via === undefined) throw new Error(`pod ${podKey(p)} has ${address}, but node ${home.name} has no InternalIP of that family: the kind cluster is not dual-stack`);
        const prefix = family === '-4' ? `${address}/32` : `${address}/128`;
        jobs.push(del ? onNode(other.name, ['ip', family, 'route', 'del', prefix]).then(() => undefined, () => undefined) : onNode(other.name, ['ip', family, 'route', 'replace', prefix, 'via', via]).then(() => undefined));
      }
    }
    await Promise.all(jobs);
  }

  async startPod(p: ScenarioPod): Promise<PodProber> {
    const node = this.node(p.node);
    const ports = (p.containerPorts ?? []).filter((c) => (c.protocol ?? 'TCP') !== 'SCTP').map((c) => ({ port: c.containerPort, protocol: (c.protocol ?? 'TCP') as 'TCP' | 'UDP' }));
    const addresses = [p.ip, ...(p.ip6 === undefined ? [] : [p.ip6])];
    await this.core.createNamespacedPod({
      namespace: p.namespace,
      body: {
        metadata: { name: p.name, namespace: p.namespace, labels: p.labels ?? {}, annotations: { [PINNED_ADDRESSES_ANNOTATION]: JSON.stringify(addresses) } },
        spec: {
          nodeName: node.name,
          serviceAccountName: p.serviceAccount ?? 'default',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 5,
          tolerations: [{ operator: 'Exists' }],
          containers: [
            {
              name: 'app',
              image: this.probeImage,
              imagePullPolicy: 'Never',
              args: [JSON.stringify(ports), JSON.stringify({ serve: true, ipv6: p.ip6 !== undefined })],
              ports: (p.containerPorts ?? []).map((c) => ({ ...c, protocol: c.protocol ?? 'TCP' })),
              securityContext: { runAsUser: 0 },
            },
          ],
        },
      },
    });
    await this.waitRunning(p.namespace, p.name, node.name, addresses);
    await this.routes(p, false);
    return this.attachProber(p.namespace, p.name, ports, ['127.0.0.1', ...(p.ip6 === undefined ? [] : ['::1'])], {});
  }

  /**
   * Waits until pod `namespace/name` runs on `node` (with `addresses` among its IPs): a pod that
   * ended, restarted or runs with other addresses fails at once, naming its state.
   */
  private async waitRunning(namespace: string, name: string, node: string, addresses: readonly string[]): Promise<void> {
    const key = `${namespace}/${name}`;
    let last: V1Pod | undefined;
    await pollUntil(
      async () => {
        last = await this.core.readNamespacedPod({ name, namespace });
        const ips = (last.status?.podIPs ?? []).map((x) => x.ip);
        if (last.status?.phase === 'Failed' || last.status?.phase === 'Succeeded') throw new PollAbort(new Error(`pod ${key} ended: ${podState(last)}`));
        // The probe server never exits on its own: a restart is a failure, not a slow start.
        if ((last.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0) throw new PollAbort(new Error(`pod ${key}'s container restarted: ${podState(last)}`));
        const running = last.status?.containerStatuses?.[0]?.state?.running !== undefined;
        if (running && addresses.some((a) => !ips.includes(a))) throw new PollAbort(new Error(`pod ${key} runs with addresses ${ips.join(', ')}, not the pinned ${addresses.join(', ')}`));
        return running ? true : undefined;
      },
      { description: `pod ${key} to run on ${node}`, timeoutMs: this.podStartTimeoutMs, intervalMs: 250 },
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}${last === undefined ? '' : ` — ${podState(last)}`}`);
    });
  }

  /**
   * A prober in pod `namespace/name` (`kubectl exec -i`, a probe agent beside the pod's main
   * process), returned once the pod serves `ports` at every one of `hosts` from inside it (a
   * pod: loopback, which no policy sees; a node: its scenario addresses, before any policy).
   */
  private async attachProber(namespace: string, name: string, ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>, hosts: readonly string[], sources: ProbeSources): Promise<PodServer> {
    const key = `${namespace}/${name}`;
    const prober = await PodServer.attach(key, this.kubectl, ['--kubeconfig', this.kubeconfigPath, 'exec', '-i', '-n', namespace, name, '-c', 'app', '--', 'node', PROBE_AGENT, '[]'], 30_000, sources);
    try {
      for (const { port, protocol } of ports) {
        for (const host of hosts) {
          await pollUntil(async () => ((await prober.probe(protocol, host, port, 500)) ? true : undefined), { description: `pod ${key} to serve ${protocol}/${port} on ${host}`, timeoutMs: 30_000, intervalMs: 100 });
        }
      }
    } catch (e) {
      prober.stop();
      throw e;
    }
    return prober;
  }

  /** Scenario node names map onto kind nodes (`ensureNodes`). */
  clusterNodeName(node: string): string {
    return this.node(node).name;
  }

  /** The kind node's own InternalIP of `family`: kubelet's, what its Node reports. */
  reportedNodeAddress(n: ScenarioNode, family: 4 | 6): string | undefined {
    const node = this.node(n.name);
    return family === 6 ? node.ipv6 : node.ipv4;
  }

  /** Applies manifests/experimental/clusternetworkpolicies.yaml, once per run. */
  ensureClusterNetworkPolicyCrd(): Promise<void> {
    this.cnpCrd ??= installExperimentalCnpCrd(this.kubectl, this.kubeconfigPath, this.admin).catch((e: unknown) => {
      this.cnpCrd = undefined;
      throw e;
    });
    return this.cnpCrd;
  }

  /**
   * See the file comment: address on eth0 and routes, labels, a hostNetwork pod serving and
   * probing; with `atReportedAddresses`, the pod serves at the kind node's InternalIPs too.
   */
  async startNode(n: ScenarioNode, opts: StartNodeOptions = {}): Promise<PodProber> {
    const node = this.node(n.name);
    const addrs = scenarioNodeAddresses(n);
    const reported = opts.atReportedAddresses === true ? [node.ipv4, node.ipv6].filter((a): a is string => a !== undefined) : [];
    const served = [...new Set([...sourceList(addrs), ...reported])];
    await this.setNodeLabels(node.name, n.labels ?? {});
    await this.nodeAddresses(n, 'add');
    const ports = (n.hostPorts ?? []).filter((h) => (h.protocol ?? 'TCP') !== 'SCTP').map((h) => ({ port: h.port, protocol: (h.protocol ?? 'TCP') as 'TCP' | 'UDP' }));
    const name = hostPodName(node.name);
    await this.deleteHostPod(name);
    await this.core.createNamespacedPod({ namespace: HOST_POD_NAMESPACE, body: hostPodManifest(name, node.name, this.probeImage, ports, served) });
    await this.waitRunning(HOST_POD_NAMESPACE, name, node.name, []);
    return this.attachProber(HOST_POD_NAMESPACE, name, ports, served, addrs);
  }

  /** Undoes `startNode` (whatever part of it was done). */
  async stopNode(n: ScenarioNode): Promise<void> {
    const node = this.node(n.name);
    await this.deleteHostPod(hostPodName(node.name));
    await this.nodeAddresses(n, 'del');
    const original = this.originalLabels.get(node.name);
    if (original !== undefined) {
      const live = await this.core.readNode({ name: node.name });
      live.metadata = { ...live.metadata, labels: original };
      await this.core.replaceNode({ name: node.name, body: live });
      this.originalLabels.delete(node.name);
    }
  }

  /** Sets the scenario's labels on top of kind node `name`'s own (remembered for `stopNode`). */
  private async setNodeLabels(name: string, labels: Record<string, string>): Promise<void> {
    const live = await this.core.readNode({ name });
    const original = this.originalLabels.get(name) ?? { ...(live.metadata?.labels ?? {}) };
    this.originalLabels.set(name, original);
    live.metadata = { ...live.metadata, labels: { ...original, ...labels } };
    await this.core.replaceNode({ name, body: live });
  }

  /**
   * Adds (or deletes) scenario node `n`'s addresses on its kind node's eth0, and the routes to
   * them via its InternalIPs on every other node.
   */
  private async nodeAddresses(n: ScenarioNode, op: 'add' | 'del'): Promise<void> {
    const home = this.node(n.name);
    const addrs = scenarioNodeAddresses(n);
    const run = (on: string, args: readonly string[]): Promise<void> => (op === 'add' ? onNode(on, args).then(() => undefined) : onNode(on, args).then(() => undefined, () => undefined));
    const jobs: Array<Promise<void>> = [];
    for (const cmd of kindNodeAddressCommands(addrs, op)) jobs.push(run(home.name, cmd));
    for (const other of this.nodes) {
      if (other.name === home.name) continue;
      for (const cmd of kindNodeRouteCommands(addrs, home, op)) jobs.push(run(other.name, cmd));
    }
    await Promise.all(jobs);
  }

  private async deleteHostPod(name: string): Promise<void> {
    try {
      await this.core.deleteNamespacedPod({ name, namespace: HOST_POD_NAMESPACE, gracePeriodSeconds: 0 });
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    await pollUntil(
      async () => {
        try {
          await this.core.readNamespacedPod({ name, namespace: HOST_POD_NAMESPACE });
          return undefined;
        } catch (e) {
          if (isNotFound(e)) return true;
          throw e;
        }
      },
      { description: `pod ${HOST_POD_NAMESPACE}/${name} to be deleted`, timeoutMs: 120_000, intervalMs: 250 },
    );
  }

  async stopPod(p: ScenarioPod): Promise<void> {
    try {
      await this.core.deleteNamespacedPod({ name: p.name, namespace: p.namespace });
      // Gone from the API only once kubelet has stopped it and torn its sandbox (and so its
      // addresses) down: a later scenario's pod may then take them.
      await pollUntil(
        async () => {
          try {
            await this.core.readNamespacedPod({ name: p.name, namespace: p.namespace });
            return undefined;
          } catch (e) {
            if (isNotFound(e)) return true;
            throw e;
          }
        },
        { description: `pod ${podKey(p)} to be deleted`, timeoutMs: 120_000, intervalMs: 250 },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    } finally {
      if (this.nodeMap.has(p.node)) await this.routes(p, true);
    }
  }

  /** The tessera-agent pods. */
  async agentPods(): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace: TESSERA_NAMESPACE, labelSelector: AGENT_SELECTOR })).items;
  }

  /** One agent pod's /metrics, through the API server's pod proxy. */
  async agentMetrics(pod: string): Promise<string> {
    return this.core.connectGetNamespacedPodProxyWithPath({ name: `${pod}:${this.metricsPort}`, namespace: TESSERA_NAMESPACE, path: 'metrics' });
  }

  async agentsIdle(timeoutMs: number): Promise<void> {
    await pollUntil(
      async () => {
        for (const pod of await this.agentPods()) {
          const body = await this.agentMetrics(pod.metadata?.name ?? '');
          const sent = metricValue(body, 'tessera_agent_sent_generation');
          if (sent === undefined || sent !== metricValue(body, 'tessera_agent_applied_generation')) return undefined;
        }
        return true;
      },
      { description: 'every agent pod to have applied its last calc-graph batch', timeoutMs, intervalMs: 50 },
    );
  }

  /** Each agent pod's node, resident memory and CPU seconds so far (its process_* metrics). */
  async agentUsage(): Promise<Array<{ node: string; rssMiB: number; cpuSeconds: number; startTime: number }>> {
    const out = [];
    for (const pod of await this.agentPods()) {
      const body = await this.agentMetrics(pod.metadata?.name ?? '');
      out.push({
        node: pod.spec?.nodeName ?? '',
        rssMiB: (metricValue(body, 'process_resident_memory_bytes') ?? NaN) / 2 ** 20,
        cpuSeconds: metricValue(body, 'process_cpu_seconds_total') ?? NaN,
        startTime: metricValue(body, 'process_start_time_seconds') ?? NaN,
      });
    }
    return out;
  }

  async close(): Promise<void> {
    // Nothing of the cluster's is the runner's: pods and namespaces are removed by the run.
  }
}
