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
 * Scenario node names (`node-1`, `node-2`, …) map in sorted order onto the workers (sorted),
 * then the control plane; pods tolerate every taint. "Every agent has applied the change" is
 * each agent pod's own `tessera_agent_sent_generation` = `tessera_agent_applied_generation`,
 * read through the API server's pod proxy.
 */
import { existsSync } from 'node:fs';

import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';

import { PollAbort, pollUntil } from '../controlplane/index.ts';
import { KIND_KUBECONFIG, KIND_KUBECTL, onNode, TESSERA_VERSION } from '../kind/kind-tools.ts';
import { PodServer } from './pod-server.ts';
import { metricValue, type PodProber, type ScenarioCluster } from './scenario-cluster.ts';
import { podKey, type ScenarioPod } from './scenario.ts';

export const PINNED_ADDRESSES_ANNOTATION = 'cni.projectcalico.org/ipAddrs';
const TESSERA_NAMESPACE = 'tessera-system';
const AGENT_SELECTOR = 'app.kubernetes.io/name=tessera-agent';
const PROBE_AGENT = '/probe/probe-agent.mjs';

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

interface KindNode {
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
    let last: V1Pod | undefined;
    await pollUntil(
      async () => {
        last = await this.core.readNamespacedPod({ name: p.name, namespace: p.namespace });
        const ips = (last.status?.podIPs ?? []).map((x) => x.ip);
        if (last.status?.phase === 'Failed' || last.status?.phase === 'Succeeded') throw new PollAbort(new Error(`pod ${podKey(p)} ended: ${podState(last)}`));
        // The probe server never exits on its own: a restart is a failure, not a slow start.
        if ((last.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0) throw new PollAbort(new Error(`pod ${podKey(p)}'s container restarted: ${podState(last)}`));
        const running = last.status?.containerStatuses?.[0]?.state?.running !== undefined;
        if (running && addresses.some((a) => !ips.includes(a))) throw new PollAbort(new Error(`pod ${podKey(p)} runs with addresses ${ips.join(', ')}, not the pinned ${addresses.join(', ')}`));
        return running ? true : undefined;
      },
      { description: `pod ${podKey(p)} to run on ${node.name}`, timeoutMs: this.podStartTimeoutMs, intervalMs: 250 },
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}${last === undefined ? '' : ` — ${podState(last)}`}`);
    });
    await this.routes(p, false);
    const prober = await PodServer.attach(podKey(p), this.kubectl, ['--kubeconfig', this.kubeconfigPath, 'exec', '-i', '-n', p.namespace, p.name, '-c', 'app', '--', 'node', PROBE_AGENT, '[]'], 30_000);
    // Serving yet? Its own ports over loopback, which no policy sees.
    try {
      for (const { port, protocol } of ports) {
        for (const host of ['127.0.0.1', ...(p.ip6 === undefined ? [] : ['::1'])]) {
          await pollUntil(async () => ((await prober.probe(protocol, host, port, 500)) ? true : undefined), { description: `pod ${podKey(p)} to serve ${protocol}/${port} on ${host}`, timeoutMs: 30_000, intervalMs: 100 });
        }
      }
    } catch (e) {
      prober.stop();
      throw e;
    }
    return prober;
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
