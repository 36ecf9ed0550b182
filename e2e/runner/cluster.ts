/**
 * The runner's cluster: a real control plane (started here, or an existing one reused via
 * its admin kubeconfig) with kube-controller-manager running only the EndpointSlice
 * controller (`CONTROLLERS`; a reused control plane must bring its own, as `cli.ts up` does),
 * manifests/ applied (CRDs, RBAC, admission), `tessera controllers` and
 * one `tessera agent` per node as processes with the ServiceAccounts manifests/ define, and
 * the node namespaces. Created once per run and shared by every scenario; `close()` (also on
 * failure) stops the processes, removes the namespaces and, when it started the control plane,
 * stops it.
 *
 * `hostVethNaming` chooses the CNI the network imitates, and the flags that go with it:
 * - `calico`: host veths named `cali<hash>`; the controllers write that name into each
 *   endpoint (`--workload-interface-naming calico`), and the agents use Felix's default
 *   interface prefix `cali`;
 * - `veth`: host veths named `veth` + random hex (kindnet, ptp); the controllers write no
 *   interface name (`--workload-interface-naming none`) and the agents, with
 *   `--interface-prefix veth`, find each pod's interface from its host route.
 * Agents never get `--ip-versions`: they detect their node's families (`dualStackNodes`).
 *
 * `typhas: N` (N ≥ 1) also runs N `tessera typha` processes with manifests/' tessera-typha
 * ServiceAccount, each listening on its own loopback port, and starts every agent with
 * `--typha` naming all of them: the agents then hold no watch on the API server.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

import { ControlPlane, issueServiceAccountToken, locateBinaries, pollUntil, waitForCrdsEstablished } from '../controlplane/index.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { freePort } from '../controlplane/free-port.ts';
import { installExperimentalCnpCrd } from './cluster-network-policies.ts';
import { ClusterNetwork, type HostVethNaming } from './network.ts';
import { scenarioNodeAddresses } from './node-addresses.ts';
import { PodServer } from './pod-server.ts';
import { REPO_ROOT, TesseraProcess } from './processes.ts';
import type { PodProber, ScenarioCluster } from './scenario-cluster.ts';
import { nodeAddress, podKey, type ScenarioNode, type ScenarioPod } from './scenario.ts';

const run = promisify(execFile);

/**
 * The kube-controller-manager controllers the runner needs: the EndpointSlice controller, which
 * gives a scenario's Services their slices. It needs no other: it reads Services, Pods and
 * Nodes (each pod's Node must exist: `ensureNodes` registers them, as a kubelet would).
 */
export const CONTROLLERS = ['endpointslice'] as const;

/**
 * Dual-stack Service ranges, IPv4 first like the kind cluster's: a Service asking for
 * `PreferDualStack` gets both families here too (simulate assumes that layout).
 */
const SERVICE_CLUSTER_IP_RANGES = '10.0.0.0/24,fd00:10:96::/112';

export interface ClusterOptions {
  /** Reuse the control plane this admin kubeconfig points at. @default start one */
  readonly kubeconfig?: string;
  /** Agents' full iptables/ipset read-back period (the tamper test's repair bound). @default 5 */
  readonly refreshSeconds?: number;
  /** How host-side pod veths are named, and so the controllers' and agents' flags (see above). @default 'calico' */
  readonly hostVethNaming?: HostVethNaming;
  /** Typha processes the agents connect through (0: the agents watch the API server). @default 0 */
  readonly typhas?: number;
  /** Nodes with a global IPv6 address (their agents detect and program IPv6). @default [] */
  readonly dualStackNodes?: readonly string[];
  readonly log?: (line: string) => void;
}

/** The labels `registerNode` gives a Node, as a kubelet would (and `stopNode` restores). */
function registeredNodeLabels(name: string): Record<string, string> {
  return { 'kubernetes.io/hostname': name };
}

export class E2eCluster implements ScenarioCluster {
  /** No kubelet, no namespace controller: deleted namespaces are finalized by hand. */
  readonly hasNamespaceController = false;
  readonly network: ClusterNetwork;
  readonly agents = new Map<string, TesseraProcess>();
  /** The Typha processes, by name (`typha-1`, …), and the loopback port each serves agents on. */
  readonly typhas = new Map<string, { process: TesseraProcess; port: number }>();
  controllers: TesseraProcess | undefined;
  controlPlane: ControlPlane | undefined;
  admin!: KubeConfig;
  adminKubeconfigPath!: string;
  readonly dir = mkdtempSync(join(tmpdir(), 'tessera-e2e-'));
  private agentKubeconfig = '';
  private typhaKubeconfig = '';
  private controllersKubeconfig = '';
  private closing = false;
  /** Node objects created here: deleted by close() on a reused control plane. */
  private readonly registeredNodes = new Set<string>();
  /** The experimental ClusterNetworkPolicy CRD's install, once per cluster (`ensureClusterNetworkPolicyCrd`). */
  private cnpCrd: Promise<void> | undefined;
  /** Times the controllers process exited and was restarted. */
  controllerRestarts = 0;
  private readonly unregister: () => void;
  private readonly refreshSeconds: number;
  private readonly log: (line: string) => void;

  private constructor(opts: ClusterOptions) {
    this.refreshSeconds = opts.refreshSeconds ?? 5;
    this.network = new ClusterNetwork({
      ...(opts.hostVethNaming === undefined ? {} : { hostVethNaming: opts.hostVethNaming }),
      ...(opts.dualStackNodes === undefined ? {} : { dualStackNodes: opts.dualStackNodes }),
    });
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.unregister = registerExitCleanup(() => rmSync(this.dir, { recursive: true, force: true }));
  }

  static async start(opts: ClusterOptions = {}): Promise<E2eCluster> {
    const c = new E2eCluster(opts);
    try {
      await c.setUp(opts);
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  private async setUp(opts: ClusterOptions): Promise<void> {
    let server: string;
    let caPem: string | undefined;
    if (opts.kubeconfig !== undefined) {
      this.admin = new KubeConfig();
      this.admin.loadFromFile(opts.kubeconfig);
      this.adminKubeconfigPath = opts.kubeconfig;
      const cluster = this.admin.getCurrentCluster();
      if (cluster === null) throw new Error(`${opts.kubeconfig}: no current cluster`);
      server = cluster.server;
      caPem = cluster.caData === undefined ? undefined : Buffer.from(cluster.caData, 'base64').toString('utf8');
      this.log(`reusing the control plane at ${server}`);
    } else {
      const t0 = Date.now();
      this.controlPlane = await ControlPlane.start({
        binaries: locateBinaries(),
        controllers: CONTROLLERS,
        apiserverArgs: [`--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGES}`],
      });
      const conn = this.controlPlane.connection;
      this.admin = conn.kubeConfig;
      this.adminKubeconfigPath = conn.kubeconfigPath;
      server = conn.server;
      caPem = conn.caPem;
      const kcm = Math.round(this.controlPlane.timings?.kubeControllerManagerMs ?? 0);
      this.log(`started a control plane at ${server} in ${Date.now() - t0} ms (kube-controller-manager, ${CONTROLLERS.join(',')}: ${kcm} ms of it)`);
    }
    await this.kubectl(['apply', '-f', join(REPO_ROOT, 'manifests')]);
    await waitForCrdsEstablished(this.admin, 'projectcalico.org');
    const identity = (sa: string, file: string) =>
      issueServiceAccountToken(this.admin, {
        namespace: 'tessera-system',
        serviceAccount: sa,
        create: false,
        server,
        ...(caPem === undefined ? {} : { caPem }),
        kubeconfigPath: join(this.dir, file),
        expirationSeconds: 86_400,
      });
    const controllersId = await identity('tessera-controllers', 'controllers.kubeconfig');
    this.agentKubeconfig = (await identity('tessera-agent', 'agent.kubeconfig')).kubeconfigPath;
    this.controllersKubeconfig = controllersId.kubeconfigPath;
    await this.startControllers();
    const typhas = opts.typhas ?? 0;
    if (typhas > 0) {
      this.typhaKubeconfig = (await identity('tessera-typha', 'typha.kubeconfig')).kubeconfigPath;
      for (let k = 1; k <= typhas; k++) await this.startTypha(`typha-${k}`);
      this.log(`${typhas} Typha${typhas === 1 ? '' : 's'} on ${[...this.typhas.values()].map((t) => `127.0.0.1:${t.port}`).join(', ')}; agents connect through them`);
    }
  }

  /**
   * Starts (or restarts, on the port it had) the Typha `name` and waits until it is ready (in
   * sync with the API server and listening).
   */
  async startTypha(name: string): Promise<TesseraProcess> {
    const port = this.typhas.get(name)?.port ?? (await freePort());
    const proc = await TesseraProcess.start(
      name,
      ['typha', '--kubeconfig', this.typhaKubeconfig, '--host', '127.0.0.1', '--port', String(port), '--shutdown-timeout', '2'],
      join(this.dir, `${name}.log`),
    );
    this.typhas.set(name, { process: proc, port });
    await pollUntil(async () => ((await proc.ready()) ? true : undefined), { description: `${name} to be ready`, timeoutMs: 60_000 });
    return proc;
  }

  /**
   * Starts `tessera controllers` and restarts it whenever it exits while the cluster is open,
   * as the kubelet restarts the Deployment's pod (it exits 1 when it loses its lease, e.g. while
   * the API server is down).
   */
  private async startControllers(): Promise<void> {
    const proc = await TesseraProcess.start(
      'controllers',
      [
        'controllers',
        '--kubeconfig',
        this.controllersKubeconfig,
        '--namespace',
        'tessera-system',
        '--api-writes-per-second',
        '1000',
        '--workload-interface-naming',
        this.network.hostVethNaming === 'calico' ? 'calico' : 'none',
      ],
      join(this.dir, 'controllers.log'),
    );
    this.controllers = proc;
    proc.child.once('exit', (code) => {
      if (this.closing || this.controllers !== proc) return;
      this.log(`controllers exited with ${code}; restarting`);
      this.controllerRestarts++;
      const retry = (): void => {
        if (this.closing) return;
        this.startControllers().catch(() => setTimeout(retry, 1_000).unref());
      };
      setTimeout(retry, 500).unref();
    });
    await pollUntil(async () => ((await proc.ready()) ? true : undefined), { description: 'the controllers to be ready', timeoutMs: 60_000 });
  }

  /** Runs kubectl with the admin kubeconfig. */
  async kubectl(args: readonly string[]): Promise<string> {
    const { kubectl } = locateBinaries();
    const { stdout } = await run(kubectl, ['--kubeconfig', this.adminKubeconfigPath, ...args], { maxBuffer: 64 << 20 });
    return stdout;
  }

  /** Node objects, node namespaces and one agent per node (idempotent per node). */
  async ensureNodes(nodes: readonly string[]): Promise<void> {
    const fresh = nodes.filter((n) => !this.agents.has(n));
    if (fresh.length === 0) return;
    await Promise.all(fresh.map((n) => this.registerNode(n)));
    this.network.addNodes(fresh);
    await Promise.all(fresh.map((n) => this.startAgent(n)));
  }

  /**
   * Creates the Node object a kubelet would register (no status: nothing here reads it). The
   * EndpointSlice controller leaves out a pod whose Node does not exist.
   */
  private async registerNode(name: string): Promise<void> {
    try {
      await this.admin.makeApiClient(CoreV1Api).createNode({ body: { metadata: { name, labels: registeredNodeLabels(name) } } });
      this.registeredNodes.add(name);
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
    }
  }

  /** Starts (or restarts) the agent of `node` and waits for its first in-sync apply. */
  async startAgent(node: string): Promise<TesseraProcess> {
    const agent = await TesseraProcess.start(
      `agent ${node}`,
      [
        'agent',
        '--node',
        node,
        '--netns',
        this.network.nodeNs(node),
        '--kubeconfig',
        this.agentKubeconfig,
        '--iptables-refresh',
        String(this.refreshSeconds),
        '--ipsets-refresh',
        String(this.refreshSeconds),
        ...(this.network.hostVethNaming === 'veth' ? ['--interface-prefix', 'veth'] : []),
        // What manifests/40-agent.yaml (and Calico's manifests) set, so a pod's traffic to its
        // own node is decided here as on the kind cluster and in `tessera simulate`.
        '--default-endpoint-to-host-action',
        'ACCEPT',
        ...(this.typhas.size > 0 ? ['--typha', [...this.typhas.values()].map((t) => `127.0.0.1:${t.port}`).join(',')] : []),
      ],
      join(this.dir, `agent-${node}.log`),
    );
    this.agents.set(node, agent);
    await pollUntil(async () => ((await agent.ready()) ? true : undefined), { description: `agent ${node} to be ready`, timeoutMs: 60_000 });
    return agent;
  }

  /**
   * A pod without a kubelet: its network namespace wired like Calico's CNI and a probe agent in
   * it serving its ports, the Pod object bound to its node, and its status patched with the
   * scenario's addresses as a kubelet would report them.
   */
  async startPod(p: ScenarioPod): Promise<PodProber> {
    const core = this.admin.makeApiClient(CoreV1Api);
    const net = this.network.addPod(p.namespace, p.name, p.ip, p.node, p.ip6);
    const ports = (p.containerPorts ?? []).filter((c) => (c.protocol ?? 'TCP') !== 'SCTP').map((c) => ({ port: c.containerPort, protocol: (c.protocol ?? 'TCP') as 'TCP' | 'UDP' }));
    const server = await PodServer.start(net, ports);
    try {
      await core.createNamespacedPod({
        namespace: p.namespace,
        body: {
          metadata: { name: p.name, namespace: p.namespace, labels: p.labels ?? {} },
          spec: {
            nodeName: p.node,
            serviceAccountName: p.serviceAccount ?? 'default',
            containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', ports: (p.containerPorts ?? []).map((c) => ({ ...c, protocol: c.protocol ?? 'TCP' })) }],
          },
        },
      });
      await core.patchNamespacedPodStatus(
        {
          name: p.name,
          namespace: p.namespace,
          body: {
            status: {
              phase: 'Running',
              conditions: [{ type: 'Ready', status: 'True' }],
              podIP: p.ip,
              podIPs: [{ ip: p.ip }, ...(p.ip6 === undefined ? [] : [{ ip: p.ip6 }])],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    } catch (e) {
      server.stop();
      throw e;
    }
    return server;
  }

  /**
   * A scenario node as an endpoint (`ScenarioCluster.startNode`): the Node object gets the
   * scenario's labels and its addresses as InternalIPs (what a kubelet reports, and what an
   * automatic HostEndpoint takes its expectedIPs from); the node namespace gets the addresses
   * (network.ts) and a probe agent serving the hostPorts (SCTP ones are not served: the runner
   * skips SCTP probes) and probing from those addresses.
   */
  async startNode(n: ScenarioNode): Promise<PodProber> {
    const addrs = scenarioNodeAddresses(n);
    await this.setNodeObject(n.name, n.labels ?? {}, [addrs.ipv4, addrs.ipv6].filter((a): a is string => a !== undefined));
    this.network.setNodeAddresses(n.name, addrs);
    const ports = (n.hostPorts ?? []).filter((h) => (h.protocol ?? 'TCP') !== 'SCTP').map((h) => ({ port: h.port, protocol: (h.protocol ?? 'TCP') as 'TCP' | 'UDP' }));
    try {
      return await PodServer.startInNode(n.name, this.network.nodeNs(n.name), ports, addrs);
    } catch (e) {
      this.network.clearNodeAddresses(n.name);
      throw e;
    }
  }

  /** Undoes `startNode`: the addresses go, the Node object is as `registerNode` made it. */
  async stopNode(n: ScenarioNode): Promise<void> {
    this.network.clearNodeAddresses(n.name);
    await this.setNodeObject(n.name, registeredNodeLabels(n.name), []);
  }

  /** `startNode` writes the scenario's addresses into the Node's status: they are what it reports. */
  reportedNodeAddress(n: ScenarioNode, family: 4 | 6): string | undefined {
    return nodeAddress(n, family);
  }

  /** Applies manifests/experimental/clusternetworkpolicies.yaml over manifests/' standard CRD, once. */
  ensureClusterNetworkPolicyCrd(): Promise<void> {
    this.cnpCrd ??= installExperimentalCnpCrd(locateBinaries().kubectl, this.adminKubeconfigPath, this.admin).catch((e: unknown) => {
      this.cnpCrd = undefined;
      throw e;
    });
    return this.cnpCrd;
  }

  /** Scenario node names are the Node objects' names here. */
  clusterNodeName(node: string): string {
    return node;
  }

  /** Sets Node `name`'s labels to exactly `labels` and its status addresses to these InternalIPs. */
  private async setNodeObject(name: string, labels: Record<string, string>, internalIPs: readonly string[]): Promise<void> {
    const core = this.admin.makeApiClient(CoreV1Api);
    const node = await core.readNode({ name });
    node.metadata = { ...node.metadata, labels: { ...labels } };
    await core.replaceNode({ name, body: node });
    await core.patchNodeStatus(
      { name, body: { status: { addresses: internalIPs.map((address) => ({ type: 'InternalIP', address })) } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** Deletes the Pod object (no kubelet: at once) and the pod's network namespace. */
  async stopPod(p: ScenarioPod): Promise<void> {
    try {
      await this.admin.makeApiClient(CoreV1Api).deleteNamespacedPod({ name: p.name, namespace: p.namespace, gracePeriodSeconds: 0 });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
    } finally {
      this.network.removePod(podKey(p));
    }
  }

  /** Every agent process's sent and applied calc-graph generations are equal. */
  async agentsIdle(timeoutMs: number): Promise<void> {
    await pollUntil(
      async () => {
        for (const a of this.agents.values()) {
          const [sent, applied] = await Promise.all([a.metric('tessera_agent_sent_generation'), a.metric('tessera_agent_applied_generation')]);
          if (sent === undefined || sent !== applied) return undefined;
        }
        return true;
      },
      { description: 'every agent to have applied its last calc-graph batch', timeoutMs, intervalMs: 20 },
    );
  }

  /** Stops every process, removes every namespace, stops a control plane started here. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.agents.values()].map((a) => a.stop()));
    this.agents.clear();
    await Promise.all([...this.typhas.values()].map((t) => t.process.stop()));
    this.typhas.clear();
    await this.controllers?.stop();
    this.network.destroy();
    if (this.controlPlane === undefined && this.registeredNodes.size > 0) {
      const core = this.admin.makeApiClient(CoreV1Api);
      await Promise.all([...this.registeredNodes].map((name) => core.deleteNode({ name }).catch(() => undefined)));
    }
    await this.controlPlane?.stop();
    if (process.env['TESSERA_E2E_KEEP_LOGS'] === undefined) rmSync(this.dir, { recursive: true, force: true });
    this.unregister();
  }
}
