/**
 * The per-node agent: a syncer (its informers, or Typha's client) → sync status →
 * `AsyncCalcGraph` → `DataplaneDriver` (Felix's daemon wiring: syncer → calc graph →
 * int_dataplane).
 *
 * Guarantees:
 * - the calc graph sees `wait-for-datastore` until the informers start, `resync-in-progress`
 *   while any of them is still listing, then `in-sync` once every informer's initial list has
 *   been delivered — so the driver, which writes nothing before `InSync`, never programs a
 *   partial view, and the previous agent's rules keep enforcing until then;
 * - `ready()` (the process's /readyz, and `tessera_agent_ready`) is true once the first apply
 *   that follows in-sync reached the kernel, and while the dataplane's applies succeed: an
 *   outage (iptables-restore or ipset failing every retry) makes it false until an apply
 *   succeeds again. Chains the kernel rejected do not: they are contained, fail closed and
 *   are reported by the driver's metrics and log (src/dataplane/iptables/rejected-chains.ts);
 * - every batch the calc graph emits is counted (`tessera_agent_sent_generation`) and, once
 *   the kernel holds it, published as `tessera_agent_applied_generation` — the runner compares
 *   the two to know an agent has nothing in flight;
 * - aborting `signal` stops the informers and the driver WITHOUT touching the kernel: rules
 *   stay in place for the next agent, which rewrites only what differs;
 * - a dataplane failure never stops the agent (issue 19 point 3): the driver keeps the kernel's
 *   last state and retries with capped backoff, and the first apply that works writes the
 *   whole desired state, including what arrived during the outage — a restart would leave the
 *   old rules in force for as long as the restart loop lasts. `done` resolves `'failed'` only
 *   when the driver stops on an unexpected error (a bug, not a kernel answer), so the process
 *   exits non-zero and restarts;
 * - `live()` (the process's /livez) names any main loop that made no progress within its
 *   timeout: an apply running longer than the dataplane's, a calc-graph batch not flushed
 *   within the calc graph's, an informer's list/watch loop that stopped turning (its own
 *   bound: the watch timeout plus slack). Idle is never stuck (runtime/liveness.ts).
 */
import type { KubeConfig } from '@kubernetes/client-node';

import { AsyncCalcGraph } from '../calc/index.ts';
import { DataplaneDriver, type CommandRunner, type FailsafeConfig, type IptablesBackend } from '../dataplane/index.ts';
import type { KubeObject, KubeResource, ListerWatcher } from '../informers/index.ts';
import { KubeListerWatcher } from '../informers/kube-lister-watcher.ts';
import { compactHeap } from '../runtime/compact-heap.ts';
import { Liveness, type LivenessReport } from '../runtime/liveness.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate, newRegistry, type Registry } from '../runtime/metrics.ts';
import { Gauge } from 'prom-client';
import type { IpVersion } from './ip-versions.ts';
import { InformerSyncer } from '../syncer/informer-syncer.ts';
import { UnenforcedFamilyReporter } from './unenforced-family-reporter.ts';
import { UnenforcedObjectsReporter } from './unenforced-objects-reporter.ts';
import { RuleCounters, type DropLogOptions, type RuleCount } from '../dataplane/index.ts';
import { DeniedFlowLog, EndpointLookup, resolveFromTables, type DeniedFlowLogOptions } from '../flowlog/index.ts';

import type { Syncer, SyncerFactory, Update } from '../syncer/index.ts';
import { untilAborted } from '../runtime/until-aborted.ts';

export interface AgentOptions {
  readonly nodeName: string;
  /** Required unless `listerWatcherFor` or `syncer` is given. */
  readonly kubeConfig?: KubeConfig;
  /**
   * The feed, made for the agent's own callbacks: `tessera agent --typha …` passes Typha's
   * client (typha/sync-client.ts), so one set of watches serves the whole cluster and a
   * Typha's loss is a resync in place. The agent knows only the `Syncer` contract: it never
   * imports Typha (DESIGN §2: the two share only `syncer/`).
   * @default an InformerSyncer on `listerWatcherFor`, else on `kubeConfig`
   */
  readonly syncer?: SyncerFactory;
  /** Test seam: the source of each watched resource. @default a KubeListerWatcher on `kubeConfig` */
  readonly listerWatcherFor?: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /**
   * The source of the kinds listed only to report them NOT ENFORCED (AdminNetworkPolicy:
   * `UnenforcedObjectsReporter`), with or without Typha.
   * @default a KubeListerWatcher on `kubeConfig` when it is given and `listerWatcherFor` is not; else none are reported
   */
  readonly unenforcedListerWatcherFor?: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /** Runs iptables/ipset (a `NetnsCommandRunner` programs a network namespace). */
  readonly runner: CommandRunner;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
  /**
   * How long an apply may run, or a calc-graph batch wait to be flushed, before `live()` fails
   * (Felix's per-component health timeouts; one value here sets both).
   * @default DATAPLANE_LIVENESS_TIMEOUT_MS (90 s) for the dataplane, CALC_GRAPH_LIVENESS_TIMEOUT_MS (30 s) for the calc graph
   */
  readonly livenessTimeoutMs?: number;
  /** Felix `IptablesRefreshInterval`. @default 180_000 (the driver's default) */
  readonly iptablesRefreshIntervalMs?: number;
  /** Felix `IpsetsRefreshInterval`. @default 90_000 (the driver's default) */
  readonly ipsetsRefreshIntervalMs?: number;
  /**
   * IP families to program (`tessera agent` detects them, see ip-versions.ts). Endpoint
   * addresses in any other family are reported by `UnenforcedFamilyReporter`.
   * @default [4] (the driver's default)
   */
  readonly ipVersions?: readonly IpVersion[];
  /** Felix `InterfacePrefix`: host-side names of workload interfaces. @default ['cali'] (the driver's default) */
  readonly interfacePrefixes?: readonly string[];
  /** Felix `FailsafeInboundHostPorts`/`FailsafeOutboundHostPorts`. @default Felix's (the driver's default) */
  readonly failsafes?: FailsafeConfig;
  /** Felix `DefaultEndpointToHostAction`. @default 'DROP' (the driver's default) */
  readonly endpointToHostAction?: 'DROP' | 'ACCEPT' | 'RETURN';
  /** The iptables backend to program (`tessera agent` detects it: iptables-backend.ts). @default 'nft' (the driver's default) */
  readonly iptablesBackend?: IptablesBackend;
  /** Log policy drops to NFLOG, rate-limited per node (dataplane/drop-log.ts). @default undefined: no drop log */
  readonly dropLog?: DropLogOptions;
  /**
   * Read the drop log and write one attributed line per denied flow (flowlog/). Needs
   * `dropLog`. Its reader's death never changes a verdict.
   * @default undefined: not read
   */
  readonly deniedFlows?: Pick<DeniedFlowLogOptions, 'sink' | 'commandPrefix' | 'tcpdump' | 'dedupWindowMs'>;
}

/** Felix `DataplaneWatchdogTimeout` (its `InternalDataplaneMainLoop` health reporter): 90 s. */
export const DATAPLANE_LIVENESS_TIMEOUT_MS = 90_000;
/** Felix `felix/calc/async_calc_graph.go` `healthTimeout` (`CalculationGraph`): 30 s. */
export const CALC_GRAPH_LIVENESS_TIMEOUT_MS = 30_000;

/** `stopped`: the signal aborted; `failed`: the driver stopped on an unexpected error (a bug). */
export type AgentOutcome = 'stopped' | 'failed';

export interface RunningAgent {
  /** True once the first in-sync apply reached the kernel, while dataplane applies succeed. */
  ready(): boolean;
  /** Calc-graph batches sent to the driver / applied to the kernel. */
  generations(): { sent: number; applied: number };
  /** Whether every main loop made progress within its timeout (for /livez). */
  live(): LivenessReport;
  readonly driver: DataplaneDriver;
  /** Resolves when the agent has stopped (signal aborted) or failed. */
  readonly done: Promise<AgentOutcome>;
  /** The kernel's counters of every deciding rule on this node (`/rules`; `tessera explain --live`). */
  ruleCounts(): Promise<RuleCount[]>;
}

/** Starts the agent; stop it by aborting `signal`. */
export function startAgent(opts: AgentOptions, signal: AbortSignal): RunningAgent {
  const { nodeName, kubeConfig, listerWatcherFor, runner, registry = newRegistry(), logger = silentLogger } = opts;
  if (nodeName === '') throw new TypeError('startAgent: nodeName must not be empty');
  const log = logger.child({ component: 'agent', nodeName });
  const sentGauge = getOrCreate(registry, 'tessera_agent_sent_generation', () => new Gauge({ name: 'tessera_agent_sent_generation', help: 'Calc-graph batches sent to the dataplane driver.', registers: [registry] }));
  const appliedGauge = getOrCreate(registry, 'tessera_agent_applied_generation', () => new Gauge({ name: 'tessera_agent_applied_generation', help: 'Calc-graph batches applied to the kernel (equal to sent when nothing is in flight).', registers: [registry] }));
  const readyGauge = getOrCreate(
    registry,
    'tessera_agent_ready',
    () =>
      new Gauge({
        name: 'tessera_agent_ready',
        help: '1 while ready: the first in-sync apply is done and dataplane applies succeed.',
        registers: [registry],
        collect(this: Gauge) {
          this.set(ready() ? 1 : 0);
        },
      }),
  );

  const driver = new DataplaneDriver({
    runner,
    registry,
    logger,
    ...(opts.iptablesRefreshIntervalMs === undefined ? {} : { iptablesRefreshIntervalMs: opts.iptablesRefreshIntervalMs }),
    ...(opts.ipsetsRefreshIntervalMs === undefined ? {} : { ipsetsRefreshIntervalMs: opts.ipsetsRefreshIntervalMs }),
    ...(opts.ipVersions === undefined ? {} : { ipVersions: opts.ipVersions }),
    ...(opts.interfacePrefixes === undefined ? {} : { interfacePrefixes: opts.interfacePrefixes }),
    ...(opts.iptablesBackend === undefined ? {} : { backend: opts.iptablesBackend }),
    ...(opts.dropLog === undefined ? {} : { dropLog: opts.dropLog }),
    ...(opts.failsafes === undefined ? {} : { failsafes: opts.failsafes }),
    ...(opts.endpointToHostAction === undefined ? {} : { endpointToHostAction: opts.endpointToHostAction }),
  });
  // Kernel counters of every deciding rule, read when /metrics or /rules is asked (bounded, rate-limited).
  const ruleCounters = new RuleCounters({ tables: driver.tables, registry, logger });
  if (opts.deniedFlows !== undefined && opts.dropLog === undefined) throw new TypeError('startAgent: deniedFlows needs dropLog (nothing is logged to read)');
  const endpoints = opts.deniedFlows === undefined ? undefined : new EndpointLookup();
  const deniedFlows =
    opts.deniedFlows === undefined
      ? undefined
      : new DeniedFlowLog({
          ...opts.deniedFlows,
          nodeName,
          resolve: resolveFromTables(driver.tables),
          endpoint: (ip) => endpoints!.lookup(ip),
          ...(opts.dropLog?.group === undefined ? {} : { group: opts.dropLog.group }),
          logger,
          registry,
        });
  const unenforced = new UnenforcedFamilyReporter({ ipVersions: [...new Set(driver.tables.map((t) => t.ipVersion))], registry, logger });
  let sent = 0;
  let applied = 0;
  let isReady = false;
  const ready = (): boolean => isReady && driver.health().consecutiveFailures === 0;
  let inSyncSent = false;
  const calc = new AsyncCalcGraph({
    nodeName,
    registry,
    logger,
    onMessages: (messages) => {
      const gen = ++sent;
      sentGauge.set(gen);
      if (messages.some((m) => m.type === 'InSync')) inSyncSent = true;
      const afterInSync = inSyncSent;
      unenforced.observe(messages);
      driver.send(messages);
      driver.flushed().then(
        () => {
          if (gen > applied) {
            applied = gen;
            appliedGauge.set(gen);
          }
          if (afterInSync && !isReady) {
            isReady = true;
            readyGauge.set(1);
            log.info({ generation: gen }, 'first in-sync apply done: ready');
            // The sync's garbage sits in the old generation until something fills it: return
            // it now, once, while the agent is quiet (runtime/compact-heap.ts).
            setTimeout(() => compactHeap(), 0).unref();
          }
        },
        () => {
          // The driver's failure is reported through run(); nothing more to do per batch.
        },
      );
    },
  });

  // The endpoint lookup sees what the calc graph sees, so both sides of a denied flow are named.
  const sink =
    endpoints === undefined
      ? calc
      : {
          onUpdates: (updates: readonly Update[]): void => {
            endpoints.onUpdates(updates);
            calc.onUpdates(updates);
          },
          onStatusUpdated: (status: Parameters<AsyncCalcGraph['onStatusUpdated']>[0]): void => calc.onStatusUpdated(status),
        };
  const syncer: Syncer =
    opts.syncer === undefined
      ? new InformerSyncer(
          {
            ...(listerWatcherFor !== undefined ? { listerWatcherFor } : {}),
            ...(kubeConfig !== undefined ? { kubeConfig } : {}),
            registry,
            logger,
          },
          sink,
        )
      : opts.syncer(sink);

  const reportSource =
    opts.unenforcedListerWatcherFor ?? (kubeConfig !== undefined && listerWatcherFor === undefined ? (resource: KubeResource) => new KubeListerWatcher<KubeObject>({ kubeConfig, resource }) : undefined);
  const unenforcedObjects = reportSource === undefined ? undefined : new UnenforcedObjectsReporter({ listerWatcherFor: reportSource, registry, logger });

  const liveness = new Liveness({ logger });
  const livenessTimeout = (felixDefault: number): number => opts.livenessTimeoutMs ?? felixDefault;
  const livenessComponents: Disposable[] = [
    liveness.register('dataplane', { timeoutMs: livenessTimeout(DATAPLANE_LIVENESS_TIMEOUT_MS), pendingSince: () => driver.health().busySince }),
    liveness.register('calc-graph', { timeoutMs: livenessTimeout(CALC_GRAPH_LIVENESS_TIMEOUT_MS), pendingSince: () => calc.pendingSince() }),
    ...syncer.livenessProbes.map(({ name, probe }) => liveness.register(name, probe)),
  ];

  calc.onStatusUpdated('wait-for-datastore');
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) stop.abort();

  const done = (async (): Promise<AgentOutcome> => {
    const syncerRun = syncer.run(stop.signal);
    const flowsRun = deniedFlows?.run(stop.signal);
    const reportRun = unenforcedObjects?.run(stop.signal);
    const driverRun = driver.run(stop.signal).then(
      () => 'stopped' as const,
      (err: unknown) => {
        log.error({ err: (err as Error).message }, 'dataplane driver stopped by an unexpected error; stopping the agent');
        return 'failed' as const;
      },
    );
    const outcome = await Promise.race([driverRun, untilAborted(stop.signal).then(() => 'stopped' as const)]);
    stop.abort();
    await syncerRun;
    await driverRun;
    await flowsRun;
    await reportRun;
    calc.dispose();
    for (const c of livenessComponents) c[Symbol.dispose]();
    signal.removeEventListener('abort', onAbort);
    log.info({ outcome }, 'agent stopped; dataplane rules left in place');
    return outcome;
  })();

  return { ready, generations: () => ({ sent, applied }), live: () => liveness.check(), driver, done, ruleCounts: () => ruleCounters.recent() };
}
