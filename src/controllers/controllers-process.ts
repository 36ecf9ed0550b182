/**
 * Everything `tessera controllers` runs, as one function tests can call in-process:
 * informers (started at once, so a standby replica keeps warm caches and reports ready),
 * leader election, and — only while leading — the default tiers, the tier controller
 * (finalizer, default tiers re-created) and the five mirror controllers (policy converter,
 * namespace and service-account profiles, pod → WorkloadEndpoint, automatic host endpoints). `signal` stops it all;
 * the promise resolves 'stopped' when everything has stopped, or 'lost' as soon as
 * leadership was lost: the controllers have been told to stop, but a write may still be in
 * flight, so the process must exit (non-zero) at once.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';

import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';

import { InformerFactory } from '../informers/informer-factory.ts';
import { KubeListerWatcher, type KubeResource } from '../informers/kube-lister-watcher.ts';
import type { ListerWatcher } from '../informers/lister-watcher.ts';
import { kindRow } from '../api/kinds.ts';
import { projectNode } from '../convert/node-projection.ts';
import { projectPod } from '../convert/pod-projection.ts';
import { realClock, sleep, type Clock } from '../runtime/clock.ts';
import { Liveness, type LivenessReport } from '../runtime/liveness.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { newAutoHostEndpointController } from './auto-host-endpoint-controller.ts';
import { LeaderElector } from './leader-election.ts';
import type { MirrorController } from './mirror-controller.ts';
import { ObjectWriter, type Writer } from './object-writer.ts';
import { newPolicyConverterController, type ConvertFunc } from './policy-converter-controller.ts';
import { newNamespaceProfileController, newServiceAccountProfileController } from './profile-controllers.ts';
import { KubeTierApi } from './tier-api.ts';
import { TierController } from './tier-controller.ts';
import { ensureDefaultTiers } from './tier-reconciler.ts';
import { ProjectingListerWatcher } from './projecting-lister-watcher.ts';
import { newWorkloadEndpointController } from './workload-endpoint-controller.ts';
import type { WorkloadInterfaceNaming } from '../convert/workload-endpoint-builder.ts';
import type { KubeObject } from '../informers/object.ts';

export interface ControllersOptions {
  kubeConfig: KubeConfig;
  /** Where the leader-election Lease lives (the controllers' own namespace). */
  leaseNamespace: string;
  /** @default 'tessera-controllers' */
  leaseName?: string;
  /** @default `<hostname>_<random>` */
  identity?: string;
  /** Pod → WorkloadEndpoint (off when Calico's CNI writes endpoints). @default true */
  workloadEndpoints?: boolean;
  /**
   * Whether endpoints name their host-side interface (workload-endpoint-builder.ts). The
   * controllers write endpoints only when the CNI is not Calico's, so by default they do not
   * guess Calico's `cali…` name: the agent resolves each interface from the pod's host route.
   * @default 'none'
   */
  workloadInterfaceNaming?: WorkloadInterfaceNaming;
  /**
   * Automatic host endpoints (auto-host-endpoint-controller.ts): one `<node>-auto-hep` per Node
   * when true; when false, the ones it made are removed. @default false
   */
  autoHostEndpoints?: boolean;
  /** Lease timing (client-go defaults 15 s / 10 s / 2 s). */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Orphan sweep period. @default 300_000 */
  sweepIntervalMs?: number;
  /** The global API write throttle (ObjectWriter). @default 50 */
  writesPerSecond?: number;
  /** Workers per controller. @default 2 */
  workers?: number;
  registry?: Registry;
  logger?: Logger;
  clock?: Clock;
  /** Replaces the NetworkPolicy conversion (tests only). @default convertNetworkPolicy */
  convert?: ConvertFunc;
}

export interface RunningControllers {
  /**
   * 'stopped' after `signal`, once everything has stopped; 'lost' as soon as the leadership
   * term ended (LeaderElector.run), with the informers stopped but a write possibly still in
   * flight — exit the process.
   */
  readonly done: Promise<'stopped' | 'lost'>;
  readonly identity: string;
  isLeader(): boolean;
  /** Informer caches synced. */
  ready(): boolean;
  /** Whether every informer's list/watch loop made progress within its bound (for /livez). */
  live(): LivenessReport;
  readonly registry: Registry;
}

const PODS = kindRow('pods');
const NODES = kindRow('nodes');

/** The source of each resource: pods and nodes are projected to the fields the controllers read. */
export function controllersListerWatcher(kubeConfig: KubeConfig, resource: KubeResource): ListerWatcher<KubeObject> {
  const lw = new KubeListerWatcher<KubeObject>({ kubeConfig, resource });
  if (resource.group === PODS.group && resource.plural === PODS.plural) return new ProjectingListerWatcher(lw, projectPod);
  if (resource.group === NODES.group && resource.plural === NODES.plural) return new ProjectingListerWatcher(lw, projectNode);
  return lw;
}

type Common = Parameters<typeof newNamespaceProfileController>[2];

/**
 * The mirror controllers `tessera controllers` runs: the policy converter, namespace and
 * service-account profiles, (unless turned off) pod → WorkloadEndpoint, and automatic host
 * endpoints — always run: switched off, it removes the ones it made.
 */
export function buildControllers(
  factory: InformerFactory,
  writer: Writer,
  opts: Common & { workloadEndpoints?: boolean; workloadInterfaceNaming?: WorkloadInterfaceNaming; autoHostEndpoints?: boolean; convert?: ConvertFunc } = {},
): MirrorController<KubeObject, KubeObject>[] {
  const { workloadEndpoints = true, workloadInterfaceNaming = 'none', autoHostEndpoints = false, convert, ...common } = opts;
  return [
    newPolicyConverterController(factory, writer, common, convert),
    newNamespaceProfileController(factory, writer, common),
    newServiceAccountProfileController(factory, writer, common),
    ...(workloadEndpoints ? [newWorkloadEndpointController(factory, writer, common, { interfaceNaming: workloadInterfaceNaming })] : []),
    newAutoHostEndpointController(factory, writer, common, { enabled: autoHostEndpoints }),
  ];
}

export function startControllers(opts: ControllersOptions, signal: AbortSignal): RunningControllers {
  const {
    kubeConfig,
    leaseNamespace,
    leaseName = 'tessera-controllers',
    identity = `${hostname()}_${randomBytes(4).toString('hex')}`,
    workloadEndpoints = true,
    workers = 2,
    registry = newRegistry(),
    logger = silentLogger,
    clock = realClock,
  } = opts;
  const log = logger.child({ component: 'controllers', identity });
  setMaxListeners(0, signal);
  const factory = new InformerFactory({ listerWatcherFor: (resource) => controllersListerWatcher(kubeConfig, resource), registry, logger, clock });
  const writer = new ObjectWriter({ kubeConfig, ...(opts.writesPerSecond === undefined ? {} : { writesPerSecond: opts.writesPerSecond }) });
  const common = {
    workers,
    registry,
    logger,
    clock,
    ...(opts.sweepIntervalMs === undefined ? {} : { sweepIntervalMs: opts.sweepIntervalMs }),
  };
  const controllers = buildControllers(factory, writer, {
    ...common,
    workloadEndpoints,
    ...(opts.workloadInterfaceNaming === undefined ? {} : { workloadInterfaceNaming: opts.workloadInterfaceNaming }),
    autoHostEndpoints: opts.autoHostEndpoints ?? false,
    ...(opts.convert ? { convert: opts.convert } : {}),
  });
  // Default tiers kept present, and Tiers kept while policies name them (tier-controller.ts).
  const tiers = new TierController({ factory, writer, api: new KubeTierApi({ kubeConfig }), registry, logger, clock, ...(opts.sweepIntervalMs === undefined ? {} : { sweepIntervalMs: opts.sweepIntervalMs }) });
  const liveness = new Liveness({ logger });
  for (const { name, probe } of factory.livenessProbes()) liveness.register(name, probe);
  let synced = false;
  factory.start();
  void factory.waitForCacheSync(signal).then((ok) => {
    synced = ok;
    if (ok) log.info('informer caches synced');
  });

  const elector = new LeaderElector({
    kubeConfig,
    namespace: leaseNamespace,
    name: leaseName,
    identity,
    clock,
    logger,
    ...(opts.leaseDurationMs === undefined ? {} : { leaseDurationMs: opts.leaseDurationMs }),
    ...(opts.renewDeadlineMs === undefined ? {} : { renewDeadlineMs: opts.renewDeadlineMs }),
    ...(opts.retryPeriodMs === undefined ? {} : { retryPeriodMs: opts.retryPeriodMs }),
  });

  const lead = async (leaderSignal: AbortSignal): Promise<void> => {
    if (!(await factory.waitForCacheSync(leaderSignal))) return;
    // Tiers first: a policy in a missing tier would be enforced after every existing tier.
    // Retried until written or no longer leading.
    for (;;) {
      try {
        await ensureDefaultTiers(writer, log);
        break;
      } catch (err) {
        log.warn({ err }, 'creating the default tiers failed; retrying');
        await sleep(clock, 2_000, leaderSignal).catch(() => undefined);
        if (leaderSignal.aborted) return;
      }
    }
    log.info({ controllers: [...controllers.map((c) => c.controller.name), tiers.controller.name] }, 'starting controllers');
    await Promise.all([...controllers.map((c) => c.run(leaderSignal)), tiers.run(leaderSignal)]);
    await writer.idle();
  };

  const done = (async (): Promise<'stopped' | 'lost'> => {
    try {
      return await elector.run(signal, lead);
    } finally {
      await factory.stop();
      log.info('controllers stopped');
    }
  })();

  return {
    done,
    identity,
    isLeader: () => elector.isLeader(),
    ready: () => synced,
    live: () => liveness.check(),
    registry,
  };
}
