/**
 * WorkloadEndpointUpdate/Remove → `cali-tw-`/`cali-fw-` chains and the dispatch chains.
 *
 * Interface name: `endpoint.interfaceName` when set (what Calico's CNI plugin writes). When
 * empty, the interface is resolved from the host route to the endpoint's first address —
 * `ip -j route show exact <ip>/32` (`/128` for IPv6) — because a CNI plugin installs exactly
 * that `/32 dev <host-veth> scope link` route for each pod. Until that route exists the endpoint
 * has no chains, so its traffic hits the dispatch chains' "Unknown interface" DROP (fail
 * closed); unresolved endpoints are retried on every apply. A resolved name is kept until the
 * endpoint is updated or removed.
 *
 * Invalid interface names (not 1–15 of `[A-Za-z0-9_.-]`) are logged and the endpoint is
 * skipped, so no name can inject text into `iptables-restore` input.
 *
 * An interface outside every configured prefix (Felix `InterfacePrefix`, `--interface-prefix`)
 * is never reached by the hooks, so its endpoint is not programmed: one error per change of
 * the endpoint, and the `tessera_dataplane_foreign_interface_endpoints` gauge.
 *
 * QoS limits (qos-controls.ts): packet-rate and connection limits are in the endpoint's chains;
 * a bandwidth limit (and its burst, peak rate, minimum burst) needs `tc`, and DSCP the mangle
 * table, which Tessera does not program: one warning per endpoint whenever the set of such fields changes, and the
 * `tessera_dataplane_qos_unenforced_endpoints{field}` gauge.
 *
 * Endpoints whose claims conflict — one interface, or overlapping addresses, claimed by more
 * than one endpoint of this node, whichever way the interface was learnt — are all withheld:
 * their interfaces get DROP chains until the conflict is gone (`endpoint-conflicts.ts`).
 */
import type { DataplaneMessage, WorkloadEndpoint } from '../proto/index.ts';
import { workloadEndpointIdKey } from '../proto/index.ts';
import type { Logger } from '../runtime/logger.ts';
import { endpointChainName } from './chain-names.ts';
import type { CommandRunner } from './command-runner.ts';
import type { DataplaneMetrics } from './dataplane-metrics.ts';
import { ConflictReporter, contestedInterfaceChains, findClaimConflicts, type EndpointClaim } from './endpoint-conflicts.ts';
import { timed, timedAsync, type PhaseTotals } from './apply-phases.ts';
import type { Manager } from './manager.ts';
import { RuleRenderError } from './match-builder.ts';
import type { FamilyTables } from './policy-manager.ts';
import { isValidInterfaceName } from './rule-renderer.ts';
import { UNENFORCED_QOS_FIELDS, unenforcedQoSFields } from './qos-controls.ts';

/** The `programmed` value of an interface whose endpoints conflict; no endpoint key is empty. */
const CONTESTED = '';

interface EndpointState {
  readonly namespace: string;
  readonly name: string;
  readonly endpoint: WorkloadEndpoint;
  /** Resolved interface; undefined until known. */
  iface: string | undefined;
  /** Chains need re-rendering. */
  dirty: boolean;
}

export class EndpointManager implements Manager {
  private readonly log: Logger;
  private readonly endpoints = new Map<string, EndpointState>();
  /** iface → key of the endpoint whose chains it has, or CONTESTED for the fail-closed DROP. */
  private readonly programmed = new Map<string, string>();
  private readonly conflicts: ConflictReporter;
  private dispatchDirty = true;
  /** The dispatch chains (root and children) last handed to the tables; the same in every family. */
  private dispatchChainNames: ReadonlySet<string> = new Set();
  /** key → the QoS fields the endpoint sets that are not enforced (only endpoints with some). */
  private readonly unenforcedQoS = new Map<string, readonly string[]>();

  constructor(
    private readonly families: readonly FamilyTables[],
    private readonly runner: CommandRunner,
    logger: Logger,
    private readonly metrics?: DataplaneMetrics,
  ) {
    this.log = logger.child({ component: 'endpoint-manager' });
    this.conflicts = new ConflictReporter(logger, metrics);
  }

  /** Every endpoint's claims, programmable or not (see `endpoint-conflicts.ts`). */
  private *claims(): Iterable<EndpointClaim> {
    for (const [key, ep] of this.endpoints) {
      yield { key, namespace: ep.namespace, name: ep.name, iface: ep.iface, nets: [...ep.endpoint.ipv4Nets, ...ep.endpoint.ipv6Nets] };
    }
  }

  onMessage(msg: DataplaneMessage): boolean {
    switch (msg.type) {
      case 'WorkloadEndpointUpdate': {
        const key = workloadEndpointIdKey(msg.id);
        const iface = msg.endpoint.interfaceName === '' ? undefined : msg.endpoint.interfaceName;
        this.endpoints.set(key, { namespace: msg.id.namespace, name: msg.id.name, endpoint: msg.endpoint, iface, dirty: true });
        this.noteUnenforcedQoS(key, msg.id, unenforcedQoSFields(msg.endpoint.qosControls));
        return true;
      }
      case 'WorkloadEndpointRemove': {
        const key = workloadEndpointIdKey(msg.id);
        const ep = this.endpoints.get(key);
        if (ep !== undefined) {
          this.endpoints.delete(key);
          this.dispatchDirty = true;
        }
        this.noteUnenforcedQoS(key, msg.id, []);
        return true;
      }
      default:
        return false;
    }
  }

  /** Warns when an endpoint's unenforced QoS fields change to a non-empty set; keeps the gauge. */
  private noteUnenforcedQoS(key: string, id: { namespace: string; name: string }, fields: readonly string[]): void {
    const before = this.unenforcedQoS.get(key) ?? [];
    if (before.length === fields.length && before.every((f, i) => f === fields[i])) return;
    if (fields.length === 0) this.unenforcedQoS.delete(key);
    else this.unenforcedQoS.set(key, fields);
    if (fields.length > 0) {
      this.log.warn(
        { namespace: id.namespace, name: id.name, fields },
        'qosControls NOT ENFORCED: bandwidth limits need tc and DSCP the mangle table, which Tessera does not program (packet-rate and connection limits are enforced)',
      );
    }
    if (this.metrics === undefined) return;
    const counts = new Map<string, number>(UNENFORCED_QOS_FIELDS.map((f) => [f, 0]));
    for (const fs of this.unenforcedQoS.values()) for (const f of fs) counts.set(f, (counts.get(f) ?? 0) + 1);
    for (const [field, n] of counts) this.metrics.qosUnenforcedEndpoints.set({ field }, n);
  }

  /** Whether some endpoint still waits for its interface name. */
  get hasUnresolved(): boolean {
    for (const ep of this.endpoints.values()) if (ep.iface === undefined) return true;
    return false;
  }

  /** An endpoint waits for its interface: a later apply resolves it again. */
  get wantsRetry(): boolean {
    return this.hasUnresolved;
  }

  /** Resolves missing interface names, then renders what changed into the tables. */
  async completeDeferredWork(phases: PhaseTotals): Promise<void> {
    await timedAsync(phases, 'resolveMs', () => this.resolveInterfaces());
    timed(phases, 'endpointRenderMs', () => this.render());
  }

  /** Resolves missing interface names from the routing table (see the file comment). */
  async resolveInterfaces(): Promise<void> {
    for (const ep of this.endpoints.values()) {
      if (ep.iface !== undefined) continue;
      const [addr, v] =
        ep.endpoint.ipv4Nets[0] !== undefined ? [ep.endpoint.ipv4Nets[0], 4] : ep.endpoint.ipv6Nets[0] !== undefined ? [ep.endpoint.ipv6Nets[0], 6] : [undefined, 4];
      if (addr === undefined) continue;
      const ip = addr.split('/')[0]!;
      const res = await this.runner.run('ip', ['-j', `-${v}`, 'route', 'show', 'exact', `${ip}/${v === 4 ? 32 : 128}`]);
      if (res.code !== 0) continue;
      try {
        const routes = JSON.parse(res.stdout || '[]') as Array<{ dev?: string }>;
        const dev = routes.find((r) => r.dev !== undefined)?.dev;
        if (dev !== undefined) {
          ep.iface = dev;
          ep.dirty = true;
          this.log.info({ namespace: ep.namespace, name: ep.name, iface: dev }, 'resolved workload interface from its route');
        }
      } catch {
        // Unparseable output: try again on the next apply.
      }
    }
  }

  /**
   * Pushes changed endpoint chains and dispatch chains into the tables. Each interface gets
   * exactly one of: its endpoint's chains; the fail-closed DROP chains, when its endpoint is in
   * a conflict (`endpoint-conflicts.ts`); or nothing — an interface no endpoint claims, or one
   * outside every `--interface-prefix`, which the hooks never send to the dispatch chains.
   */
  render(): void {
    const withheld = this.conflicts.update(findClaimConflicts(this.claims()), this.endpoints);
    const wanted = new Map<string, { key: string; ep: EndpointState } | typeof CONTESTED>();
    let foreign = 0;
    for (const [key, ep] of this.endpoints) {
      if (ep.iface === undefined) continue;
      if (!isValidInterfaceName(ep.iface)) {
        if (ep.dirty) this.log.error({ namespace: ep.namespace, name: ep.name, iface: ep.iface }, 'invalid interface name; endpoint not programmed');
        ep.dirty = false;
        continue;
      }
      if (!this.families.every((f) => f.renderer.coversInterface(ep.iface!))) {
        // Felix has the same rule: InterfacePrefix must match the CNI's naming. The hooks only
        // send `-i/-o <prefix>+` to the dispatch chains, so chains for this interface would
        // never see a packet: rather than pretend, they are not written at all.
        if (ep.dirty) {
          this.log.error(
            { namespace: ep.namespace, name: ep.name, iface: ep.iface },
            'interface matches no configured interface prefix (--interface-prefix): endpoint not programmed, its policy is not enforced',
          );
        }
        ep.dirty = false;
        foreign++;
        continue;
      }
      wanted.set(ep.iface, withheld.has(key) ? CONTESTED : { key, ep });
    }
    this.metrics?.foreignInterfaceEndpoints.set(foreign);
    for (const [iface, want] of wanted) {
      const prevKey = this.programmed.get(iface);
      if (want === CONTESTED) {
        if (prevKey === CONTESTED) continue;
        for (const f of this.families) f.filter.updateChains(contestedInterfaceChains(iface));
        if (prevKey === undefined) this.dispatchDirty = true;
        this.programmed.set(iface, CONTESTED);
        continue;
      }
      const { key, ep } = want;
      if (prevKey === key && !ep.dirty) continue;
      for (const f of this.families) {
        try {
          // The owner names the endpoint if iptables-restore rejects its chains (they then drop).
          f.filter.updateChains(f.renderer.endpointChains(iface, ep.endpoint), { owner: { kind: 'WorkloadEndpoint', namespace: ep.namespace, name: ep.name } });
        } catch (e) {
          if (!(e instanceof RuleRenderError)) throw e;
          this.log.error({ namespace: ep.namespace, name: ep.name, err: e.message }, 'cannot render endpoint chains');
        }
      }
      ep.dirty = false;
      if (prevKey === undefined) this.dispatchDirty = true;
      this.programmed.set(iface, key);
    }
    for (const iface of [...this.programmed.keys()]) {
      if (wanted.has(iface)) continue;
      this.programmed.delete(iface);
      this.dispatchDirty = true;
      for (const f of this.families) {
        f.filter.removeChain(endpointChainName(iface, 'ingress'));
        f.filter.removeChain(endpointChainName(iface, 'egress'));
      }
    }
    if (this.dispatchDirty) {
      let names: ReadonlySet<string> = new Set();
      for (const f of this.families) {
        const chains = f.renderer.dispatchChains(this.programmed.keys());
        f.filter.updateChains(chains);
        // Child dispatch chains come and go with the set of interface names.
        names = new Set(chains.map((c) => c.name));
        for (const old of this.dispatchChainNames) if (!names.has(old)) f.filter.removeChain(old);
      }
      this.dispatchChainNames = names;
      this.dispatchDirty = false;
    }
  }
}
