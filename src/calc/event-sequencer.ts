/**
 * `EventSequencer`: coalesces the graph's output and flushes it in dependency order
 * (Felix: `calc/event_sequencer.go`, calico-semantics §5.3).
 *
 * Guarantees:
 * - at most one pending item per key (per IP set: one full update or one delta; per
 *   policy, profile, endpoint: one update or one remove) — coalescing is the graph's
 *   back-pressure;
 * - `flush()` emits: IP set adds, IP set deltas, policy updates, profile updates, endpoint
 *   updates, endpoint removes, profile removes, policy removes, IP set removes — so a set
 *   exists before a policy uses it and outlives its last user;
 * - workload and host endpoints share the endpoint stage (their keys never collide:
 *   model.ts `hostEndpointModelKey`), so a host endpoint's policies and profiles precede it
 *   and outlive it exactly as a workload's do;
 * - a set added and removed between flushes emits nothing; members changed before a set's
 *   first flush go into its `IPSetUpdate`; a member added and removed between flushes
 *   cancels out; a remove is emitted only for something the dataplane has been sent.
 */
import type {
  DataplaneMessage,
  HostEndpoint,
  HostEndpointId,
  HostEndpointRemove,
  HostEndpointUpdate,
  IpSetType,
  Policy,
  PolicyId,
  Profile,
  WorkloadEndpoint,
  WorkloadEndpointId,
  WorkloadEndpointRemove,
  WorkloadEndpointUpdate,
} from '../proto/index.ts';

interface PendingDelta {
  readonly added: Set<string>;
  readonly removed: Set<string>;
}

export class EventSequencer {
  readonly #sentSets = new Set<string>();
  readonly #setAdds = new Map<string, { type: IpSetType; members: Set<string> }>();
  readonly #setDeltas = new Map<string, PendingDelta>();
  readonly #setRemoves = new Set<string>();

  readonly #sentPolicies = new Set<string>();
  readonly #policyUpdates = new Map<string, { id: PolicyId; policy: Policy }>();
  readonly #policyRemoves = new Map<string, PolicyId>();

  readonly #sentProfiles = new Set<string>();
  readonly #profileUpdates = new Map<string, Profile>();
  readonly #profileRemoves = new Set<string>();

  readonly #sentEndpoints = new Set<string>();
  readonly #endpointUpdates = new Map<string, WorkloadEndpointUpdate | HostEndpointUpdate>();
  readonly #endpointRemoves = new Map<string, WorkloadEndpointRemove | HostEndpointRemove>();

  // ---- IP sets ------------------------------------------------------------------------------

  onIPSetAdded(id: string, type: IpSetType): void {
    // Re-added while a remove is pending: send a full replacement instead of remove + add.
    this.#setRemoves.delete(id);
    this.#setDeltas.delete(id);
    this.#setAdds.set(id, { type, members: new Set() });
  }

  onIPSetRemoved(id: string): void {
    this.#setAdds.delete(id);
    this.#setDeltas.delete(id);
    if (this.#sentSets.has(id)) this.#setRemoves.add(id);
  }

  onIPSetMemberAdded(id: string, member: string): void {
    const add = this.#setAdds.get(id);
    if (add !== undefined) {
      add.members.add(member);
      return;
    }
    const d = this.#delta(id);
    if (!d.removed.delete(member)) d.added.add(member);
  }

  onIPSetMemberRemoved(id: string, member: string): void {
    const add = this.#setAdds.get(id);
    if (add !== undefined) {
      add.members.delete(member);
      return;
    }
    const d = this.#delta(id);
    if (!d.added.delete(member)) d.removed.add(member);
  }

  #delta(id: string): PendingDelta {
    let d = this.#setDeltas.get(id);
    if (d === undefined) this.#setDeltas.set(id, (d = { added: new Set(), removed: new Set() }));
    return d;
  }

  // ---- policies, profiles, endpoints --------------------------------------------------------

  onPolicyUpdate(key: string, id: PolicyId, policy: Policy): void {
    this.#policyRemoves.delete(key);
    this.#policyUpdates.set(key, { id, policy });
  }

  onPolicyRemove(key: string, id: PolicyId): void {
    this.#policyUpdates.delete(key);
    if (this.#sentPolicies.has(key)) this.#policyRemoves.set(key, id);
  }

  onProfileUpdate(name: string, profile: Profile): void {
    this.#profileRemoves.delete(name);
    this.#profileUpdates.set(name, profile);
  }

  onProfileRemove(name: string): void {
    this.#profileUpdates.delete(name);
    if (this.#sentProfiles.has(name)) this.#profileRemoves.add(name);
  }

  onEndpointUpdate(key: string, id: WorkloadEndpointId, endpoint: WorkloadEndpoint): void {
    this.#endpointRemoves.delete(key);
    this.#endpointUpdates.set(key, { type: 'WorkloadEndpointUpdate', id, endpoint });
  }

  onEndpointRemove(key: string, id: WorkloadEndpointId): void {
    this.#endpointUpdates.delete(key);
    if (this.#sentEndpoints.has(key)) this.#endpointRemoves.set(key, { type: 'WorkloadEndpointRemove', id });
  }

  onHostEndpointUpdate(key: string, id: HostEndpointId, endpoint: HostEndpoint): void {
    this.#endpointRemoves.delete(key);
    this.#endpointUpdates.set(key, { type: 'HostEndpointUpdate', id, endpoint });
  }

  onHostEndpointRemove(key: string, id: HostEndpointId): void {
    this.#endpointUpdates.delete(key);
    if (this.#sentEndpoints.has(key)) this.#endpointRemoves.set(key, { type: 'HostEndpointRemove', id });
  }

  /** Number of pending items (for tests and back-pressure decisions). */
  get pendingCount(): number {
    return (
      this.#setAdds.size +
      this.#setDeltas.size +
      this.#setRemoves.size +
      this.#policyUpdates.size +
      this.#policyRemoves.size +
      this.#profileUpdates.size +
      this.#profileRemoves.size +
      this.#endpointUpdates.size +
      this.#endpointRemoves.size
    );
  }

  /** Emits everything pending, in dependency order, and forgets it. */
  flush(): DataplaneMessage[] {
    const out: DataplaneMessage[] = [];
    for (const [id, { type, members }] of this.#setAdds) {
      out.push({ type: 'IPSetUpdate', id, ipsetType: type, members: [...members] });
      this.#sentSets.add(id);
    }
    for (const [id, d] of this.#setDeltas) {
      if (d.added.size === 0 && d.removed.size === 0) continue;
      out.push({ type: 'IPSetDeltaUpdate', id, added: [...d.added], removed: [...d.removed] });
    }
    for (const [key, { id, policy }] of this.#policyUpdates) {
      out.push({ type: 'ActivePolicyUpdate', id, policy });
      this.#sentPolicies.add(key);
    }
    for (const [name, profile] of this.#profileUpdates) {
      out.push({ type: 'ActiveProfileUpdate', id: { name }, profile });
      this.#sentProfiles.add(name);
    }
    for (const [key, msg] of this.#endpointUpdates) {
      out.push(msg);
      this.#sentEndpoints.add(key);
    }
    for (const [key, msg] of this.#endpointRemoves) {
      out.push(msg);
      this.#sentEndpoints.delete(key);
    }
    for (const name of this.#profileRemoves) {
      out.push({ type: 'ActiveProfileRemove', id: { name } });
      this.#sentProfiles.delete(name);
    }
    for (const [key, id] of this.#policyRemoves) {
      out.push({ type: 'ActivePolicyRemove', id });
      this.#sentPolicies.delete(key);
    }
    for (const id of this.#setRemoves) {
      out.push({ type: 'IPSetRemove', id });
      this.#sentSets.delete(id);
    }
    this.#setAdds.clear();
    this.#setDeltas.clear();
    this.#setRemoves.clear();
    this.#policyUpdates.clear();
    this.#policyRemoves.clear();
    this.#profileUpdates.clear();
    this.#profileRemoves.clear();
    this.#endpointUpdates.clear();
    this.#endpointRemoves.clear();
    return out;
  }
}
