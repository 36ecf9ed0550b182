/**
 * Address → workload endpoint, for naming both sides of a logged flow (Felix's collector
 * lookup cache). Fed the same resource updates as the calc graph, so it knows every endpoint
 * in the cluster, local or remote.
 *
 * Invariant: an address belongs to the endpoint that last claimed it; deleting or re-addressing
 * an endpoint releases only the addresses still pointing at it.
 */
import type { ResourceUpdate } from '../calc/index.ts';
import { formatIP, parseIP, type WorkloadEndpoint } from '../api/index.ts';

export interface EndpointIdentity {
  readonly namespace: string;
  /** The pod (`spec.pod`), or the endpoint's name for non-Kubernetes endpoints. */
  readonly pod: string;
  readonly workloadEndpoint: string;
  readonly node?: string;
}

export class EndpointLookup {
  readonly #byIp = new Map<string, EndpointIdentity>();
  readonly #ipsOf = new Map<string, readonly string[]>();

  onUpdates(updates: readonly ResourceUpdate[]): void {
    for (const u of updates) {
      if (u.op === 'upsert') {
        if (u.resource.kind === 'WorkloadEndpoint') this.#upsert(u.resource);
      } else if (u.kind === 'WorkloadEndpoint') this.#remove(`${u.namespace ?? ''}/${u.name}`);
    }
  }

  /** `ip` as `formatIP` writes it (packet-header.ts does). */
  lookup(ip: string): EndpointIdentity | undefined {
    return this.#byIp.get(ip);
  }

  get size(): number {
    return this.#byIp.size;
  }

  #upsert(ep: WorkloadEndpoint): void {
    const namespace = ep.metadata.namespace ?? '';
    const key = `${namespace}/${ep.metadata.name}`;
    this.#remove(key);
    const identity: EndpointIdentity = { namespace, pod: ep.spec.pod ?? ep.metadata.name, workloadEndpoint: ep.metadata.name, ...(ep.spec.node === undefined ? {} : { node: ep.spec.node }) };
    const ips: string[] = [];
    for (const net of ep.spec.ipNetworks ?? []) {
      const slash = net.indexOf('/');
      const parsed = parseIP(slash < 0 ? net : net.slice(0, slash));
      if (!parsed.ok) continue;
      // Keyed as packet-header.ts writes a packet's addresses (`fd00:65::2`, not `fd00:0065:0:0::2`).
      const ip = formatIP(parsed.value.bytes);
      ips.push(ip);
      this.#byIp.set(ip, identity);
    }
    this.#ipsOf.set(key, ips);
  }

  #remove(key: string): void {
    const ips = this.#ipsOf.get(key);
    if (ips === undefined) return;
    this.#ipsOf.delete(key);
    for (const ip of ips) {
      const cur = this.#byIp.get(ip);
      if (cur !== undefined && `${cur.namespace}/${cur.workloadEndpoint}` === key) this.#byIp.delete(ip);
    }
  }
}
