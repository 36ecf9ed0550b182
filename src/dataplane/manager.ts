/**
 * One part of the dataplane (Felix `dataplane/linux` `Manager`): it turns the proto messages it
 * cares about into desired state in the tables and IP sets it was given. The driver owns a list
 * of managers and calls each in turn — every message to every manager, then, before each apply,
 * every manager's deferred work — so a new part (a HostEndpoint manager) is one more list entry.
 *
 * - `onMessage` only changes desired state, never the kernel, and ignores messages that are
 *   not its business; messages arrive in the calc graph's order.
 * - `completeDeferredWork` runs before the tables apply, once per apply, in list order: work
 *   that needs the whole batch, or I/O (resolving an endpoint's interface).
 * - `wantsRetry`: deferred work is left that only a later apply can finish (an interface with no
 *   route yet), or state outside the messages must be polled (the host interfaces a
 *   HostEndpoint may match); the driver schedules an apply every `unresolvedRetryMs` meanwhile.
 */
import type { DataplaneMessage } from '../proto/index.ts';
import type { PhaseTotals } from './apply-phases.ts';

export interface Manager {
  onMessage(msg: DataplaneMessage): void;
  /** Adds its time to the phases of the apply in progress (`phases`). */
  completeDeferredWork(phases: PhaseTotals): Promise<void>;
  readonly wantsRetry?: boolean;
}
