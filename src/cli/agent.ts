/**
 * `tessera agent --node <name>`: the per-node agent (src/controllers/agent.ts) as a process —
 * JSON logs on stdout, /metrics (informer, calc and dataplane metrics on one registry),
 * /livez, /readyz (ready = first in-sync apply done), graceful shutdown on SIGTERM/SIGINT that
 * leaves the kernel's rules in place. `--netns <name>` programs inside a network namespace
 * (tests). Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else in-cluster.
 *
 * Before starting it checks that iptables-restore/save and ipset exist and that it may use
 * them (NET_ADMIN); otherwise it logs why and exits 3 without a stack trace.
 */
import { UsageError, walkArgs } from './args.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics } from 'prom-client';

import { startAgent } from '../controllers/agent.ts';
import { HealthServer } from '../controllers/health-server.ts';
import { NetnsCommandRunner, RealCommandRunner, type CommandRunner } from '../dataplane/index.ts';
import { createRootLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';

const USAGE = `usage: tessera agent [options]

  --node <name>                this node's name (default: $NODE_NAME)
  --netns <name>               program iptables/ipsets inside this network namespace (tests)
  --kubeconfig <file>          kubeconfig to use (default: $KUBECONFIG, else in-cluster)
  --metrics-port <n>           port for /metrics, /livez, /readyz (default 9095; 0 picks one)
  --metrics-host <addr>        address to listen on (default 0.0.0.0)
  --iptables-refresh <seconds> full iptables read-back period (default 180, Felix's)
  --ipsets-refresh <seconds>   full ipset read-back period (default 90, Felix's)
`;

/** Exit status when the host cannot be programmed (missing tools or no NET_ADMIN). */
export const EXIT_REFUSED = 3;


export interface AgentCliOptions {
  node: string | undefined;
  netns: string | undefined;
  kubeconfig: string | undefined;
  metricsPort: number;
  metricsHost: string;
  iptablesRefreshSeconds: number | undefined;
  ipsetsRefreshSeconds: number | undefined;
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
      default:
        throw a.unknown();
    }
  });
  if (help === 'help') return 'help';
  const node = o.node;
  if (node === undefined || node === '') throw new UsageError('--node (or $NODE_NAME) is required');
  return { ...o, node };
}

/**
 * Why this host cannot be programmed, or undefined when it can: each tool must exist and
 * `ipset list -n` / `iptables-nft-save -t filter` must succeed (they need NET_ADMIN).
 */
export async function preflight(runner: CommandRunner): Promise<string | undefined> {
  const checks: Array<[string, string[]]> = [
    ['iptables-nft-restore', ['--version']],
    ['iptables-nft-save', ['-t', 'filter']],
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
  const refused = await preflight(runner);
  if (refused !== undefined) {
    log.error({ nodeName: opts.node, netns: opts.netns, reason: refused }, 'refusing to start: cannot program the dataplane');
    log.flush();
    return EXIT_REFUSED;
  }
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();

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
    },
    abort.signal,
  );
  const health = await HealthServer.listen({ registry, ready: running.ready, port: opts.metricsPort, host: opts.metricsHost });
  log.info({ port: health.port, nodeName: opts.node, netns: opts.netns }, 'serving /metrics, /livez, /readyz');
  const outcome = await running.done;
  await health.close();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  log.info({ outcome }, 'exiting');
  log.flush();
  return outcome === 'failed' ? 1 : 0;
}
