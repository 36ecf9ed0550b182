/**
 * One `calico-felix` (built by build.sh) in a node's network namespace, in Kubernetes-datastore
 * mode against the test API server (reached through an `ApiBridge`), programming iptables,
 * ip6tables and IP sets there. Settings are environment variables, as calico-node passes them:
 * the node's name, the iptables backend Tessera's side uses, IPv6 on, no BPF, no health or usage
 * reporting, log to stderr at info (kept in `logPath`; Felix's own messages say why it did
 * something), no syslog; `DefaultEndpointToHostAction` the differential's
 * (e2e/differential/fixture.ts ENDPOINT_TO_HOST_ACTION, which Tessera's agents are given too); the
 * failsafe ports Felix's defaults (FailsafeInboundHostPorts tcp:22, udp:68, tcp:179, tcp:2379,
 * tcp:2380, tcp:5473, tcp:6443, tcp:6666, tcp:6667; outbound udp:53, udp:67 and the same TCP
 * ports), as Tessera's agent defaults them: not set, so a change of either default shows.
 *
 * `start` resolves when Felix has programmed its first in-sync state ("Completed first update
 * to dataplane"); a Felix that exits before that rejects with the tail of its log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';

import { ENDPOINT_TO_HOST_ACTION } from '../differential/fixture.ts';

export interface FelixProcessOptions {
  readonly binary: string;
  readonly netns: string;
  readonly nodeName: string;
  readonly kubeconfigPath: string;
  readonly logPath: string;
  readonly backend: 'nft' | 'legacy';
  /** @default 120_000 */
  readonly startTimeoutMs?: number;
}

const FIRST_APPLY = 'Completed first update to dataplane';

/** Felix's calc-graph validation filter: an object its v3 validator refuses becomes "missing". */
const VALIDATION_FAILED = 'Validation failed; treating as missing';

export class FelixProcess implements AsyncDisposable {
  private refusals: string[] = [];
  private partial = '';

  private constructor(
    private readonly child: ChildProcess,
    readonly logPath: string,
  ) {
    const scan = (b: Buffer): void => {
      const lines = (this.partial + b.toString()).split('\n');
      this.partial = lines.pop() ?? '';
      for (const line of lines) if (line.includes(VALIDATION_FAILED)) this.refusals.push(line);
    };
    child.stdout!.on('data', scan);
    child.stderr!.on('data', scan);
  }

  /**
   * The log lines since the last call in which Felix's validation filter refused an object
   * (felix/calc/validation_filter.go: it then treats the object as deleted). Calico's write path
   * (clientv3's validator) would have refused it at the API; the harness writes CRDs directly,
   * so this is where such an object shows.
   */
  takeRefusals(): string[] {
    const out = this.refusals;
    this.refusals = [];
    return out;
  }

  static async start(o: FelixProcessOptions): Promise<FelixProcess> {
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      KUBECONFIG: o.kubeconfigPath,
      FELIX_DATASTORETYPE: 'kubernetes',
      FELIX_FELIXHOSTNAME: o.nodeName,
      FELIX_IPTABLESBACKEND: o.backend === 'legacy' ? 'Legacy' : 'NFT',
      FELIX_BPFENABLED: 'false',
      FELIX_IPV6SUPPORT: 'true',
      FELIX_HEALTHENABLED: 'false',
      FELIX_USAGEREPORTINGENABLED: 'false',
      FELIX_DEFAULTENDPOINTTOHOSTACTION: ENDPOINT_TO_HOST_ACTION,
      FELIX_LOGSEVERITYSYS: 'none',
      FELIX_LOGFILEPATH: 'none',
      FELIX_LOGSEVERITYSCREEN: 'info',
    };
    const child = spawn('ip', ['netns', 'exec', o.netns, o.binary], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(o.logPath);
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    const felix = new FelixProcess(child, o.logPath);
    const timeoutMs = o.startTimeoutMs ?? 120_000;
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => fail(new Error(`calico-felix on ${o.nodeName}: no "${FIRST_APPLY}" within ${timeoutMs} ms (log: ${o.logPath})`)), timeoutMs);
      const onData = (b: Buffer): void => {
        const text = seen + b.toString();
        // Keep a tail as long as the phrase, so one split across chunks is found too.
        seen = text.slice(-FIRST_APPLY.length);
        if (!text.includes(FIRST_APPLY)) return;
        done();
        resolve();
      };
      const onExit = (code: number | null): void => fail(new Error(`calico-felix on ${o.nodeName} exited (${code}) before its first dataplane update; log ${o.logPath}:\n${tail(o.logPath)}`));
      const done = (): void => {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
      };
      const fail = (e: Error): void => {
        done();
        child.kill('SIGKILL');
        reject(e);
      };
      child.stderr!.on('data', onData);
      child.stdout!.on('data', onData);
      child.once('exit', onExit);
    });
    return felix;
  }

  /** The last `lines` lines Felix logged. */
  logTail(lines: number): string {
    return tail(this.logPath, lines);
  }

  /** Whether Felix still runs (a crash mid-run makes every later verdict meaningless). */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.running) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
