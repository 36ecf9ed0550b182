/**
 * `tessera agent --node <name>`: the per-node agent (src/agent/agent.ts) as a process —
 * JSON logs on stdout, /metrics (informer, calc and dataplane metrics on one registry),
 * /livez (503 naming any main loop stuck past its liveness timeout), /readyz (ready = the first
 * in-sync apply is done and applies are not failing), graceful shutdown on SIGTERM/SIGINT that
 * leaves the kernel's rules in place. `--netns <name>` programs inside a network namespace
 * (tests). Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else in-cluster.
 *
 * Before starting it checks that iptables-restore/save and ipset exist and that it may use
 * them (NET_ADMIN); otherwise it logs why and exits 3 without a stack trace. It programs the
 * iptables backend the node already uses (`--iptables-backend auto`, Felix's detection:
 * dataplane/iptables-backend.ts), and refuses — one logged reason, exit 4 — when the node's
 * `cali-` chains or IP sets were not written by Tessera (Felix's: dataplane/ownership.ts).
 */
import { UsageError, walkArgs } from './args.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics } from 'prom-client';

import { readFileSync } from 'node:fs';

import { startAgent, type AgentOptions, type AgentTyphaOptions } from '../agent/agent.ts';
import { detectIpVersions, parseIpVersions, type IpVersion, type IpVersionChoice } from '../agent/ip-versions.ts';
import { isValidInterfaceName } from '../dataplane/rule-renderer.ts';
import { IPTABLES_BACKEND_MODES, resolveIptablesBackend, type IptablesBackendMode } from '../dataplane/iptables/iptables-backend.ts';
import type { IptablesBackend } from '../dataplane/iptables/iptables-table.ts';
import { claimNode } from '../dataplane/iptables/ownership.ts';
import { probeDropLog } from '../dataplane/iptables/drop-log-probe.ts';
import { EXIT_CANNOT_PROGRAM, EXIT_FOREIGN_DATAPLANE } from './node-exit-status.ts';
import { HealthServer } from '../runtime/health-server.ts';
import { NetnsCommandRunner, RealCommandRunner, DEFAULT_DROP_LOG_BURST, DEFAULT_DROP_LOG_GROUP, DEFAULT_DROP_LOG_RATE, DROP_LOG_RATE_PATTERN, type CommandRunner } from '../dataplane/index.ts';
import { createRootLogger, type Logger } from '../runtime/logger.ts';
import { endpointSliceLister, readyServiceAddresses } from '../typha/service-endpoints.ts';
import { parseTyphaAddress } from '../typha/sync-client.ts';
import { newRegistry } from '../runtime/metrics.ts';

const USAGE = `usage: tessera agent [options]

  --node <name>                this node's name (default: $NODE_NAME)
  --netns <name>               program iptables/ipsets inside this network namespace (tests)
  --kubeconfig <file>          kubeconfig to use (default: $KUBECONFIG, else in-cluster)
  --metrics-port <n>           port for /metrics, /livez, /readyz and /rules (the kernel's
                               counters of every deciding rule, JSON) (default 9095; 0 picks one)
  --metrics-host <addr>        address to listen on (default 0.0.0.0)
  --iptables-refresh <seconds> full iptables read-back period (default 180, Felix's)
  --ipsets-refresh <seconds>   full ipset read-back period (default 90, Felix's)
  --liveness-timeout <seconds> /livez fails (503, naming the loop) when an apply runs, or a
                               calc-graph batch waits, longer than this (default: Felix's,
                               90 for the dataplane and 30 for the calc graph); informers
                               have their own bound (watch timeout + slack)
  --ip-versions <4|6|4,6>      IP families to program (default: those of the node's
                               global-scope addresses, \`ip -j addr show scope global\`)
  --interface-prefix <p,...>   host-side names of workload interfaces, Felix's
                               InterfacePrefix (default cali; e.g. cali,veth for kindnet/ptp)
  --iptables-backend <mode>    auto (default: the backend kubelet/kube-proxy use, as Felix
                               detects it), nft or legacy
  --typha <host:port,...>      take updates from these Typhas instead of watching the API
                               server (Felix's TyphaAddr); tried in random order
  --typha-service <ns/name>    the same, the Typhas being the ready endpoints of this Service
                               (its port named tessera-typha; Felix's TyphaK8sServiceName)
  --typha-ca-file <file>       with --typha-cert-file and --typha-key-file: mutual TLS to Typha
  --typha-cert-file <file>     (PEM); the server's certificate must chain to the CA and carry
  --typha-key-file <file>      --typha-server-name (default: the address's host)
  --typha-server-name <name>
  --drop-log <on|off>          log every policy drop to NFLOG before it happens, with the
                               deciding chain and rule in the prefix (default on)
  --drop-log-group <n>         NFLOG group (default 100)
  --drop-log-rate <N/unit>     logged packets per node and IP family, Felix's
                               LogActionRateLimit form: N/second|minute|hour|day (default 10/second)
  --drop-log-burst <n>         packets logged at once before the rate applies (default 5)
  --denied-flows <log|off>     read the drop log (tcpdump -i nflog:<group>) and log one JSON
                               line per denied flow, component denied-flows: 5-tuple, both
                               pods, tier/policy/rule (default log; needs tcpdump; its
                               absence or death never changes a verdict)

exit status: 1 failed, 2 usage, 3 cannot program iptables/ipset, 4 another dataplane
             (Felix) owns this node's cali- chains or IP sets
`;

/** Exit status when the host cannot be programmed (missing tools or no NET_ADMIN). */
export const EXIT_REFUSED = EXIT_CANNOT_PROGRAM;


export interface AgentCliOptions {
  node: string | undefined;
  netns: string | undefined;
  kubeconfig: string | undefined;
  metricsPort: number;
  metricsHost: string;
  iptablesRefreshSeconds: number | undefined;
  ipsetsRefreshSeconds: number | undefined;
  /** undefined: Felix's per-component timeouts (agent.ts). */
  livenessTimeoutSeconds: number | undefined;
  /** undefined: detect (ip-versions.ts). */
  ipVersions: IpVersion[] | undefined;
  /** undefined: the driver's default (`cali`). */
  interfacePrefixes: string[] | undefined;
  iptablesBackend: IptablesBackendMode;
  /** `host:port` list; exclusive with `typhaService`. */
  typha: string[] | undefined;
  typhaService: { namespace: string; name: string } | undefined;
  typhaTls: { caFile?: string; certFile?: string; keyFile?: string; serverName?: string };
  dropLog: boolean;
  dropLogGroup: number;
  dropLogRate: string;
  dropLogBurst: number;
  deniedFlows: boolean;
}

/**
 * `cali,veth` → ['cali', 'veth']. Each prefix must leave room for at least one more character
 * of a valid interface name (Felix `InterfacePrefix` is matched as `-i <prefix>+`).
 */
export function parseInterfacePrefixes(text: string): string[] {
  const prefixes = text.split(',').map((p) => p.trim());
  for (const p of prefixes) {
    if (p === '' || !isValidInterfaceName(`${p}0`)) {
      throw new UsageError(`--interface-prefix ${JSON.stringify(text)}: ${JSON.stringify(p)} is not an interface name prefix (1-14 of alphanumerics, '_', '.' and '-')`);
    }
  }
  return [...new Set(prefixes)];
}

function onOff(flag: string, v: string, on: string, off: string): boolean {
  if (v === on) return true;
  if (v === off) return false;
  throw new UsageError(`${flag} must be ${on} or ${off}, not ${JSON.stringify(v)}`);
}

export function parseAgentArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): (AgentCliOptions & { node: string }) | 'help' {
  const o: AgentCliOptions = {
    node: env['NODE_NAME'] || undefined,
    netns: undefined,
    kubeconfig: env['KUBECONFIG'] || undefined,
    metricsPort: 9095,
    metricsHost: '0.0.0.0',
    iptablesRefreshSeconds: undefined,
    ipsetsRefreshSeconds: undefined,
    livenessTimeoutSeconds: undefined,
    ipVersions: undefined,
    interfacePrefixes: undefined,
    iptablesBackend: 'auto',
    typha: undefined,
    typhaService: undefined,
    typhaTls: {},
    dropLog: true,
    dropLogGroup: DEFAULT_DROP_LOG_GROUP,
    dropLogRate: DEFAULT_DROP_LOG_RATE,
    dropLogBurst: DEFAULT_DROP_LOG_BURST,
    deniedFlows: true,
  };
  const help = walkArgs(argv, (a) => {
    switch (a.flag) {
      case '--node':
        o.node = a.value();
        break;
      case '--netns':
        o.netns = a.value();
        break;
      case '--kubeconfig':
        o.kubeconfig = a.value();
        break;
      case '--metrics-port':
        o.metricsPort = a.int(0);
        break;
      case '--metrics-host':
        o.metricsHost = a.value();
        break;
      case '--iptables-refresh':
        o.iptablesRefreshSeconds = a.int(1);
        break;
      case '--ipsets-refresh':
        o.ipsetsRefreshSeconds = a.int(1);
        break;
      case '--liveness-timeout':
        o.livenessTimeoutSeconds = a.int(1);
        break;
      case '--ip-versions': {
        const v = a.value();
        try {
          o.ipVersions = parseIpVersions(v);
        } catch (err) {
          throw new UsageError(`--ip-versions: ${(err as Error).message}`);
        }
        break;
      }
      case '--interface-prefix':
        o.interfacePrefixes = parseInterfacePrefixes(a.value());
        break;
      case '--typha': {
        const text = a.value();
        const addresses = text.split(',').map((x) => x.trim());
        for (const address of addresses) {
          try {
            parseTyphaAddress(address);
          } catch (err) {
            throw new UsageError(`--typha ${JSON.stringify(text)}: ${(err as Error).message}`);
          }
        }
        o.typha = addresses;
        break;
      }
      case '--typha-service': {
        const text = a.value();
        const [namespace, name, extra] = text.split('/');
        if (namespace === undefined || namespace === '' || name === undefined || name === '' || extra !== undefined) {
          throw new UsageError(`--typha-service must be <namespace>/<name>, not ${JSON.stringify(text)}`);
        }
        o.typhaService = { namespace, name };
        break;
      }
      case '--typha-ca-file':
        o.typhaTls.caFile = a.value();
        break;
      case '--typha-cert-file':
        o.typhaTls.certFile = a.value();
        break;
      case '--typha-key-file':
        o.typhaTls.keyFile = a.value();
        break;
      case '--typha-server-name':
        o.typhaTls.serverName = a.value();
        break;
      case '--drop-log':
        o.dropLog = onOff(a.flag, a.value(), 'on', 'off');
        break;
      case '--drop-log-group':
        o.dropLogGroup = a.int(0, 65535);
        break;
      case '--drop-log-rate': {
        const v = a.value();
        if (!DROP_LOG_RATE_PATTERN.test(v)) throw new UsageError(`--drop-log-rate must be N/second, N/minute, N/hour or N/day, not ${JSON.stringify(v)}`);
        o.dropLogRate = v;
        break;
      }
      case '--drop-log-burst':
        o.dropLogBurst = a.int(1, 10_000);
        break;
      case '--denied-flows':
        o.deniedFlows = onOff(a.flag, a.value(), 'log', 'off');
        break;
      case '--iptables-backend': {
        const v = a.value();
        if (!(IPTABLES_BACKEND_MODES as readonly string[]).includes(v)) throw new UsageError(`--iptables-backend must be auto, nft or legacy, not ${JSON.stringify(v)}`);
        o.iptablesBackend = v as IptablesBackendMode;
        break;
      }
      default:
        throw a.unknown();
    }
  });
  if (help === 'help') return 'help';
  if (o.typha !== undefined && o.typhaService !== undefined) throw new UsageError('--typha and --typha-service are exclusive: name the Typhas or their Service');
  const { caFile, certFile, keyFile, serverName } = o.typhaTls;
  const tlsFiles = [caFile, certFile, keyFile].filter((f) => f !== undefined).length;
  if (tlsFiles !== 0 && tlsFiles !== 3) throw new UsageError('--typha-ca-file, --typha-cert-file and --typha-key-file go together (mutual TLS)');
  if ((tlsFiles !== 0 || serverName !== undefined) && o.typha === undefined && o.typhaService === undefined) {
    throw new UsageError('the --typha-* TLS options need --typha or --typha-service');
  }
  if (serverName !== undefined && tlsFiles === 0) throw new UsageError('--typha-server-name needs the TLS files');
  const node = o.node;
  if (node === undefined || node === '') throw new UsageError('--node (or $NODE_NAME) is required');
  return { ...o, node };
}

/**
 * Why this host cannot be programmed with `backend`, or undefined when it can: each tool must
 * exist and `ipset list -n` / `iptables-<backend>-save -t filter` must succeed (they need
 * NET_ADMIN).
 */
export async function preflight(runner: CommandRunner, backend: IptablesBackend = 'nft'): Promise<string | undefined> {
  const checks: Array<[string, string[]]> = [
    [`iptables-${backend}-restore`, ['--version']],
    [`iptables-${backend}-save`, ['-t', 'filter']],
    ['ipset', ['list', '-n']],
  ];
  for (const [cmd, args] of checks) {
    const r = await runner.run(cmd, args, { timeoutMs: 10_000 });
    if (r.code === 127 || /ENOENT|not found|No such file/i.test(r.stderr) && r.code !== 0) {
      return `${cmd} is not installed (or not on PATH): install iptables and ipset`;
    }
    if (r.code !== 0) {
      const why = r.stderr.trim().split('\n')[0] ?? '';
      return `${cmd} ${args.join(' ')} failed (exit ${r.code}): ${why} — the agent needs root or CAP_NET_ADMIN`;
    }
  }
  return undefined;
}

/** The agent's Typha connection from its flags; throws (naming the file) when a TLS file cannot be read. */
function typhaOptions(opts: AgentCliOptions, kubeConfig: KubeConfig): AgentTyphaOptions | undefined {
  const { typha: list, typhaService: service, typhaTls: t } = opts;
  if (list === undefined && service === undefined) return undefined;
  const read = (flag: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`${flag} ${file}: ${(err as Error).message}`);
    }
  };
  const tls =
    t.caFile === undefined || t.certFile === undefined || t.keyFile === undefined
      ? undefined
      : {
          ca: read('--typha-ca-file', t.caFile),
          cert: read('--typha-cert-file', t.certFile),
          key: read('--typha-key-file', t.keyFile),
          ...(t.serverName === undefined ? {} : { serverName: t.serverName }),
        };
  let addresses: AgentTyphaOptions['addresses'];
  if (list !== undefined) {
    addresses = () => list;
  } else {
    const api = endpointSliceLister(kubeConfig);
    const { namespace, name } = service!;
    addresses = () => readyServiceAddresses(api, namespace, name);
  }
  return { addresses, ...(tls === undefined ? {} : { tls }) };
}

export async function runAgent(argv: readonly string[], logger?: Logger): Promise<number> {
  let opts;
  try {
    opts = parseAgentArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tessera agent: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = logger ?? createRootLogger();
  let runner: CommandRunner;
  try {
    runner = opts.netns === undefined ? new RealCommandRunner() : new NetnsCommandRunner(opts.netns);
  } catch (err) {
    process.stderr.write(`tessera agent: --netns: ${(err as Error).message}\n`);
    return 2;
  }
  // Logged only once the tools are known to work: a host that cannot be programmed gets one line.
  const backend = await resolveIptablesBackend(opts.iptablesBackend, runner);
  const refused = await preflight(runner, backend.backend);
  if (refused !== undefined) {
    log.error({ nodeName: opts.node, netns: opts.netns, iptablesBackend: backend.backend, reason: refused }, 'refusing to start: cannot program the dataplane');
    log.flush();
    return EXIT_REFUSED;
  }
  const backendLog = { nodeName: opts.node, iptablesBackend: backend.backend, mode: backend.mode, reason: backend.reason, evidence: backend.evidence };
  log.info(backendLog, `programming iptables-${backend.backend}`);
  if (backend.detected !== backend.backend) log.warn({ ...backendLog, detected: backend.detected }, `the node's rules are in iptables-${backend.detected}: two rulesets will see every packet`);
  let claim;
  try {
    claim = await claimNode(runner, backend.backend);
  } catch (err) {
    log.error({ nodeName: opts.node, netns: opts.netns, iptablesBackend: backend.backend, reason: (err as Error).message }, 'refusing to start: cannot program the dataplane');
    log.flush();
    return EXIT_REFUSED;
  }
  if (!claim.claimed) {
    const reason = `${claim.ownership.reasons.join('; ')}. Remove the other dataplane (or run tessera cleanup --force) first`;
    log.error({ nodeName: opts.node, netns: opts.netns, reason }, "refusing to start: this node's cali- chains or IP sets belong to another Calico dataplane (Felix), not Tessera");
    log.flush();
    return EXIT_FOREIGN_DATAPLANE;
  }
  for (const stale of claim.ownership.markedBackends.filter((b) => b !== backend.backend)) {
    log.warn({ nodeName: opts.node, stale }, `Tessera's rules from an earlier run are still in iptables-${stale}; remove them with tessera cleanup --iptables-backend ${stale}`);
  }
  const families: IpVersionChoice = opts.ipVersions !== undefined ? { ipVersions: opts.ipVersions, source: 'flag' } : await detectIpVersions(runner);
  const familyLog = { nodeName: opts.node, ...families, interfacePrefixes: opts.interfacePrefixes ?? ['cali'] };
  if (families.source === 'fallback') log.warn(familyLog, `programming IPv4 only: could not detect the node's IP families (set --ip-versions)`);
  else log.info(familyLog, `programming IPv${families.ipVersions.join(' and IPv')}`);
  if (opts.dropLog) {
    for (const v of families.ipVersions) {
      const err = await probeDropLog(runner, backend.backend, v, { group: opts.dropLogGroup, rate: opts.dropLogRate, burst: opts.dropLogBurst });
      if (err === undefined) continue;
      log.warn({ nodeName: opts.node, ipVersion: v, err }, 'the kernel or iptables does not take the drop log\'s NFLOG/hashlimit rule: running without the drop log and the denied-flow log (enforcement is unaffected)');
      opts = { ...opts, dropLog: false };
      break;
    }
  }
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();
  let typha: AgentTyphaOptions | undefined;
  try {
    typha = typhaOptions(opts, kubeConfig);
  } catch (err) {
    process.stderr.write(`tessera agent: ${(err as Error).message}\n`);
    return 2;
  }
  if (typha !== undefined) log.info({ nodeName: opts.node, typha: opts.typha ?? `service ${opts.typhaService?.namespace}/${opts.typhaService?.name}`, tls: opts.typhaTls.caFile !== undefined }, 'taking updates from Typha');

  const registry = newRegistry();
  collectDefaultMetrics({ register: registry });
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    log.info({ signal: sig }, 'shutting down (rules stay in place)');
    abort.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  const running = startAgent(
    {
      nodeName: opts.node,
      kubeConfig,
      runner,
      registry,
      logger: log,
      ...(opts.iptablesRefreshSeconds === undefined ? {} : { iptablesRefreshIntervalMs: opts.iptablesRefreshSeconds * 1000 }),
      ...(opts.ipsetsRefreshSeconds === undefined ? {} : { ipsetsRefreshIntervalMs: opts.ipsetsRefreshSeconds * 1000 }),
      ...(opts.livenessTimeoutSeconds === undefined ? {} : { livenessTimeoutMs: opts.livenessTimeoutSeconds * 1000 }),
      ipVersions: families.ipVersions,
      iptablesBackend: backend.backend,
      ...(typha === undefined ? {} : { typha }),
      ...(opts.interfacePrefixes === undefined ? {} : { interfacePrefixes: opts.interfacePrefixes }),
      ...dropLogOptions(opts, log),
    },
    abort.signal,
  );
  const health = await HealthServer.listen({ registry, ready: running.ready, live: running.live, port: opts.metricsPort, host: opts.metricsHost, json: { '/rules': running.ruleCounts } });
  log.info({ port: health.port, nodeName: opts.node, netns: opts.netns }, 'serving /metrics, /livez, /readyz, /rules');
  const outcome = await running.done;
  await health.close();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  log.info({ outcome }, 'exiting');
  log.flush();
  return outcome === 'failed' ? 1 : 0;
}

/** The drop log and its reader as the flags ask: lines through the agent's log, component denied-flows. */
function dropLogOptions(opts: AgentCliOptions, log: Logger): Pick<AgentOptions, 'dropLog' | 'deniedFlows'> {
  if (!opts.dropLog) return {};
  const dropLog = { group: opts.dropLogGroup, rate: opts.dropLogRate, burst: opts.dropLogBurst };
  if (!opts.deniedFlows) return { dropLog };
  const flows = log.child({ component: 'denied-flows' });
  return {
    dropLog,
    deniedFlows: {
      sink: (flow) => flows.info({ ...flow }, 'denied flow'),
      ...(opts.netns === undefined ? {} : { commandPrefix: ['ip', 'netns', 'exec', opts.netns] }),
    },
  };
}
