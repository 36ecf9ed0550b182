/**
 * Connection rebalancing (typha.md §4, upstream `typha/pkg/k8s/rebalance.go`): each Typha
 * periodically works out how many client connections it should carry — its share of the
 * cluster's nodes, with headroom for one Typha being down — and hands that target to the
 * sync server (`setMaxConns`), which sheds connections above it one at a time so clients
 * reconnect to less loaded Typhas.
 *
 * Guarantees:
 * - `connectionTarget` is Calico's formula exactly: integer arithmetic evaluated left to right
 *   (`numSyncerTypes * (1 + numNodes*120 / (numTyphas-1) / 100)`, each `/` truncating), then
 *   raised to `lower` and capped at `upper`; a lone Typha (≤ 1) or a count that failed gets
 *   `upper` — never a small limit because the API server hiccupped;
 * - the poller counts the Service's READY endpoints (EndpointSlice `conditions.ready` not
 *   false, not terminating) that expose the Typha port, each endpoint once even when it
 *   appears in an IPv4 and an IPv6 slice, and the cluster's Nodes (paged);
 * - it polls at once on `run`, then every `intervalMs`; `setMaxConns` is called on the first
 *   poll and whenever the target changes;
 * - each poll's requests are aborted after `requestTimeoutMs` (a hung API call counts as a
 *   failed count), so the poller never stalls; `run` resolves once `signal` aborts.
 */
import { CoreV1Api, DiscoveryV1Api, type ConfigurationOptions, type KubeConfig, type V1EndpointSlice, type V1NodeList } from '@kubernetes/client-node';

import { abortOn } from '../informers/kube-abort-on.ts';
import { realClock, sleep, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { readyEndpoints, TYPHA_PORT_NAME } from './service-endpoints.ts';

/** Typha `MaxConnectionsLowerLimit`. */
export const MAX_CONNECTIONS_LOWER_LIMIT = 400;
/** Typha `MaxConnectionsUpperLimit` (also the sync server's default cap). */
export const MAX_CONNECTIONS_UPPER_LIMIT = 10_000;
/** Typha `K8sServicePollIntervalSecs` 30. */
export const SERVICE_POLL_INTERVAL_MS = 30_000;

export interface ConnectionTargetOptions {
  /** Syncer types this Typha serves; Tessera serves one (the agents'). @default 1 */
  readonly numSyncerTypes?: number;
  /** @default 400 */
  readonly lower?: number;
  /** @default 10000 */
  readonly upper?: number;
}

/** The cluster counts the target is computed from; `undefined` when that count failed. */
export interface ClusterCounts {
  readonly numTyphas: number | undefined;
  readonly numNodes: number | undefined;
}

/** Calico's per-Typha connection target (typha.md §4.2). */
export function connectionTarget(counts: ClusterCounts, opts: ConnectionTargetOptions = {}): number {
  const { numSyncerTypes = 1, lower = MAX_CONNECTIONS_LOWER_LIMIT, upper = MAX_CONNECTIONS_UPPER_LIMIT } = opts;
  const { numTyphas, numNodes } = counts;
  if (numTyphas === undefined || numNodes === undefined) return upper;
  if (numTyphas <= 1) return upper;
  const perTypha = Math.trunc(Math.trunc((numNodes * 120) / (numTyphas - 1)) / 100);
  const candidate = numSyncerTypes * (1 + perTypha);
  return Math.min(Math.max(lower, candidate), upper);
}

/** The API calls the poller makes (DiscoveryV1Api's and CoreV1Api's; a script in unit tests). */
export interface RebalanceApi {
  listNamespacedEndpointSlice(param: { namespace: string; labelSelector: string }, options?: ConfigurationOptions): Promise<{ items: V1EndpointSlice[] }>;
  listNode(param: { limit?: number; _continue?: string }, options?: ConfigurationOptions): Promise<Pick<V1NodeList, 'items' | 'metadata'>>;
}

export function rebalanceApi(kubeConfig: KubeConfig): RebalanceApi {
  const discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    listNamespacedEndpointSlice: (param, options) => discovery.listNamespacedEndpointSlice(param, options),
    listNode: (param, options) => core.listNode(param, options),
  };
}

/** Ready endpoints exposing the port named `portName` (else a slice's only port), each counted once. */
export function countReadyEndpoints(slices: readonly V1EndpointSlice[], portName: string): number {
  const seen = new Set<string>();
  for (const { endpoint: ep } of readyEndpoints(slices, portName)) {
    // The same pod is listed in one slice per address family: identify it by its pod,
    // else its hostname, else its first address.
    const ref = ep.targetRef;
    const id = ref?.uid ?? (ref?.name !== undefined ? `${ref.namespace ?? ''}/${ref.name}` : undefined) ?? ep.hostname ?? ep.addresses[0];
    if (id !== undefined) seen.add(id);
  }
  return seen.size;
}

export interface RebalancePollerOptions extends ConnectionTargetOptions {
  readonly api: RebalanceApi;
  /** Namespace and name of Typha's Service (Typha `K8sNamespace` / `K8sServiceName`). */
  readonly namespace: string;
  readonly service: string;
  /** Typha `K8sPortName`. @default 'tessera-typha' */
  readonly portName?: string;
  /** Receives the target on the first poll and on every change (the server's `setMaxConns`). */
  readonly setMaxConns: (target: number) => void;
  /** @default 30_000 */
  readonly intervalMs?: number;
  /** A poll's API calls are aborted after this long. @default 10_000 */
  readonly requestTimeoutMs?: number;
  /** Nodes per list page. @default 500 */
  readonly nodePageSize?: number;
  /** @default realClock */
  readonly clock?: Clock;
  /** @default silentLogger */
  readonly logger?: Logger;
}

export class RebalancePoller {
  readonly #opts: RebalancePollerOptions;
  readonly #portName: string;
  readonly #intervalMs: number;
  readonly #requestTimeoutMs: number;
  readonly #pageSize: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  #target: number | undefined;

  constructor(opts: RebalancePollerOptions) {
    const { portName = TYPHA_PORT_NAME, intervalMs = SERVICE_POLL_INTERVAL_MS, requestTimeoutMs = 10_000, nodePageSize = 500, clock = realClock, logger = silentLogger } = opts;
    if (!(intervalMs > 0)) throw new RangeError(`RebalancePoller: intervalMs must be > 0, got ${intervalMs}`);
    if (!(requestTimeoutMs > 0)) throw new RangeError(`RebalancePoller: requestTimeoutMs must be > 0, got ${requestTimeoutMs}`);
    if (!Number.isInteger(nodePageSize) || nodePageSize < 1) throw new RangeError(`RebalancePoller: nodePageSize must be an integer ≥ 1, got ${nodePageSize}`);
    this.#opts = opts;
    this.#portName = portName;
    this.#intervalMs = intervalMs;
    this.#requestTimeoutMs = requestTimeoutMs;
    this.#pageSize = nodePageSize;
    this.#clock = clock;
    this.#log = logger.child({ component: 'typha-rebalance', namespace: opts.namespace, name: opts.service });
  }

  /** The last target handed to `setMaxConns`; undefined before the first poll. */
  get target(): number | undefined {
    return this.#target;
  }

  /** Polls now until `signal` aborts, then every `intervalMs`. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.pollOnce(signal);
      try {
        await sleep(this.#clock, this.#intervalMs, signal);
      } catch {
        return;
      }
    }
  }

  /** Counts, computes the target and hands it on when it changed; returns it. */
  async pollOnce(signal?: AbortSignal): Promise<number> {
    const deadline = new AbortController();
    const timer = this.#clock.setTimer(() => deadline.abort(new Error(`Service ${this.#opts.namespace}/${this.#opts.service}: counting took over ${this.#requestTimeoutMs} ms`)), this.#requestTimeoutMs);
    const onAbort = (): void => deadline.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let counts: ClusterCounts;
    try {
      const options = abortOn(deadline.signal);
      const [numTyphas, numNodes] = await Promise.all([this.#countTyphas(options), this.#countNodes(options)]);
      counts = { numTyphas, numNodes };
    } finally {
      timer.cancel();
      signal?.removeEventListener('abort', onAbort);
    }
    const target = connectionTarget(counts, this.#opts);
    if (target !== this.#target) {
      this.#log.info({ ...counts, target, previous: this.#target }, 'connection target changed');
      this.#target = target;
      this.#opts.setMaxConns(target);
    }
    return target;
  }

  async #countTyphas(options: ConfigurationOptions): Promise<number | undefined> {
    const { namespace, service } = this.#opts;
    try {
      const list = await this.#opts.api.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${service}` }, options);
      return countReadyEndpoints(list.items, this.#portName);
    } catch (err) {
      this.#log.warn({ err }, `cannot count the ready endpoints of Service ${namespace}/${service}: using the upper connection limit`);
      return undefined;
    }
  }

  async #countNodes(options: ConfigurationOptions): Promise<number | undefined> {
    let count = 0;
    let cont: string | undefined;
    try {
      do {
        const page = await this.#opts.api.listNode({ limit: this.#pageSize, ...(cont === undefined ? {} : { _continue: cont }) }, options);
        count += page.items.length;
        cont = page.metadata?._continue || undefined;
      } while (cont !== undefined);
      return count;
    } catch (err) {
      this.#log.warn({ err }, 'cannot count the cluster nodes: using the upper connection limit');
      return undefined;
    }
  }
}
