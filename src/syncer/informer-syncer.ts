/**
 * The datastore side of Felix's syncer: one informer per kind-table row the process watches
 * (api/kinds.ts: the agent's and Typha's rows), turned into the update stream and sync status
 * the calc graph (and Typha's snapshot cache) consume.
 *
 * Guarantees:
 * - the status goes `resync-in-progress` when `run` starts the informers, and `in-sync` once
 *   every informer's initial list has been delivered to `callbacks` (never before: a consumer
 *   that programs nothing before in-sync never sees a partial view);
 * - every upsert carries its row's `apiVersion` and `kind` (list responses carry neither per
 *   item);
 * - an EndpointSlice upsert carries only what the calc graph reads of it
 *   (endpoint-slice-projection.ts), and so does a Node upsert (node-peer-projection.ts: name,
 *   labels, addresses), so a write that changes nothing else is a no-op downstream;
 * - a delete names (apiVersion, kind, namespace, name), also for a tombstone
 *   (`DeletedFinalStateUnknown`);
 * - a row with `fallbackVersions` is read at the first of its versions the API server serves
 *   (informers/served-version-lister-watcher.ts: ClusterNetworkPolicy at v1beta1, else v1alpha2),
 *   its objects carried as the row's version (the versions share one schema);
 * - a row marked `optional` whose resource the API server does not serve (404) at any version is
 *   an empty list, re-listed later (informers/optional-lister-watcher.ts): a cluster with older
 *   CRDs still syncs;
 * - `run` resolves after `signal` aborts and the informers have stopped.
 */
import { apiVersionOf, kindsWatchedBy, resourceOf, type KindRow } from '../api/kinds.ts';
import {
  DeletedFinalStateUnknown,
  InformerFactory,
  KubeListerWatcher,
  OptionalListerWatcher,
  resourceName,
  servedVersionListerWatcher,
  type KubeConfig,
  type KubeObject,
  type KubeResource,
  type ListerWatcher,
} from '../informers/index.ts';
import type { LivenessProbe } from '../runtime/liveness.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import type { AnyUpdate, SyncedObject, SyncerCallbacks, Update } from './update.ts';
import type { K8sEndpointSlice, K8sNode } from '../api/index.ts';
import { projectEndpointSlice } from './endpoint-slice-projection.ts';
import { projectNodeForPeers } from './node-peer-projection.ts';
import { untilAborted } from '../runtime/until-aborted.ts';

/** The kinds the agent lists and watches when it reads the API server itself (not through Typha). */
export const AGENT_RESOURCES: readonly KindRow[] = kindsWatchedBy('agent');

/** The kinds Typha lists and watches, to fan out to the agents. */
export const TYPHA_RESOURCES: readonly KindRow[] = kindsWatchedBy('typha');

export interface InformerSyncerOptions {
  /** Required unless `listerWatcherFor` is given. */
  readonly kubeConfig?: KubeConfig;
  /** Test seam: the source of each watched resource. @default a KubeListerWatcher on `kubeConfig` */
  readonly listerWatcherFor?: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /** The kind-table rows to watch. @default AGENT_RESOURCES */
  readonly resources?: readonly KindRow[];
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

function upsert(row: KindRow, obj: KubeObject): AnyUpdate {
  const body =
    row.group === 'discovery.k8s.io' && row.kind === 'EndpointSlice'
      ? projectEndpointSlice(obj as K8sEndpointSlice)
      : row.group === '' && row.kind === 'Node'
        ? projectNodeForPeers(obj as K8sNode)
        : obj;
  return { op: 'upsert', resource: { ...(body as object), apiVersion: apiVersionOf(row), kind: row.kind } as SyncedObject };
}

function deletion(row: KindRow, obj: KubeObject | DeletedFinalStateUnknown<KubeObject>): AnyUpdate {
  const { kind } = row;
  const apiVersion = apiVersionOf(row);
  if (obj instanceof DeletedFinalStateUnknown) {
    const [a, b] = obj.key.split('/');
    return b === undefined ? { op: 'delete', apiVersion, kind, name: a ?? '' } : { op: 'delete', apiVersion, kind, namespace: a ?? '', name: b };
  }
  const ns = obj.metadata?.namespace;
  return { op: 'delete', apiVersion, kind, name: obj.metadata?.name ?? '', ...(ns === undefined ? {} : { namespace: ns }) };
}

/**
 * `U` is what the watched rows make: `Update` (projectcalico.org/v3, the default) for the
 * agent's and Typha's rows, which is what the calc graph and Typha's cache read; a caller that
 * watches rows of other groups declares `AnyUpdate` and tells kinds apart by `apiVersion`.
 */
export class InformerSyncer<U extends AnyUpdate = Update> {
  readonly #factory: InformerFactory;
  readonly #informers: ReturnType<InformerFactory['informerFor']>[];
  readonly #callbacks: SyncerCallbacks<U>;
  readonly #log: Logger;

  constructor(opts: InformerSyncerOptions, callbacks: SyncerCallbacks<U>) {
    const { registry = newRegistry(), logger = silentLogger } = opts;
    this.#callbacks = callbacks;
    this.#log = logger.child({ component: 'informer-syncer' });
    const resources = opts.resources ?? AGENT_RESOURCES;
    const optional = new Set(resources.filter((r) => r.optional === true).map((r) => resourceName(resourceOf(r))));
    const fallbacks = new Map(resources.filter((r) => r.fallbackVersions !== undefined).map((r) => [resourceName(resourceOf(r)), r.fallbackVersions]));
    const kube = opts.listerWatcherFor ?? kubeListerWatcherFor(opts.kubeConfig);
    // The version the API server serves, where a row may be served at an older one only.
    const base = (resource: KubeResource): ListerWatcher<KubeObject> => servedVersionListerWatcher(resource, fallbacks.get(resourceName(resource)), kube, logger);
    this.#factory = new InformerFactory({
      listerWatcherFor: (resource) => (optional.has(resourceName(resource)) ? new OptionalListerWatcher(base(resource), { logger }) : base(resource)),
      registry,
      logger,
    });
    this.#informers = resources.map((row) => {
      const informer = this.#factory.informerFor<KubeObject>(resourceOf(row));
      informer.addEventHandler({
        onAdd: (obj) => callbacks.onUpdates([upsert(row, obj) as U]),
        onUpdate: (_old, obj) => callbacks.onUpdates([upsert(row, obj) as U]),
        onDelete: (obj) => callbacks.onUpdates([deletion(row, obj) as U]),
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
    await untilAborted(signal);
    await synced;
    await this.#factory.stop();
  }
}

function kubeListerWatcherFor(kubeConfig: KubeConfig | undefined): (resource: KubeResource) => ListerWatcher<KubeObject> {
  if (kubeConfig === undefined) throw new TypeError('InformerSyncer: kubeConfig is required unless listerWatcherFor is given');
  return (resource) => new KubeListerWatcher({ kubeConfig, resource });
}
