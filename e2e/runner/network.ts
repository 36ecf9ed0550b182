/**
 * The runner's network: one namespace per node, joined pairwise by veth links, and one
 * namespace per pod wired like Calico's CNI plugin wires it (e2e/dataplane/netns.ts's
 * `podSideCommands`/`hostSideCommands`, extended to several nodes):
 *
 * - pod: `eth0` with the pod's /32, a link route to 169.254.1.1 and a default route via it;
 *   with an IPv6 address also its /128 and a default route via the host veth's link-local;
 * - its node: the host-side veth, proxy ARP, and a `/32 dev <veth> scope link` route (`/128`
 *   for IPv6). The veth is named by `hostVethNaming`: `calico` names it exactly like the
 *   WorkloadEndpoint's interfaceName (`cali` + 11 hex of sha1("<ns>.<pod>")); `veth` names it
 *   `veth` + 8 random hex, as kindnet and the ptp plugin do, so only the route says which pod
 *   it serves;
 * - every other node: a `/32` route onto the link towards the pod's node (proxy ARP on both ends
 *   of each link answers for the far side's pods), and a `/128` route via the far end's fixed
 *   link-local address, so cross-node traffic is forwarded by both nodes: the source node runs
 *   the sender's egress policy, the destination node the ingress.
 *
 * Every node has the global IPv4 address 172.31.255.<n>/32; a node in `dualStackNodes` also has
 * fd00:ffff::<n>/128 and an IPv6 default route, so an agent that detects its node's families
 * (`tessera agent` without `--ip-versions`) programs IPv6 there and only there.
 *
 * A scenario node's own addresses ("Hosts as endpoints": its `ip`, and `ip6`;
 * `setNodeAddresses`) go on every link that joins it to another node — the interfaces its
 * traffic to and from other nodes and their pods crosses, so a HostEndpoint's `expectedIPs`
 * names them as a node's InternalIP names its eth0 — and on its `lo`, so it holds them with no
 * link at all. Every other node routes them onto the link towards it, as it routes that node's
 * pods; replies to them come back the same way. Links made later get them too.
 *
 * Names are `tse-<run id>-…`; everything is recorded and deleted by `destroy()`, and by an exit
 * hook (normal exit, SIGINT/SIGTERM/SIGHUP) for anything an interrupted run left behind.
 * Deleting a namespace removes its veth ends, routes, iptables rules and IP sets with it.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { hostSideCommands, podSideCommands } from '../dataplane/netns.ts';
import type { NodeAddresses } from './node-addresses.ts';

function sh(args: readonly string[]): string {
  return execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Deletes a namespace, first killing what still runs in it: an agent killed with SIGKILL leaves
 * its denied-flow reader (`tcpdump -i nflog:…`) behind, which would keep the namespace alive
 * (in a pod, the container's PID namespace takes it down with the agent).
 */
function tryDel(ns: string): void {
  try {
    for (const pid of execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')) {
      if (/^\d+$/.test(pid.trim())) {
        try {
          process.kill(Number(pid.trim()), 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
  } catch {
    // No such namespace.
  }
  try {
    execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  } catch {
    // Already gone.
  }
}

/** Calico's host-side interface name for a pod: `cali` + 11 hex of sha1("<ns>.<pod>"). */
export function caliInterfaceName(namespace: string, pod: string): string {
  return `cali${createHash('sha1').update(`${namespace}.${pod}`).digest('hex').slice(0, 11)}`;
}

/** `veth` + 8 random hex: the host-side name kindnet and the ptp CNI plugin give a pod's veth. */
export function randomVethName(): string {
  return `veth${randomBytes(4).toString('hex')}`;
}

/** How host-side pod veths are named (see the file comment). */
export type HostVethNaming = 'calico' | 'veth';
export const HOST_VETH_NAMINGS: readonly HostVethNaming[] = ['calico', 'veth'];

export interface ClusterNetworkOptions {
  /** @default 'calico' */
  readonly hostVethNaming?: HostVethNaming;
  /** Nodes given a global IPv6 address and an IPv6 default route. @default [] (IPv4-only nodes) */
  readonly dualStackNodes?: readonly string[];
}

export interface PodNet {
  readonly key: string;
  readonly ip: string;
  /** The pod's IPv6 address; IPv4-only without it. */
  readonly ip6?: string;
  readonly node: string;
  readonly netns: string;
  readonly iface: string;
}

function tryExec(f: () => unknown): void {
  try {
    f();
  } catch {
    // Already gone.
  }
}

/**
 * Commands (run in the node's namespace) that add or delete a node's own addresses on `dev`:
 * host routes (/32, /128), IPv6 without duplicate address detection (the same address is on
 * every link of the node).
 */
export function nodeAddressCommands(addrs: NodeAddresses, dev: string, op: 'add' | 'del'): string[][] {
  return [
    ...(addrs.ipv4 === undefined ? [] : [['ip', 'addr', op, `${addrs.ipv4}/32`, 'dev', dev]]),
    ...(addrs.ipv6 === undefined ? [] : [['ip', '-6', 'addr', op, `${addrs.ipv6}/128`, 'dev', dev, ...(op === 'add' && dev !== 'lo' ? ['nodad'] : [])]]),
  ];
}

/**
 * Commands (run in another node's namespace) that route a node's own addresses onto `link`,
 * the link towards it (IPv6 via `nextHop6`, its link-local address there), or delete those
 * routes.
 */
export function nodeRouteCommands(addrs: NodeAddresses, link: string, nextHop6: string, op: 'add' | 'del'): string[][] {
  const verb = op === 'add' ? 'replace' : 'del';
  return [
    ...(addrs.ipv4 === undefined ? [] : [['ip', 'route', verb, `${addrs.ipv4}/32`, ...(op === 'add' ? ['dev', link, 'scope', 'link'] : [])]]),
    ...(addrs.ipv6 === undefined ? [] : [['ip', '-6', 'route', verb, `${addrs.ipv6}/128`, ...(op === 'add' ? ['via', nextHop6, 'dev', link] : [])]]),
  ];
}

/** Node `i`'s fixed link-local address on every inter-node link: the IPv6 next hop towards it. */
function linkLocal(i: number): string {
  return `fe80::ff:${(i + 1).toString(16)}`;
}

export class ClusterNetwork {
  readonly id = randomBytes(3).toString('hex');
  readonly hostVethNaming: HostVethNaming;
  private readonly dualStackNodes: ReadonlySet<string>;
  /** node name → node namespace. */
  readonly nodes = new Map<string, string>();
  readonly pods = new Map<string, PodNet>();
  private readonly live = new Set<string>();
  private podSeq = 0;
  private readonly links = new Set<string>();
  /** Scenario nodes' own addresses (`setNodeAddresses`), by node name. */
  private readonly nodeAddrs = new Map<string, NodeAddresses>();
  private readonly unregister: () => void;

  constructor(opts: ClusterNetworkOptions = {}) {
    this.hostVethNaming = opts.hostVethNaming ?? 'calico';
    this.dualStackNodes = new Set(opts.dualStackNodes ?? []);
    this.unregister = registerExitCleanup(() => this.destroy());
  }

  /** The node's namespace name (created by `addNodes`). */
  nodeNs(node: string): string {
    const ns = this.nodes.get(node);
    if (ns === undefined) throw new Error(`ClusterNetwork: no node ${JSON.stringify(node)}`);
    return ns;
  }

  private addNs(ns: string): void {
    sh(['ip', 'netns', 'add', ns]);
    this.live.add(ns);
  }

  exec(ns: string, args: readonly string[]): string {
    return sh(['ip', 'netns', 'exec', ns, ...args]);
  }

  private linkName(to: number): string {
    return `tsn${to}`;
  }

  /** Creates a namespace per node and a veth link between every pair of nodes. */
  addNodes(names: readonly string[]): void {
    for (const name of names) {
      if (this.nodes.has(name)) continue;
      const i = this.nodes.size;
      const ns = `tse-${this.id}-n${i}`;
      this.addNs(ns);
      this.nodes.set(name, ns);
      const dualStack = this.dualStackNodes.has(name)
        ? [
            ['ip', '-6', 'addr', 'add', `fd00:ffff::${(i + 1).toString(16)}/128`, 'dev', 'lo'],
            ['ip', '-6', 'route', 'add', 'default', 'dev', 'uplink0'],
          ]
        : [];
      for (const cmd of [
        ['ip', 'link', 'set', 'lo', 'up'],
        // The node's own address: ARP requests the node sends across a link need a source IP
        // (a proxy-ARP peer ignores requests from 0.0.0.0).
        ['ip', 'addr', 'add', `172.31.255.${i + 1}/32`, 'dev', 'lo'],
        ['sysctl', '-qw', 'net.ipv4.ip_forward=1'],
        ['sysctl', '-qw', 'net.ipv4.conf.all.rp_filter=0'],
        ['sysctl', '-qw', 'net.ipv4.conf.default.rp_filter=0'],
        // Routes IPv6 between its pods and the links (a pod may be dual-stack on any node).
        ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1'],
        // Proxy ARP answers only for targets routed elsewhere: a default route onto an uplink.
        ['ip', 'link', 'add', 'uplink0', 'type', 'veth', 'peer', 'name', 'uplink1'],
        ['ip', 'link', 'set', 'uplink0', 'up'],
        ['ip', 'link', 'set', 'uplink1', 'up'],
        ['ip', 'route', 'add', 'default', 'dev', 'uplink0'],
        ...dualStack,
      ]) {
        this.exec(ns, cmd);
      }
    }
    const all = [...this.nodes.keys()];
    for (const [i, a] of all.entries()) {
      for (const [j, b] of all.entries()) {
        if (j <= i || this.links.has(`${a}|${b}`)) continue;
        this.links.add(`${a}|${b}`);
        const [nsA, nsB] = [this.nodeNs(a), this.nodeNs(b)];
        const [ifA, ifB] = [this.linkName(j), this.linkName(i)];
        sh(['ip', 'link', 'add', ifA, 'netns', nsA, 'type', 'veth', 'peer', 'name', ifB, 'netns', nsB]);
        for (const [ns, ifc, at] of [[nsA, ifA, i], [nsB, ifB, j]] as const) {
          this.exec(ns, ['sysctl', '-qw', `net.ipv6.conf.${ifc}.accept_dad=0`]);
          this.exec(ns, ['ip', '-6', 'addr', 'add', `${linkLocal(at)}/64`, 'dev', ifc, 'nodad']);
          this.exec(ns, ['ip', 'link', 'set', ifc, 'up']);
          this.exec(ns, ['sysctl', '-qw', `net.ipv4.conf.${ifc}.proxy_arp=1`]);
          this.exec(ns, ['sysctl', '-qw', `net.ipv4.neigh.${ifc}.proxy_delay=0`]);
        }
        this.wireNodeAddresses(a, b, 'add');
        this.wireNodeAddresses(b, a, 'add');
      }
    }
  }

  /** The addresses `setNodeAddresses` gave `node` ({} when none). */
  nodeAddresses(node: string): NodeAddresses {
    return this.nodeAddrs.get(node) ?? {};
  }

  /**
   * Gives node `node` (already added) the scenario's own addresses, replacing any it had from an
   * earlier scenario (see the file comment for where they go).
   */
  setNodeAddresses(node: string, addrs: NodeAddresses): void {
    this.clearNodeAddresses(node);
    const ns = this.nodeNs(node);
    this.nodeAddrs.set(node, addrs);
    for (const cmd of nodeAddressCommands(addrs, 'lo', 'add')) this.exec(ns, cmd);
    for (const peer of this.nodes.keys()) if (peer !== node) this.wireNodeAddresses(node, peer, 'add');
  }

  /** Takes back what `setNodeAddresses` gave `node` (nothing when it gave nothing). */
  clearNodeAddresses(node: string): void {
    const addrs = this.nodeAddrs.get(node);
    const ns = this.nodes.get(node);
    if (addrs === undefined || ns === undefined) return;
    for (const peer of this.nodes.keys()) if (peer !== node) this.wireNodeAddresses(node, peer, 'del');
    for (const cmd of nodeAddressCommands(addrs, 'lo', 'del')) tryExec(() => this.exec(ns, cmd));
    this.nodeAddrs.delete(node);
  }

  /**
   * `node`'s own addresses on its link towards `peer`, and `peer`'s routes to them over that
   * link (`del`: both taken back, whatever is already gone).
   */
  private wireNodeAddresses(node: string, peer: string, op: 'add' | 'del'): void {
    const addrs = this.nodeAddrs.get(node);
    if (addrs === undefined || !this.links.has(this.linkKey(node, peer))) return;
    const all = [...this.nodes.keys()];
    const [at, peerAt] = [all.indexOf(node), all.indexOf(peer)];
    const commands: Array<[string, string[]]> = [
      ...nodeAddressCommands(addrs, this.linkName(peerAt), op).map((c): [string, string[]] => [this.nodeNs(node), c]),
      ...nodeRouteCommands(addrs, this.linkName(at), linkLocal(at), op).map((c): [string, string[]] => [this.nodeNs(peer), c]),
    ];
    for (const [ns, cmd] of commands) {
      if (op === 'add') this.exec(ns, cmd);
      else tryExec(() => this.exec(ns, cmd));
    }
  }

  /** The key `addNodes` records a link between `a` and `b` under (either order). */
  private linkKey(a: string, b: string): string {
    const all = [...this.nodes.keys()];
    return all.indexOf(a) < all.indexOf(b) ? `${a}|${b}` : `${b}|${a}`;
  }

  /**
   * Creates the pod's namespace, its veth into its node (named by `hostVethNaming`), and routes
   * on every node; `ip6` makes the pod dual-stack.
   */
  addPod(namespace: string, name: string, ip: string, node: string, ip6?: string): PodNet {
    const key = `${namespace}/${name}`;
    const nodeNs = this.nodeNs(node);
    const netns = `tse-${this.id}-p${this.podSeq++}`;
    const iface = this.hostVethNaming === 'calico' ? caliInterfaceName(namespace, name) : randomVethName();
    const addrs = ip6 === undefined ? { ip } : { ip, ip6 };
    this.addNs(netns);
    sh(['ip', 'link', 'add', iface, 'netns', nodeNs, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    for (const cmd of podSideCommands(addrs)) this.exec(netns, cmd);
    for (const cmd of hostSideCommands(iface, addrs)) this.exec(nodeNs, cmd);
    const all = [...this.nodes.keys()];
    const at = all.indexOf(node);
    for (const other of all) {
      if (other === node) continue;
      const otherNs = this.nodeNs(other);
      this.exec(otherNs, ['ip', 'route', 'replace', `${ip}/32`, 'dev', this.linkName(at), 'scope', 'link']);
      if (ip6 !== undefined) this.exec(otherNs, ['ip', '-6', 'route', 'replace', `${ip6}/128`, 'via', linkLocal(at), 'dev', this.linkName(at)]);
    }
    const pod: PodNet = { key, node, netns, iface, ...addrs };
    this.pods.set(key, pod);
    return pod;
  }

  /**
   * Deletes the pod's veth, its namespace and the remote routes. The veth goes first, by name:
   * a deleted namespace is torn down by the kernel asynchronously (later still while a process
   * is inside it), and until then its veth peer would keep the `cali…` name taken on the node,
   * so the same pod in the next scenario could not be wired ("File exists").
   */
  removePod(key: string): void {
    const pod = this.pods.get(key);
    if (pod === undefined) return;
    this.pods.delete(key);
    try {
      this.exec(this.nodeNs(pod.node), ['ip', 'link', 'del', pod.iface]);
    } catch {
      // Already gone.
    }
    tryDel(pod.netns);
    this.live.delete(pod.netns);
    for (const [node, ns] of this.nodes) {
      if (node === pod.node) continue;
      for (const route of [['ip', 'route', 'del', `${pod.ip}/32`], ...(pod.ip6 === undefined ? [] : [['ip', '-6', 'route', 'del', `${pod.ip6}/128`]])]) {
        try {
          this.exec(ns, route);
        } catch {
          // Already gone.
        }
      }
    }
  }

  /** Deletes every namespace this network created (idempotent). */
  destroy(): void {
    for (const ns of this.live) tryDel(ns);
    this.live.clear();
    this.pods.clear();
    this.nodes.clear();
    this.nodeAddrs.clear();
    this.unregister();
  }
}
