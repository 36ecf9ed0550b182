/**
 * SharedIndexInformer: one Reflector → DeltaFIFO → Indexer pipeline per resource, shared by
 * any number of event handlers (client-go `shared_informer.go`).
 *
 * Guarantees:
 * - the Indexer is updated before handlers are notified, so a handler that reads the cache
 *   sees at least the state it is told about;
 * - each handler gets its own buffer (`ProcessorListener`), so a slow handler never blocks
 *   the others or the cache;
 * - a handler added after `run()` started first receives `onAdd(obj, true)` for every
 *   object already cached;
 * - `hasSynced()` is true once the first list has been popped into the cache;
 *   `waitForCacheSync()` resolves then;
 * - a relist that finds an object unchanged (same resourceVersion), and a periodic resync,
 *   reach only handlers registered with `{resync: true}`;
 * - `livenessProbe` reports its list/watch loop to a `Liveness` (the Reflector's guarantee).
 */
import type { Registry } from 'prom-client';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { realClock } from '../runtime/clock.ts';
import type { LivenessProbe } from '../runtime/liveness.ts';
import { DeltaFIFO, FIFOClosedError, type Delta } from './delta-fifo.ts';
import { Indexer, type Indexers } from './indexer.ts';
import { InformerMetrics } from './informer-metrics.ts';
import type { ListerWatcher } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { ProcessorListener, type Notification, type ResourceEventHandler } from './processor-listener.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';

export interface HandlerRegistration {
  /** True once the informer synced and this handler processed every initial notification. */
  hasSynced(): boolean;
  /** Stops delivering to the handler. */
  dispose(): void;
}

export interface SharedIndexInformerOptions<T extends KubeObject>
  extends Omit<ReflectorOptions<T>, 'store' | 'metrics' | 'listerWatcher'> {
  listerWatcher: ListerWatcher<T>;
  /** @default { namespace: namespaceIndexFunc } is NOT added implicitly; pass what you need. */
  indexers?: Indexers<T>;
  /** Metrics go here when given. */
  registry?: Registry;
}

export class SharedIndexInformer<T extends KubeObject> {
  readonly indexer: Indexer<T>;
  readonly resource: string;
  private readonly fifo: DeltaFIFO<T>;
  private readonly reflector: Reflector<T>;
  private readonly listeners = new Set<ProcessorListener<T>>();
  private readonly log: Logger;
  private readonly metrics: InformerMetrics | undefined;
  private started = false;
  private syncWaiters: Array<() => void> = [];

  constructor(opts: SharedIndexInformerOptions<T>) {
    const { listerWatcher, indexers = {}, registry, logger = silentLogger, clock = realClock, ...reflectorOpts } = opts;
    this.resource = listerWatcher.resource;
    this.log = logger.child({ component: 'informer', resource: this.resource });
    this.metrics = registry === undefined ? undefined : new InformerMetrics(registry);
    this.indexer = new Indexer<T>({ indexers });
    this.fifo = new DeltaFIFO<T>({
      knownObjects: this.indexer,
      emitDeltaTypeReplaced: true,
      onSynced: () => {
        for (const w of this.syncWaiters.splice(0)) w();
      },
    });
    this.reflector = new Reflector<T>({
      ...reflectorOpts,
      clock,
      logger,
      listerWatcher,
      store: this.fifo,
      ...(this.metrics === undefined ? {} : { metrics: this.metrics }),
    });
  }

  /**
   * Registers a handler. With `resync: true` it also receives no-change updates (periodic
   * resync, and relisted objects whose resourceVersion did not move).
   */
  addEventHandler(handler: ResourceEventHandler<T>, opts: { resync?: boolean } = {}): HandlerRegistration {
    const listener = new ProcessorListener<T>(
      handler,
      opts.resync ?? false,
      this.log,
      () => this.metrics?.handlerErrors.inc({ resource: this.resource }),
      () => this.hasSynced(),
    );
    this.listeners.add(listener);
    if (this.started) {
      for (const obj of this.indexer.list()) listener.add({ type: 'add', obj, isInInitialList: true });
    }
    return {
      hasSynced: () => listener.hasSynced(),
      dispose: () => {
        listener.stop();
        this.listeners.delete(listener);
      },
    };
  }

  hasSynced(): boolean {
    return this.fifo.hasSynced();
  }

  /** The resourceVersion of the last list, event or bookmark the reflector applied. */
  get lastSyncResourceVersion(): string {
    return this.reflector.lastResourceVersion;
  }

  /**
   * The list/watch loop as a liveness component: it owes progress from the moment the loop
   * last turned, and is idle while stopped or backing off (Reflector `loopProgressAt`).
   */
  get livenessProbe(): LivenessProbe {
    const reflector = this.reflector;
    return { timeoutMs: reflector.livenessTimeoutMs, pendingSince: () => reflector.loopProgressAt };
  }

  /** Resolves true once synced, or false if `signal` aborts first. */
  waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    if (this.hasSynced()) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      });
    });
  }

  /** Resolves when every handler has drained its buffer (tests and benchmarks). */
  async whenHandlersIdle(): Promise<void> {
    await Promise.all([...this.listeners].map((l) => l.whenIdle()));
  }

  /** Runs the reflector and the delta processor until `signal` aborts. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.started) throw new Error(`informer ${this.resource}: run() called twice`);
    this.started = true;
    const untrack = this.metrics?.track(this.resource, {
      items: () => this.indexer.size,
      queueDepth: () => this.fifo.length,
      resourceVersionAgeSeconds: () => this.reflector.resourceVersionAgeMs() / 1000,
    });
    const onAbort = (): void => this.fifo.close();
    signal.addEventListener('abort', onAbort, { once: true });
    this.log.info('informer starting');
    try {
      await Promise.all([this.reflector.run(signal), this.processLoop()]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      untrack?.();
      this.log.info('informer stopped');
    }
  }

  private async processLoop(): Promise<void> {
    for (;;) {
      try {
        await this.fifo.pop((deltas, isInInitialList) => this.handleDeltas(deltas, isInInitialList));
      } catch (err) {
        if (err instanceof FIFOClosedError) return;
        this.log.error({ err }, 'delta processing failed');
      }
    }
  }

  private handleDeltas(deltas: readonly Delta<T>[], isInInitialList: boolean): void {
    for (const d of deltas) {
      if (d.type === 'Deleted') {
        this.indexer.delete(d.object);
        this.distribute({ type: 'delete', obj: d.object }, false);
        continue;
      }
      // Only Deleted deltas carry tombstones.
      const obj = d.object as T;
      const old = this.indexer.get(obj);
      if (old !== undefined) {
        const isResync =
          d.type === 'Sync' ||
          (d.type === 'Replaced' && old.metadata?.resourceVersion !== undefined && old.metadata.resourceVersion === obj.metadata?.resourceVersion);
        this.indexer.update(obj);
        this.distribute({ type: 'update', oldObj: old, newObj: obj }, isResync);
      } else {
        this.indexer.add(obj);
        this.distribute({ type: 'add', obj, isInInitialList }, false);
      }
    }
  }

  private distribute(n: Notification<T>, isResync: boolean): void {
    for (const l of this.listeners) {
      if (isResync && !l.wantsResync) continue;
      l.add(n);
    }
  }
}
