/**
 * InformerFactory: one SharedIndexInformer per resource, shared by every component of a
 * process (client-go `SharedInformerFactory`). Two controllers asking for `pods` get the
 * same informer, so the process holds one watch and one cache per resource.
 *
 * Informers requested after `start()` start immediately. `stop()` aborts them all and
 * resolves once each has returned.
 */
import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import type { Clock } from '../runtime/clock.ts';
import type { LivenessProbe } from '../runtime/liveness.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Indexers } from './indexer.ts';
import { KubeListerWatcher, resourceName, type KubeConfig, type KubeResource } from './kube-lister-watcher.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { SharedIndexInformer } from './shared-index-informer.ts';

export interface InformerFactoryOptions {
  /** Builds the source for a resource. @default a KubeListerWatcher on `kubeConfig` */
  listerWatcherFor?: (resource: KubeResource) => ListerWatcher<KubeObject>;
  /** Required unless `listerWatcherFor` is given. */
  kubeConfig?: KubeConfig;
  registry?: Registry;
  logger?: Logger;
  clock?: Clock;
  /** Resync period for every informer; 0 disables. @default 0 */
  resyncPeriodMs?: number;
}

export class InformerFactory {
  private readonly informers = new Map<string, SharedIndexInformer<KubeObject>>();
  private readonly runs: Promise<void>[] = [];
  private readonly listerWatcherFor: (resource: KubeResource) => ListerWatcher<KubeObject>;
  private controller: AbortController | undefined;

  constructor(private readonly opts: InformerFactoryOptions) {
    const { listerWatcherFor, kubeConfig } = opts;
    if (listerWatcherFor !== undefined) {
      this.listerWatcherFor = listerWatcherFor;
    } else if (kubeConfig !== undefined) {
      this.listerWatcherFor = (resource) => new KubeListerWatcher({ kubeConfig, resource });
    } else {
      throw new TypeError('InformerFactory: pass kubeConfig or listerWatcherFor');
    }
  }

  /**
   * The shared informer for `resource`. `indexers` are added to it (an index name already
   * present is an error, so two components must not define the same index differently).
   */
  informerFor<T extends KubeObject>(resource: KubeResource, indexers: Indexers<T> = {}): SharedIndexInformer<T> {
    const name = resourceName(resource);
    let informer = this.informers.get(name);
    if (informer === undefined) {
      informer = new SharedIndexInformer<KubeObject>({
        listerWatcher: this.listerWatcherFor(resource),
        ...(this.opts.registry ? { registry: this.opts.registry } : {}),
        ...(this.opts.logger ? { logger: this.opts.logger } : {}),
        ...(this.opts.clock ? { clock: this.opts.clock } : {}),
        resyncPeriodMs: this.opts.resyncPeriodMs ?? 0,
      });
      this.informers.set(name, informer);
      if (this.controller !== undefined) this.runs.push(informer.run(this.controller.signal));
    }
    const fresh = Object.fromEntries(Object.entries(indexers).filter(([n]) => !informer.indexer.indexerNames().includes(n)));
    informer.indexer.addIndexers(fresh as Indexers<KubeObject>);
    return informer as unknown as SharedIndexInformer<T>;
  }

  /** One liveness probe per informer created so far (its list/watch loop), named `informer <resource>`. */
  livenessProbes(): Array<{ readonly name: string; readonly probe: LivenessProbe }> {
    return [...this.informers.values()].map((i) => ({ name: `informer ${i.resource}`, probe: i.livenessProbe }));
  }

  /** Starts every informer created so far, and any created later. */
  start(): void {
    if (this.controller !== undefined) return;
    this.controller = new AbortController();
    // Every informer's reflector and watch listen on this one signal.
    setMaxListeners(0, this.controller.signal);
    for (const informer of this.informers.values()) this.runs.push(informer.run(this.controller.signal));
  }

  /** Resolves true once every informer has synced, false if `signal` aborts first. */
  async waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    const results = await Promise.all([...this.informers.values()].map((i) => i.waitForCacheSync(signal)));
    return results.every(Boolean);
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    await Promise.all(this.runs);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
