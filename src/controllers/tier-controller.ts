/**
 * The tier controller: keeps the default tiers present, and keeps every Tier from being
 * removed while a policy still names it.
 *
 * Deleting a Tier that holds policies would move them after every existing tier (the calc
 * graph orders a tier without a Tier object last): a Deny meant to decide first would decide
 * last, after the allows it overrides. Calico's API server refuses such a delete; with CRDs an
 * admission policy cannot see other objects, so — as Calico's own kube-controllers do — the
 * controllers put the `projectcalico.org/tier-controller` finalizer on every Tier and remove
 * it only when no NetworkPolicy or GlobalNetworkPolicy names the tier. A Tier being deleted
 * keeps its spec and its place in the order until it is gone (the calc graph ignores
 * deletionTimestamp).
 *
 * reconcile(name), keyed by tier name:
 * - absent: a well-known tier (`default`, `kube-admin`, `kube-baseline`) is created again,
 *   with a warning; another tier is done with;
 * - present, not being deleted: the finalizer is added if missing;
 * - being deleted, with the finalizer: the policies naming it are looked up in the cache and,
 *   if the cache has none, confirmed by a live list (tier-api.ts says why). While any exist
 *   the deletion is held: logged once per change of the set of policies (which ones), and
 *   counted in `tessera_controllers_tier_deletion_held_policies{tier}`. When none is left the
 *   finalizer is removed and the API server finishes the delete;
 * - being deleted without the finalizer: nothing to hold (none may be added now).
 *
 * Queue triggers: every Tier event; every policy event, for the tier it names before and
 * after (so a deleted or moved policy releases its old tier); at start and every
 * `sweepIntervalMs`, every cached tier and every well-known name.
 *
 * What it cannot close: a policy created in the moment between the live list and the
 * finalizer's removal; and a tier deleted before the controllers first saw it (no finalizer
 * yet), or deleted while the finalizer was stripped by hand.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

import { kindRow, resourceOf } from '../api/kinds.ts';
import { WELL_KNOWN_TIERS } from '../api/tiers.ts';
import { DeletedFinalStateUnknown } from '../informers/deleted-final-state-unknown.ts';
import type { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import type { SharedIndexInformer } from '../informers/shared-index-informer.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { getOrCreate, newRegistry } from '../runtime/metrics.ts';
import { Controller } from './controller.ts';
import { DEFAULT_SWEEP_INTERVAL_MS } from './mirror-controller.ts';
import type { Writer } from './object-writer.ts';
import { TIERED_POLICIES, type PolicyRef, type TierApi } from './tier-api.ts';
import { defaultTiers } from '../convert/default-tiers.ts';
import { defaultTierToCreate, policyTier, TIER_FINALIZER } from './tier-reconciler.ts';

export const TIER_CONTROLLER = 'tiers';

/** How many policy names a "deletion held" log line lists (the count is always given). */
const LOGGED_POLICIES = 20;

const BY_TIER = 'tier';

export interface TierControllerOptions {
  factory: InformerFactory;
  /** Creates missing default tiers. */
  writer: Writer;
  /** Finalizer patches and the live policy list. */
  api: TierApi;
  /** @default 1 */
  workers?: number;
  /** Period of the full re-enqueue. @default DEFAULT_SWEEP_INTERVAL_MS (5 min) */
  sweepIntervalMs?: number;
  clock?: Clock;
  /** @default a private registry */
  registry?: Registry;
  /** @default silentLogger */
  logger?: Logger;
}

interface TierObject extends KubeObject {
  spec?: unknown;
}

function describePolicy(p: PolicyRef): string {
  return p.namespace === undefined ? `${p.kind} ${p.name}` : `${p.kind} ${p.namespace}/${p.name}`;
}

function unwrap<T>(obj: T | DeletedFinalStateUnknown<T>): T | undefined {
  return obj instanceof DeletedFinalStateUnknown ? obj.obj : obj;
}

export class TierController {
  readonly controller: Controller;
  private readonly tiers: SharedIndexInformer<TierObject>;
  private readonly policies: ReadonlyArray<{ kind: PolicyRef['kind']; informer: SharedIndexInformer<TierObject> }>;
  private readonly writer: Writer;
  private readonly api: TierApi;
  private readonly sweepIntervalMs: number;
  private readonly held: Gauge<'tier'>;
  private readonly recreated: Counter<'tier'>;
  /** tier → the sorted policy list last logged as holding its deletion. */
  private readonly heldBy = new Map<string, string>();

  constructor(opts: TierControllerOptions) {
    const { factory, writer, api, clock = realClock, registry = newRegistry(), logger = silentLogger, sweepIntervalMs = DEFAULT_SWEEP_INTERVAL_MS } = opts;
    this.writer = writer;
    this.api = api;
    this.sweepIntervalMs = sweepIntervalMs;
    const byTier = { [BY_TIER]: (p: TierObject) => [policyTier(p)] };
    this.tiers = factory.informerFor<TierObject>(resourceOf(kindRow('tiers.projectcalico.org')));
    this.policies = TIERED_POLICIES.map(({ kind, row }) => ({ kind, informer: factory.informerFor<TierObject>(resourceOf(row), byTier) }));
    this.held = getOrCreate(
      registry,
      'tessera_controllers_tier_deletion_held_policies',
      () =>
        new Gauge({
          name: 'tessera_controllers_tier_deletion_held_policies',
          help: 'Policies naming a Tier whose deletion is held by the tier finalizer, per tier (absent when no deletion is held).',
          labelNames: ['tier'] as const,
          registers: [registry],
        }),
    ) as Gauge<'tier'>;
    this.recreated = getOrCreate(
      registry,
      'tessera_controllers_default_tiers_recreated_total',
      () =>
        new Counter({
          name: 'tessera_controllers_default_tiers_recreated_total',
          help: 'Default tiers (default, kube-admin, kube-baseline) created again after going missing.',
          labelNames: ['tier'] as const,
          registers: [registry],
        }),
    ) as Counter<'tier'>;
    this.controller = new Controller({
      name: TIER_CONTROLLER,
      reconcile: (key, log) => this.reconcile(key, log),
      clock,
      logger,
      registry,
      ...(opts.workers === undefined ? {} : { workers: opts.workers }),
    });
  }

  /** Registers the handlers and runs the workers and the sweep until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const q = this.controller.queue;
    const enqueueTier = (obj: TierObject | DeletedFinalStateUnknown<TierObject>): void => {
      const name = obj instanceof DeletedFinalStateUnknown ? obj.key : obj.metadata?.name;
      if (name !== undefined && name !== '') q.add(name);
    };
    const enqueuePolicyTier = (obj: TierObject | DeletedFinalStateUnknown<TierObject>): void => {
      const p = unwrap(obj);
      if (p !== undefined) q.add(policyTier(p));
    };
    const regs = [
      this.tiers.addEventHandler({ onAdd: enqueueTier, onUpdate: (_, n) => enqueueTier(n), onDelete: enqueueTier }),
      ...this.policies.map(({ informer }) =>
        informer.addEventHandler({
          onAdd: enqueuePolicyTier,
          onUpdate: (o, n) => {
            enqueuePolicyTier(o);
            enqueuePolicyTier(n);
          },
          onDelete: enqueuePolicyTier,
        }),
      ),
    ];
    this.sweep();
    await this.controller.runWithSweeps(signal, { intervalMs: this.sweepIntervalMs, sweep: () => this.sweep(), handlers: regs });
  }

  /** Enqueues every cached tier and every well-known tier name. */
  sweep(): void {
    const q = this.controller.queue;
    for (const k of this.tiers.indexer.listKeys()) q.add(k);
    for (const t of WELL_KNOWN_TIERS) q.add(t.name);
  }

  private async reconcile(name: string, log: Logger): Promise<void> {
    const tier = this.tiers.indexer.getByKey(name);
    if (tier === undefined) {
      this.release(name);
      const want = defaultTiers().find((t) => t.metadata.name === name);
      if (want !== undefined && (await this.writer.createIfAbsent(defaultTierToCreate(want)))) {
        this.recreated.inc({ tier: name });
        log.warn({ kind: 'Tier', name }, 'default tier was missing; created it again');
      }
      return;
    }
    const meta = tier.metadata ?? {};
    const finalizers = Array.isArray(meta['finalizers']) ? (meta['finalizers'] as string[]) : [];
    const resourceVersion = meta.resourceVersion ?? '';
    const deleting = meta['deletionTimestamp'] !== undefined && meta['deletionTimestamp'] !== null;
    if (!deleting) {
      this.release(name);
      if (finalizers.includes(TIER_FINALIZER)) return;
      await this.api.setFinalizers(name, resourceVersion, [...finalizers, TIER_FINALIZER]);
      log.info({ kind: 'Tier', name }, 'added the tier finalizer');
      return;
    }
    if (!finalizers.includes(TIER_FINALIZER)) {
      this.release(name);
      return;
    }
    let holders = this.cachedPolicies(name);
    if (holders.length === 0) holders = await this.api.listPoliciesInTier(name);
    if (holders.length > 0) {
      this.hold(name, holders, log);
      return;
    }
    await this.api.setFinalizers(
      name,
      resourceVersion,
      finalizers.filter((f) => f !== TIER_FINALIZER),
    );
    this.release(name);
    log.info({ kind: 'Tier', name }, 'no policy names the tier any more: removed the finalizer, its deletion proceeds');
  }

  private cachedPolicies(tier: string): PolicyRef[] {
    const out: PolicyRef[] = [];
    for (const { kind, informer } of this.policies) {
      for (const p of informer.indexer.byIndex(BY_TIER, tier)) {
        const namespace = p.metadata?.namespace;
        out.push({ kind, name: p.metadata?.name ?? '', ...(namespace === undefined || namespace === '' ? {} : { namespace }) });
      }
    }
    return out;
  }

  private hold(tier: string, holders: readonly PolicyRef[], log: Logger): void {
    const names = holders.map(describePolicy).sort();
    this.held.set({ tier }, names.length);
    const signature = names.join('\n');
    if (this.heldBy.get(tier) === signature) return;
    this.heldBy.set(tier, signature);
    log.warn(
      { kind: 'Tier', name: tier, count: names.length, policies: names.slice(0, LOGGED_POLICIES) },
      'deletion of the tier is held: policies still name it (they keep its place in the order); delete or move them to let the tier go',
    );
  }

  private release(tier: string): void {
    if (!this.heldBy.delete(tier)) return;
    this.held.remove({ tier });
  }
}
