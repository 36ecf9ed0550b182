/**
 * A controller that keeps generated objects ("targets") in step with the Kubernetes
 * objects they are derived from ("sources"): NetworkPolicy → knp.default.*, Namespace →
 * kns.*, ServiceAccount → ksa.*, Pod → WorkloadEndpoint.
 *
 * Keys are source keys (`ns/name` or `name`). Both informers feed the queue: a source
 * event enqueues its own key; a target event enqueues the key of the source it was built
 * from (`sourceKeyOf`), so a hand edit or deletion of a target is noticed and reverted,
 * and a target whose source is gone (an orphan) is deleted. `reconcile(key)`:
 *
 * 1. desired = `desired(source)` when the source exists, else nothing;
 * 2. each desired object whose cached copy differs (spec, labels, ownerReferences) is
 *    written with server-side apply;
 * 3. every cached target built from this key and not desired is deleted.
 *
 * Reads come from the informer caches; a stale cache costs at most an idempotent apply.
 * Every `sweepIntervalMs` (default 5 min, Calico's ReconcilerPeriod) all source keys and
 * all target-derived keys are enqueued again, so orphans left while the controllers were
 * down (or missed events) are repaired; at start-up the initial lists do the same.
 */
import type { Registry } from 'prom-client';

import { apiVersionOf, resourceOf } from '../api/kinds.ts';
import type { V3Resource } from '../api/types.ts';
import type { Conversion } from '../convert/conversions.ts';
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { metaNamespaceKey } from '../informers/object.ts';
import type { SharedIndexInformer } from '../informers/shared-index-informer.ts';
import { DeletedFinalStateUnknown } from '../informers/deleted-final-state-unknown.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { canonicalJson } from './canonical-json.ts';
import { Controller, type ReconcileResult } from './controller.ts';
import type { Writer, WrittenObject } from './object-writer.ts';

/** Calico kube-controllers: ReconcilerPeriod default 5m. */
export const DEFAULT_SWEEP_INTERVAL_MS = 5 * 60_000;

export interface MirrorControllerOptions<S extends KubeObject, T extends KubeObject> {
  name: string;
  source: SharedIndexInformer<S>;
  target: SharedIndexInformer<T>;
  /** The target's apiVersion and kind (list items need not carry them). */
  targetType: { apiVersion: string; kind: string };
  /** The source key `target` was generated from, or undefined when it is not this controller's. */
  sourceKeyOf(target: T): string | undefined;
  /** The objects `source` should produce (possibly none). May have side effects such as Events. */
  desired(source: S, key: string, log: Logger): WrittenObject[] | Promise<WrittenObject[]>;
  /** Called when the source is gone (to forget per-source state). */
  forgetSource?(key: string): void;
  /**
   * Set by a controller that shares its targets' names with other writers (automatic host
   * endpoints: a user may write `<node>-auto-hep` by hand). Then a cached target of a desired
   * name that `sourceKeyOf` does not claim is left alone and passed to `leaveForeign`, and every
   * write is conditional (optimistic concurrency): a missing target is created, never applied
   * over an object that appeared since the cache looked; an existing one is applied carrying its
   * cached resourceVersion; a delete carries its cached uid and resourceVersion as preconditions.
   * An object replaced or taken over meanwhile is thus never overwritten or deleted: the write
   * fails with a conflict and the key is retried, rate-limited, against the newer cache.
   * Unset: targets of a desired name are converged whoever wrote them, unconditionally.
   */
  leaveForeign?(target: T, log: Logger): void;
  writer: Writer;
  workers?: number;
  sweepIntervalMs?: number;
  clock?: Clock;
  registry?: Registry;
  logger?: Logger;
}

/**
 * What a mirror controller takes from its conversion-table entry (convert/conversions.ts): the
 * source and target informers, the target's apiVersion and kind, and the naming inverse — so
 * the controllers watch and write exactly the kinds the table converts between.
 */
export function mirrorOf(
  factory: InformerFactory,
  conversion: Pick<Conversion<never, V3Resource>, 'source' | 'target' | 'sourceKeyOf'>,
): Pick<MirrorControllerOptions<KubeObject, KubeObject>, 'source' | 'target' | 'targetType' | 'sourceKeyOf'> {
  return {
    source: factory.informerFor(resourceOf(conversion.source)),
    target: factory.informerFor(resourceOf(conversion.target)),
    targetType: { apiVersion: apiVersionOf(conversion.target), kind: conversion.target.kind },
    sourceKeyOf: (t) => conversion.sourceKeyOf(t),
  };
}

function targetKey(obj: { metadata?: { name?: string; namespace?: string } }): string {
  const ns = obj.metadata?.namespace;
  return ns === undefined || ns === '' ? (obj.metadata?.name ?? '') : `${ns}/${obj.metadata?.name ?? ''}`;
}

function labelsOf(obj: { metadata?: { labels?: Record<string, string> } }): Record<string, string> {
  return obj.metadata?.labels ?? {};
}

/** True when the cached object already matches what would be applied. */
export function converged(live: KubeObject & { spec?: unknown }, want: WrittenObject): boolean {
  if (canonicalJson(live.spec) !== canonicalJson(want.spec)) return false;
  if (canonicalJson(labelsOf(live)) !== canonicalJson(labelsOf(want))) return false;
  const wantRefs = want.metadata.ownerReferences ?? [];
  const liveRefs = (live.metadata?.['ownerReferences'] as unknown[] | undefined) ?? [];
  return canonicalJson(liveRefs) === canonicalJson(wantRefs);
}

export class MirrorController<S extends KubeObject, T extends KubeObject> {
  readonly controller: Controller;
  private readonly indexName: string;
  private readonly sweepIntervalMs: number;
  private readonly log: Logger;

  constructor(private readonly opts: MirrorControllerOptions<S, T>) {
    const { name, clock = realClock, logger = silentLogger, sweepIntervalMs = DEFAULT_SWEEP_INTERVAL_MS } = opts;
    this.sweepIntervalMs = sweepIntervalMs;
    this.log = logger.child({ component: 'controller', controller: name });
    this.indexName = `source:${name}`;
    opts.target.indexer.addIndexers({
      [this.indexName]: (t: T) => {
        const k = opts.sourceKeyOf(t);
        return k === undefined ? [] : [k];
      },
    });
    this.controller = new Controller({
      name,
      reconcile: (key, log) => this.reconcile(key, log),
      clock,
      logger,
      ...(opts.workers === undefined ? {} : { workers: opts.workers }),
      ...(opts.registry ? { registry: opts.registry } : {}),
    });
  }

  /** Registers the handlers and runs the workers and the sweep until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const q = this.controller.queue;
    const enqueueSource = (obj: S | DeletedFinalStateUnknown<S>): void => {
      try {
        q.add(metaNamespaceKey(obj));
      } catch (err) {
        this.log.warn({ err }, 'source object without a key ignored');
      }
    };
    const enqueueTarget = (obj: T | DeletedFinalStateUnknown<T>): void => {
      const t = obj instanceof DeletedFinalStateUnknown ? obj.obj : obj;
      if (t === undefined) return;
      const k = this.opts.sourceKeyOf(t);
      if (k !== undefined) q.add(k);
    };
    const regs = [
      this.opts.source.addEventHandler({ onAdd: enqueueSource, onUpdate: (_, n) => enqueueSource(n), onDelete: enqueueSource }),
      this.opts.target.addEventHandler({ onAdd: enqueueTarget, onUpdate: (_, n) => enqueueTarget(n), onDelete: enqueueTarget }),
    ];
    await this.controller.runWithSweeps(signal, { intervalMs: this.sweepIntervalMs, sweep: () => this.sweep(), handlers: regs });
  }

  /** Enqueues every source key and every key a target was derived from. */
  sweep(): void {
    const q = this.controller.queue;
    for (const k of this.opts.source.indexer.listKeys()) q.add(k);
    for (const k of this.opts.target.indexer.listIndexFuncValues(this.indexName)) q.add(k);
  }

  private async reconcile(key: string, log: Logger): Promise<ReconcileResult | void> {
    const source = this.opts.source.indexer.getByKey(key);
    let want: WrittenObject[] = [];
    if (source === undefined) this.opts.forgetSource?.(key);
    else want = await this.opts.desired(source, key, log);

    const conditional = this.opts.leaveForeign !== undefined;
    let requeue = false;
    const wanted = new Set<string>();
    for (const w of want) {
      const k = targetKey(w);
      wanted.add(k);
      const live = this.opts.target.indexer.getByKey(k) as (T & { spec?: unknown }) | undefined;
      if (live !== undefined && conditional && this.opts.sourceKeyOf(live) === undefined) {
        this.opts.leaveForeign?.(live, log);
        continue;
      }
      if (live !== undefined && converged(live, w)) continue;
      const subject = { kind: w.kind, namespace: w.metadata.namespace, name: w.metadata.name };
      if (!conditional) await this.opts.writer.apply(w);
      else if (live === undefined) {
        if (!(await this.opts.writer.createIfAbsent(w))) {
          // Written by someone since the cache looked: judged again once the cache has it.
          log.info(subject, 'exists but is not cached yet; retrying');
          requeue = true;
          continue;
        }
      } else {
        const resourceVersion = live.metadata?.resourceVersion;
        await this.opts.writer.apply({ ...w, metadata: { ...w.metadata, ...(resourceVersion === undefined ? {} : { resourceVersion }) } });
      }
      log.info(subject, live === undefined ? 'created' : 'updated');
    }
    for (const have of this.opts.target.indexer.byIndex(this.indexName, key)) {
      const k = targetKey(have);
      if (wanted.has(k)) continue;
      const name = have.metadata?.name ?? '';
      const namespace = have.metadata?.namespace;
      const ref = { ...this.opts.targetType, metadata: { name, ...(namespace === undefined ? {} : { namespace }) } };
      if (conditional) await this.opts.writer.delete(ref, { uid: have.metadata?.uid, resourceVersion: have.metadata?.resourceVersion });
      else await this.opts.writer.delete(ref);
      log.info({ kind: this.opts.targetType.kind, namespace, name }, 'deleted');
    }
    return requeue ? { requeue: true } : undefined;
  }
}
