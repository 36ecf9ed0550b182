/**
 * `tessera typha`: Typha as a process (src/typha/typha-process.ts) from its flags.
 *
 * - TLS is all-or-nothing (typha.md §2.1): `--server-cert`, `--server-key` and `--ca` together,
 *   with `--client-cn` and/or `--client-uri-san`; then only TLS clients with such a
 *   certificate are accepted. A file that cannot be read is a usage error naming its flag.
 * - `--rebalance-service <namespace>/<name>` shares the agents with the other Typhas behind
 *   that Service; `--max-conns` is the upper limit (Typha `MaxConnectionsUpperLimit`).
 * - SIGTERM/SIGINT: not ready at once, then the connections are closed one by one within
 *   `--shutdown-timeout` (Typha `ShutdownTimeoutSecs` 300), then the informers stop. Exit 0.
 * Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else in-cluster.
 */
import { readFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';

import { createRootLogger, type Logger } from '../runtime/logger.ts';
import { MAX_CONNECTIONS_UPPER_LIMIT } from '../typha/rebalance.ts';
import { DEFAULT_TYPHA_PORT, type TyphaServerTls } from '../typha/sync-server.ts';
import { runTyphaProcess } from '../typha/typha-process.ts';
import { intFlag, parseFlags, readCommandLine, readNamespacedName, textFlag, textFlagOr, usage, UsageError, valueFlag } from './args.ts';

/** Typha's flags: the one declaration its parsing and its usage come from. */
const FLAGS = {
  port: intFlag('--port', '<n>', 'port agents connect to', DEFAULT_TYPHA_PORT, { min: 0, max: 65535 }, { defaultText: `${DEFAULT_TYPHA_PORT}; 0 picks one` }),
  host: textFlagOr('--host', '<addr>', 'address to listen on', '0.0.0.0'),
  metricsPort: intFlag('--metrics-port', '<n>', 'port for /metrics, /livez, /readyz', 9093, { min: 0, max: 65535 }, { defaultText: '9093; 0 picks one' }),
  metricsHost: textFlagOr('--metrics-host', '<addr>', 'address to listen on', '0.0.0.0'),
  kubeconfig: textFlag('--kubeconfig', '<file>', 'kubeconfig to use', { env: 'KUBECONFIG', defaultText: '$KUBECONFIG, else in-cluster' }),
  maxConns: intFlag('--max-conns', '<n>', 'connection limit, and the rebalancing upper limit', MAX_CONNECTIONS_UPPER_LIMIT, { min: 1 }),
  rebalanceService: valueFlag<{ readonly namespace: string; readonly name: string } | undefined>(
    '--rebalance-service',
    '<ns/name>',
    'share the agents with the other Typhas behind this Service: every 30 s, count its ready endpoints and the nodes and lower the limit to Calico\'s target (lone Typha: --max-conns)',
    undefined,
    (t) => readNamespacedName('--rebalance-service', t, 'service'),
  ),
  shutdownTimeoutSeconds: intFlag('--shutdown-timeout', '<seconds>', 'on SIGTERM, close connections at most 1 s apart within this', 300, { min: 0, max: 300 }, { defaultText: "300, Typha's ShutdownTimeoutSecs" }),
  certFile: textFlag('--server-cert', '<file>', 'PEM certificate the server presents', { heading: 'TLS (all of the first three, and at least one of the last two; then TLS only):' }),
  keyFile: textFlag('--server-key', '<file>', 'its PEM private key'),
  caFile: textFlag('--ca', '<file>', 'PEM CA bundle client certificates must chain to'),
  clientCN: textFlag('--client-cn', '<cn>', 'accept clients whose certificate subject CN is this'),
  clientURISAN: textFlag('--client-uri-san', '<uri>', 'accept clients whose certificate has this URI SAN'),
};

const USAGE = usage({ synopsis: 'tessera typha [options]' }, FLAGS);

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

export function parseTyphaArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): TyphaCliOptions | 'help' {
  const parsed = parseFlags(argv, FLAGS, { env });
  if (parsed === 'help') return 'help';
  const { certFile, keyFile, caFile, clientCN, clientURISAN, ...o } = parsed.values;
  const tls = { certFile, keyFile, caFile, clientCN, clientURISAN };
  if (!Object.values(tls).some((v) => v !== undefined && v !== '')) return { ...o, tls: undefined };
  const missing = (
    [
      ['--server-cert', certFile],
      ['--server-key', keyFile],
      ['--ca', caFile],
    ] as const
  )
    .filter(([, v]) => v === undefined || v === '')
    .map(([f]) => f);
  if (missing.length > 0) throw new UsageError(`TLS needs --server-cert, --server-key and --ca together: ${missing.join(', ')} missing`);
  if (!clientCN && !clientURISAN) throw new UsageError('TLS needs --client-cn or --client-uri-san (or both): which clients to accept');
  return { ...o, tls: { certFile: certFile as string, keyFile: keyFile as string, caFile: caFile as string, clientCN: clientCN || undefined, clientURISAN: clientURISAN || undefined } };
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
  const line = readCommandLine('typha', USAGE, () => {
    const parsed = parseTyphaArgs(argv);
    return parsed === 'help' ? parsed : { ...parsed, serverTls: parsed.tls === undefined ? undefined : readTls(parsed.tls) };
  });
  if ('exitCode' in line) return line.exitCode;
  const { serverTls: tls, ...opts } = line.options;
  const logger = deps.logger ?? createRootLogger();
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();
  return runTyphaProcess({
    kubeConfig,
    host: opts.host,
    port: opts.port,
    metricsHost: opts.metricsHost,
    metricsPort: opts.metricsPort,
    maxConns: opts.maxConns,
    ...(opts.rebalanceService === undefined ? {} : { rebalanceService: opts.rebalanceService }),
    shutdownTimeoutSeconds: opts.shutdownTimeoutSeconds,
    ...(tls === undefined ? {} : { tls }),
    logger,
    ...(deps.stop === undefined ? {} : { stop: deps.stop }),
  });
}
