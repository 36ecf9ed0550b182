/**
 * HostEndpointUpdate/Remove → the host endpoint chains of the filter, mangle and raw tables of
 * every IP family, and their dispatch chains (Felix `endpoint_mgr.go` `resolveHostEndpoints`,
 * `updateHostEndpoints`; host-endpoints-and-services §A.2–A.5).
 *
 * - Interfaces: while any host endpoint exists, every apply first lists this network
 *   namespace's interfaces and addresses (`ip -j addr show`, through the command runner) and
 *   re-resolves which endpoint polices which interface (host-interfaces.ts) if anything changed.
 *   `wantsRetry` is true meanwhile, so the driver applies at least every `unresolvedRetryMs`
 *   (1 s by default): a new interface, a renamed one or a moved address is picked up within
 *   about a second (Felix reacts to netlink at once). With no host endpoint nothing is listed
 *   and nothing is polled: a node without HostEndpoints behaves exactly as before.
 * - A listing that fails or cannot be parsed keeps the last good one in force (logged once per
 *   distinct error, counted in `tessera_dataplane_host_interface_list_errors`).
 * - Chains per policed interface (host-endpoint-chains.ts): filter `th`/`fh`/`thfw`/`fhfw`;
 *   mangle `th`, and `fh` when the endpoint has preDNAT tiers; raw `th`/`fh` when it has
 *   untracked tiers and is not the `*` endpoint (Felix warns and ignores doNotTrack there).
 *   Chains are owned by the HostEndpoint, so a chain iptables-restore rejects is reported by
 *   name (and stands in as failsafe + DROP). Chains no longer wanted are removed.
 * - Dispatch chains (host-dispatch.ts) are rebuilt whenever the resolution changes.
 * - Gauges: `tessera_dataplane_host_endpoint_interfaces`, `tessera_dataplane_unmatched_host_endpoints`.
 */
import type { DataplaneMessage, HostEndpoint } from '../proto/index.ts';
import type { Logger } from '../runtime/logger.ts';
import { timed, timedAsync, type PhaseTotals } from './apply-phases.ts';
import type { Chain } from './chain.ts';
import { ALL_INTERFACES_IFACE } from './chain-names.ts';
import type { CommandRunner } from './command-runner.ts';
import type { DataplaneMetrics } from './dataplane-metrics.ts';
import { filterHostDispatchChains, mangleHostDispatchChains, rawHostDispatchChains } from './host-dispatch.ts';
import { hostEndpointFilterChains, hostEndpointMangleEgressChain, hostEndpointMangleIngressChain, hostEndpointRawChains } from './host-endpoint-chains.ts';
import { HostInterfacesError, parseIpAddrJson, resolveHostEndpoints, type HostInterfaces } from './host-interfaces.ts';
import type { Manager } from './manager.ts';
import type { RuleRenderer } from './rule-renderer.ts';
import { isValidInterfaceName } from './rule-renderer.ts';
import type { Table } from './table.ts';

/** One IP family's renderer (the filter one: deny action, drop log) and tables. */
export interface HostEndpointFamily {
  readonly renderer: RuleRenderer;
  readonly filter: Table;
  readonly mangle: Table;
  readonly raw: Table;
}

export interface HostEndpointManagerOptions {
  /** Workload interface prefixes (Felix `InterfacePrefix`): never host endpoints. @default ['cali'] */
  readonly interfacePrefixes?: readonly string[];
  /** Felix `InterfaceExclude`. @default ['kube-ipvs0'] */
  readonly excludeInterfaces?: readonly string[];
}

type TableKind = 'filter' | 'mangle' | 'raw';

export class HostEndpointManager implements Manager {
  private readonly log: Logger;
  private readonly prefixes: readonly string[];
  private readonly exclude: readonly string[];
  /** name → endpoint, as the calc graph sent it. */
  private readonly heps = new Map<string, HostEndpoint>();
  private ifaces: HostInterfaces = new Map();
  /** Interface (or `any-interface-at-all`) → host endpoint name, as last rendered. */
  private resolved = new Map<string, string>();
  /** Per table: the endpoint and dispatch chains this manager handed to it. */
  private readonly programmed = new Map<Table, ReadonlySet<string>>();
  private dirty = false;
  private lastListError: string | undefined;
  private warnedWildcardUntracked: string | undefined;
  private unmatchedLogged = new Set<string>();

  constructor(
    private readonly families: readonly HostEndpointFamily[],
    private readonly runner: CommandRunner,
    logger: Logger,
    private readonly metrics?: DataplaneMetrics,
    opts: HostEndpointManagerOptions = {},
  ) {
    this.log = logger.child({ component: 'host-endpoint-manager' });
    this.prefixes = opts.interfacePrefixes ?? ['cali'];
    this.exclude = opts.excludeInterfaces ?? ['kube-ipvs0'];
  }

  onMessage(msg: DataplaneMessage): boolean {
    switch (msg.type) {
      case 'HostEndpointUpdate':
        this.heps.set(msg.id.name, msg.endpoint);
        this.dirty = true;
        return true;
      case 'HostEndpointRemove':
        if (this.heps.delete(msg.id.name)) this.dirty = true;
        return true;
      default:
        return false;
    }
  }

  /** While any host endpoint exists, interfaces are polled on every apply (see the file comment). */
  get wantsRetry(): boolean {
    return this.heps.size > 0;
  }

  /** Interface (or `any-interface-at-all`) → host endpoint name, as programmed. */
  get activeInterfaces(): ReadonlyMap<string, string> {
    return this.resolved;
  }

  async completeDeferredWork(phases: PhaseTotals): Promise<void> {
    if (this.heps.size > 0) await timedAsync(phases, 'resolveMs', () => this.listInterfaces());
    if (!this.dirty) return;
    timed(phases, 'endpointRenderMs', () => this.render());
  }

  /** Lists the interfaces; marks the resolution dirty when they or their addresses changed. */
  async listInterfaces(): Promise<void> {
    let next: Map<string, Set<string>>;
    try {
      const r = await this.runner.run('ip', ['-j', 'addr', 'show']);
      if (r.code !== 0) throw new HostInterfacesError(`ip -j addr show exited ${r.code}: ${r.stderr.trim()}`);
      next = parseIpAddrJson(r.stdout);
    } catch (e) {
      if (!(e instanceof HostInterfacesError)) throw e;
      this.metrics?.hostInterfaceListErrors.inc();
      if (this.lastListError !== e.message) this.log.warn({ err: e.message }, 'cannot list host interfaces; keeping the last listing');
      this.lastListError = e.message;
      return;
    }
    this.lastListError = undefined;
    if (!sameInterfaces(this.ifaces, next)) {
      this.ifaces = next;
      this.dirty = true;
    }
  }

  /** Resolves the endpoints to interfaces and hands their chains and the dispatch chains to the tables. */
  render(): void {
    this.dirty = false;
    const usable = new Map<string, ReadonlySet<string>>();
    for (const [iface, addrs] of this.ifaces) {
      if (isValidInterfaceName(iface)) usable.set(iface, addrs);
      else this.log.error({ iface }, 'interface name is not a valid Linux interface name; not policed');
    }
    const resolved = resolveHostEndpoints(usable, this.heps, { workloadPrefixes: this.prefixes, exclude: this.exclude });
    this.logChanges(resolved);
    this.resolved = resolved;

    const preDnat: string[] = [];
    const untracked: string[] = [];
    for (const [iface, name] of resolved) {
      const ep = this.heps.get(name)!;
      if (ep.preDnatTiers.length > 0) preDnat.push(iface);
      if (ep.untrackedTiers.length > 0) {
        if (iface === ALL_INTERFACES_IFACE) {
          if (this.warnedWildcardUntracked !== name) this.log.warn({ hostEndpoint: name }, 'doNotTrack policy is not supported for a HEP with interfaceName *; ignoring it');
          this.warnedWildcardUntracked = name;
        } else {
          untracked.push(iface);
        }
      }
    }
    if (![...resolved].some(([i, n]) => i === ALL_INTERFACES_IFACE && this.heps.get(n)!.untrackedTiers.length > 0)) this.warnedWildcardUntracked = undefined;

    for (const f of this.families) {
      const chains: Record<TableKind, Array<{ chain: Chain; owner: string | undefined }>> = { filter: [], mangle: [], raw: [] };
      for (const [iface, name] of resolved) {
        const ep = this.heps.get(name)!;
        for (const c of hostEndpointFilterChains(f.renderer, iface, ep)) chains.filter.push({ chain: c, owner: name });
        chains.mangle.push({ chain: hostEndpointMangleEgressChain(iface, ep), owner: name });
        if (preDnat.includes(iface)) chains.mangle.push({ chain: hostEndpointMangleIngressChain(iface, ep), owner: name });
        if (untracked.includes(iface)) for (const c of hostEndpointRawChains(iface, ep)) chains.raw.push({ chain: c, owner: name });
      }
      const specific = [...resolved.keys()].filter((i) => i !== ALL_INTERFACES_IFACE);
      const wildcard = resolved.has(ALL_INTERFACES_IFACE) ? ALL_INTERFACES_IFACE : undefined;
      const all = { ifaces: specific, defaultIface: wildcard };
      const pre = { ifaces: preDnat.filter((i) => i !== ALL_INTERFACES_IFACE), defaultIface: preDnat.includes(ALL_INTERFACES_IFACE) ? ALL_INTERFACES_IFACE : undefined };
      for (const c of filterHostDispatchChains(all)) chains.filter.push({ chain: c, owner: undefined });
      for (const c of mangleHostDispatchChains(pre, all, this.prefixes)) chains.mangle.push({ chain: c, owner: undefined });
      for (const c of rawHostDispatchChains(untracked)) chains.raw.push({ chain: c, owner: undefined });
      this.program(f.filter, chains.filter);
      this.program(f.mangle, chains.mangle);
      this.program(f.raw, chains.raw);
    }
    this.metrics?.hostEndpointInterfaces.set(resolved.size);
    const used = new Set(resolved.values());
    this.metrics?.unmatchedHostEndpoints.set([...this.heps.keys()].filter((n) => !used.has(n)).length);
  }

  /** Sets `chains` in `table` and removes what this manager programmed there before but no longer wants. */
  private program(table: Table, chains: ReadonlyArray<{ chain: Chain; owner: string | undefined }>): void {
    const names = new Set<string>();
    for (const { chain, owner } of chains) {
      names.add(chain.name);
      table.updateChain(chain, owner === undefined ? {} : { owner: { kind: 'HostEndpoint', name: owner } });
    }
    for (const old of this.programmed.get(table) ?? []) if (!names.has(old)) table.removeChain(old);
    this.programmed.set(table, names);
  }

  /** One line per interface whose host endpoint changed, and per endpoint that polices nothing. */
  private logChanges(next: ReadonlyMap<string, string>): void {
    for (const [iface, name] of next) {
      const before = this.resolved.get(iface);
      if (before !== name) this.log.info({ iface, hostEndpoint: name, previous: before }, 'host endpoint policing interface changed');
    }
    for (const [iface, name] of this.resolved) {
      if (!next.has(iface)) this.log.info({ iface, previous: name }, 'interface no longer policed by a host endpoint');
    }
    const used = new Set(next.values());
    const unmatched = new Set([...this.heps.keys()].filter((n) => !used.has(n)));
    for (const n of unmatched) {
      if (!this.unmatchedLogged.has(n)) this.log.info({ hostEndpoint: n }, 'host endpoint matches no interface of this node (yet); it polices nothing');
    }
    this.unmatchedLogged = unmatched;
  }
}

function sameInterfaces(a: HostInterfaces, b: HostInterfaces): boolean {
  if (a.size !== b.size) return false;
  for (const [name, addrs] of a) {
    const other = b.get(name);
    if (other === undefined || other.size !== addrs.size) return false;
    for (const x of addrs) if (!other.has(x)) return false;
  }
  return true;
}
