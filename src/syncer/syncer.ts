/**
 * A feed as its consumer runs it (libcalico's `api.Syncer`): the informer syncer
 * (informer-syncer.ts) and Typha's client (typha/sync-client.ts) both satisfy it, so the agent
 * runs whichever its caller chose without importing either's package.
 *
 * Guarantees an implementation keeps:
 * - it delivers to the `SyncerCallbacks` it was constructed with, and only while `run` runs;
 * - `run(signal)` resolves once `signal` has aborted and everything it started has stopped
 *   (it never rejects: a feed that cannot reach its datastore retries, and says so through
 *   its liveness probes and its status, not by throwing);
 * - `livenessProbes` name every loop whose lack of progress should fail the process's
 *   `/livez`; the list is fixed once the syncer is constructed.
 */
import type { LivenessProbe } from '../runtime/liveness.ts';

import type { SyncerCallbacks } from './update.ts';

export interface Syncer {
  run(signal: AbortSignal): Promise<void>;
  readonly livenessProbes: ReadonlyArray<{ readonly name: string; readonly probe: LivenessProbe }>;
}

/** Makes a syncer that delivers to `callbacks`: how a consumer is handed its feed. */
export type SyncerFactory = (callbacks: SyncerCallbacks) => Syncer;
