/**
 * Address → workload endpoint, for naming both sides of a logged flow (Felix's collector
 * lookup cache). Fed the same resource updates as the calc graph, so it knows every endpoint
 * in the cluster, local or remote.
 *
 * Invariant: an address belongs to the endpoint that last claimed it; deleting or re-addressing
 * an endpoint releases only the addresses still pointing at it.
 */
import { formatIP, parseIP, type WorkloadEndpoint } from '../api/index.ts';
import { EndpointStore, type AddressWords } from '../runtime/endpoint-store.ts';
import type { Update } from '../syncer/index.ts';

export interface EndpointIdentity {
  readonly namespace: string;
  /** The pod (`spec.pod`), or the endpoint's name for non-Kubernetes endpoints. */
  readonly pod: string;
  readonly workloadEndpoint: string;
  readonly node?: string;
}

/**
 * Endpoints live in an {@link EndpointStore} (an integer id each, addresses as 32-bit words in
 * typed arrays) with their names in arrays indexed by id; an identity object is made per
 * lookup. At 100k endpoints the address → identity Map, its address strings and an identity
 * object per endpoint were ~150 bytes an endpoint of the agent's heap.
 */
export class EndpointLookup {
  readonly #store = new EndpointStore();
  /** namespace → endpoint name → its id. */
  readonly #ids = new Map<string, Map<string, number>>();
  /** Per id. */
  readonly #namespace: string[] = [];
  readonly #name: string[] = [];
  /** Per id: `spec.pod` when it differs from the name, else undefined. */
  readonly #pod: (string | undefined)[] = [];
  readonly #node: (string | undefined)[] = [];
  /** Namespace and node names, one copy each. */
  readonly #names = new Map<string, string>();

  onUpdates(updates: readonly Update[]): void {
    for (const u of updates) {
      if (u.op === 'upsert') {
        if (u.resource.kind === 'WorkloadEndpoint') this.#upsert(u.resource);
      } else if (u.kind === 'WorkloadEndpoint') this.#remove(u.namespace ?? '', u.name);
    }
  }

  /** `ip` as `formatIP` writes it (packet-header.ts does); other spellings are not found. */
  lookup(ip: string): EndpointIdentity | undefined {
    const address = packetWords(ip);
    if (address === undefined || address.text !== ip) return undefined;
    const id = this.#store.idOf(address.words);
    if (id < 0) return undefined;
    const name = this.#name[id] as string;
    const node = this.#node[id];
    return { namespace: this.#namespace[id] as string, pod: this.#pod[id] ?? name, workloadEndpoint: name, ...(node === undefined ? {} : { node }) };
  }

  /** Addresses known. */
  get size(): number {
    return this.#store.addressCount;
  }

  #upsert(ep: WorkloadEndpoint): void {
    const namespace = this.#intern(ep.metadata.namespace ?? '');
    const name = ep.metadata.name;
    this.#remove(namespace, name);
    let id: number | undefined;
    for (const net of ep.spec.ipNetworks ?? []) {
      const address = packetWords(net);
      if (address === undefined) continue;
      if (id === undefined) {
        id = this.#store.allocate();
        this.#namespace[id] = namespace;
        this.#name[id] = name;
        const pod = ep.spec.pod ?? name;
        this.#pod[id] = pod === name ? undefined : pod;
        this.#node[id] = ep.spec.node === undefined ? undefined : this.#intern(ep.spec.node);
      }
      this.#store.claim(id, address.words);
    }
    if (id === undefined) return;
    let names = this.#ids.get(namespace);
    if (names === undefined) this.#ids.set(namespace, (names = new Map()));
    names.set(name, id);
  }

  #remove(namespace: string, name: string): void {
    const names = this.#ids.get(namespace);
    const id = names?.get(name);
    if (names === undefined || id === undefined) return;
    names.delete(name);
    if (names.size === 0) this.#ids.delete(namespace);
    this.#store.release(id);
    this.#pod[id] = undefined;
    this.#node[id] = undefined;
  }

  #intern(s: string): string {
    const held = this.#names.get(s);
    if (held !== undefined) return held;
    this.#names.set(s, s);
    return s;
  }
}

/** Canonical dotted-quad IPv4 is already as packet-header.ts writes it. */
const CANONICAL_V4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * An endpoint network's (or a packet's) address as words, and as packets are written
 * (`fd00:65::2`, not `fd00:0065:0:0::2`); undefined if it is not an address.
 */
function packetWords(net: string): { readonly words: AddressWords; readonly text: string } | undefined {
  const slash = net.indexOf('/');
  const text = slash < 0 ? net : net.slice(0, slash);
  if (CANONICAL_V4.test(text)) {
    let word = 0;
    let octet = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 46) {
        word = word * 256 + octet;
        octet = 0;
      } else octet = octet * 10 + (c - 48);
    }
    return { words: word * 256 + octet, text };
  }
  const parsed = parseIP(text);
  if (!parsed.ok) return undefined;
  const b = parsed.value.bytes;
  const word = (i: number): number => (((b[i] as number) << 24) | ((b[i + 1] as number) << 16) | ((b[i + 2] as number) << 8) | (b[i + 3] as number)) >>> 0;
  const words: AddressWords = b.length === 4 ? word(0) : [word(0), word(4), word(8), word(12)];
  return { words, text: formatIP(b) };
}
