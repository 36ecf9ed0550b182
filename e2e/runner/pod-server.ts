/**
 * One long-lived `e2e/dataplane/probe-agent.mjs` per pod: it runs probes on request, so a
 * probe costs a round trip instead of a Node start-up. A probe that gets no answer within its
 * timeout counts as blocked (UDP: no echo).
 * - `PodServer.start`: in a pod's network namespace (`ip netns exec`), also serving the pod's
 *   container ports;
 * - `PodServer.startInNode`: in a node's host network namespace, serving the node's hostPorts
 *   and probing FROM the node's scenario addresses (each probe's socket bound to the one of the
 *   target's family), so a probe leaves the node as the scenario's node address;
 * - `PodServer.attach`: any command that runs the agent in the pod, e.g. `kubectl exec -i`
 *   into a real pod whose main process serves the ports (kind-cluster.ts); `sources` binds
 *   probes there too.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { isIPv4, isIPv6 } from 'node:net';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import type { PodNet } from './network.ts';
import type { PodProber } from './scenario-cluster.ts';

const SERVER = fileURLToPath(new URL('../dataplane/probe-agent.mjs', import.meta.url));

/** The local address a probe's socket is bound to, per family of the target (none: the kernel's pick). */
export interface ProbeSources {
  readonly ipv4?: string;
  readonly ipv6?: string;
}

export class PodServer implements PodProber {
  private nextId = 0;
  private readonly pending = new Map<number, (ok: boolean) => void>();
  private exited = false;

  private constructor(
    /** The pod, as `<namespace>/<name>` (a node: its name). */
    readonly key: string,
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly sources: ProbeSources,
  ) {}

  static start(pod: PodNet, ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>): Promise<PodServer> {
    // A dual-stack pod serves its ports on IPv6 too (probe-agent.mjs's second argument).
    const ipv6 = pod.ip6 === undefined ? [] : [JSON.stringify({ ipv6: true })];
    return PodServer.attach(pod.key, 'ip', ['netns', 'exec', pod.netns, process.execPath, SERVER, JSON.stringify(ports), ...ipv6], 10_000);
  }

  /**
   * In node namespace `netns`: serves `ports` on the node's scenario addresses `sources` (only
   * there: probe-agent.mjs's `bind`) and probes from them.
   */
  static startInNode(node: string, netns: string, ports: ReadonlyArray<{ port: number; protocol: 'TCP' | 'UDP' }>, sources: ProbeSources): Promise<PodServer> {
    return PodServer.attach(node, 'ip', ['netns', 'exec', netns, process.execPath, SERVER, JSON.stringify(ports), JSON.stringify({ bind: sourceList(sources) })], 10_000, sources);
  }

  /** Runs `command` (which must run probe-agent.mjs in the pod) and waits for the agent's ready line. */
  static async attach(key: string, command: string, args: readonly string[], timeoutMs: number, sources: ProbeSources = {}): Promise<PodServer> {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const server = new PodServer(key, child, sources);
    const pod = { key };
    const lines = readline.createInterface({ input: child.stdout });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill();
        reject(new Error(`pod server for ${pod.key} did not start within ${timeoutMs} ms: ${stderr}`));
      }, timeoutMs);
      child.on('exit', (code) => {
        server.exited = true;
        for (const cb of server.pending.values()) cb(false);
        server.pending.clear();
        clearTimeout(timer);
        reject(new Error(`pod server for ${pod.key} exited with ${code}: ${stderr}`));
      });
      lines.on('line', (line) => {
        const msg = JSON.parse(line) as { ready?: boolean; source?: boolean; id?: number; ok?: boolean };
        if (msg.ready === true) {
          clearTimeout(timer);
          if (msg.source !== true && (sources.ipv4 !== undefined || sources.ipv6 !== undefined)) {
            child.kill();
            reject(new Error(`probe agent for ${pod.key} does not bind a probe's source address (an older probe-agent.mjs: rebuild the probe-server image)`));
            return;
          }
          resolve();
          return;
        }
        const cb = server.pending.get(msg.id ?? -1);
        server.pending.delete(msg.id ?? -1);
        cb?.(msg.ok === true);
      });
    });
    return server;
  }

  /** Whether a `protocol` connection from this pod to `host:port` is answered in time. */
  probe(protocol: 'TCP' | 'UDP', host: string, port: number, timeoutMs: number): Promise<boolean> {
    if (this.exited) return Promise.resolve(false);
    const id = this.nextId++;
    const request = probeRequest(id, protocol, host, port, timeoutMs, this.sources);
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify(request)}\n`);
    });
  }

  stop(): void {
    if (this.exited) return;
    this.child.stdin.end();
    this.child.kill();
  }
}

/** 127.0.0.0/8 or ::1: probed from loopback whatever the sources (a runner's own is-it-serving check). */
function isLoopback(host: string): boolean {
  return host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}

/**
 * One probe-agent request line's object: with `source` (the local address to bind) when
 * `sources` has one of `host`'s family and `host` is not a loopback address.
 */
export function probeRequest(id: number, protocol: 'TCP' | 'UDP', host: string, port: number, timeoutMs: number, sources: ProbeSources): Record<string, unknown> {
  const source = isLoopback(host) ? undefined : isIPv6(host) ? sources.ipv6 : sources.ipv4;
  return { id, protocol, host, port, timeoutMs, ...(source === undefined ? {} : { source }) };
}

/** The addresses of `sources`, IPv4 first. */
export function sourceList(sources: ProbeSources): string[] {
  return [sources.ipv4, sources.ipv6].filter((a): a is string => a !== undefined);
}
