/**
 * `IPSetMemberIndex`: the members of every active IP set, computed over **all** endpoints
 * (local and remote) — Felix's `SelectorAndNamedPortIndex` (`labelindex/named_port_index.go`,
 * calico-semantics §5.3).
 *
 * Guarantees:
 * - selector sets hold each matching endpoint's addresses as host CIDRs (`10.0.0.1/32`,
 *   `fc00::1/128`); named-port sets hold `<ip>,<proto>:<port>` for every endpoint port with
 *   the set's name whose protocol matches (`any` matches all), using the endpoint port's
 *   protocol;
 * - members are refcounted across contributors: `onMemberAdded` fires on 0→1 and
 *   `onMemberRemoved` on 1→0, so two endpoints sharing an address give one member;
 * - candidate selectors for an endpoint come from the label restriction index
 *   (label-inherit-index.ts): an endpoint update never evaluates every selector;
 * - a set that becomes inactive is forgotten without member events (the sequencer removes
 *   the whole set); a set that becomes active reports its current members as additions.
 */
import { flat } from '../runtime/flat-string.ts';
import { sameList } from '../runtime/same-list.ts';
import { SetMap } from '../runtime/set-map.ts';
import type { SelectorIPSetData } from './ipset-data.ts';
import { LabelInheritIndex, type Labels } from './label-inherit-index.ts';
import type { EndpointPort, ModelEndpoint, ModelNetworkSet } from './model.ts';

export interface IPSetMemberCallbacks {
  onMemberAdded(setId: string, member: string): void;
  onMemberRemoved(setId: string, member: string): void;
}

/**
 * What the index holds of an item, compactly: 100k of these live as long as the agent. `nets`
 * is its IPv4 then IPv6 nets, the one net itself when there is one (nearly every endpoint),
 * else an exact-sized array: the model's arrays are grown by `push` to 17 slots, and holding
 * them cost ~200 bytes an endpoint (17 MB at 100k). The net strings themselves are the very
 * strings the sets' member maps and the dataplane hold, so they are kept as strings.
 */
interface EndpointData {
  readonly nets: string | readonly string[];
  readonly ports: readonly EndpointPort[];
}

const NO_PORTS: readonly EndpointPort[] = Object.freeze([]);

function endpointData(ipv4Nets: readonly string[], ipv6Nets: readonly string[], ports: readonly EndpointPort[]): EndpointData {
  const n = ipv4Nets.length + ipv6Nets.length;
  const nets = n === 1 ? ((ipv4Nets[0] ?? ipv6Nets[0]) as string) : ipv6Nets.length === 0 ? ipv4Nets.slice() : [...ipv4Nets, ...ipv6Nets];
  return { nets, ports: ports.length === 0 ? NO_PORTS : ports };
}

interface SetState {
  readonly data: SelectorIPSetData;
  readonly members: Map<string, number>;
}

export class IPSetMemberIndex {
  readonly #cb: IPSetMemberCallbacks;
  /** Items with their {@link EndpointData} as the index's data: one map of every endpoint. */
  readonly #index: LabelInheritIndex<EndpointData>;
  readonly #sets = new Map<string, SetState>();
  readonly #setsBySelector = new SetMap<string, string>();
  #suppress = false;

  constructor(callbacks: IPSetMemberCallbacks) {
    this.#cb = callbacks;
    this.#index = new LabelInheritIndex<EndpointData>({
      onMatchStarted: (selId, _itemId, ep) => {
        if (!this.#suppress && ep !== undefined) this.#contribute(selId, ep, +1);
      },
      onMatchStopped: (selId, _itemId, ep) => {
        if (!this.#suppress && ep !== undefined) this.#contribute(selId, ep, -1);
      },
    });
  }

  /** Selector evaluations so far (tests pin the candidate indexing with it). */
  get evaluations(): number {
    return this.#index.evaluations;
  }

  get activeSetCount(): number {
    return this.#sets.size;
  }

  /** Endpoints and network sets held. */
  get endpointCount(): number {
    return this.#index.itemCount;
  }

  onEndpointUpdate(key: string, ep: ModelEndpoint | null): void {
    this.#updateItem(key, ep === null ? null : endpointData(ep.ipv4Nets, ep.ipv6Nets, ep.ports), ep?.labels, ep?.profileIds);
  }

  /**
   * A network set: its CIDRs join the selector sets whose selectors match its labels (no
   * named-port set: a network set has no ports). Keyed apart from endpoints.
   */
  onNetworkSetUpdate(key: string, set: ModelNetworkSet | null): void {
    const itemId = networkSetItemId(key);
    if (set === null) {
      this.#updateItem(itemId, null, undefined, undefined);
      return;
    }
    const ipv4Nets: string[] = [];
    const ipv6Nets: string[] = [];
    for (const net of set.nets) (net.includes(':') ? ipv6Nets : ipv4Nets).push(net);
    this.#updateItem(itemId, endpointData(ipv4Nets, ipv6Nets, NO_PORTS), set.labels, set.profileIds);
  }

  #updateItem(itemId: string, data: EndpointData | null, labels: Labels | undefined, parents: readonly string[] | undefined): void {
    if (data === null) {
      this.#index.deleteItem(itemId);
      return;
    }
    const old = this.#index.dataOf(itemId);
    if (old === undefined) {
      this.#index.updateItem(itemId, labels ?? {}, parents ?? [], data);
      return;
    }
    if (sameAddressesAndPorts(old, data)) {
      // The held copy stays: a relabel's new copy then dies young instead of being promoted
      // to the old generation and collected there.
      this.#index.updateItem(itemId, labels ?? {}, parents ?? [], old);
      return;
    }
    // Addresses or ports changed: sets it stays in get the difference (a 10,000-CIDR network
    // set changed by one CIDR is one member event), sets it leaves or joins the whole of it.
    const before = new Set(this.#index.matchesOfItem(itemId));
    this.#suppress = true;
    try {
      this.#index.updateItem(itemId, labels ?? {}, parents ?? [], data);
    } finally {
      this.#suppress = false;
    }
    const after = new Set(this.#index.matchesOfItem(itemId));
    for (const selId of before) {
      if (after.has(selId)) this.#forSets(selId, (state) => this.#contributeChange(state, old, data));
      else this.#contribute(selId, old, -1);
    }
    for (const selId of after) if (!before.has(selId)) this.#contribute(selId, data, +1);
  }

  onProfileLabelsUpdate(name: string, labels: Labels | undefined): void {
    this.#index.updateParent(name, labels);
  }

  onIPSetActive(data: SelectorIPSetData): void {
    if (this.#sets.has(data.id)) return;
    const state: SetState = { data, members: new Map() };
    this.#sets.set(data.id, state);
    const selId = data.selector.uniqueId();
    const shared = this.#setsBySelector.has(selId);
    this.#setsBySelector.add(selId, data.id);
    if (shared) {
      for (const itemId of this.#index.matchesOfSelector(selId)) {
        const ep = this.#index.dataOf(itemId);
        if (ep !== undefined) this.#contributeToSet(state, ep, +1);
      }
      return;
    }
    this.#index.updateSelector(selId, data.selector);
  }

  onIPSetInactive(setId: string): void {
    const state = this.#sets.get(setId);
    if (state === undefined) return;
    this.#sets.delete(setId);
    const selId = state.data.selector.uniqueId();
    this.#setsBySelector.delete(selId, setId);
    if (!this.#setsBySelector.has(selId)) this.#index.deleteSelector(selId);
  }

  /** Current members of an active set (for tests). */
  membersOf(setId: string): string[] | undefined {
    const s = this.#sets.get(setId);
    return s === undefined ? undefined : [...s.members.keys()];
  }

  #forSets(selId: string, fn: (state: SetState) => void): void {
    const ids = this.#setsBySelector.get(selId);
    if (ids === undefined) return;
    for (const id of ids) {
      const state = this.#sets.get(id);
      if (state !== undefined) fn(state);
    }
  }

  #contribute(selId: string, ep: EndpointData, delta: 1 | -1): void {
    this.#forSets(selId, (state) => this.#contributeToSet(state, ep, delta));
  }

  #contributeToSet(state: SetState, ep: EndpointData, delta: 1 | -1): void {
    forEachMember(state.data, ep, (member) => this.#ref(state, member, delta));
  }

  /** An item still in the set changed addresses or ports: only the difference is counted. */
  #contributeChange(state: SetState, old: EndpointData, now: EndpointData): void {
    // Counted, not de-duplicated: an item may give one member more than once (two ports of
    // one name), and each occurrence holds a reference.
    const change = new Map<string, number>();
    forEachMember(state.data, old, (m) => change.set(m, (change.get(m) ?? 0) - 1));
    forEachMember(state.data, now, (m) => change.set(m, (change.get(m) ?? 0) + 1));
    for (const [m, n] of change) {
      for (let i = n; i < 0; i++) this.#ref(state, m, -1);
      for (let i = 0; i < n; i++) this.#ref(state, m, +1);
    }
  }

  #ref(state: SetState, member: string, delta: 1 | -1): void {
    const n = (state.members.get(member) ?? 0) + delta;
    if (n > 0) {
      state.members.set(member, n);
      if (n === 1 && delta === 1) this.#cb.onMemberAdded(state.data.id, member);
      return;
    }
    if (n < 0) throw new Error(`IPSetMemberIndex: refcount of ${member} in ${state.data.id} went negative`);
    state.members.delete(member);
    this.#cb.onMemberRemoved(state.data.id, member);
  }
}

/**
 * Calls `fn` with each member an item gives a set: its nets for a selector set,
 * `<ip>,<proto>:<port>` for a named-port set. A callback, not a generator: this runs once per
 * (item, matching set) on every sync, and a generator object per call is measurable there.
 */
function forEachMember(data: SelectorIPSetData, ep: EndpointData, fn: (member: string) => void): void {
  const np = data.namedPort;
  const nets = ep.nets;
  if (np === undefined) {
    if (typeof nets === 'string') fn(nets);
    else for (const net of nets) fn(net);
    return;
  }
  for (const port of ep.ports) {
    if (port.name !== np.name) continue;
    if (np.protocol !== 'any' && np.protocol !== port.protocol) continue;
    if (typeof nets === 'string') fn(flat(`${hostAddress(nets)},${port.protocol}:${port.port}`));
    else for (const net of nets) fn(flat(`${hostAddress(net)},${port.protocol}:${port.port}`));
  }
}

/** Network sets share the label index with endpoints under ids no endpoint key can take. */
function networkSetItemId(key: string): string {
  return `NetworkSet:${key}`;
}

function hostAddress(net: string): string {
  const slash = net.indexOf('/');
  return slash < 0 ? net : net.slice(0, slash);
}

function sameAddressesAndPorts(a: EndpointData, b: EndpointData): boolean {
  const sameNets = typeof a.nets === 'string' || typeof b.nets === 'string' ? a.nets === b.nets : sameList(a.nets, b.nets);
  return sameNets && sameList(a.ports, b.ports, (x, y) => x.name === y.name && x.protocol === y.protocol && x.port === y.port);
}
