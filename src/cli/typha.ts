/**
 * `tessera typha`: Typha as a process (typha.md) — ONE set of informers (the agents' five
 * projectcalico.org/v3 kinds) feeding the snapshot cache, served to every node agent by the
 * sync server, so the API server sees one watch per Typha instead of one per node.
 *
 * - JSON logs on stdout; /metrics, /livez (503 naming an informer whose list/watch loop is
 *   stuck), /readyz (200 once the cache is in-sync and the sync server listens; 503 again
 *   while shutting down, so the Service stops sending new agents) on `--metrics-port`.
 * - TLS is all-or-nothing (typha.md §2.1): `--server-cert`, `--server-key` and `--ca` together,
 *   with `--client-cn` and/or `--client-uri-san`; then only TLS clients with such a
 *   certificate are accepted.
 * - `--rebalance-service <namespace>/<name>` polls that Service's ready endpoints and the
 *   cluster's nodes every 30 s and sets the connection target (rebalance.ts); `--max-conns`
 *   is the upper limit (Typha `MaxConnectionsUpperLimit`).
 * - SIGTERM/SIGINT: not ready at once, then the connections are closed one by one, at most
 *   1 s apart and within `--shutdown-timeout` (Typha `ShutdownTimeoutSecs` 300,
 *   `ShutdownConnectionDropIntervalMaxSecs` 1), then the informers stop. Exit 0.
 * Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else in-cluster.
 */
import { readFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics } from 'prom-client';

import { InformerSyncer } from '../syncer/informer-syncer.ts';
import { HealthServer } from '../runtime/health-server.ts';
import { Liveness } from '../runtime/liveness.ts';
import { createRootLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { MAX_CONNECTIONS_LOWER_LIMIT, MAX_CONNECTIONS_UPPER_LIMIT, RebalancePoller, rebalanceApi } from '../typha/rebalance.ts';
import { SnapshotCache } from '../typha/snapshot-cache.ts';
import { DEFAULT_TYPHA_PORT, SyncServer, type TyphaServerTls } from '../typha/sync-server.ts';
import { UsageError, walkArgs } from './args.ts';

const USAGE = `usage: tessera typha [options]

  --port <n>                   port agents connect to (default ${DEFAULT_TYPHA_PORT}; 0 picks one)
  --host <addr>                address to listen on (default 0.0.0.0)
  --metrics-port <n>           port for /metrics, /livez, /readyz (default 9093; 0 picks one)
  --metrics-host <addr>        address to listen on (default 0.0.0.0)
  --kubeconfig <file>          kubeconfig to use (default: $KUBECONFIG, else in-cluster)
  --max-conns <n>              connection limit, and the rebalancing upper limit (default ${MAX_CONNECTIONS_UPPER_LIMIT})
  --rebalance-service <ns/name>
                               share the agents with the other Typhas behind this Service:
                               every 30 s, count its ready endpoints and the nodes and lower
                               the limit to Calico's target (lone Typha: --max-conns)
  --shutdown-timeout <seconds> on SIGTERM, close connections at most 1 s apart within this
                               (default 300, Typha's ShutdownTimeoutSecs)
  TLS (all of the first three, and at least one of the last two; then TLS only):
  --server-cert <file>         PEM certificate the server presents
  --server-key <file>          its PEM private key
  --ca <file>                  PEM CA bundle client certificates must chain to
  --client-cn <cn>             accept clients whose certificate subject CN is this
  --client-uri-san <uri>       accept clients whose certificate has this URI SAN
`;

/** Typha `ShutdownConnectionDropIntervalMaxSecs`: during shutdown, connections close at least this often. */
const SHUTDOWN_DROP_INTERVAL_MAX_MS = 1000;

export interface TyphaTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  readonly clientCN: string | undefined;
  readonly clientURISAN: string | undefined;
}

export interface TyphaCliOptions {
  port: number;
  host: string;
  metricsPort: number;
  metricsHost: string;
  kubeconfig: string | undefined;
  maxConns: number;
  rebalanceService: { readonly namespace: string; readonly name: string } | undefined;
  shutdownTimeoutSeconds: number;
  tls: TyphaTlsFiles | undefined;
}

/** `ns/name` → its parts; a `UsageError` naming the flag otherwise. */
function parseServiceRef(text: string): { namespace: string; name: string } {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z]([-a-z0-9]*[a-z0-9])?)$/.exec(text);
  if (m === null) throw new UsageError(`--rebalance-service must be <namespace>/<service>, not ${JSON.stringify(text)}`);
  return { namespace: m[1] as string, name: m[3] as string };
}

export function parseTyphaArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): TyphaCliOptions | 'help' {
  const o: TyphaCliOptions = {
    port: DEFAULT_TYPHA_PORT,
    host: '0.0.0.0',
    metricsPort: 9093,
    metricsHost: '0.0.0.0',
    kubeconfig: env['KUBECONFIG'] || undefined,
    maxConns: MAX_CONNECTIONS_UPPER_LIMIT,
    rebalanceService: undefined,
    shutdownTimeoutSeconds: 300,
    tls: undefined,
  };
  const tls: { certFile?: string; keyFile?: string; caFile?: string; clientCN?: string; clientURISAN?: string } = {};
  const help = walkArgs(argv, (a) => {
    switch (a.flag) {
      case '--port':
        o.port = a.int(0, 65535);
        break;
      case '--host':
        o.host = a.value();
        break;
      case '--metrics-port':
        o.metricsPort = a.int(0, 65535);
        break;
      case '--metrics-host':
        o.metricsHost = a.value();
        break;
      case '--kubeconfig':
        o.kubeconfig = a.value();
        break;
      case '--max-conns':
        o.maxConns = a.int(1);
        break;
      case '--rebalance-service':
        o.rebalanceService = parseServiceRef(a.value());
        break;
      case '--shutdown-timeout':
        o.shutdownTimeoutSeconds = a.int(0, 300);
        break;
      case '--server-cert':
        tls.certFile = a.value();
        break;
      case '--server-key':
        tls.keyFile = a.value();
        break;
      case '--ca':
        tls.caFile = a.value();
        break;
      case '--client-cn':
        tls.clientCN = a.value();
        break;
      case '--client-uri-san':
        tls.clientURISAN = a.value();
        break;
      default:
        throw a.unknown();
    }
  });
  if (help === 'help') return 'help';
  const given = Object.values(tls).some((v) => v !== undefined && v !== '');
  if (given) {
    const missing = (
      [
        ['--server-cert', tls.certFile],
        ['--server-key', tls.keyFile],
        ['--ca', tls.caFile],
      ] as const
    )
      .filter(([, v]) => v === undefined || v === '')
      .map(([f]) => f);
    if (missing.length > 0) throw new UsageError(`TLS needs --server-cert, --server-key and --ca together: ${missing.join(', ')} missing`);
    if (!tls.clientCN && !tls.clientURISAN) throw new UsageError('TLS needs --client-cn or --client-uri-san (or both): which clients to accept');
    o.tls = { certFile: tls.certFile as string, keyFile: tls.keyFile as string, caFile: tls.caFile as string, clientCN: tls.clientCN || undefined, clientURISAN: tls.clientURISAN || undefined };
  }
  return o;
}

/** Reads the PEM files; a `UsageError` naming the flag and file when one cannot be read. */
function readTls(files: TyphaTlsFiles): TyphaServerTls {
  const read = (flag: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new UsageError(`${flag} ${path}: ${(err as Error).message}`);
    }
  };
  return {
    cert: read('--server-cert', files.certFile),
    key: read('--server-key', files.keyFile),
    ca: read('--ca', files.caFile),
    ...(files.clientCN === undefined ? {} : { clientCN: files.clientCN }),
    ...(files.clientURISAN === undefined ? {} : { clientURISAN: files.clientURISAN }),
  };
}

export interface TyphaRunDeps {
  /** @default a root JSON logger on stdout */
  readonly logger?: Logger;
  /** Aborting it shuts down as SIGTERM does (tests). */
  readonly stop?: AbortSignal;
}

export async function runTypha(argv: readonly string[], deps: TyphaRunDeps = {}): Promise<number> {
  let opts;
  let tls: TyphaServerTls | undefined;
  try {
    opts = parseTyphaArgs(argv);
    if (opts !== 'help' && opts.tls !== undefined) tls = readTls(opts.tls);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tessera typha: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = deps.logger ?? createRootLogger();
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();

  const registry = newRegistry();
  collectDefaultMetrics({ register: registry });
  const liveness = new Liveness({ logger: log });
  const cache = new SnapshotCache({ registry, logger: log });
  const syncer = new InformerSyncer({ kubeConfig, registry, logger: log }, cache);
  for (const { name, probe } of syncer.livenessProbes) liveness.register(name, probe);
  const server = new SyncServer({ source: cache, host: opts.host, port: opts.port, maxConns: opts.maxConns, registry, logger: log, ...(tls === undefined ? {} : { tls }) });

  // Two lifetimes: the sync server closes first (gracefully), the data feeding it after.
  const stopData = new AbortController();
  let listening = false;
  let shuttingDown = false;
  let onSignal: (sig: NodeJS.Signals | 'stop') => void = () => undefined;
  const shutdown = new Promise<NodeJS.Signals | 'stop'>((resolve) => (onSignal = resolve));
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const onStop = (): void => onSignal('stop');
  deps.stop?.addEventListener('abort', onStop, { once: true });
  if (deps.stop?.aborted) onStop();

  const cacheDone = cache.start(stopData.signal);
  const syncerDone = syncer.run(stopData.signal);
  const poller =
    opts.rebalanceService === undefined
      ? undefined
      : new RebalancePoller({
          api: rebalanceApi(kubeConfig),
          namespace: opts.rebalanceService.namespace,
          service: opts.rebalanceService.name,
          upper: opts.maxConns,
          lower: Math.min(MAX_CONNECTIONS_LOWER_LIMIT, opts.maxConns),
          setMaxConns: (n) => server.setMaxConns(n),
          logger: log,
        });
  const pollerDone = poller?.run(stopData.signal) ?? Promise.resolve();

  const health = await HealthServer.listen({
    registry,
    ready: () => listening && !shuttingDown && cache.latest().syncStatus === 'in-sync',
    live: () => liveness.check(),
    port: opts.metricsPort,
    host: opts.metricsHost,
  });
  log.info({ port: health.port }, 'serving /metrics, /livez, /readyz');

  let exitCode = 0;
  let gracefulMs = 0;
  try {
    const { port } = await server.listen();
    listening = true;
    log.info({ port, tls: tls !== undefined, rebalanceService: opts.rebalanceService }, 'Typha serving agents');
    const sig = await shutdown;
    shuttingDown = true;
    gracefulMs = Math.min(opts.shutdownTimeoutSeconds * 1000, server.connectionCount * SHUTDOWN_DROP_INTERVAL_MAX_MS);
    log.info({ signal: sig, connections: server.connectionCount, gracefulMs }, 'shutting down: closing agent connections');
  } catch (err) {
    log.error({ err, host: opts.host, port: opts.port }, 'cannot listen for agents');
    exitCode = 1;
  }
  shuttingDown = true;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  deps.stop?.removeEventListener('abort', onStop);
  await server.close({ gracefulMs });
  stopData.abort();
  await Promise.all([cacheDone, syncerDone, pollerDone]);
  await health.close();
  log.info({ exitCode }, 'exiting');
  log.flush();
  return exitCode;
}
