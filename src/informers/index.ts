/** The informer stack: Reflector → DeltaFIFO → Indexer → SharedIndexInformer. */
export { DeletedFinalStateUnknown } from './deleted-final-state-unknown.ts';
export { DeltaFIFO, FIFOClosedError, RequeueError } from './delta-fifo.ts';
export type { Delta, DeltaType, DeltaFIFOOptions, PopProcessFunc } from './delta-fifo.ts';
export { Indexer, IndexError, NAMESPACE_INDEX, namespaceIndexFunc } from './indexer.ts';
export type { IndexFunc, Indexers, IndexerOptions } from './indexer.ts';
export { InformerMetrics } from './informer-metrics.ts';
export { isExpiredError, isTooLargeResourceVersionError, StatusError } from './lister-watcher.ts';
export type { ListerWatcher, ListOptions, ListResult, Status, WatchEvent, WatchOptions } from './lister-watcher.ts';
export { KeyError, metaNamespaceKey, splitMetaNamespaceKey } from './object.ts';
export type { KeyFunc, KubeObject, ObjectMeta } from './object.ts';
export type { Notification, ResourceEventHandler } from './processor-listener.ts';
export { Reflector, stripManagedFields, VeryShortWatchError } from './reflector.ts';
export type { ReflectorOptions, ReflectorStore, TransformFunc } from './reflector.ts';
export { ScriptedListerWatcher, ScriptedWatch } from './scripted-lister-watcher.ts';
export { SharedIndexInformer } from './shared-index-informer.ts';
export type { HandlerRegistration, SharedIndexInformerOptions } from './shared-index-informer.ts';
export type { KeyListerGetter, Store } from './store.ts';
