/**
 * The cluster-side controllers: a client-go work queue, a controller runner, the
 * controllers that keep knp.default.* policies, Profiles, WorkloadEndpoints and automatic
 * HostEndpoints in step with their Kubernetes sources (the conversion itself is src/convert),
 * default tiers, leader election, and `startControllers` which
 * wires them for `tessera controllers`. Re-exports only.
 */
export { WorkQueue } from './work-queue.ts';
export type { WorkQueueOptions } from './work-queue.ts';
export {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
} from './rate-limiter.ts';
export type { RateLimiter } from './rate-limiter.ts';
export { Controller, TerminalError } from './controller.ts';
export type { ControllerOptions, ReconcileResult, Reconciler } from './controller.ts';
export { ensureDefaultTiers } from './tier-reconciler.ts';
export { MirrorController, DEFAULT_SWEEP_INTERVAL_MS } from './mirror-controller.ts';
export { ObjectWriter } from './object-writer.ts';
export type { DeletePreconditions, Writer, WrittenObject } from './object-writer.ts';
export { AUTO_HOST_ENDPOINT_CONTROLLER, newAutoHostEndpointController } from './auto-host-endpoint-controller.ts';
export { LeaderElector } from './leader-election.ts';
export type { LeaderElectorOptions } from './leader-election.ts';

export { startControllers } from './controllers-process.ts';
export type { ControllersOptions, RunningControllers } from './controllers-process.ts';
export { FIELD_MANAGER, MANAGED_BY_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './ownership.ts';
