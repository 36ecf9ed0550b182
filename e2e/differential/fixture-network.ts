/**
 * The fixture's pods on real kernels, without an enforcer: the nodes and pods as network
 * namespaces (e2e/runner's `ClusterNetwork`: nodes joined by veth links, pods wired like
 * Calico's CNI, host veths named `cali` + 11 hex as Calico names them, both families), a probe
 * server per pod (TCP and UDP on {@link SERVED_PORTS}, both families) and ICMP echo with `ping`
 * (Debian's iputils-ping).
 *
 * The nodes are hosts too ({@link FIXTURE_NODES}): each has its own IPv4 and IPv6 address
 * (`ClusterNetwork.setNodeAddresses`: on its `lo` and on its uplink, the link to the other node,
 * which routes to them over that link), and a probe server in the node namespace serves
 * {@link HOST_PORTS} on both families and sends the host's probes from the node's address
 * (bound, so the source is the address the verdict engine and the policies see, whichever
 * interface the route leaves by).
 *
 * Whoever enforces policy in the node namespaces — Tessera's dataplane driver
 * (kernel-cluster.ts) or Felix (e2e/felix/felix-cluster.ts) — builds on one of these; each
 * network has its own namespace names (`tse-<id>-…`), so several coexist with the same
 * addresses.
 */
import { execFile } from 'node:child_process';
import { ClusterNetwork } from '../runner/network.ts';
import { PodServer } from '../runner/pod-server.ts';
import { FIXTURE_NODES, HOST_PORTS, NODES, PODS, SERVED_PORTS } from './fixture.ts';

/**
 * The probes' address ranges: every pod and node address is in one of them. Only flows from
 * these are forgotten between rounds (`flushConntrack`), so a program in a node namespace that
 * talks over loopback (Felix to its API server bridge) keeps its established connections.
 */
const PROBE_SOURCES = [
  ['-f', 'ipv4', '-s', '10.66.0.0', '--mask-src', '255.255.0.0'],
  ['-f', 'ipv6', '-s', 'fd00:66::', '--mask-src', 'ffff:ffff::'],
] as const;

export type ProbeKind = 'TCP' | 'UDP' | 'ICMP';

/**
 * One real probe: `from` → `to` over `family`; `port` is ignored for ICMP echo. An end is a pod
 * key (`<namespace>/<pod>`) or a node's name (no `/`: the host, {@link FIXTURE_NODES}), as in
 * scenario files.
 */
export interface KernelProbe {
  readonly from: string;
  readonly to: string;
  readonly kind: ProbeKind;
  readonly port: number;
  readonly family: 4 | 6;
}

export interface ProbeOptions {
  /** A probe unanswered after this long counts as blocked. @default 300 */
  readonly probeTimeoutMs?: number;
  /** The timeout of the one retry of a probe expected to pass. @default 3_000 */
  readonly slowRetryMs?: number;
}

export class FixtureNetwork implements Disposable {
  readonly network = new ClusterNetwork({ dualStackNodes: [...NODES] });
  /** Probe servers by pod key or node name. */
  private readonly servers = new Map<string, PodServer>();
  private readonly probeTimeoutMs: number;
  private readonly slowRetryMs: number;

  private constructor(opts: ProbeOptions) {
    this.probeTimeoutMs = opts.probeTimeoutMs ?? 300;
    this.slowRetryMs = opts.slowRetryMs ?? 3_000;
  }

  /** Builds the namespaces, veths and probe servers (torn down again if any step fails). */
  static async create(opts: ProbeOptions = {}): Promise<FixtureNetwork> {
    const n = new FixtureNetwork(opts);
    try {
      n.network.addNodes(NODES);
      for (const p of PODS) n.network.addPod(p.namespace, p.name, p.ip, p.node, p.ip6);
      for (const [key, pod] of n.network.pods) n.servers.set(key, await PodServer.start(pod, SERVED_PORTS));
      for (const node of FIXTURE_NODES) {
        const addrs = { ipv4: node.ip, ipv6: node.ip6 };
        n.network.setNodeAddresses(node.name, addrs);
        n.network.exec(n.nodeNs(node.name), ['ip', 'link', 'show', 'dev', node.uplink]);
        n.servers.set(node.name, await PodServer.startInNode(node.name, n.nodeNs(node.name), HOST_PORTS, addrs));
      }
      n.pinLinkNeighbours();
    } catch (e) {
      n[Symbol.dispose]();
      throw e;
    }
    return n;
  }

  nodeNs(node: string): string {
    return this.network.nodeNs(node);
  }

  /**
   * Permanent IPv6 neighbour entries, on each node's uplink, for every link-local address of the
   * other end (the next hop of its pods' and its own IPv6 routes). Neighbour discovery is ICMPv6
   * to the node, which a `*` or uplink HostEndpoint without an allowing policy drops (Felix
   * exempts it only from workloads, `cali-wl-to-host`): once a learnt entry went stale, IPv6
   * across the nodes would fail or pass by timing and history. ARP (IPv4) is no IP traffic and
   * needs none.
   */
  private pinLinkNeighbours(): void {
    for (const node of FIXTURE_NODES) {
      for (const peer of FIXTURE_NODES) {
        if (peer === node) continue;
        const peerNs = this.nodeNs(peer.name);
        const mac = /link\/ether ([0-9a-f:]+)/.exec(this.network.exec(peerNs, ['ip', '-o', 'link', 'show', 'dev', peer.uplink]))?.[1];
        if (mac === undefined) throw new Error(`FixtureNetwork: ${peer.name}'s uplink ${peer.uplink} has no MAC address`);
        const linkLocals = [...this.network.exec(peerNs, ['ip', '-6', '-o', 'addr', 'show', 'dev', peer.uplink, 'scope', 'link']).matchAll(/inet6 (fe80:[0-9a-f:]*)\//g)].map((m) => m[1]!);
        for (const ll of linkLocals) this.network.exec(this.nodeNs(node.name), ['ip', '-6', 'neigh', 'replace', ll, 'lladdr', mac, 'dev', node.uplink, 'nud', 'permanent']);
      }
    }
  }

  /**
   * Forgets every probe's flow: flows of earlier rounds would be accepted as established (the
   * conntrack rule Felix and Tessera both render) when a probe's ephemeral port repeats one,
   * and every probe of a round must be judged as a new flow. Only flows from the probes'
   * addresses ({@link PROBE_SOURCES}): a loopback connection forgotten mid-stream would be new
   * to a host endpoint's policy on its next packet, and its server's replies (from a port that
   * is no failsafe) dropped.
   */
  flushConntrack(): void {
    for (const node of NODES) {
      for (const filter of PROBE_SOURCES) {
        try {
          this.network.exec(this.network.nodeNs(node), ['conntrack', '-D', ...filter]);
        } catch (e) {
          // conntrack exits 1 when no flow matched ("0 flow entries have been deleted").
          if (!/flow entries have been deleted/.test(String((e as { stderr?: unknown }).stderr ?? ''))) throw e;
        }
      }
    }
  }

  /** Whether `p` gets through; an unanswered probe that `expectAllowed` is retried once, slowly. */
  async probe(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    const ok = await this.probeOnce(p, this.probeTimeoutMs);
    if (ok || !expectAllowed) return ok;
    return this.probeOnce(p, this.slowRetryMs);
  }

  /** A probe end: its namespace, its address of `family`, and whether probes from it bind that address (a node's). */
  private end(name: string, family: 4 | 6, p: KernelProbe): { netns: string; address: string; bind: boolean } {
    const node = FIXTURE_NODES.find((n) => n.name === name);
    if (node !== undefined) return { netns: this.nodeNs(node.name), address: family === 6 ? node.ip6 : node.ip, bind: true };
    const pod = this.network.pods.get(name);
    if (pod === undefined) throw new Error(`FixtureNetwork: probe ${p.from} → ${p.to}: unknown pod or node ${JSON.stringify(name)}`);
    const address = family === 6 ? pod.ip6 : pod.ip;
    if (address === undefined) throw new Error(`FixtureNetwork: probe ${p.from} → ${p.to} over IPv6: ${name} has no IPv6 address`);
    return { netns: pod.netns, address, bind: false };
  }

  private probeOnce(p: KernelProbe, timeoutMs: number): Promise<boolean> {
    const from = this.end(p.from, p.family, p);
    const to = this.end(p.to, p.family, p);
    // A node's probe server binds its probes to the node's address itself (PodServer.startInNode).
    if (p.kind !== 'ICMP') return this.servers.get(p.from)!.probe(p.kind, to.address, p.port, timeoutMs);
    const source = from.bind ? from.address : undefined;
    // One echo request; ping exits 0 only when the reply arrived within -W seconds.
    const args = ['netns', 'exec', from.netns, 'ping', `-${p.family}`, '-n', '-q', '-c', '1', '-W', String(timeoutMs / 1000), ...(source === undefined ? [] : ['-I', source]), to.address];
    return new Promise((resolve) => execFile('ip', args, (err) => resolve(err === null)));
  }

  [Symbol.dispose](): void {
    for (const s of this.servers.values()) s.stop();
    this.network.destroy();
  }
}
