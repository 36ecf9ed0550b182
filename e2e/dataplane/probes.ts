/**
 * Real TCP and UDP probes between pod namespaces. One long-lived agent process per pod
 * (`probe-agent.mjs`, started with `ip netns exec`) serves a TCP and a UDP port and runs
 * probes on request, so a probe costs a round trip instead of a Node start-up. A probe that
 * gets no answer within `timeoutMs` (500 ms by default) counts as blocked. A pod with an IPv6
 * address is served and probed over IPv6 too (an expectation's `family`).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import type { Pod } from './netns.ts';

export const TCP_PORT = 8080;
export const UDP_PORT = 5353;
const AGENT = fileURLToPath(new URL('./probe-agent.mjs', import.meta.url));

export type ProbeKind = 'tcp' | 'udp';
export type IpFamily = 4 | 6;

/** A probe agent process in some namespace: serves its ports and probes any address on request. */
export class Prober {
  private nextId = 0;
  private readonly pending = new Map<number, (ok: boolean) => void>();

  protected constructor(private readonly child: ChildProcessWithoutNullStreams) {}

  /**
   * Starts an agent in `netns` serving `ports` (on IPv6 too with `ipv6`): a host's namespace, or
   * one standing for a machine outside the node.
   */
  static async startIn(netns: string, ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>, ipv6: boolean): Promise<Prober> {
    // Answers come only to probes, and no probe is sent before the agent exists.
    const made: { agent?: Prober } = {};
    const child = await Prober.spawn(netns, ports, ipv6, (id, ok) => made.agent?.settle(id, ok));
    return (made.agent = new Prober(child));
  }

  protected static async spawn(
    netns: string,
    ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>,
    ipv6: boolean,
    onAnswer: (id: number, ok: boolean) => void,
  ): Promise<ChildProcessWithoutNullStreams> {
    const args = ['netns', 'exec', netns, process.execPath, AGENT, JSON.stringify(ports), ...(ipv6 ? [JSON.stringify({ ipv6: true })] : [])];
    const child = spawn('ip', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const lines = readline.createInterface({ input: child.stdout });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`probe agent in ${netns} did not start`)), 10_000);
      child.on('exit', (code) => reject(new Error(`probe agent in ${netns} exited with ${code}`)));
      lines.on('line', (line) => {
        const msg = JSON.parse(line) as { ready?: boolean; id?: number; ok?: boolean };
        if (msg.ready === true) {
          clearTimeout(timer);
          resolve();
          return;
        }
        onAnswer(msg.id!, msg.ok === true);
      });
    });
    return child;
  }

  protected settle(id: number, ok: boolean): void {
    const cb = this.pending.get(id);
    this.pending.delete(id);
    cb?.(ok);
  }

  /** Whether `kind` traffic from this agent to `host`:`port` is answered within `timeoutMs`. */
  probeAddress(kind: ProbeKind, host: string, port: number, timeoutMs = 500): Promise<boolean> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, protocol: kind === 'tcp' ? 'TCP' : 'UDP', host, port, timeoutMs })}\n`);
    });
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

/** A pod's probe agent: serves {@link TCP_PORT} and {@link UDP_PORT}, probes other pods. */
export class ProbeAgent extends Prober {
  private constructor(
    readonly pod: Pod,
    child: ChildProcessWithoutNullStreams,
  ) {
    super(child);
  }

  static async start(pod: Pod): Promise<ProbeAgent> {
    const ports = [
      { port: TCP_PORT, protocol: 'TCP' as const },
      { port: UDP_PORT, protocol: 'UDP' as const },
    ];
    const made: { agent?: ProbeAgent } = {};
    const child = await Prober.spawn(pod.netns, ports, pod.ip6 !== undefined, (id, ok) => made.agent?.settle(id, ok));
    return (made.agent = new ProbeAgent(pod, child));
  }

  /** Whether `kind` traffic from this pod reaches `to` over `family` (connection answered in time). */
  probe(kind: ProbeKind, to: Pod, timeoutMs = 500, family: IpFamily = 4): Promise<boolean> {
    const host = family === 4 ? to.ip : to.ip6;
    if (host === undefined) throw new Error(`probe: pod ${to.name} has no IPv6 address`);
    return this.probeAddress(kind, host, kind === 'tcp' ? TCP_PORT : UDP_PORT, timeoutMs);
  }
}

/** A connectivity expectation: `from` → `to` over `kind`. */
export interface Expectation {
  readonly from: string;
  readonly to: string;
  readonly kind: ProbeKind;
  readonly allowed: boolean;
  /** @default 4 */
  readonly family?: IpFamily;
}

/**
 * Runs every probe in parallel and returns the ones whose verdict differs from expected. A
 * probe expected to pass that timed out is retried once with a long timeout, so a loaded CI
 * machine cannot turn a slow answer into a false "blocked"; an unexpected "allowed" is never
 * retried (that is always a real failure).
 */
export async function checkConnectivity(
  agents: ReadonlyMap<string, ProbeAgent>,
  expectations: readonly Expectation[],
  timeoutMs = 500,
  { retrySlow = true }: { retrySlow?: boolean } = {},
): Promise<string[]> {
  const results = await Promise.all(
    expectations.map(async (e) => {
      const agent = agents.get(e.from)!;
      const to = agents.get(e.to)!.pod;
      const family = e.family ?? 4;
      let ok = await agent.probe(e.kind, to, timeoutMs, family);
      if (!ok && e.allowed && retrySlow) ok = await agent.probe(e.kind, to, 3_000, family);
      return ok === e.allowed ? undefined : `${e.from} → ${e.to} ${e.kind}${family === 6 ? '/v6' : ''}: expected ${e.allowed ? 'allowed' : 'blocked'}, got ${ok ? 'allowed' : 'blocked'}`;
    }),
  );
  return results.filter((r): r is string => r !== undefined);
}
