/**
 * `tessera agent --node <name>`: the per-node agent (src/agent/agent.ts) as a process —
 * JSON logs on stdout, /metrics (informer, calc and dataplane metrics on one registry),
 * /livez (503 naming any main loop stuck past its liveness timeout), /readyz (ready = the first
 * in-sync apply is done and applies are not failing), graceful shutdown on SIGTERM/SIGINT that
 * leaves the kernel's rules in place (runtime/daemon.ts). `--netns <name>` programs inside a
 * network namespace (tests). Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else
 * in-cluster.
 *
 * Before starting it checks that iptables-restore/save and ipset exist and that it may use
 * them (NET_ADMIN); otherwise it logs why and exits 3 without a stack trace. It programs the
 * iptables backend the node already uses (`--iptables-backend auto`, Felix's detection), and
 * refuses — one logged reason, exit 4 — when the node's `cali-` chains or IP sets were not
 * written by Tessera (agent/bootstrap.ts). With `--typha`/`--typha-service` its feed is
 * Typha's client instead of its own informers: chosen here, the one layer that knows both.
 */
import { readFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';

import { startAgent, type AgentOptions } from '../agent/agent.ts';
import { bootstrapNode } from '../agent/bootstrap.ts';
import { parseIpVersions, type IpVersion } from '../agent/ip-versions.ts';
import { IPTABLES_BACKEND_MODES, type IptablesBackendMode } from '../dataplane/iptables/iptables-backend.ts';
import {
  isValidInterfaceName,
  NetnsCommandRunner,
  RealCommandRunner,
  DEFAULT_DROP_LOG_BURST,
  DEFAULT_DROP_LOG_GROUP,
  DEFAULT_DROP_LOG_RATE,
  DROP_LOG_RATE_PATTERN,
  DEFAULT_FAILSAFE_INBOUND,
  DEFAULT_FAILSAFE_OUTBOUND,
  type CommandRunner,
  type DropLogOptions,
  type ProtoPort,
} from '../dataplane/index.ts';
import { runDaemon } from '../runtime/daemon.ts';
import { createRootLogger, type Logger } from '../runtime/logger.ts';
import { endpointSliceLister, readyServiceAddresses } from '../typha/service-endpoints.ts';
import { parseTyphaAddress, SyncClient, type SyncClientOptions, type TyphaClientTls } from '../typha/sync-client.ts';
import { choiceFlag, intFlag, oneOf, parseFlags, readCommandLine, readNamespacedName, textFlag, textFlagOr, usage, UsageError, valueFlag } from './args.ts';
import { formatPorts, readFailsafePorts } from './failsafe-flags.ts';
import { EXIT_CANNOT_PROGRAM, EXIT_FOREIGN_DATAPLANE } from './node-exit-status.ts';

/** Exit status when the host cannot be programmed (missing tools or no NET_ADMIN). */
export const EXIT_REFUSED = EXIT_CANNOT_PROGRAM;

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

function readIpVersions(text: string): IpVersion[] {
  try {
    return parseIpVersions(text);
  } catch (err) {
    throw new UsageError(`--ip-versions: ${(err as Error).message}`);
  }
}

function readTyphaAddresses(text: string): string[] {
  const addresses = text.split(',').map((x) => x.trim());
  for (const address of addresses) {
    try {
      parseTyphaAddress(address);
    } catch (err) {
      throw new UsageError(`--typha ${JSON.stringify(text)}: ${(err as Error).message}`);
    }
  }
  return addresses;
}


function readDropLogRate(text: string): string {
  if (!DROP_LOG_RATE_PATTERN.test(text)) throw new UsageError(`--drop-log-rate must be N/second, N/minute, N/hour or N/day, not ${JSON.stringify(text)}`);
  return text;
}

/** The agent's flags: the one declaration its parsing and its usage come from. */
const FLAGS = {
  node: textFlag('--node', '<name>', "this node's name", { env: 'NODE_NAME', defaultText: '$NODE_NAME' }),
  netns: textFlag('--netns', '<name>', 'program iptables/ipsets inside this network namespace (tests)'),
  kubeconfig: textFlag('--kubeconfig', '<file>', 'kubeconfig to use', { env: 'KUBECONFIG', defaultText: '$KUBECONFIG, else in-cluster' }),
  metricsPort: intFlag('--metrics-port', '<n>', "port for /metrics, /livez, /readyz and /rules (the kernel's counters of every deciding rule, JSON)", 9095, { min: 0 }, { defaultText: '9095; 0 picks one' }),
  metricsHost: textFlagOr('--metrics-host', '<addr>', 'address to listen on', '0.0.0.0'),
  iptablesRefreshSeconds: intFlag('--iptables-refresh', '<seconds>', 'full iptables read-back period', undefined, { min: 1 }, { defaultText: "180, Felix's" }),
  ipsetsRefreshSeconds: intFlag('--ipsets-refresh', '<seconds>', 'full ipset read-back period', undefined, { min: 1 }, { defaultText: "90, Felix's" }),
  livenessTimeoutSeconds: intFlag(
    '--liveness-timeout',
    '<seconds>',
    '/livez fails (503, naming the loop) when an apply runs, or a calc-graph batch waits, longer than this; informers have their own bound (watch timeout + slack)',
    undefined,
    { min: 1 },
    { defaultText: "Felix's: 90 for the dataplane and 30 for the calc graph" },
  ),
  ipVersions: valueFlag<IpVersion[] | undefined>('--ip-versions', '<4|6|4,6>', 'IP families to program', undefined, readIpVersions, {
    defaultText: "those of the node's global-scope addresses, `ip -j addr show scope global`",
  }),
  interfacePrefixes: valueFlag<string[] | undefined>('--interface-prefix', '<p,...>', "host-side names of workload interfaces, Felix's InterfacePrefix", undefined, parseInterfacePrefixes, {
    defaultText: 'cali; e.g. cali,veth for kindnet/ptp',
  }),
  failsafeInbound: valueFlag<ProtoPort[]>(
    '--failsafe-inbound-host-ports',
    '<ports>',
    "inbound traffic no HostEndpoint policy blocks, Felix's FailsafeInboundHostPorts syntax: <port>, <proto>:<port> or <proto>:<net>:<port> (IPv6 net in [...]), comma-separated; none for no failsafe",
    [...DEFAULT_FAILSAFE_INBOUND],
    readFailsafePorts('--failsafe-inbound-host-ports'),
    { defaultText: `Felix's list and Tessera's pods' health ports and the kubelet's: ${formatPorts(DEFAULT_FAILSAFE_INBOUND)}` },
  ),
  failsafeOutbound: valueFlag<ProtoPort[]>(
    '--failsafe-outbound-host-ports',
    '<ports>',
    "the same for outbound traffic, Felix's FailsafeOutboundHostPorts",
    [...DEFAULT_FAILSAFE_OUTBOUND],
    readFailsafePorts('--failsafe-outbound-host-ports'),
    { defaultText: `Felix's: ${formatPorts(DEFAULT_FAILSAFE_OUTBOUND)}` },
  ),
  endpointToHostAction: valueFlag<'DROP' | 'ACCEPT' | 'RETURN'>(
    '--default-endpoint-to-host-action',
    '<DROP|ACCEPT|RETURN>',
    "what happens to workload -> host traffic its egress policy allowed, Felix's DefaultEndpointToHostAction (RETURN: on to the rest of INPUT; HostEndpoint ingress policy never applies to it)",
    'DROP',
    (t) => oneOf('--default-endpoint-to-host-action', t.toUpperCase(), ['DROP', 'ACCEPT', 'RETURN']) as 'DROP' | 'ACCEPT' | 'RETURN',
    { defaultText: "DROP, Felix's; the manifests set ACCEPT as Calico's do" },
  ),
  iptablesBackend: choiceFlag<IptablesBackendMode>('--iptables-backend', '<mode>', "auto (the backend kubelet/kube-proxy use, as Felix detects it), nft or legacy", IPTABLES_BACKEND_MODES, 'auto'),
  typha: valueFlag<string[] | undefined>('--typha', '<host:port,...>', "take updates from these Typhas instead of watching the API server (Felix's TyphaAddr); tried in random order", undefined, readTyphaAddresses),
  typhaService: valueFlag<{ namespace: string; name: string } | undefined>(
    '--typha-service',
    '<ns/name>',
    "the same, the Typhas being the ready endpoints of this Service (its port named tessera-typha; Felix's TyphaK8sServiceName)",
    undefined,
    (t) => readNamespacedName('--typha-service', t),
  ),
  typhaCaFile: textFlag('--typha-ca-file', '<file>', "PEM CA bundle the server's certificate must chain to", {
    heading: 'Mutual TLS to Typha (with --typha or --typha-service; the three files together):',
  }),
  typhaCertFile: textFlag('--typha-cert-file', '<file>', 'PEM certificate the agent presents'),
  typhaKeyFile: textFlag('--typha-key-file', '<file>', 'its PEM private key'),
  typhaServerName: textFlag('--typha-server-name', '<name>', "the name the server's certificate must carry", { defaultText: "the address's host" }),
  dropLog: valueFlag('--drop-log', '<on|off>', 'log every policy drop to NFLOG before it happens, with the deciding chain and rule in the prefix', true, (t) => oneOf('--drop-log', t, ['on', 'off']) === 'on', {
    defaultText: 'on',
  }),
  dropLogGroup: intFlag('--drop-log-group', '<n>', 'NFLOG group', DEFAULT_DROP_LOG_GROUP, { min: 0, max: 65535 }),
  dropLogRate: valueFlag('--drop-log-rate', '<N/unit>', "logged packets per node and IP family, Felix's LogActionRateLimit form: N/second|minute|hour|day", DEFAULT_DROP_LOG_RATE, readDropLogRate, {
    defaultText: DEFAULT_DROP_LOG_RATE,
  }),
  dropLogBurst: intFlag('--drop-log-burst', '<n>', 'packets logged at once before the rate applies', DEFAULT_DROP_LOG_BURST, { min: 1, max: 10_000 }),
  deniedFlows: valueFlag(
    '--denied-flows',
    '<log|off>',
    'read the drop log (tcpdump -i nflog:<group>) and log one JSON line per denied flow, component denied-flows: 5-tuple, both pods, tier/policy/rule (needs tcpdump; its absence or death never changes a verdict)',
    true,
    (t) => oneOf('--denied-flows', t, ['log', 'off']) === 'log',
    { defaultText: 'log' },
  ),
};

const USAGE = usage(
  {
    synopsis: 'tessera agent [options]',
    footer: `exit status: 1 failed, 2 usage, 3 cannot program iptables/ipset, 4 another dataplane
             (Felix) owns this node's cali- chains or IP sets`,
  },
  FLAGS,
);

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
  failsafeInbound: ProtoPort[];
  failsafeOutbound: ProtoPort[];
  endpointToHostAction: 'DROP' | 'ACCEPT' | 'RETURN';
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

export function parseAgentArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): (AgentCliOptions & { node: string }) | 'help' {
  const parsed = parseFlags(argv, FLAGS, { env });
  if (parsed === 'help') return 'help';
  const { typhaCaFile: caFile, typhaCertFile: certFile, typhaKeyFile: keyFile, typhaServerName: serverName, ...rest } = parsed.values;
  const o: AgentCliOptions = {
    ...rest,
    typhaTls: {
      ...(caFile === undefined ? {} : { caFile }),
      ...(certFile === undefined ? {} : { certFile }),
      ...(keyFile === undefined ? {} : { keyFile }),
      ...(serverName === undefined ? {} : { serverName }),
    },
  };
  if (o.typha !== undefined && o.typhaService !== undefined) throw new UsageError('--typha and --typha-service are exclusive: name the Typhas or their Service');
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

/** Where a Typha-fed agent connects. */
type TyphaConnection = Pick<SyncClientOptions, 'addresses'> & { readonly tls?: TyphaClientTls };

/** The agent's Typha connection from its flags; throws (naming the file) when a TLS file cannot be read. */
function typhaConnection(opts: AgentCliOptions, kubeConfig: KubeConfig): TyphaConnection | undefined {
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
  let addresses: TyphaConnection['addresses'];
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
  const line = readCommandLine('agent', USAGE, () => parseAgentArgs(argv));
  if ('exitCode' in line) return line.exitCode;
  const opts = line.options;
  const log = logger ?? createRootLogger();
  let runner: CommandRunner;
  try {
    runner = opts.netns === undefined ? new RealCommandRunner() : new NetnsCommandRunner(opts.netns);
  } catch (err) {
    process.stderr.write(`tessera agent: --netns: ${(err as Error).message}\n`);
    return 2;
  }
  const boot = await bootstrapNode({
    nodeName: opts.node,
    ...(opts.netns === undefined ? {} : { netns: opts.netns }),
    runner,
    iptablesBackend: opts.iptablesBackend,
    ...(opts.ipVersions === undefined ? {} : { ipVersions: opts.ipVersions }),
    ...(opts.interfacePrefixes === undefined ? {} : { interfacePrefixes: opts.interfacePrefixes }),
    ...(opts.dropLog ? { dropLog: { group: opts.dropLogGroup, rate: opts.dropLogRate, burst: opts.dropLogBurst } } : {}),
    logger: log,
  });
  if (!boot.ok) {
    log.flush();
    return boot.refusal === 'foreign-dataplane' ? EXIT_FOREIGN_DATAPLANE : EXIT_REFUSED;
  }
  const { setup } = boot;
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();
  let typha: TyphaConnection | undefined;
  try {
    typha = typhaConnection(opts, kubeConfig);
  } catch (err) {
    process.stderr.write(`tessera agent: ${(err as Error).message}\n`);
    return 2;
  }
  if (typha !== undefined) log.info({ nodeName: opts.node, typha: opts.typha ?? `service ${opts.typhaService?.namespace}/${opts.typhaService?.name}`, tls: opts.typhaTls.caFile !== undefined }, 'taking updates from Typha');

  const outcome = await runDaemon(
    { logger: log, metricsPort: opts.metricsPort, metricsHost: opts.metricsHost, shutdownMessage: 'shutting down (rules stay in place)' },
    ({ registry, signal }) => {
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
          ipVersions: setup.ipVersions,
          iptablesBackend: setup.iptablesBackend,
          ...(typha === undefined ? {} : { syncer: (callbacks) => new SyncClient({ ...typha, hostname: opts.node, registry, logger: log }, callbacks) }),
          ...(opts.interfacePrefixes === undefined ? {} : { interfacePrefixes: opts.interfacePrefixes }),
          failsafes: { inbound: opts.failsafeInbound, outbound: opts.failsafeOutbound },
          endpointToHostAction: opts.endpointToHostAction,
          ...dropLogOptions(setup.dropLog, opts, log),
        },
        signal,
      );
      return { ready: running.ready, live: running.live, json: { '/rules': running.ruleCounts }, servingFields: { nodeName: opts.node, netns: opts.netns }, run: () => running.done };
    },
    (outcome) => ({ outcome }),
  );
  return outcome === 'failed' ? 1 : 0;
}

/** The drop log (as bootstrap left it) and its reader as the flags ask: lines through the agent's log, component denied-flows. */
function dropLogOptions(dropLog: DropLogOptions | undefined, opts: AgentCliOptions, log: Logger): Pick<AgentOptions, 'dropLog' | 'deniedFlows'> {
  if (dropLog === undefined) return {};
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
