/**
 * The syncer contract (`Update`, `SyncStatus`, `SyncerCallbacks`) and the informer syncer that
 * feeds it from the API server. The agent, Typha and the simulator share this folder; none of
 * them imports another. Re-exports only.
 */
export type { AnyUpdate, SyncedObject, SyncerCallbacks, SyncStatus, Update } from './update.ts';
export { DEFAULT_UPDATE_API_VERSION, updateApiVersion } from './update.ts';
export type { Syncer, SyncerFactory } from './syncer.ts';
export { AGENT_RESOURCES, InformerSyncer, TYPHA_RESOURCES } from './informer-syncer.ts';
export type { InformerSyncerOptions } from './informer-syncer.ts';
