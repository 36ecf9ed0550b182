/**
 * Says so, per object, when the cluster holds objects of a policy kind Tessera does not enforce
 * (api/unenforced-kinds.ts): an AdminNetworkPolicy's rules would hold under Calico 3.29–3.31
 * and do not hold here, so the gap must never be silent:
 *
 * - each such object is logged (warn) when it appears, and again when its spec changes, with
 *   kind, namespace, name and why (`NOT ENFORCED: …`); its deletion is logged at info;
 * - `tessera_unenforced_objects{kind}` is the number of such objects the cluster holds now.
 *
 * It lists and watches those kinds only to report them — the component the issue that
 * enforces a kind replaces. A kind the API server does not serve (its CRD not installed) is
 * an empty list, re-checked later (`OptionalListerWatcher`). Watched: `UNENFORCED_RESOURCES`.
 */
import { Gauge } from 'prom-client';

import { describeUnenforced, UNENFORCED_RESOURCES, unenforcedObject } from '../api/unenforced-kinds.ts';
import { OptionalListerWatcher } from '../informers/optional-lister-watcher.ts';
import type { KubeResource } from '../informers/kube-lister-watcher.ts';
import type { ListerWatcher } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { DeletedFinalStateUnknown } from '../informers/deleted-final-state-unknown.ts';
import { SharedIndexInformer } from '../informers/shared-index-informer.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate, newRegistry, type Registry } from '../runtime/metrics.ts';

export interface UnenforcedObjectsReporterOptions {
  /** The source of each resource (the agent's `KubeListerWatcher` factory). */
  readonly listerWatcherFor: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /** @default a fresh registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
  /** How long a watch of an unserved resource waits before it is listed again. @default 60_000 */
  readonly recheckMs?: number;
}

export class UnenforcedObjectsReporter {
  private readonly log: Logger;
  private readonly gauge: Gauge<'kind'>;
  private readonly informers: Array<SharedIndexInformer<KubeObject>> = [];

  constructor(opts: UnenforcedObjectsReporterOptions) {
    const { listerWatcherFor, registry = newRegistry(), logger = silentLogger, recheckMs = 60_000 } = opts;
    this.log = logger.child({ component: 'unenforced-objects' });
    this.gauge = getOrCreate(
      registry,
      'tessera_unenforced_objects',
      () =>
        new Gauge({
          name: 'tessera_unenforced_objects',
          help: 'Objects of a policy kind Tessera does not enforce (AdminNetworkPolicy, BaselineAdminNetworkPolicy) that the cluster holds, by kind: their policy does not hold.',
          labelNames: ['kind'] as const,
          registers: [registry],
        }),
    );
    for (const { resource, apiVersion, kind } of UNENFORCED_RESOURCES) {
      this.gauge.set({ kind }, 0);
      const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: new OptionalListerWatcher(listerWatcherFor(resource), { logger, recheckMs }), logger });
      const typed = (o: KubeObject): KubeObject => ({ ...o, apiVersion, kind });
      const count = (): void => this.gauge.set({ kind }, informer.indexer.list().length);
      informer.addEventHandler({
        onAdd: (o) => {
          this.warn(typed(o));
          count();
        },
        onUpdate: (old, o) => {
          if (JSON.stringify((old as { spec?: unknown }).spec) !== JSON.stringify((o as { spec?: unknown }).spec)) this.warn(typed(o));
          count();
        },
        onDelete: (o) => {
          const obj = o instanceof DeletedFinalStateUnknown ? o.obj : o;
          if (obj !== undefined) this.log.info({ kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name }, 'object of a kind Tessera does not enforce deleted');
          count();
        },
      });
      this.informers.push(informer);
    }
  }

  /** Lists and watches until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all(this.informers.map((i) => i.run(signal)));
  }

  private warn(o: KubeObject): void {
    const u = unenforcedObject(o);
    if (u === undefined) return;
    this.log.warn({ kind: u.kind, namespace: u.namespace, name: u.name }, describeUnenforced(u));
  }
}
