/**
 * `LocalEndpointFilter`: passes on only this node's endpoints (Felix:
 * `endpointHostnameFilter`, calico-semantics §5.3).
 *
 * - An endpoint is local when its `spec.node` equals the node name.
 * - An endpoint that moves away from this node (or is deleted) is passed on as a delete,
 *   exactly once; remote endpoints never reach the local dispatcher at all (they still
 *   reach the IP-set member index through the main dispatcher).
 */
import type { ModelEndpoint } from './model.ts';

export type LocalEndpointHandler = (key: string, endpoint: ModelEndpoint | null) => void;

export class LocalEndpointFilter {
  readonly #nodeName: string;
  readonly #local = new Set<string>();
  readonly #next: LocalEndpointHandler;

  constructor(opts: { nodeName: string; onLocalEndpoint: LocalEndpointHandler }) {
    this.#nodeName = opts.nodeName;
    this.#next = opts.onLocalEndpoint;
  }

  get localCount(): number {
    return this.#local.size;
  }

  onEndpointUpdate(key: string, endpoint: ModelEndpoint | null): void {
    if (endpoint !== null && endpoint.node === this.#nodeName) {
      this.#local.add(key);
      this.#next(key, endpoint);
      return;
    }
    if (this.#local.delete(key)) this.#next(key, null);
  }
}
