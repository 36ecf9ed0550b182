/**
 * Address → workload endpoint, for naming both sides of a logged flow (Felix's collector
 * lookup cache). Fed the same resource updates as the calc graph, so it knows every endpoint
 * in the cluster, local or remote.
 *
 * Invariant: an address belongs to the endpoint that last claimed it; deleting or re-addressing
 * an endpoint releases only the addresses still pointing at it.
 */
import { formatIP, parseIP, type WorkloadEndpoint } from '../api/index.ts';
import type { Update } from '../syncer/index.ts';

export interface EndpointIdentity {
  readonly namespace: string;
  /** The pod (`spec.pod`), or the endpoint's name for non-Kubernetes endpoints. */
  readonly pod: string;
  readonly workloadEndpoint: string;
  readonly node?: string;
}

export class EndpointLookup {
  readonly #byIp = new Map<string, EndpointIdentity>();
  /**
   * namespace → endpoint name → its address, or addresses when it has several. Nested maps,
   * and one address held as itself: at 100k endpoints a `<namespace>/<name>` key and an array
   * per endpoint were ~260 bytes of ~380.
   */
  readonly #ipsOf = new Map<string, Map<string, string | readonly string[]>>();
  /** Namespace and node names, one copy each. */
  readonly #names = new Map<string, string>();

  onUpdates(updates: readonly Update[]): void {
    for (const u of updates) {
      if (u.op === 'upsert') {
        if (u.resource.kind === 'WorkloadEndpoint') this.#upsert(u.resource);
      } else if (u.kind === 'WorkloadEndpoint') this.#remove(u.namespace ?? '', u.name);
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
    const namespace = this.#name(ep.metadata.namespace ?? '');
    const name = ep.metadata.name;
    this.#remove(namespace, name);
    const node = ep.spec.node === undefined ? undefined : this.#name(ep.spec.node);
    const identity: EndpointIdentity = { namespace, pod: ep.spec.pod ?? name, workloadEndpoint: name, ...(node === undefined ? {} : { node }) };
    const ips: string[] = [];
    for (const net of ep.spec.ipNetworks ?? []) {
      const ip = packetAddress(net);
      if (ip === undefined) continue;
      ips.push(ip);
      this.#byIp.set(ip, identity);
    }
    if (ips.length === 0) return;
    let names = this.#ipsOf.get(namespace);
    if (names === undefined) this.#ipsOf.set(namespace, (names = new Map()));
    names.set(name, ips.length === 1 ? (ips[0] as string) : ips);
  }

  #remove(namespace: string, name: string): void {
    const names = this.#ipsOf.get(namespace);
    const held = names?.get(name);
    if (names === undefined || held === undefined) return;
    names.delete(name);
    if (names.size === 0) this.#ipsOf.delete(namespace);
    for (const ip of typeof held === 'string' ? [held] : held) {
      const cur = this.#byIp.get(ip);
      if (cur !== undefined && cur.namespace === namespace && cur.workloadEndpoint === name) this.#byIp.delete(ip);
    }
  }

  #name(s: string): string {
    const held = this.#names.get(s);
    if (held !== undefined) return held;
    this.#names.set(s, s);
    return s;
  }
}

/** Canonical dotted-quad IPv4 is already as packet-header.ts writes it. */
const CANONICAL_V4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** An endpoint network's address keyed as packets are written (`fd00:65::2`, not `fd00:0065:0:0::2`). */
function packetAddress(net: string): string | undefined {
  const slash = net.indexOf('/');
  const text = slash < 0 ? net : net.slice(0, slash);
  if (CANONICAL_V4.test(text)) return text;
  const parsed = parseIP(text);
  return parsed.ok ? formatIP(parsed.value.bytes) : undefined;
}
