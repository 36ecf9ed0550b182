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

export class ProbeAgent {
  private nextId = 0;
  private readonly pending = new Map<number, (ok: boolean) => void>();

  private constructor(
    readonly pod: Pod,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {}

  static async start(pod: Pod): Promise<ProbeAgent> {
    const ports = JSON.stringify([{ port: TCP_PORT, protocol: 'TCP' }, { port: UDP_PORT, protocol: 'UDP' }]);
    const args = ['netns', 'exec', pod.netns, process.execPath, AGENT, ports, ...(pod.ip6 === undefined ? [] : [JSON.stringify({ ipv6: true })])];
    const child = spawn('ip', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const agent = new ProbeAgent(pod, child);
    const lines = readline.createInterface({ input: child.stdout });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`probe agent in ${pod.netns} did not start`)), 10_000);
      child.on('exit', (code) => reject(new Error(`probe agent in ${pod.netns} exited with ${code}`)));
      lines.on('line', (line) => {
        const msg = JSON.parse(line) as { ready?: boolean; id?: number; ok?: boolean };
        if (msg.ready === true) {
          clearTimeout(timer);
          resolve();
          return;
        }
        const cb = agent.pending.get(msg.id!);
        agent.pending.delete(msg.id!);
        cb?.(msg.ok === true);
      });
    });
    return agent;
  }

  /** Whether `kind` traffic from this pod reaches `to` over `family` (connection answered in time). */
  probe(kind: ProbeKind, to: Pod, timeoutMs = 500, family: IpFamily = 4): Promise<boolean> {
    const host = family === 4 ? to.ip : to.ip6;
    if (host === undefined) throw new Error(`probe: pod ${to.name} has no IPv6 address`);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, protocol: kind === 'tcp' ? 'TCP' : 'UDP', host, port: kind === 'tcp' ? TCP_PORT : UDP_PORT, timeoutMs })}\n`);
    });
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
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
