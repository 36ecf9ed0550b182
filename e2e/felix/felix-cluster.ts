/**
 * The cluster of the Felix differential: one real kube-apiserver with Calico's own
 * `crd.projectcalico.org/v1` CRDs (from the same Calico module, build.sh) and Tessera's
 * manifests/ side by side, the fixture's pods (e2e/differential/fixture.ts) as Pod objects, and
 * two identical network-namespace clusters (`FixtureNetwork`) enforcing them: one by the real
 * `calico-felix` — one per node namespace, Kubernetes-datastore mode — and one by Tessera's
 * controllers and agents (tessera-agents.ts; `withTessera`).
 *
 * What Felix reads is what a Calico cluster holds: Namespaces (labels) and ServiceAccounts
 * (Felix derives the `kns.`/`ksa.` profiles itself), Node objects, Pods bound to their nodes with
 * their addresses in `status.podIPs` and their container ports (Felix derives the workload
 * endpoints, interface `cali` + 11 hex of sha1("<ns>.<pod>") as the network names it), the
 * ClusterInformation Felix waits for, Kubernetes NetworkPolicies as written (Felix converts them
 * itself), Calico objects as `crd.projectcalico.org/v1` (same spec as projectcalico.org/v3,
 * `types` defaulted as Calico's write path does), Services and EndpointSlices. Tessera reads the
 * same Pods, Namespaces, ServiceAccounts, Kubernetes NetworkPolicies, Services and slices, and
 * the Calico objects as `projectcalico.org/v3`.
 *
 * ## When has Felix applied a round?
 * Felix reads each kind through its own watch, so no single event says "everything up to here".
 * After writing a round, `apply` rewrites a sentinel GlobalNetworkPolicy (in both groups) whose
 * only rule names a /32 that encodes the round; it selects only two sentinel pods (one per node,
 * in their own namespace, never probed, no network namespace), so it changes no fixture verdict.
 * `apply` returns when every node of both clusters holds that /32 in its iptables and the node's
 * whole iptables, ip6tables and IP set state has stayed the same for `quietMs` (an event of
 * another kind that was slower than the sentinel's lands within that window); Tessera's agents
 * must also have applied every batch they computed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';

import { ADMIN_USER, ControlPlane, locateBinaries, waitForCrdsEstablished, writeKubeconfig } from '../controlplane/index.ts';
import { BACKEND } from '../dataplane/harness.ts';
import { FIXTURE_NODES, NAMESPACES, NODES, PODS } from '../differential/fixture.ts';
import { FixtureNetwork, type KernelProbe, type ProbeOptions } from '../differential/fixture-network.ts';
import { API_PORT_INSIDE, ApiBridge } from './api-bridge.ts';
import { FelixProcess } from './felix-process.ts';
import { settleNode, TesseraAgents } from './tessera-agents.ts';
import { ObjectWriteError, ObjectWriter } from './object-writer.ts';

const run = promisify(execFile);

/** Dual-stack Service ranges (the e2e runner's): the fixture's Services ask for both families. */
const SERVICE_CLUSTER_IP_RANGES = '10.0.0.0/24,fd00:10:96::/112';

export const SENTINEL_NAMESPACE = 'felix-sentinel';
const SENTINEL_LABEL = 'tessera.dev/felix-sentinel';
const SENTINEL_POLICY = 'felix-sentinel';

/** The Calico kinds Felix v3.28 reads from `crd.projectcalico.org/v1` that a round may hold (a HostEndpoint's v1 spec is its v3 spec). */
const CALICO_KINDS = new Set(['NetworkPolicy', 'GlobalNetworkPolicy', 'NetworkSet', 'GlobalNetworkSet', 'HostEndpoint']);

export interface FelixClusterOptions extends ProbeOptions {
  /** The directory build.sh printed (calico-felix and crds/). */
  readonly felixDir: string;
  /** How long the nodes' dataplane state must stay unchanged after the sentinel. @default 250 */
  readonly quietMs?: number;
  /**
   * Also run Tessera as a user does on the same API server (tessera-agents.ts: manifests/,
   * controllers, one agent per node on an identical network), so each round is enforced by both.
   * @default true
   */
  readonly withTessera?: boolean;
  readonly log?: (line: string) => void;
}

/** A Felix-side object the API server refused (Calico's CRD schema, or Kubernetes validation). */
export { ObjectWriteError as FelixWriteError };

/**
 * Objects Felix's own validator refused (it treats them as deleted): Calico v3.28's write path
 * would not have stored them. Named like an API refusal so a shrinker skips such candidates.
 */
export class FelixValidationError extends Error {
  override readonly name = 'ObjectWriteError';
  constructor(readonly lines: readonly string[]) {
    super(`Felix v3.28's validator refused: ${lines.map((l) => l.replace(/^.*?key=/, 'key=').slice(0, 600)).join(' | ')}`);
  }
}

type Obj = Record<string, unknown>;

/**
 * The Kubernetes object Felix reads for one object of a round: a Calico kind goes to
 * `crd.projectcalico.org/v1` with its labels and spec; Kubernetes kinds go as they are.
 * @throws Error for a kind Felix v3.28 in Kubernetes-datastore mode cannot hold (Tier, Profile…).
 */
export function felixObject(o: Obj): KubernetesObject {
  const apiVersion = String(o['apiVersion'] ?? '');
  const kind = String(o['kind'] ?? '');
  const meta = (o['metadata'] ?? {}) as Obj;
  if (apiVersion === 'projectcalico.org/v3') {
    if (!CALICO_KINDS.has(kind)) throw new Error(`felixObject: Felix v3.28 in Kubernetes-datastore mode has no writable ${kind} (${String(meta['name'])})`);
    const spec = { ...((o['spec'] ?? {}) as Obj) };
    if (spec['tier'] !== undefined && spec['tier'] !== 'default') throw new Error(`felixObject: ${kind} ${String(meta['name'])}: Felix v3.28 has no tiers (spec.tier ${JSON.stringify(spec['tier'])})`);
    delete spec['tier'];
    if (kind === 'NetworkPolicy' || kind === 'GlobalNetworkPolicy') defaultTypesAsClientv3(spec);
    const metadata: Obj = { name: meta['name'] };
    if (meta['namespace'] !== undefined) metadata['namespace'] = meta['namespace'];
    if (meta['labels'] !== undefined) metadata['labels'] = meta['labels'];
    return { apiVersion: 'crd.projectcalico.org/v1', kind, metadata, spec } as KubernetesObject;
  }
  const { status: _status, ...rest } = structuredClone(o);
  return rest as KubernetesObject;
}

/**
 * What Calico's write path does to a policy before storing it: calicoctl and the Calico API
 * server both write through libcalico-go's clientv3, which defaults an empty `types`
 * (lib/clientv3/globalnetworkpolicy.go `defaultPolicyTypesField`, v3.28): Ingress when there are
 * no egress rules, else Egress when there are no ingress rules, else both. The harness writes
 * the CRDs directly, so it does the same; without it Felix reads an empty `types` as both
 * directions (felix/calc/policy_sorter.go `governsType`, "back-compatibility"), which no Calico
 * user's policy ever reaches Felix as.
 */
function defaultTypesAsClientv3(spec: Obj): void {
  const types = spec['types'];
  if (Array.isArray(types) && types.length > 0) return;
  const n = (rules: unknown) => (Array.isArray(rules) ? rules.length : 0);
  spec['types'] = n(spec['egress']) === 0 ? ['Ingress'] : n(spec['ingress']) === 0 ? ['Egress'] : ['Ingress', 'Egress'];
}

const keyOf = (o: KubernetesObject): string => `${o.apiVersion}/${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/** `10.255.<hi>.<lo>/32` for round `n` (wraps at 65,536 rounds, far more than one run needs). */
function sentinelNet(n: number): string {
  return `10.255.${(n >> 8) & 255}.${n & 255}/32`;
}

export class FelixCluster implements AsyncDisposable {
  private readonly dir = mkdtempSync(join(tmpdir(), 'tessera-felix-'));
  private controlPlane: ControlPlane | undefined;
  private admin!: KubeConfig;
  private objects!: ObjectWriter;
  private bridge: ApiBridge | undefined;
  /** Tessera's controllers and agents beside Felix (`withTessera`). */
  tessera: TesseraAgents | undefined;
  private readonly felixes = new Map<string, FelixProcess>();
  private net: FixtureNetwork | undefined;
  private current = new Map<string, { json: string; object: KubernetesObject }>();
  private round = 0;
  private readonly quietMs: number;
  private readonly log: (line: string) => void;

  private constructor(private readonly opts: FelixClusterOptions) {
    this.quietMs = opts.quietMs ?? 250;
    this.log = opts.log ?? (() => undefined);
  }

  static async create(opts: FelixClusterOptions): Promise<FelixCluster> {
    const c = new FelixCluster(opts);
    try {
      await c.setUp();
    } catch (e) {
      await c[Symbol.asyncDispose]();
      throw e;
    }
    return c;
  }

  /** Felix's log files, one per node (for a failure's report). */
  get logPaths(): string[] {
    return [...this.felixes.values()].map((f) => f.logPath);
  }

  private async setUp(): Promise<void> {
    const t0 = Date.now();
    this.controlPlane = await ControlPlane.start({ binaries: locateBinaries(), apiserverArgs: [`--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGES}`] });
    const conn = this.controlPlane.connection;
    this.admin = conn.kubeConfig;
    this.objects = new ObjectWriter(this.admin);
    await run(locateBinaries().kubectl, ['--kubeconfig', conn.kubeconfigPath, 'apply', '-f', join(this.opts.felixDir, 'crds')], { maxBuffer: 16 << 20 });
    await waitForCrdsEstablished(this.admin, 'crd.projectcalico.org');
    await this.write({
      apiVersion: 'crd.projectcalico.org/v1',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { datastoreReady: true, clusterGUID: 'tessera-felix-differential', clusterType: 'k8s', calicoVersion: 'v3.28' },
    } as KubernetesObject);
    await this.createClusterObjects();
    if (this.opts.withTessera ?? true) {
      this.tessera = await TesseraAgents.start({ ...this.opts, admin: this.admin, adminKubeconfigPath: conn.kubeconfigPath, server: conn.server, caPem: conn.caPem, dir: this.dir });
    }
    this.net = await FixtureNetwork.create(this.opts);
    const port = Number(new URL(conn.server).port);
    this.bridge = await ApiBridge.open(this.dir, port);
    // Felix reaches the API server through the bridge's port inside its namespace (api-bridge.ts).
    const felixKubeconfig = join(this.dir, 'felix.kubeconfig');
    writeKubeconfig(felixKubeconfig, { server: `https://127.0.0.1:${API_PORT_INSIDE}`, token: conn.token, user: ADMIN_USER, ...(conn.caPem === undefined ? {} : { caPem: conn.caPem }) });
    await this.writeSentinel();
    await Promise.all(
      NODES.map(async (node) => {
        await this.bridge!.into(this.net!.nodeNs(node));
        const felix = await FelixProcess.start({
          binary: join(this.opts.felixDir, 'calico-felix'),
          netns: this.net!.nodeNs(node),
          nodeName: node,
          kubeconfigPath: felixKubeconfig,
          logPath: join(this.dir, `felix-${node}.log`),
          backend: BACKEND,
        });
        this.felixes.set(node, felix);
      }),
    );
    await this.settle();
    for (const f of this.felixes.values()) f.takeRefusals();
    this.log(`felix cluster: control plane, Calico CRDs, ${NODES.length} Felix processes${this.tessera === undefined ? '' : `, Tessera's controllers and ${NODES.length} agents`} up in ${Date.now() - t0} ms (logs in ${this.dir})`);
  }

  /** Nodes, namespaces, ServiceAccounts and pods (with status), and the sentinel pods. */
  private async createClusterObjects(): Promise<void> {
    const core = this.admin.makeApiClient(CoreV1Api);
    for (const node of FIXTURE_NODES) await core.createNode({ body: { metadata: { name: node.name, labels: { ...node.labels } } } });
    for (const ns of [...NAMESPACES, { name: SENTINEL_NAMESPACE, labels: {} }]) {
      await core.createNamespace({ body: { metadata: { name: ns.name, labels: { ...ns.labels } } } });
    }
    const accounts = new Set(PODS.map((p) => `${p.namespace}/${p.serviceAccount ?? 'default'}`));
    for (const ns of [...NAMESPACES.map((n) => n.name), SENTINEL_NAMESPACE]) accounts.add(`${ns}/default`);
    for (const a of accounts) {
      const [namespace, name] = a.split('/') as [string, string];
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name, namespace } } });
    }
    const pods = [
      ...PODS.map((p) => ({ ...p, ports: p.containerPorts ?? [] })),
      ...NODES.map((node, i) => ({ namespace: SENTINEL_NAMESPACE, name: `sentinel-${node}`, node, ip: `10.66.250.${i + 1}`, ip6: undefined, serviceAccount: 'default', labels: { [SENTINEL_LABEL]: 'true' }, ports: [] })),
    ];
    for (const p of pods) {
      await core.createNamespacedPod({
        namespace: p.namespace,
        body: {
          metadata: { name: p.name, namespace: p.namespace, labels: { ...(p.labels ?? {}) } },
          spec: {
            nodeName: p.node,
            serviceAccountName: p.serviceAccount ?? 'default',
            containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', ports: p.ports.map((c) => ({ ...c, protocol: c.protocol ?? 'TCP' })) }],
          },
        },
      });
      await core.patchNamespacedPodStatus(
        {
          name: p.name,
          namespace: p.namespace,
          body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], podIP: p.ip, podIPs: [{ ip: p.ip }, ...(p.ip6 === undefined ? [] : [{ ip: p.ip6 }])] } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
  }

  private write(o: KubernetesObject): Promise<void> {
    return this.objects.apply(o);
  }

  private remove(o: KubernetesObject): Promise<void> {
    return this.objects.delete(o);
  }

  private async writeSentinel(): Promise<void> {
    this.round++;
    const spec = { selector: `${SENTINEL_LABEL} == 'true'`, types: ['Ingress'], ingress: [{ action: 'Allow', source: { nets: [sentinelNet(this.round)] } }] };
    const groups = this.tessera === undefined ? ['crd.projectcalico.org/v1'] : ['crd.projectcalico.org/v1', 'projectcalico.org/v3'];
    await Promise.all(groups.map((apiVersion) => this.write({ apiVersion, kind: 'GlobalNetworkPolicy', metadata: { name: SENTINEL_POLICY }, spec } as KubernetesObject)));
  }

  /**
   * Makes `objects` (Kubernetes objects, as `felixObject` maps a round's) the whole variable
   * state: writes what is new or changed, deletes what is gone, then waits until every Felix
   * has applied it (the file comment) and forgets every flow.
   */
  async apply(objects: readonly KubernetesObject[]): Promise<void> {
    const next = new Map<string, { json: string; object: KubernetesObject }>();
    for (const o of objects) next.set(keyOf(o), { json: JSON.stringify(o), object: o });
    // `current` follows every write as it succeeds, so a refused write (an ObjectWriteError
    // thrown out of here) leaves it equal to what the API server holds, and the next round
    // starts from the truth.
    for (const [key, entry] of next) {
      if (this.current.get(key)?.json === entry.json) continue;
      await this.write(entry.object);
      this.current.set(key, entry);
    }
    for (const [key, { object }] of [...this.current]) {
      if (next.has(key)) continue;
      await this.remove(object);
      this.current.delete(key);
    }
    await this.writeSentinel();
    await this.settle();
    const refused = [...this.felixes.values()].flatMap((f) => f.takeRefusals());
    if (refused.length > 0) throw new FelixValidationError(refused);
    this.net!.flushConntrack();
    this.tessera?.flushConntrack();
  }

  /** Waits for the current sentinel on every node of both sides, then for `quietMs` without a change. */
  private async settle(): Promise<void> {
    const needle = `-s ${sentinelNet(this.round)}`;
    const felix = NODES.map((node) =>
      settleNode(this.net!.nodeNs(node), needle, {
        quietMs: this.quietMs,
        description: `Felix on ${node} to apply round ${this.round} (sentinel ${needle})`,
        assertRunning: () => this.assertRunning(),
      }),
    );
    await Promise.all([...felix, this.tessera?.settle(needle, `round ${this.round}`)]);
  }

  private assertRunning(): void {
    for (const [node, f] of this.felixes) if (!f.running) throw new Error(`calico-felix on ${node} is no longer running; the end of its log:\n${f.logTail(60)}`);
  }

  /** The probe through Felix's cluster. */
  probe(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    return this.net!.probe(p, expectAllowed);
  }

  /** The same probe through Tessera's cluster (`withTessera`). */
  probeTessera(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    if (this.tessera === undefined) throw new Error('FelixCluster: started without Tessera (withTessera: false)');
    return this.tessera.probe(p, expectAllowed);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.allSettled([...this.felixes.values()].map((f) => f[Symbol.asyncDispose]()));
    await this.tessera?.[Symbol.asyncDispose]();
    this.bridge?.[Symbol.dispose]();
    this.net?.[Symbol.dispose]();
    await this.controlPlane?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
