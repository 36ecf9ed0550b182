/**
 * The seam between the IP sets manager and a backend (Felix `IPSetsDataplane`): the sets of
 * one IP family that rules name, by the calc graph's set id. `iptables/ipsets.ts` (`ipset
 * restore`) implements it; an nftables backend would keep its sets in its own table.
 *
 * Contract (the driver's apply order relies on it):
 * - Member changes only change desired state; `applyUpdates()` writes creates and member
 *   deltas, before the tables apply, so no rule names a missing set.
 * - `applyDeletions()` runs after the tables apply and removes a set only once no rule names
 *   it (at most a bounded number per call; `hasPendingDeletions` says more remain).
 * - A read-back (`nextCheckAt`, `invalidate`, `prefetch`) repairs sets changed behind our back.
 * - An outage rejects with a `DataplaneApplyError`; the kernel keeps its last state.
 */
import type { IpSetType } from '../proto/index.ts';

/** What one `applyUpdates()` wrote. */
export interface IpSetsApplyResult {
  readonly wrote: boolean;
  readonly bytes: number;
  readonly lines: number;
}

export interface IpSetsDataplane {
  readonly ipVersion: 4 | 6;
  // ---- desired state ----
  replaceMembers(setId: string, type: IpSetType, members: Iterable<string>): void;
  addMembers(setId: string, members: Iterable<string>): void;
  removeMembers(setId: string, members: Iterable<string>): void;
  removeSet(setId: string): void;
  // ---- the driver's loop ----
  readonly isDirty: boolean;
  readonly hasPendingDeletions: boolean;
  /** When the next read-back is due (clock ms). */
  nextCheckAt(): number;
  /** Forces a read-back before the next write. */
  invalidate(): void;
  /** Starts a read-back due in the coming apply, so it overlaps rendering. */
  prefetch(): void;
  applyUpdates(): Promise<IpSetsApplyResult>;
  /** Whether a set was deleted. */
  applyDeletions(): Promise<boolean>;
}
