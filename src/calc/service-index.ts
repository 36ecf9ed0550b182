/**
 * `ServiceIndex`: the members of every active `services` IP set, from EndpointSlices (Felix
 * `serviceindex/serviceindex.go`, reference §D.3).
 *
 * Guarantees:
 * - a ports set (`svc:`) of Service S holds `<ip>,<proto>:<port>` for every address × port
 *   of every slice of S; a no-ports set (`svcnoport:`) holds every address as a host CIDR
 *   (`10.0.0.1/32`, `fd00::1/128`). Both families go into one set; the dataplane splits them;
 * - members are reference-counted across slices (and within one: a slice may list an
 *   address twice): `onMemberAdded` on 0→1, `onMemberRemoved` on 1→0, so overlapping slices
 *   and a slice replaced by another never churn a shared member;
 * - only active sets are filled: a set that becomes active reports its current members as
 *   additions; one that becomes inactive is forgotten without member events (the sequencer
 *   removes the whole set), as the IP-set member index does;
 * - slices are held whether or not any set is active, so activation needs no resync.
 */
import { SetMap } from '../runtime/set-map.ts';
import type { ServiceIPSetData } from './ipset-data.ts';
import type { ModelEndpointSlice } from './model.ts';

export interface ServiceIndexCallbacks {
  onMemberAdded(setId: string, member: string): void;
  onMemberRemoved(setId: string, member: string): void;
}

interface ActiveSet {
  readonly data: ServiceIPSetData;
  readonly members: Map<string, number>;
}

export class ServiceIndex {
  readonly #cb: ServiceIndexCallbacks;
  readonly #slices = new Map<string, ModelEndpointSlice>();
  /** service → keys of its slices. */
  readonly #slicesByService = new SetMap<string, string>();
  readonly #sets = new Map<string, ActiveSet>();
  /** service → ids of its active sets (at most its ports set and its no-ports set). */
  readonly #setsByService = new SetMap<string, string>();

  constructor(callbacks: ServiceIndexCallbacks) {
    this.#cb = callbacks;
  }

  get activeSetCount(): number {
    return this.#sets.size;
  }

  /** Slices held. */
  get sliceCount(): number {
    return this.#slices.size;
  }

  /** `slice === null` deletes the slice `key`. A changed slice contributes only its difference. */
  onEndpointSliceUpdate(key: string, slice: ModelEndpointSlice | null): void {
    const old = this.#slices.get(key);
    if (slice !== null) {
      this.#slices.set(key, slice);
      this.#slicesByService.add(slice.service, key);
    } else this.#slices.delete(key);
    if (old !== undefined && (slice === null || old.service !== slice.service)) this.#slicesByService.delete(old.service, key);
    // Additions before removals: a member both slices give never leaves its set.
    if (slice !== null) this.#contribute(slice, +1);
    if (old !== undefined) this.#contribute(old, -1);
  }

  onIPSetActive(data: ServiceIPSetData): void {
    if (this.#sets.has(data.id)) return;
    const set: ActiveSet = { data, members: new Map() };
    this.#sets.set(data.id, set);
    this.#setsByService.add(data.service, data.id);
    for (const key of this.#slicesByService.get(data.service) ?? []) {
      const slice = this.#slices.get(key);
      if (slice !== undefined) forEachMember(data, slice, (m) => this.#ref(set, m, +1));
    }
  }

  onIPSetInactive(setId: string): void {
    const set = this.#sets.get(setId);
    if (set === undefined) return;
    this.#sets.delete(setId);
    this.#setsByService.delete(set.data.service, setId);
  }

  /** Current members of an active set (for tests). */
  membersOf(setId: string): string[] | undefined {
    const s = this.#sets.get(setId);
    return s === undefined ? undefined : [...s.members.keys()];
  }

  #contribute(slice: ModelEndpointSlice, delta: 1 | -1): void {
    const ids = this.#setsByService.get(slice.service);
    if (ids === undefined) return;
    for (const id of ids) {
      const set = this.#sets.get(id);
      if (set !== undefined) forEachMember(set.data, slice, (m) => this.#ref(set, m, delta));
    }
  }

  #ref(set: ActiveSet, member: string, delta: 1 | -1): void {
    const n = (set.members.get(member) ?? 0) + delta;
    if (n > 0) {
      set.members.set(member, n);
      if (n === 1 && delta === 1) this.#cb.onMemberAdded(set.data.id, member);
      return;
    }
    if (n < 0) throw new Error(`ServiceIndex: refcount of ${member} in ${set.data.id} went negative`);
    set.members.delete(member);
    this.#cb.onMemberRemoved(set.data.id, member);
  }
}

/** Each member `slice` gives `data`'s set (see the guarantees above). */
function forEachMember(data: ServiceIPSetData, slice: ModelEndpointSlice, fn: (member: string) => void): void {
  if (!data.includePorts) {
    for (const a of slice.addresses) fn(a.includes(':') ? `${a}/128` : `${a}/32`);
    return;
  }
  for (const a of slice.addresses) for (const p of slice.ports) fn(`${a},${p.protocol}:${p.port}`);
}
