/**
 * Typha as a process (typha.md), started by `tessera typha`: ONE set of informers (the kinds
 * the kind table marks as Typha's) feeding the snapshot cache, served to every node agent by
 * the sync server, so the API server sees one watch per Typha instead of one per node.
 *
 * Guarantees:
 * - /metrics, /livez (503 naming an informer whose list/watch loop is stuck) and /readyz
 *   (200 once the cache is in-sync and the sync server listens; 503 again from the moment the
 *   shutdown starts, so the Service stops sending new agents) — runtime/daemon.ts;
 * - with `rebalanceService`, that Service's ready endpoints and the cluster's nodes are polled
 *   every 30 s and the connection target set from them (rebalance.ts); `maxConns` is the upper
 *   limit (Typha `MaxConnectionsUpperLimit`);
 * - two lifetimes, closed in order: on SIGTERM/SIGINT (or `stop`) the connections are closed
 *   one by one, at most 1 s apart and within `shutdownTimeoutSeconds` (Typha
 *   `ShutdownTimeoutSecs`, `ShutdownConnectionDropIntervalMaxSecs`), and only then do the
 *   informers, the cache and the poller stop — an agent is never served a cache being torn
 *   down;
 * - the result is the exit status: 0 after a shutdown, 1 when the sync server cannot listen
 *   (logged with the address; everything started is stopped first).
 */
import type { KubeConfig } from '@kubernetes/client-node';

import { runDaemon } from '../runtime/daemon.ts';
import { Liveness } from '../runtime/liveness.ts';
import type { Logger } from '../runtime/logger.ts';
import { InformerSyncer, TYPHA_RESOURCES } from '../syncer/index.ts';
import { MAX_CONNECTIONS_LOWER_LIMIT, RebalancePoller, rebalanceApi } from './rebalance.ts';
import { SnapshotCache } from './snapshot-cache.ts';
import { SyncServer, type TyphaServerTls } from './sync-server.ts';
import { untilAborted } from '../runtime/until-aborted.ts';

/** Typha `ShutdownConnectionDropIntervalMaxSecs`: during shutdown, connections close at least this often. */
const SHUTDOWN_DROP_INTERVAL_MAX_MS = 1000;

export interface TyphaProcessOptions {
  readonly kubeConfig: KubeConfig;
  /** Where agents connect; port 0 picks one. */
  readonly host: string;
  readonly port: number;
  /** The health server's; port 0 picks one. */
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** The connection limit, and the rebalancing upper limit. */
  readonly maxConns: number;
  /** Share the agents with the other Typhas behind this Service. @default undefined: a lone Typha */
  readonly rebalanceService?: { readonly namespace: string; readonly name: string };
  /** Upper bound of the graceful close of the connections. */
  readonly shutdownTimeoutSeconds: number;
  /** @default undefined: plain TCP */
  readonly tls?: TyphaServerTls;
  readonly logger: Logger;
  /** Aborting it shuts down as SIGTERM does (tests). @default never */
  readonly stop?: AbortSignal;
}

/** Runs Typha until SIGTERM/SIGINT (or `stop`); resolves with the exit status. */
export function runTyphaProcess(opts: TyphaProcessOptions): Promise<number> {
  const { kubeConfig, logger: log, tls } = opts;
  return runDaemon(
    { logger: log, metricsPort: opts.metricsPort, metricsHost: opts.metricsHost, ...(opts.stop === undefined ? {} : { stop: opts.stop }) },
    ({ registry, signal, reason }) => {
      const liveness = new Liveness({ logger: log });
      const cache = new SnapshotCache({ registry, logger: log });
      const syncer = new InformerSyncer({ kubeConfig, resources: TYPHA_RESOURCES, registry, logger: log }, cache);
      for (const { name, probe } of syncer.livenessProbes) liveness.register(name, probe);
      const server = new SyncServer({ source: cache, host: opts.host, port: opts.port, maxConns: opts.maxConns, registry, logger: log, ...(tls === undefined ? {} : { tls }) });

      // The data feeding the server: stopped only after the server has closed (gracefully).
      const stopData = new AbortController();
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

      let listening = false;
      let shuttingDown = false;
      const run = async (): Promise<number> => {
        let exitCode = 0;
        let gracefulMs = 0;
        try {
          const { port } = await server.listen();
          listening = true;
          log.info({ port, tls: tls !== undefined, rebalanceService: opts.rebalanceService }, 'Typha serving agents');
          await untilAborted(signal);
          shuttingDown = true;
          gracefulMs = Math.min(opts.shutdownTimeoutSeconds * 1000, server.connectionCount * SHUTDOWN_DROP_INTERVAL_MAX_MS);
          log.info({ signal: reason(), connections: server.connectionCount, gracefulMs }, 'shutting down: closing agent connections');
        } catch (err) {
          log.error({ err, host: opts.host, port: opts.port }, 'cannot listen for agents');
          exitCode = 1;
        }
        shuttingDown = true;
        await server.close({ gracefulMs });
        stopData.abort();
        await Promise.all([cacheDone, syncerDone, pollerDone]);
        return exitCode;
      };
      return {
        ready: () => listening && !shuttingDown && cache.latest().syncStatus === 'in-sync',
        live: () => liveness.check(),
        run,
      };
    },
    (exitCode) => ({ exitCode }),
  );
}
