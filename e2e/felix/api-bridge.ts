/**
 * The test API server, reachable at `https://127.0.0.1:<insidePort>` from inside a node's
 * network namespace (the serving certificate names 127.0.0.1, whatever the port). Two halves
 * joined by a unix socket: this process serves the socket and connects each stream to the
 * host's 127.0.0.1:<port>; tcp-to-unix.mjs, started in the namespace, listens on the
 * namespace's 127.0.0.1:<insidePort> and connects to the socket. Nothing but loopback
 * addresses carries the traffic.
 *
 * Inside, the port is {@link API_PORT_INSIDE}, 6443: a Felix failsafe port both ways
 * (`FailsafeInboundHostPorts`/`FailsafeOutboundHostPorts` defaults), so a `*` HostEndpoint
 * without policy for loopback — a round may hold one — never cuts Felix from its API server,
 * as it does not cut a real calico-node from its API server on 6443.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const INSIDE = fileURLToPath(new URL('./tcp-to-unix.mjs', import.meta.url));

/** The API server's port inside a node namespace: Kubernetes' own, one of Felix's failsafe ports. */
export const API_PORT_INSIDE = 6443;

export class ApiBridge implements Disposable {
  private readonly children: ChildProcess[] = [];

  private constructor(
    private readonly server: net.Server,
    readonly socketPath: string,
    readonly port: number,
  ) {}

  /** Serves `<dir>/api.sock`, joined to 127.0.0.1:`port` on the host. */
  static async open(dir: string, port: number): Promise<ApiBridge> {
    const socketPath = join(dir, 'api.sock');
    const server = net.createServer((outside) => {
      const inside = net.connect(port, '127.0.0.1');
      outside.pipe(inside).pipe(outside);
      const close = () => {
        outside.destroy();
        inside.destroy();
      };
      outside.on('error', close);
      inside.on('error', close);
      outside.on('close', close);
      inside.on('close', close);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, resolve);
    });
    return new ApiBridge(server, socketPath, port);
  }

  /** Makes 127.0.0.1:{@link API_PORT_INSIDE} inside `netns` reach the API server (resolves once it listens). */
  async into(netns: string): Promise<void> {
    const child = spawn('ip', ['netns', 'exec', netns, process.execPath, INSIDE, String(API_PORT_INSIDE), this.socketPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.children.push(child);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    await new Promise<void>((resolve, reject) => {
      const lines = readline.createInterface({ input: child.stdout! });
      lines.once('line', () => resolve());
      child.once('exit', (code) => reject(new Error(`ApiBridge: the bridge into ${netns} exited (${code}): ${stderr.trim()}`)));
    });
  }

  [Symbol.dispose](): void {
    for (const c of this.children) c.kill('SIGKILL');
    this.server.close();
  }
}
