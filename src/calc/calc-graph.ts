/**
 * `CalcGraph`: the synchronous calculation graph — datastore resources in, the dataplane
 * messages this node needs out (Felix: `calc/calc_graph.go`, calico-semantics §5).
 *
 * Wiring (each arrow a direct, synchronous call):
 * ```
 * Update → UpdateProcessor (validation filter; an invalid policy or profile = its fail-closed stand-in, anything else invalid = deleted)
 *   → Dispatcher ─ tier     → PolicyResolver, MissingTierIndex
 *                ├ policy   → PolicyResolver, ActiveRulesCalculator, MissingTierIndex
 *                ├ profile  → IPSetMemberIndex (labels), ActiveRulesCalculator
 *                ├ endpoint → IPSetMemberIndex (all endpoints)
 *                │            LocalEndpointFilter → PolicyResolver, ActiveRulesCalculator
 *                ├ networkset → IPSetMemberIndex (CIDRs of every NetworkSet/GlobalNetworkSet)
 *                └ endpointslice → ServiceIndex (addresses and ports of every EndpointSlice)
 * ActiveRulesCalculator → RuleScanner → IP sets active/inactive → IPSetMemberIndex (selector
 *                                       and named-port sets), ServiceIndex (`services` sets)
 *                       → policy matches → PolicyResolver
 * RuleScanner, IPSetMemberIndex, ServiceIndex, PolicyResolver → EventSequencer → flush()
 * ```
 *
 * Guarantees:
 * - no hysteresis: the accumulated output depends only on the current resources, however
 *   they were fed (any order, batching or intermediate states);
 * - `flush()` returns nothing before `onStatusUpdated('in-sync')`; the first flush after it
 *   returns the full state followed by `{type: 'InSync'}`; later flushes return deltas;
 * - an invalid object never throws out of `onUpdates`: it is logged and counted; a policy or
 *   profile is enforced fail-closed (fail-closed.ts; `tessera_invalid_policies` by kind), any
 *   other kind is treated as deleted;
 * - a policy naming a tier that has no Tier object is logged (once per change, from the
 *   first flush after in-sync) and counted in `tessera_calc_policies_missing_tier`. A Tier
 *   being deleted (deletionTimestamp set, held by a finalizer) is still a Tier: it keeps
 *   its place in the order until it is gone.
 */
import type { Registry } from 'prom-client';
import type { DataplaneMessage } from '../proto/index.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { ActiveRulesCalculator } from './active-rules-calculator.ts';
import { Dispatcher } from './dispatcher.ts';
import { EventSequencer } from './event-sequencer.ts';
import { IPSetMemberIndex } from './ipset-member-index.ts';
import { LocalEndpointFilter } from './local-endpoint-filter.ts';
import { calcGraphMetrics, type CalcGraphMetrics } from './metrics.ts';
import { MissingTierIndex, missingTierMessage } from './missing-tier-index.ts';
import { PolicyResolver } from './policy-resolver.ts';
import { RuleScanner } from './rule-scanner.ts';
import { ServiceIndex } from './service-index.ts';
import { UpdateProcessor } from './update-processor.ts';
import type { AnyUpdate, SyncStatus, Update } from '../syncer/update.ts';


/** `10.0.0.1/32` → `10.0.0.1`: a host endpoint's expected IPs travel as addresses (Felix proto). */
function hostAddress(net: string): string {
  const slash = net.indexOf('/');
  return slash < 0 ? net : net.slice(0, slash);
}

export interface CalcGraphOptions {
  /** This node's name; endpoints whose `spec.node` equals it are local. */
  readonly nodeName: string;
  /** Where metrics are registered. @default a private registry */
  readonly registry?: Registry;
  /** @default silentLogger */
  readonly logger?: Logger;
}

const RESYNC_STATE: Readonly<Record<SyncStatus, number>> = { 'wait-for-datastore': 1, 'resync-in-progress': 2, 'in-sync': 3 };

export class CalcGraph {
  readonly #log: Logger;
  readonly #metrics: CalcGraphMetrics;
  readonly #processor: UpdateProcessor;
  readonly #dispatcher = new Dispatcher();
  readonly #sequencer = new EventSequencer();
  readonly #memberIndex: IPSetMemberIndex;
  readonly #serviceIndex: ServiceIndex;
  readonly #scanner: RuleScanner;
  readonly #arc: ActiveRulesCalculator;
  readonly #resolver: PolicyResolver;
  readonly #localFilter: LocalEndpointFilter;
  readonly #missingTiers = new MissingTierIndex();
  #inSync = false;
  #sentInSync = false;
  /**
   * Updates processed per type since the last flush: added to the counter at each flush (every
   * batch in the agent), not per update, where prom-client's label lookup was ~2 % of a relabel.
   */
  readonly #processedByType = new Map<string, number>();

  constructor(opts: CalcGraphOptions) {
    const { nodeName, registry = newRegistry(), logger = silentLogger } = opts;
    if (typeof nodeName !== 'string' || nodeName === '') {
      throw new TypeError('CalcGraph: nodeName must be a non-empty string');
    }
    this.#log = logger.child({ component: 'calc-graph' });
    this.#metrics = calcGraphMetrics(registry);
    this.#metrics.resyncState.set(RESYNC_STATE['wait-for-datastore']);
    this.#processor = new UpdateProcessor({
      onInvalid: (inv) => {
        this.#metrics.invalidUpdates.inc({ kind: inv.kind });
        const fields = { kind: inv.kind, namespace: inv.namespace, name: inv.name, reason: inv.reason };
        if (inv.failClosed === undefined) this.#log.warn(fields, 'dropping invalid object (treated as deleted)');
        else if (inv.failClosed.selectorFallback === undefined) this.#log.error(fields, 'invalid policy enforced fail-closed: no rules, so the endpoints it selects are denied in its directions unless allowed earlier');
        else this.#log.error({ ...fields, selector: inv.failClosed.selectorFallback }, 'invalid policy enforced fail-closed, and its selector cannot be read: every endpoint it could select is denied in its directions unless allowed earlier');
      },
      onFailClosedCount: (byKind) => {
        this.#metrics.invalidPolicies.reset();
        for (const [kind, n] of byKind) this.#metrics.invalidPolicies.set({ kind }, n);
      },
    });
    const seq = this.#sequencer;
    this.#memberIndex = new IPSetMemberIndex({
      onMemberAdded: (id, m) => seq.onIPSetMemberAdded(id, m),
      onMemberRemoved: (id, m) => seq.onIPSetMemberRemoved(id, m),
    });
    this.#serviceIndex = new ServiceIndex({
      onMemberAdded: (id, m) => seq.onIPSetMemberAdded(id, m),
      onMemberRemoved: (id, m) => seq.onIPSetMemberRemoved(id, m),
    });
    this.#scanner = new RuleScanner({
      onIPSetActive: (data) => {
        seq.onIPSetAdded(data.id, data.type);
        if (data.service === undefined) this.#memberIndex.onIPSetActive(data);
        else this.#serviceIndex.onIPSetActive(data);
      },
      onIPSetInactive: (id) => {
        // Ids are disjoint (`s:`/`n:` against `svc:`/`svcnoport:`): the index that does not hold it ignores it.
        this.#memberIndex.onIPSetInactive(id);
        this.#serviceIndex.onIPSetInactive(id);
        seq.onIPSetRemoved(id);
      },
      onPolicyUpdate: (key, model, parsed) => seq.onPolicyUpdate(key, model.id, parsed),
      onPolicyRemove: (key, model) => seq.onPolicyRemove(key, model.id),
      onProfileUpdate: (name, parsed) => seq.onProfileUpdate(name, parsed),
      onProfileRemove: (name) => seq.onProfileRemove(name),
    });
    this.#resolver = new PolicyResolver({
      onEndpointTiers: (ep, tiers) =>
        seq.onEndpointUpdate(ep.key, { namespace: ep.namespace, name: ep.name }, {
          interfaceName: ep.interfaceName,
          state: 'active',
          mac: ep.mac,
          ipv4Nets: ep.ipv4Nets,
          ipv6Nets: ep.ipv6Nets,
          profileIds: ep.profileIds,
          tiers,
          ...(ep.qosControls === undefined ? {} : { qosControls: ep.qosControls }),
        }),
      onHostEndpointTiers: (ep, t) =>
        seq.onHostEndpointUpdate(ep.key, { name: ep.name }, {
          name: ep.interfaceName,
          expectedIpv4Addrs: ep.ipv4Nets.map(hostAddress),
          expectedIpv6Addrs: ep.ipv6Nets.map(hostAddress),
          profileIds: ep.profileIds,
          tiers: t.tiers,
          untrackedTiers: t.untrackedTiers,
          preDnatTiers: t.preDnatTiers,
          forwardTiers: t.forwardTiers,
        }),
      onEndpointRemove: (ep) => {
        if (ep.endpointType === 'host') seq.onHostEndpointRemove(ep.key, { name: ep.name });
        else seq.onEndpointRemove(ep.key, { namespace: ep.namespace, name: ep.name });
      },
    });
    this.#arc = new ActiveRulesCalculator({ scanner: this.#scanner, matchListener: this.#resolver });
    this.#localFilter = new LocalEndpointFilter({
      nodeName,
      onLocalEndpoint: (key, ep) => {
        this.#resolver.onEndpointUpdate(key, ep);
        this.#arc.onEndpointUpdate(key, ep);
      },
    });

    const d = this.#dispatcher;
    d.register('tier', (u) => {
      this.#resolver.onTierUpdate(u.key, u.value);
      this.#missingTiers.onTierUpdate(u.key, u.value);
    });
    d.register('policy', (u) => {
      this.#resolver.onPolicyUpdate(u.key, u.value);
      this.#arc.onPolicyUpdate(u.key, u.value);
      this.#missingTiers.onPolicyUpdate(u.key, u.value);
    });
    d.register('profile', (u) => {
      this.#memberIndex.onProfileLabelsUpdate(u.key, u.value?.labels);
      this.#arc.onProfileUpdate(u.key, u.value);
    });
    d.register('endpoint', (u) => {
      this.#memberIndex.onEndpointUpdate(u.key, u.value);
      this.#localFilter.onEndpointUpdate(u.key, u.value);
    });
    d.register('networkset', (u) => this.#memberIndex.onNetworkSetUpdate(u.key, u.value));
    d.register('endpointslice', (u) => this.#serviceIndex.onEndpointSliceUpdate(u.key, u.value));
    for (const m of this.#processor.builtIns()) d.dispatch(m);
  }

  /** Projectcalico.org/v3 updates, and `discovery.k8s.io/v1` EndpointSlices; anything else is dropped as invalid. */
  onUpdates(updates: readonly (Update | AnyUpdate)[]): void {
    // Metrics without prom-client's per-call label objects and timer closures: a remote
    // endpoint's relabel arrives as a batch of one, and those were ~5 % of its cost.
    const start = performance.now();
    for (const u of updates) {
      const type = u.op === 'delete' ? u.kind : (u.resource as { kind?: unknown } | null)?.kind;
      const t = typeof type === 'string' ? type : 'unknown';
      this.#processedByType.set(t, (this.#processedByType.get(t) ?? 0) + 1);
      for (const m of this.#processor.process(u)) this.#dispatcher.dispatch(m);
    }
    this.#metrics.updateTime.observe((performance.now() - start) / 1000);
  }

  /** Adds the updates counted since the last call to `felix_calc_graph_updates_processed`. */
  #reportProcessed(): void {
    for (const [type, n] of this.#processedByType) if (n > 0) this.#metrics.updatesProcessed.inc({ type }, n);
    this.#processedByType.clear();
  }

  onStatusUpdated(status: SyncStatus): void {
    this.#metrics.resyncState.set(RESYNC_STATE[status] ?? 0);
    if (status === 'in-sync') this.#inSync = true;
  }

  /** What the event sequencer emits now; `[]` before in-sync. */
  flush(): DataplaneMessage[] {
    // Node-driven re-conversions of ClusterNetworkPolicies, once per flush (update-processor.ts).
    for (const m of this.#processor.flushDeferred()) this.#dispatcher.dispatch(m);
    this.#reportProcessed();
    if (!this.#inSync) return [];
    this.#reportMissingTiers();
    this.#resolver.flush();
    const out = this.#sequencer.flush();
    if (!this.#sentInSync) {
      this.#sentInSync = true;
      out.push({ type: 'InSync' });
    }
    this.#metrics.outputEvents.inc(out.length);
    this.#metrics.activeLocalEndpoints.set(this.#localFilter.localCount);
    this.#metrics.activeLocalPolicies.set(this.#arc.activePolicyCount);
    this.#metrics.activeLocalSelectors.set(this.#scanner.activeSetCount);
    return out;
  }

  #reportMissingTiers(): void {
    for (const change of this.#missingTiers.flush()) {
      const { kind, namespace, name, tier } = change.policy;
      const fields = { kind, namespace, name, tier };
      if (change.type === 'missing') this.#log.warn({ ...fields, reason: missingTierMessage(tier) }, 'policy names a tier that does not exist');
      else this.#log.info(fields, 'policy names an existing tier again');
    }
    this.#metrics.policiesMissingTier.set(this.#missingTiers.missingCount);
  }

  /** Active IP sets (for benchmarks and tests). */
  get activeIPSetCount(): number {
    return this.#scanner.activeSetCount;
  }

  /** Selector evaluations done by the IP-set member index (tests pin candidate indexing). */
  get memberIndexEvaluations(): number {
    return this.#memberIndex.evaluations;
  }
}
