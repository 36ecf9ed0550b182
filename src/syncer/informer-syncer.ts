/**
 * The datastore side of Felix's syncer: one informer per projectcalico.org/v3 kind the agent
 * needs, turned into the update stream and sync status the calc graph (and Typha's snapshot
 * cache) consume.
 *
 * Guarantees:
 * - the status goes `resync-in-progress` when `run` starts the informers, and `in-sync` once
 *   every informer's initial list has been delivered to `callbacks` (never before: a consumer
 *   that programs nothing before in-sync never sees a partial view);
 * - every upsert carries `apiVersion` and `kind` (list responses carry neither per item);
 * - a delete names (kind, namespace, name), also for a tombstone (`DeletedFinalStateUnknown`);
 * - `run` resolves after `signal` aborts and the informers have stopped.
 */
import type { KubeConfig } from '@kubernetes/client-node';

import type { V3Kind } from '../api/types.ts';
import type { StagedKind } from '../api/staged.ts';
import { DeletedFinalStateUnknown, InformerFactory, KubeListerWatcher, OptionalListerWatcher, resourceName, type KubeObject, type KubeResource, type ListerWatcher } from '../informers/index.ts';
import type { LivenessProbe } from '../runtime/liveness.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import type { SyncerCallbacks, Update } from './update.ts';

/** The v3 kinds the agent watches, with their resources (all `projectcalico.org/v3`). */
/** `optional`: the resource may not be served (its CRD not installed); then it is an empty list (optional-lister-watcher.ts). */
export const AGENT_RESOURCES: ReadonlyArray<{ readonly kind: V3Kind | StagedKind; readonly resource: KubeResource; readonly optional?: boolean }> = [
  { kind: 'Tier', resource: { group: 'projectcalico.org', version: 'v3', plural: 'tiers' } },
  { kind: 'Profile', resource: { group: 'projectcalico.org', version: 'v3', plural: 'profiles' } },
  { kind: 'GlobalNetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'globalnetworkpolicies' } },
  { kind: 'NetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies' } },
  { kind: 'WorkloadEndpoint', resource: { group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' } },
  { kind: 'NetworkSet', resource: { group: 'projectcalico.org', version: 'v3', plural: 'networksets' } },
  { kind: 'GlobalNetworkSet', resource: { group: 'projectcalico.org', version: 'v3', plural: 'globalnetworksets' } },
  // Counted on side chains that never drop, never enforced (calc/policy-sorter.ts).
  // Calico 3.30's kinds: a cluster with older CRDs must still get its policy enforced.
  { kind: 'StagedNetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'stagednetworkpolicies' }, optional: true },
  { kind: 'StagedGlobalNetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'stagedglobalnetworkpolicies' }, optional: true },
  { kind: 'StagedKubernetesNetworkPolicy', resource: { group: 'projectcalico.org', version: 'v3', plural: 'stagedkubernetesnetworkpolicies' }, optional: true },
];

export interface InformerSyncerOptions {
  /** Required unless `listerWatcherFor` is given. */
  readonly kubeConfig?: KubeConfig;
  /** Test seam: the source of each watched resource. @default a KubeListerWatcher on `kubeConfig` */
  readonly listerWatcherFor?: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /** @default AGENT_RESOURCES */
  readonly resources?: typeof AGENT_RESOURCES;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

function upsert(kind: V3Kind | StagedKind, obj: KubeObject): Update {
  return { op: 'upsert', resource: { ...(obj as object), apiVersion: 'projectcalico.org/v3', kind } as never };
}

function deletion(kind: V3Kind | StagedKind, obj: KubeObject | DeletedFinalStateUnknown<KubeObject>): Update {
  if (obj instanceof DeletedFinalStateUnknown) {
    const [a, b] = obj.key.split('/');
    return b === undefined ? { op: 'delete', kind, name: a ?? '' } : { op: 'delete', kind, namespace: a ?? '', name: b };
  }
  const ns = obj.metadata?.namespace;
  return { op: 'delete', kind, name: obj.metadata?.name ?? '', ...(ns === undefined ? {} : { namespace: ns }) };
}

export class InformerSyncer {
  readonly #factory: InformerFactory;
  readonly #informers: ReturnType<InformerFactory['informerFor']>[];
  readonly #callbacks: SyncerCallbacks;
  readonly #log: Logger;

  constructor(opts: InformerSyncerOptions, callbacks: SyncerCallbacks) {
    const { registry = newRegistry(), logger = silentLogger } = opts;
    this.#callbacks = callbacks;
    this.#log = logger.child({ component: 'informer-syncer' });
    const resources = opts.resources ?? AGENT_RESOURCES;
    const optional = new Set(resources.filter((r) => r.optional === true).map((r) => resourceName(r.resource)));
    const base = opts.listerWatcherFor ?? kubeListerWatcherFor(opts.kubeConfig);
    this.#factory = new InformerFactory({
      listerWatcherFor: (resource) => (optional.has(resourceName(resource)) ? new OptionalListerWatcher(base(resource), { logger }) : base(resource)),
      registry,
      logger,
    });
    this.#informers = resources.map(({ kind, resource }) => {
      const informer = this.#factory.informerFor<KubeObject>(resource);
      informer.addEventHandler({
        onAdd: (obj) => callbacks.onUpdates([upsert(kind, obj)]),
        onUpdate: (_old, obj) => callbacks.onUpdates([upsert(kind, obj)]),
        onDelete: (obj) => callbacks.onUpdates([deletion(kind, obj)]),
      });
      return informer;
    });
  }

  /** One liveness probe per informer's list/watch loop, named `informer <resource>`. */
  get livenessProbes(): ReadonlyArray<{ readonly name: string; readonly probe: LivenessProbe }> {
    return this.#factory.livenessProbes();
  }

  /** Starts the informers, reports in-sync once all have listed, and stops them when `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.#factory.start();
    this.#callbacks.onStatusUpdated('resync-in-progress');
    const synced = (async (): Promise<void> => {
      const all = await Promise.all(this.#informers.map((i) => i.waitForCacheSync(signal)));
      if (!all.every(Boolean)) return;
      await Promise.all(this.#informers.map((i) => i.whenHandlersIdle()));
      if (signal.aborted) return;
      this.#log.info('informers synced: in-sync');
      this.#callbacks.onStatusUpdated('in-sync');
    })();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await synced;
    await this.#factory.stop();
  }
}

function kubeListerWatcherFor(kubeConfig: KubeConfig | undefined): (resource: KubeResource) => ListerWatcher<KubeObject> {
  if (kubeConfig === undefined) throw new TypeError('InformerSyncer: kubeConfig is required unless listerWatcherFor is given');
  return (resource) => new KubeListerWatcher({ kubeConfig, resource });
}
