/**
 * The fixture's pods on real kernels, without an enforcer: the nodes and pods as network
 * namespaces (e2e/runner's `ClusterNetwork`: nodes joined by veth links, pods wired like
 * Calico's CNI, host veths named `cali` + 11 hex as Calico names them, both families), a probe
 * server per pod (TCP and UDP on {@link SERVED_PORTS}, both families) and ICMP echo with `ping`
 * (Debian's iputils-ping).
 *
 * Whoever enforces policy in the node namespaces — Tessera's dataplane driver
 * (kernel-cluster.ts) or Felix (e2e/felix/felix-cluster.ts) — builds on one of these; each
 * network has its own namespace names (`tse-<id>-…`), so several coexist with the same
 * addresses.
 */
import { execFile } from 'node:child_process';
import { ClusterNetwork } from '../runner/network.ts';
import { PodServer } from '../runner/pod-server.ts';
import { NODES, PODS, SERVED_PORTS } from './fixture.ts';

export type ProbeKind = 'TCP' | 'UDP' | 'ICMP';

/** One real probe: `from` → `to` (pod keys) over `family`; `port` is ignored for ICMP echo. */
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
   * Forgets every flow: flows of earlier rounds would be accepted as established (the
   * conntrack rule Felix and Tessera both render) when a probe's ephemeral port repeats one,
   * and every probe of a round must be judged as a new flow.
   */
  flushConntrack(): void {
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
    if (from === undefined || to === undefined) throw new Error(`FixtureNetwork: probe ${p.from} → ${p.to}: unknown pod`);
    const host = p.family === 6 ? to.ip6 : to.ip;
    if (host === undefined) throw new Error(`FixtureNetwork: probe ${p.from} → ${p.to} over IPv6: ${p.to} has no IPv6 address`);
    if (p.kind !== 'ICMP') return this.servers.get(p.from)!.probe(p.kind, host, p.port, timeoutMs);
    // One echo request; ping exits 0 only when the reply arrived within -W seconds.
    const args = ['netns', 'exec', from.netns, 'ping', `-${p.family}`, '-n', '-q', '-c', '1', '-W', String(timeoutMs / 1000), host];
    return new Promise((resolve) => execFile('ip', args, (err) => resolve(err === null)));
  }

  [Symbol.dispose](): void {
    for (const s of this.servers.values()) s.stop();
    this.network.destroy();
  }
}
