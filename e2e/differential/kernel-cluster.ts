/**
 * The kernel side of the differential test: the fixture's nodes and pods as network namespaces
 * (e2e/runner's `ClusterNetwork`: nodes joined by veth links, pods wired like Calico's CNI, both
 * families), one calc graph and one real `DataplaneDriver` per node programming iptables,
 * ip6tables and IP sets in the node's namespace, a probe server per pod (TCP and UDP on
 * {@link SERVED_PORTS}, both families) and ICMP echo with `ping` (Debian's iputils-ping).
 *
 * No API server: `apply()` takes the translated resource set (the same one the simulator
 * reads) and feeds each node's graph only what changed, as an agent's syncer would, waits
 * until every driver has programmed the result, and flushes the nodes' conntrack tables (so
 * every probe is judged as a new flow, as the simulator judges it). The topology is built once;
 * a round costs one apply plus its probes.
 */
import { execFile } from 'node:child_process';
import { CalcGraph } from '../../src/calc/index.ts';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { BACKEND } from '../dataplane/harness.ts';
import { ClusterNetwork } from '../runner/network.ts';
import { PodServer } from '../runner/pod-server.ts';
import { NODES, PODS, SERVED_PORTS } from './fixture.ts';
import type { AnyUpdate, Update } from '../../src/syncer/index.ts';
import { isEndpointSlice, type SimResource } from '../../src/simulate/index.ts';

export type ProbeKind = 'TCP' | 'UDP' | 'ICMP';

/** One real probe: `from` → `to` (pod keys) over `family`; `port` is ignored for ICMP echo. */
export interface KernelProbe {
  readonly from: string;
  readonly to: string;
  readonly kind: ProbeKind;
  readonly port: number;
  readonly family: 4 | 6;
}

export interface KernelClusterOptions {
  /** A probe unanswered after this long counts as blocked. @default 300 */
  readonly probeTimeoutMs?: number;
  /** The timeout of the one retry of a probe the simulator expects to pass. @default 3_000 */
  readonly slowRetryMs?: number;
}

interface Node {
  readonly graph: CalcGraph;
  readonly driver: DataplaneDriver;
  readonly running: Promise<void>;
}

function deleteUpdate(r: SimResource): Update | AnyUpdate {
  return { op: 'delete', ...(isEndpointSlice(r) ? { apiVersion: r.apiVersion } : {}), kind: r.kind, name: r.metadata.name, ...(r.metadata.namespace !== undefined ? { namespace: r.metadata.namespace } : {}) };
}

export class KernelCluster implements AsyncDisposable {
  readonly network: ClusterNetwork;
  private readonly nodes = new Map<string, Node>();
  private readonly servers = new Map<string, PodServer>();
  private readonly stop = new AbortController();
  private current = new Map<string, { readonly json: string; readonly resource: SimResource }>();
  private readonly probeTimeoutMs: number;
  private readonly slowRetryMs: number;

  private constructor(opts: KernelClusterOptions) {
    this.probeTimeoutMs = opts.probeTimeoutMs ?? 300;
    this.slowRetryMs = opts.slowRetryMs ?? 3_000;
    this.network = new ClusterNetwork({ dualStackNodes: [...NODES] });
  }

  /** Builds the namespaces, veths, drivers and probe servers. */
  static async create(opts: KernelClusterOptions = {}): Promise<KernelCluster> {
    const k = new KernelCluster(opts);
    try {
      k.network.addNodes(NODES);
      for (const p of PODS) k.network.addPod(p.namespace, p.name, p.ip, p.node, p.ip6);
      for (const node of NODES) {
        const driver = new DataplaneDriver({ runner: new NetnsCommandRunner(k.network.nodeNs(node)), backend: BACKEND, ipVersions: [4, 6] });
        k.nodes.set(node, { graph: new CalcGraph({ nodeName: node }), driver, running: driver.run(k.stop.signal) });
      }
      for (const [key, pod] of k.network.pods) k.servers.set(key, await PodServer.start(pod, SERVED_PORTS));
    } catch (e) {
      await k[Symbol.asyncDispose]();
      throw e;
    }
    return k;
  }

  /**
   * Makes `resources` (keyed as `translateCluster` keys them) the whole state of every node:
   * upserts for new or changed keys, deletes for gone ones, then waits for every driver.
   */
  async apply(resources: ReadonlyMap<string, SimResource>): Promise<void> {
    const next = new Map<string, { json: string; resource: SimResource }>();
    const updates: (Update | AnyUpdate)[] = [];
    for (const [key, resource] of resources) {
      const json = JSON.stringify(resource);
      next.set(key, { json, resource });
      if (this.current.get(key)?.json !== json) updates.push({ op: 'upsert', resource });
    }
    for (const [key, { resource }] of this.current) if (!next.has(key)) updates.push(deleteUpdate(resource));
    this.current = next;
    await Promise.all(
      [...this.nodes.values()].map(async ({ graph, driver }) => {
        graph.onUpdates(updates);
        graph.onStatusUpdated('in-sync');
        driver.send(graph.flush());
        await driver.flushed();
      }),
    );
    // Flows of earlier rounds would be accepted as established (Felix's conntrack rule) when a
    // probe's ephemeral port repeats one: every probe of a round must be a new flow.
    for (const node of NODES) this.network.exec(this.network.nodeNs(node), ['conntrack', '-F']);
  }

  /** Whether `p` gets through; an unanswered probe that `expectAllowed` is retried once, slowly. */
  async probe(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    const ok = await this.probeOnce(p, this.probeTimeoutMs);
    if (ok || !expectAllowed) return ok;
    return this.probeOnce(p, this.slowRetryMs);
  }

  private probeOnce(p: KernelProbe, timeoutMs: number): Promise<boolean> {
    const from = this.network.pods.get(p.from);
    const to = this.network.pods.get(p.to);
    if (from === undefined || to === undefined) throw new Error(`KernelCluster: probe ${p.from} → ${p.to}: unknown pod`);
    const host = p.family === 6 ? to.ip6 : to.ip;
    if (host === undefined) throw new Error(`KernelCluster: probe ${p.from} → ${p.to} over IPv6: ${p.to} has no IPv6 address`);
    if (p.kind !== 'ICMP') return this.servers.get(p.from)!.probe(p.kind, host, p.port, timeoutMs);
    // One echo request; ping exits 0 only when the reply arrived within -W seconds.
    const args = ['netns', 'exec', from.netns, 'ping', `-${p.family}`, '-n', '-q', '-c', '1', '-W', String(timeoutMs / 1000), host];
    return new Promise((resolve) => execFile('ip', args, (err) => resolve(err === null)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.stop.abort();
    await Promise.allSettled([...this.nodes.values()].map((n) => n.running));
    for (const s of this.servers.values()) s.stop();
    this.network.destroy();
  }
}
