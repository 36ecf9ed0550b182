/**
 * The denied-flow log: one JSON object per denied flow — its 5-tuple, both endpoints'
 * namespace and pod, and the tier / policy or profile / rule (or end of tier, or "no profile
 * matched") that dropped it — read from the NFLOG group the renderer's drop rules log to
 * (drop-log.ts) through `tcpdump -i nflog:<group> -w -` (a maintained reader of the kernel's
 * `nfnetlink_log`; Node has no netlink sockets).
 *
 * Guarantees:
 * - enforcement never depends on this reader: the NFLOG rules come before the drops and never
 *   end a packet's walk, and the kernel discards log messages nobody reads. The reader dying
 *   (or tcpdump missing) costs log lines, never a verdict; it is restarted with backoff and
 *   `tessera_denied_flow_log_reader_up` shows it;
 * - one line per flow: packets of a flow (5-tuple and deciding rule) seen again within
 *   `dedupWindowMs` of its line are counted, not logged (a TCP SYN and its retransmissions
 *   are one line). The kernel's shared rate limit (`DropLogOptions`) bounds the rest;
 * - attribution is resolved against the rules the agent holds now (`resolveFromTables`); a
 *   packet logged by a drop rule that has since moved or changed (the prefix's digest covers
 *   the rule) is counted `unattributed`, never blamed on whatever rule sits there now.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Counter, Gauge } from 'prom-client';
import { Backoff } from '../runtime/backoff.ts';
import { realClock, sleep, type Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { getOrCreate, type Registry } from '../runtime/metrics.ts';
import { DEFAULT_DROP_LOG_GROUP, parseDropLogPrefix } from '../dataplane/drop-log.ts';
import { chainDirection } from '../dataplane/chain-names.ts';
import { KNP_NAME_PREFIX } from '../api/names.ts';
import type { Table } from '../dataplane/table.ts';
import type { EndpointIdentity } from './endpoint-lookup.ts';
import { NflogPcapParser, type NflogRecord } from './nflog-pcap.ts';
import { parsePacket } from './packet-header.ts';

/** What dropped a packet, resolved from its NFLOG prefix. */
export interface DropAttribution {
  readonly direction: 'ingress' | 'egress';
  readonly decision: 'rule' | 'end-of-tier' | 'no-profile-matched';
  readonly tier?: string;
  readonly policy?: { readonly kind: string; readonly namespace?: string; readonly name: string };
  readonly profile?: string;
  /** The rule's index in the policy's or profile's rules of `direction`. */
  readonly rule?: number;
  /** `<namespace>/<name>` of the Kubernetes NetworkPolicy a `knp.default.` policy was converted from. */
  readonly kubernetesNetworkPolicy?: string;
  /** End of tier: the tier's policies that select the endpoint in this direction (the ones isolating it). */
  readonly isolatedBy?: ReadonlyArray<{ readonly kind: string; readonly namespace?: string; readonly name: string; readonly kubernetesNetworkPolicy?: string }>;
}

/** What dropped a packet its NFLOG prefix names, in the rules held now; undefined when they no longer hold that drop. */
export type DropResolver = (ipVersion: 4 | 6, prefix: string) => DropAttribution | undefined;

/** One line of the log. */
export interface DeniedFlow extends DropAttribution {
  readonly timestamp: string;
  /** The Kubernetes node (the agent's `--node`; not `node`, which the log line's base gives the host name). */
  readonly nodeName: string;
  readonly ipVersion: 4 | 6;
  readonly protocol: string;
  readonly srcIp: string;
  readonly srcPort?: number;
  readonly dstIp: string;
  readonly dstPort?: number;
  readonly icmpType?: number;
  readonly src?: EndpointIdentity;
  readonly dst?: EndpointIdentity;
  readonly action: 'deny';
}

export interface DeniedFlowLogOptions {
  readonly nodeName: string;
  readonly resolve: DropResolver;
  readonly endpoint: (ip: string) => EndpointIdentity | undefined;
  readonly sink: (flow: DeniedFlow) => void;
  /** Run tcpdump behind this (`['ip', 'netns', 'exec', '<ns>']` for a node namespace). @default [] */
  readonly commandPrefix?: readonly string[];
  /** @default 'tcpdump' */
  readonly tcpdump?: string;
  /** @default DEFAULT_DROP_LOG_GROUP (100) */
  readonly group?: number;
  /** @default 10_000 */
  readonly dedupWindowMs?: number;
  /** Flows remembered for de-duplication (oldest forgotten first). @default 10_000 */
  readonly maxFlows?: number;
  /** @default realClock */
  readonly clock?: Clock;
  readonly logger: Logger;
  readonly registry?: Registry;
}


/** Resolves prefixes against the agent's tables (one per IP family). */
export function resolveFromTables(tables: readonly Table[]): DropResolver {
  return (ipVersion, prefix) => {
    const where = parseDropLogPrefix(prefix);
    if (where === undefined) return undefined;
    const { chain, position } = where;
    // Drop rules (and their log rules) live in the filter table; raw holds only anti-spoofing.
    const table = tables.find((t) => t.ipVersion === ipVersion && t.table === 'filter');
    const found = table?.ruleAt(chain, position);
    const tag = found?.rule.tag;
    if (found === undefined || tag === undefined) return undefined;
    // The log rule right before it must carry this very prefix (its digest covers the drop rule):
    // otherwise the packet was logged by a ruleset that has changed since.
    const log = table!.ruleAt(chain, position - 1)?.rule.action;
    if (log?.type !== 'nflog' || log.prefix !== prefix) return undefined;
    const direction = chainDirection(chain);
    if (direction === undefined) return undefined;
    const owner = found.owner;
    if (tag.kind === 'end-of-tier') return { direction, decision: 'end-of-tier', tier: tag.tier, isolatedBy: tag.policies.map((p) => ({ ...policyRef(p.kind, p.namespace, p.name), ...knpOf(p.kind, p.namespace, p.name) })) };
    if (tag.kind === 'no-profile-matched') return { direction, decision: 'no-profile-matched' };
    if (owner === undefined) return undefined;
    if (owner.kind === 'Profile') return { direction, decision: 'rule', profile: owner.name, rule: tag.index };
    return { direction, decision: 'rule', ...(owner.tier === undefined ? {} : { tier: owner.tier }), policy: policyRef(owner.kind, owner.namespace, owner.name), rule: tag.index, ...knpOf(owner.kind, owner.namespace, owner.name) };
  };
}

function policyRef(kind: string, namespace: string | undefined, name: string): { kind: string; namespace?: string; name: string } {
  return namespace === undefined ? { kind, name } : { kind, namespace, name };
}

/** `{kubernetesNetworkPolicy: '<ns>/<name>'}` for a policy the controllers converted from one. */
function knpOf(kind: string, namespace: string | undefined, name: string): { kubernetesNetworkPolicy?: string } {
  return kind === 'NetworkPolicy' && name.startsWith(KNP_NAME_PREFIX) ? { kubernetesNetworkPolicy: `${namespace ?? ''}/${name.slice(KNP_NAME_PREFIX.length)}` } : {};
}

export class DeniedFlowLog {
  readonly #opts: DeniedFlowLogOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #window: number;
  readonly #maxFlows: number;
  /** Flow key → when its line was written (insertion order = age). */
  readonly #seen = new Map<string, number>();
  readonly #packets: Counter<'result'> | undefined;
  readonly #up: Gauge | undefined;
  readonly #restarts: Counter | undefined;
  #child: ChildProcess | undefined;
  #missingReported = false;

  constructor(opts: DeniedFlowLogOptions) {
    this.#opts = opts;
    this.#log = opts.logger.child({ component: 'denied-flow-log' });
    this.#clock = opts.clock ?? realClock;
    this.#window = opts.dedupWindowMs ?? 10_000;
    this.#maxFlows = opts.maxFlows ?? 10_000;
    const registry = opts.registry;
    if (registry !== undefined) {
      this.#packets = getOrCreate(registry, 'tessera_denied_flow_log_packets_total', () => new Counter({ name: 'tessera_denied_flow_log_packets_total', help: 'Logged drops read from NFLOG, by result: logged (a new flow\'s line), duplicate (a flow already logged within the window), unattributed (no current rule at the logged position).', labelNames: ['result'], registers: [registry] }));
      this.#up = getOrCreate(registry, 'tessera_denied_flow_log_reader_up', () => new Gauge({ name: 'tessera_denied_flow_log_reader_up', help: '1 while the NFLOG reader (tcpdump) runs.', registers: [registry] }));
      this.#restarts = getOrCreate(registry, 'tessera_denied_flow_log_reader_restarts_total', () => new Counter({ name: 'tessera_denied_flow_log_reader_restarts_total', help: 'Times the NFLOG reader ended and was started again.', registers: [registry] }));
    }
  }

  /** The running reader's process id (tests kill it to show verdicts do not change). */
  get readerPid(): number | undefined {
    return this.#child?.pid;
  }

  /** Reads until `signal` aborts, restarting the reader with backoff when it ends. */
  async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.#clock, { initialMs: 1_000, maxMs: 30_000, jitter: 0 });
    while (!signal.aborted) {
      const started = this.#clock.now();
      const outcome = await this.#readOnce(signal);
      if (signal.aborted) break;
      this.#restarts?.inc();
      if (this.#clock.now() - started > 60_000) backoff.reset();
      const delay = backoff.next();
      const missing = /ENOENT|exec of .* failed: No such file or directory/.test(outcome.err ?? '');
      if (!missing) this.#log.warn({ ...outcome, retryInMs: delay }, 'NFLOG reader ended; denied flows are not logged until it restarts (enforcement is unaffected)');
      else if (!this.#missingReported) this.#log.error({ ...outcome, retryInMs: delay }, 'tcpdump is not installed: denied flows are not logged (enforcement is unaffected); install tcpdump or run with --denied-flows off');
      if (missing) this.#missingReported = true;
      await sleep(this.#clock, delay, signal).catch(() => undefined);
    }
  }

  #readOnce(signal: AbortSignal): Promise<{ code: number | null; err?: string }> {
    const group = this.#opts.group ?? DEFAULT_DROP_LOG_GROUP;
    const argv = [...(this.#opts.commandPrefix ?? []), this.#opts.tcpdump ?? 'tcpdump', '-i', `nflog:${group}`, '-U', '-w', '-', '--immediate-mode', '-s', '0'];
    return new Promise((resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
      this.#child = child;
      const parser = new NflogPcapParser();
      let stderr = '';
      let failed: string | undefined;
      const onAbort = (): void => {
        child.kill('SIGTERM');
        // tcpdump ends on SIGTERM; one that does not must not hold the agent's shutdown.
        setTimeout(() => child.kill('SIGKILL'), 2_000).unref();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      child.stdout!.on('data', (chunk: Buffer) => {
        if (failed !== undefined) return;
        try {
          for (const rec of parser.push(chunk)) this.handle(rec);
        } catch (e) {
          failed = (e as Error).message;
          child.kill('SIGKILL');
        }
      });
      child.stderr!.on('data', (b: Buffer) => {
        stderr = (stderr + b.toString()).slice(-2_000);
        if (stderr.includes('listening on')) this.#up?.set(1);
      });
      child.on('error', (e) => {
        failed = e.message;
      });
      child.on('close', (code) => {
        signal.removeEventListener('abort', onAbort);
        this.#up?.set(0);
        this.#child = undefined;
        const err = failed ?? stderr.trim().split('\n').filter((l) => !/listening on|packets (captured|received|dropped)/.test(l)).join('; ');
        resolve(err === '' ? { code } : { code, err });
      });
    });
  }

  /** One logged packet: attributes it and writes its flow's line unless written within the window. */
  handle(rec: NflogRecord): void {
    const flow = parsePacket(rec.payload);
    const attribution = flow === undefined ? undefined : this.#opts.resolve(flow.ipVersion, rec.prefix);
    if (flow === undefined || attribution === undefined) {
      this.#packets?.inc({ result: 'unattributed' });
      return;
    }
    const now = this.#clock.now();
    const key = `${flow.protocol}|${flow.srcIp}|${flow.srcPort ?? flow.icmpType ?? ''}|${flow.dstIp}|${flow.dstPort ?? ''}|${rec.prefix}`;
    this.#expire(now);
    const at = this.#seen.get(key);
    if (at !== undefined && now - at < this.#window) {
      this.#packets?.inc({ result: 'duplicate' });
      return;
    }
    this.#seen.delete(key);
    this.#seen.set(key, now);
    if (this.#seen.size > this.#maxFlows) this.#seen.delete(this.#seen.keys().next().value!);
    this.#packets?.inc({ result: 'logged' });
    const src = this.#opts.endpoint(flow.srcIp);
    const dst = this.#opts.endpoint(flow.dstIp);
    this.#opts.sink({
      timestamp: new Date(rec.timeMs).toISOString(),
      nodeName: this.#opts.nodeName,
      ipVersion: flow.ipVersion,
      protocol: flow.protocol,
      srcIp: flow.srcIp,
      ...(flow.srcPort === undefined ? {} : { srcPort: flow.srcPort }),
      dstIp: flow.dstIp,
      ...(flow.dstPort === undefined ? {} : { dstPort: flow.dstPort }),
      ...(flow.icmpType === undefined ? {} : { icmpType: flow.icmpType }),
      ...(src === undefined ? {} : { src }),
      ...(dst === undefined ? {} : { dst }),
      ...attribution,
      action: 'deny',
    });
  }

  /** Forgets flows whose window has passed (the map is in age order). */
  #expire(now: number): void {
    for (const [key, at] of this.#seen) {
      if (now - at < this.#window) break;
      this.#seen.delete(key);
    }
  }
}
