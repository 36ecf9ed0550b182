/**
 * Network-namespace topology for dataplane e2e tests: one "node" namespace and pod
 * namespaces joined to it by veth pairs, wired the way Calico's CNI plugin wires pods:
 *
 * - pod side: `eth0` with the pod's /32, a link-scope route to 169.254.1.1 and a default route
 *   via it (the gateway does not exist; the node answers ARP for it);
 * - node side: `cali<id><n>` up, `proxy_arp=1` and `neigh.proxy_delay=0` (answer at once), a
 *   `/32 dev cali… scope link` route per pod, `ip_forward=1`, and a default route onto a veth
 *   uplink (proxy ARP only answers for addresses the node can route elsewhere).
 * - IPv6, for pods given an `ip6` (what the CNI plugin does for v6): pod side `eth0` with the
 *   pod's /128 and a default route via the host veth's link-local address
 *   `fe80::ecee:eeff:feee:eeee` (the host veth gets Calico's MAC `ee:ee:ee:ee:ee:ee`, so that
 *   address is known without asking the kernel); node side a `/128 dev cali…` route and
 *   `forwarding=1`. Neighbour discovery then needs no proxy NDP: the pod resolves the node's
 *   link-local next hop, the node resolves the pod's /128 on the veth, and pod ↔ pod traffic
 *   goes through the node's FORWARD chain. Duplicate address detection is off on both ends so
 *   no address is tentative when the test starts sending.
 *
 * Every namespace is named `tsr-<random>-…`, recorded, and deleted by `destroy()` — and on
 * process exit for anything a crashed test left behind. Deleting a namespace removes its veth
 * ends, iptables rules and IP sets with it, so nothing leaks into the host.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const live = new Set<string>();
let exitHookInstalled = false;

function sh(args: readonly string[]): string {
  return execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const ns of live) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
    }
  });
}

export interface PodSpec {
  readonly name: string;
  /** The pod's IPv4 address (inside 10.65.0.0/16). */
  readonly ip: string;
  /** The pod's IPv6 address (a ULA, e.g. inside fd00:65::/64); the pod is IPv4-only without it. */
  readonly ip6?: string;
}

/** Calico's MAC for every host-side workload veth (CNI plugin `ee:ee:ee:ee:ee:ee`). */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee';
/** The EUI-64 link-local address of {@link HOST_VETH_MAC}: the pods' IPv6 next hop. */
export const HOST_VETH_LINK_LOCAL = 'fe80::ecee:eeff:feee:eeee';

/** A pod's addresses, all the wiring commands below need. */
export interface PodAddresses {
  readonly ip: string;
  readonly ip6?: string;
}

/**
 * The commands, run inside the pod's namespace, that give its `eth0` the pod's addresses and
 * routes as Calico's CNI plugin does (see the file comment). The veth pair must exist, both ends
 * down: duplicate address detection is turned off before the link comes up. Shared with the
 * scenario runner's multi-node network (e2e/runner/network.ts).
 */
export function podSideCommands(pod: PodAddresses): string[][] {
  const { ip, ip6 } = pod;
  // The link-local addresses appear when the link comes up: DAD must be off before that.
  const v6Pre = ip6 === undefined ? [] : [['sysctl', '-qw', 'net.ipv6.conf.eth0.accept_dad=0']];
  const v6 =
    ip6 === undefined
      ? []
      : [
          ['ip', '-6', 'addr', 'add', `${ip6}/128`, 'dev', 'eth0', 'nodad'],
          ['ip', '-6', 'route', 'add', 'default', 'via', HOST_VETH_LINK_LOCAL, 'dev', 'eth0'],
        ];
  return [
    ['ip', 'link', 'set', 'lo', 'up'],
    ['ip', 'addr', 'add', `${ip}/32`, 'dev', 'eth0'],
    ...v6Pre,
    ['ip', 'link', 'set', 'eth0', 'up'],
    ['ip', 'route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link'],
    ['ip', 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0'],
    ...v6,
  ];
}

/**
 * The commands, run inside the node's namespace, for the pod's host-side veth `iface`: up,
 * proxy ARP, the pod's `/32` (and `/128`) route onto it, and for IPv6 Calico's MAC (so the
 * pod's next hop {@link HOST_VETH_LINK_LOCAL} is known) with DAD off.
 */
export function hostSideCommands(iface: string, pod: PodAddresses): string[][] {
  const { ip, ip6 } = pod;
  const v6Pre =
    ip6 === undefined
      ? []
      : [
          ['sysctl', '-qw', `net.ipv6.conf.${iface}.accept_dad=0`],
          ['ip', 'link', 'set', iface, 'address', HOST_VETH_MAC],
        ];
  const v6 = ip6 === undefined ? [] : [['ip', '-6', 'route', 'add', `${ip6}/128`, 'dev', iface]];
  return [
    ...v6Pre,
    ['ip', 'link', 'set', iface, 'up'],
    ['sysctl', '-qw', `net.ipv4.conf.${iface}.proxy_arp=1`],
    ['sysctl', '-qw', `net.ipv4.neigh.${iface}.proxy_delay=0`],
    ['ip', 'route', 'add', `${ip}/32`, 'dev', iface, 'scope', 'link'],
    ...v6,
  ];
}

export interface Pod extends PodSpec {
  readonly netns: string;
  /** Host-side veth in the node namespace (`cali…`, ≤ 15 characters). */
  readonly iface: string;
}

export class Topology {
  readonly id: string;
  readonly nodeNs: string;
  readonly pods: Pod[] = [];

  private constructor(id: string) {
    this.id = id;
    this.nodeNs = `tsr-${id}-node`;
  }

  /** Creates the node namespace and one namespace + veth pair per pod. */
  static create(pods: readonly PodSpec[]): Topology {
    installExitHook();
    const t = new Topology(randomBytes(3).toString('hex'));
    try {
      t.addNs(t.nodeNs);
      t.exec(t.nodeNs, ['ip', 'link', 'set', 'lo', 'up']);
      t.exec(t.nodeNs, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
      if (pods.some((p) => p.ip6 !== undefined)) t.exec(t.nodeNs, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
      // Proxy ARP answers only for targets the node can route (via another interface): give the
      // node the default route a real node has, onto an "uplink" (a veth pair inside the node
      // namespace: the kernel here has no dummy driver).
      t.exec(t.nodeNs, ['ip', 'link', 'add', 'uplink0', 'type', 'veth', 'peer', 'name', 'uplink1']);
      t.exec(t.nodeNs, ['ip', 'link', 'set', 'uplink0', 'up']);
      t.exec(t.nodeNs, ['ip', 'link', 'set', 'uplink1', 'up']);
      t.exec(t.nodeNs, ['ip', 'route', 'add', 'default', 'dev', 'uplink0']);
      pods.forEach((spec, i) => t.addPod(spec, i));
    } catch (e) {
      t.destroy();
      throw e;
    }
    return t;
  }

  private addNs(ns: string): void {
    sh(['ip', 'netns', 'add', ns]);
    live.add(ns);
  }

  private addPod(spec: PodSpec, i: number): void {
    const netns = `tsr-${this.id}-${spec.name}`;
    const iface = `cali${this.id}${i}`;
    this.addNs(netns);
    sh(['ip', 'link', 'add', iface, 'netns', this.nodeNs, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    for (const cmd of podSideCommands(spec)) this.exec(netns, cmd);
    for (const cmd of hostSideCommands(iface, spec)) this.exec(this.nodeNs, cmd);
    this.pods.push({ ...spec, netns, iface });
  }

  pod(name: string): Pod {
    const p = this.pods.find((x) => x.name === name);
    if (p === undefined) throw new Error(`Topology ${this.id}: no pod '${name}'`);
    return p;
  }

  /** Runs a command inside `ns` (no shell) and returns its stdout. */
  exec(ns: string, args: readonly string[]): string {
    return sh(['ip', 'netns', 'exec', ns, ...args]);
  }

  /** Deletes every namespace this topology created (idempotent). */
  destroy(): void {
    for (const ns of [this.nodeNs, ...this.pods.map((p) => p.netns)]) {
      if (!live.has(ns)) continue;
      try {
        sh(['ip', 'netns', 'del', ns]);
      } catch {
        // Already gone.
      }
      live.delete(ns);
    }
  }
}

/** Deletes a standalone namespace created with `createNetns` (for benchmarks). */
export function createNetns(prefix = 'tsr'): { name: string; destroy: () => void } {
  installExitHook();
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  sh(['ip', 'netns', 'add', name]);
  live.add(name);
  return {
    name,
    destroy: () => {
      if (!live.delete(name)) return;
      try {
        sh(['ip', 'netns', 'del', name]);
      } catch {
        // Already gone.
      }
    },
  };
}
