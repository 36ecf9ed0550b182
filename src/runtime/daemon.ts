/**
 * What every long-running `tessera` command (agent, controllers, typha) does around its own
 * work: one metrics registry (with Node's default process metrics), the health server
 * (`/metrics`, `/livez`, `/readyz` and any JSON endpoints the command adds), SIGTERM/SIGINT
 * handling, and the order things stop in.
 *
 * Guarantees, in order:
 * 1. the signal handlers are installed before the command's `start` runs, so a signal during
 *    start-up is a shutdown, not a kill;
 * 2. `start` gets the registry, the logger and a `signal` that aborts on SIGTERM, SIGINT or
 *    the `stop` option (tests); `reason()` says which;
 * 3. the health server listens before `run` is called, and one line says where
 *    (`serving /metrics, /livez, /readyz[, <json paths>]`, with the port and the command's
 *    fields);
 * 4. when `run` settles: the health server closes, the signal handlers are removed, one
 *    `exiting` line is logged with the command's fields for the result, and the log is
 *    flushed — so the last line on stdout is always `exiting` (or the error that escaped).
 *
 * Each handler is installed `once`: while `run` is still stopping, the same signal again ends
 * the process at once (Node's default, for an operator who means it), the other one is logged
 * (when `shutdownMessage` is set) and otherwise ignored. A shutdown that hangs is ended by the
 * kubelet's SIGKILL after the grace period.
 */
import { collectDefaultMetrics } from 'prom-client';

import { HealthServer } from './health-server.ts';
import type { LivenessReport } from './liveness.ts';
import type { Logger } from './logger.ts';
import { newRegistry, type Registry } from './metrics.ts';

export interface DaemonOptions {
  readonly logger: Logger;
  /** Port of the health server; 0 picks one. */
  readonly metricsPort: number;
  readonly metricsHost: string;
  /**
   * Logged (`{signal}`) when SIGTERM/SIGINT arrives.
   * @default undefined: nothing logged at the signal (the command logs its own shutdown)
   */
  readonly shutdownMessage?: string;
  /** Aborting it shuts down as SIGTERM does (tests). @default never */
  readonly stop?: AbortSignal;
}

/** Why the daemon is shutting down. */
export type ShutdownReason = NodeJS.Signals | 'stop';

export interface DaemonContext {
  readonly registry: Registry;
  readonly logger: Logger;
  /** Aborts on the first SIGTERM or SIGINT, or when the `stop` option aborts. */
  readonly signal: AbortSignal;
  /** What aborted `signal`; undefined until it has. */
  reason(): ShutdownReason | undefined;
}

/** A started command, as the daemon serves and awaits it. */
export interface DaemonCommand<T> {
  /** `/readyz`. */
  ready(): boolean;
  /** `/livez`. @default always live */
  live?(): LivenessReport;
  /** More read-only JSON endpoints (the agent's `/rules`). @default none */
  readonly json?: Readonly<Record<string, () => Promise<unknown>>>;
  /** Fields of the `serving …` line besides the port. @default none */
  readonly servingFields?: Readonly<Record<string, unknown>>;
  /** Called once the health server listens; settles when the process should exit. */
  run(): Promise<T>;
}

/**
 * Runs a command as a process (the module comment lists the order); resolves with what
 * its `run` resolved with. `exitFields` turns that into the fields of the `exiting` line.
 */
export async function runDaemon<T>(opts: DaemonOptions, start: (ctx: DaemonContext) => DaemonCommand<T>, exitFields: (result: T) => Readonly<Record<string, unknown>>): Promise<T> {
  const { logger: log, stop } = opts;
  const registry = newRegistry();
  collectDefaultMetrics({ register: registry });
  const abort = new AbortController();
  let reason: ShutdownReason | undefined;
  const shutdown = (why: ShutdownReason): void => {
    if (opts.shutdownMessage !== undefined && why !== 'stop') log.info({ signal: why }, opts.shutdownMessage);
    reason ??= why;
    abort.abort();
  };
  const onSignal = (sig: NodeJS.Signals): void => shutdown(sig);
  const onStop = (): void => shutdown('stop');
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  stop?.addEventListener('abort', onStop, { once: true });
  if (stop?.aborted === true) onStop();

  const command = start({ registry, logger: log, signal: abort.signal, reason: () => reason });
  const json = command.json ?? {};
  const health = await HealthServer.listen({
    registry,
    ready: () => command.ready(),
    ...(command.live === undefined ? {} : { live: () => command.live!() }),
    port: opts.metricsPort,
    host: opts.metricsHost,
    json,
  });
  log.info({ port: health.port, ...command.servingFields }, `serving ${['/metrics', '/livez', '/readyz', ...Object.keys(json)].join(', ')}`);
  const result = await command.run();
  await health.close();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  stop?.removeEventListener('abort', onStop);
  log.info(exitFields(result), 'exiting');
  log.flush();
  return result;
}
