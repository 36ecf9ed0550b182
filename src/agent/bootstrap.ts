/**
 * The agent's start-up on its node, before any informer or calc graph exists (Felix's
 * daemon start: its preflight, `iptables.DetectBackend`, and the checks around them):
 *
 * 1. the iptables backend to program: the one the node already uses (`auto`, Felix's
 *    detection: dataplane/iptables/iptables-backend.ts), or the one asked for;
 * 2. preflight: the tools exist and may touch the kernel (preflight.ts);
 * 3. the node claim: the `cali-` chains and IP sets are Tessera's or nobody's, never Felix's
 *    (dataplane/iptables/ownership.ts), and the ownership mark is written before anything else;
 * 4. the IP families: as given, else those of the node's global addresses (ip-versions.ts);
 * 5. the drop log: its NFLOG/hashlimit rule is tried once per family (dataplane/iptables/drop-log-probe.ts);
 *    where the kernel refuses it the agent runs without it rather than have every endpoint
 *    chain rejected into its fail-closed stand-in.
 *
 * Guarantees:
 * - nothing is written to the kernel before preflight passed, and nothing but the ownership
 *   mark and the probe's scratch chain (removed again) before `bootstrapNode` returns;
 * - a refusal is one logged line naming the reason (`refusing to start: …`), returned as a
 *   `BootstrapRefusal` the caller turns into its exit status — never a throw;
 * - every decision (backend and why, families and how they were found, a stale backend, the
 *   drop log turned off) is logged once, with the node's name, on the logger given (the
 *   process's root logger: these lines carry no component).
 */
import { probeDropLog } from '../dataplane/iptables/drop-log-probe.ts';
import { resolveIptablesBackend, type IptablesBackendMode } from '../dataplane/iptables/iptables-backend.ts';
import { claimNode } from '../dataplane/iptables/ownership.ts';
import type { CommandRunner, DropLogOptions, IptablesBackend } from '../dataplane/index.ts';
import type { Logger } from '../runtime/logger.ts';
import { detectIpVersions, type IpVersion, type IpVersionChoice } from './ip-versions.ts';
import { preflight } from './preflight.ts';

export interface BootstrapOptions {
  readonly nodeName: string;
  /** The network namespace `runner` works in; only named in the log. @default undefined: the host's */
  readonly netns?: string;
  readonly runner: CommandRunner;
  /** `auto`: the backend the node's Kubernetes components use. */
  readonly iptablesBackend: IptablesBackendMode;
  /** @default undefined: detected from the node's global-scope addresses */
  readonly ipVersions?: readonly IpVersion[];
  /** Only named in the log line that announces the families. @default ['cali'] */
  readonly interfacePrefixes?: readonly string[];
  /** The drop log asked for. @default undefined: none (nothing probed) */
  readonly dropLog?: DropLogOptions;
  readonly logger: Logger;
}

/** Why the agent must not start: `cannot-program` (tools missing, no NET_ADMIN, mark not writable) or `foreign-dataplane` (Felix's chains or sets). */
export type BootstrapRefusal = 'cannot-program' | 'foreign-dataplane';

/** What the agent programs, once the node is claimed. */
export interface NodeSetup {
  readonly iptablesBackend: IptablesBackend;
  readonly ipVersions: readonly IpVersion[];
  /** The drop log asked for, or undefined when none was or the kernel does not take its rule. */
  readonly dropLog: DropLogOptions | undefined;
}

export type BootstrapResult = { readonly ok: true; readonly setup: NodeSetup } | { readonly ok: false; readonly refusal: BootstrapRefusal };

const CANNOT_PROGRAM = 'refusing to start: cannot program the dataplane';

/** Steps 1–5 of the module comment, in that order. */
export async function bootstrapNode(opts: BootstrapOptions): Promise<BootstrapResult> {
  const { nodeName, netns, runner, logger: log } = opts;
  // Logged only once the tools are known to work: a host that cannot be programmed gets one line.
  const backend = await resolveIptablesBackend(opts.iptablesBackend, runner);
  const refused = await preflight(runner, backend.backend);
  if (refused !== undefined) {
    log.error({ nodeName, netns, iptablesBackend: backend.backend, reason: refused }, CANNOT_PROGRAM);
    return { ok: false, refusal: 'cannot-program' };
  }
  const backendLog = { nodeName, iptablesBackend: backend.backend, mode: backend.mode, reason: backend.reason, evidence: backend.evidence };
  log.info(backendLog, `programming iptables-${backend.backend}`);
  if (backend.detected !== backend.backend) log.warn({ ...backendLog, detected: backend.detected }, `the node's rules are in iptables-${backend.detected}: two rulesets will see every packet`);

  let claim;
  try {
    claim = await claimNode(runner, backend.backend);
  } catch (err) {
    log.error({ nodeName, netns, iptablesBackend: backend.backend, reason: (err as Error).message }, CANNOT_PROGRAM);
    return { ok: false, refusal: 'cannot-program' };
  }
  if (!claim.claimed) {
    const reason = `${claim.ownership.reasons.join('; ')}. Remove the other dataplane (or run tessera cleanup --force) first`;
    log.error({ nodeName, netns, reason }, "refusing to start: this node's cali- chains or IP sets belong to another Calico dataplane (Felix), not Tessera");
    return { ok: false, refusal: 'foreign-dataplane' };
  }
  for (const stale of claim.ownership.markedBackends.filter((b) => b !== backend.backend)) {
    log.warn({ nodeName, stale }, `Tessera's rules from an earlier run are still in iptables-${stale}; remove them with tessera cleanup --iptables-backend ${stale}`);
  }

  const families: IpVersionChoice = opts.ipVersions !== undefined ? { ipVersions: opts.ipVersions, source: 'flag' } : await detectIpVersions(runner);
  const familyLog = { nodeName, ...families, interfacePrefixes: opts.interfacePrefixes ?? ['cali'] };
  if (families.source === 'fallback') log.warn(familyLog, `programming IPv4 only: could not detect the node's IP families (set --ip-versions)`);
  else log.info(familyLog, `programming IPv${families.ipVersions.join(' and IPv')}`);

  const dropLog = opts.dropLog === undefined ? undefined : await probedDropLog(runner, backend.backend, families.ipVersions, opts.dropLog, nodeName, log);
  return { ok: true, setup: { iptablesBackend: backend.backend, ipVersions: families.ipVersions, dropLog } };
}

/** `dropLog` when every family's kernel takes its rule; else undefined, said once. */
async function probedDropLog(runner: CommandRunner, backend: IptablesBackend, ipVersions: readonly IpVersion[], dropLog: DropLogOptions, nodeName: string, log: Logger): Promise<DropLogOptions | undefined> {
  for (const v of ipVersions) {
    const err = await probeDropLog(runner, backend, v, dropLog);
    if (err === undefined) continue;
    log.warn({ nodeName, ipVersion: v, err }, "the kernel or iptables does not take the drop log's NFLOG/hashlimit rule: running without the drop log and the denied-flow log (enforcement is unaffected)");
    return undefined;
  }
  return dropLog;
}
