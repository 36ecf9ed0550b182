/**
 * A second reading of Kubernetes NetworkPolicy semantics: decides one packet against
 * `networking.k8s.io/v1` NetworkPolicy objects directly — no conversion, no Calico model —
 * written from the API reference (NetworkPolicySpec, NetworkPolicyIngressRule/EgressRule,
 * NetworkPolicyPeer, IPBlock, NetworkPolicyPort) and the "Network Policies" concept page.
 * It exists to be compared with Tessera's convert → calc graph → verdict engine path
 * (k8s-ref-differential.ts); it lives outside src/ so that the product can never use it, and
 * imports nothing from src/ so that it shares none of the product's code or mistakes.
 *
 * The rules, as the documentation states them:
 * - A pod is isolated for ingress (egress) when some NetworkPolicy in its namespace selects
 *   it (`spec.podSelector`; empty selects every pod of the namespace) and has `Ingress`
 *   (`Egress`) in its policy types. Unspecified `policyTypes`: "policies that contain an egress
 *   section are assumed to affect egress, and all policies … are assumed to affect ingress"
 *   (an egress section is a non-empty `egress` list, as the apiserver's defaulting reads it).
 * - A connection is allowed when the source's egress allows it AND the destination's ingress
 *   allows it; a side that is not a pod (an outside address) puts no policy on it. A
 *   non-isolated side allows everything; an isolated side allows what at least one rule of
 *   at least one policy selecting it (with that type) allows — policies are additive.
 * - A rule matches when its peers match (empty or missing `from`/`to`: every peer; else at
 *   least one, OR-ed) and its ports match (empty or missing: every port; else at least one).
 * - A peer: `ipBlock` — the address is in `cidr` and in no `except`; otherwise
 *   `podSelector` alone — matching pods of the policy's namespace; `namespaceSelector` alone —
 *   every pod of the matching namespaces; both — matching pods in matching namespaces. An
 *   empty selector matches everything. A peer with neither (hand-written `from: [null]`, which
 *   the apiserver rejects) is read as both absent: every pod of the policy's namespace.
 * - A port: the protocol (default TCP) must match; no `port` matches every port of it; a
 *   number matches it (through `endPort` inclusive); a name matches the named container port
 *   with that protocol "on a pod": the destination pod — for ingress the selected pod, for
 *   egress the peer — so an address that is no pod never matches a named port.
 * - Label selectors: `matchLabels` and `matchExpressions` are AND-ed; In (label present, value
 *   listed), NotIn (label absent or value not listed), Exists, DoesNotExist. Namespaces carry
 *   `kubernetes.io/metadata.name: <name>`, which the apiserver sets.
 * - CIDRs are read as the apiserver reads them (its legacy parser: leading zeros in IPv4
 *   fields and prefix lengths are decimal, `010.0.0.0/08` is `10.0.0.0/8`), and contain an
 *   address the way Go's `net.IPNet` does: an IPv4-mapped network (`::ffff:10.0.0.0/104`) is
 *   the IPv4 network `10.0.0.0/8`.
 *
 * `null` where hand-written YAML puts it is read as Go decodes it: a `null` list is absent, a
 * `null` list element is the element's zero value (`ingress: [null]` is `ingress: [{}]`).
 */
import { isIPv4, isIPv6 } from 'node:net';

export type RefProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface RefNamespace {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface RefContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  /** @default 'TCP' */
  readonly protocol?: RefProtocol;
}

export interface RefPod {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The pod's IPs (one per family at most). */
  readonly ips: readonly string[];
  readonly ports: readonly RefContainerPort[];
}

/** A NetworkPolicy object as written (YAML/JSON), read loosely: see the module comment. */
export interface RefNetworkPolicy {
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec?: unknown;
}

export interface RefCluster {
  readonly namespaces: readonly RefNamespace[];
  readonly pods: readonly RefPod[];
  readonly policies: readonly RefNetworkPolicy[];
}

/** One packet: each end is an address, and the pod that has it when it is a pod's. */
export interface RefPacket {
  readonly src: string;
  readonly dst: string;
  readonly protocol: RefProtocol;
  readonly port: number;
}

export interface RefVerdict {
  readonly allowed: boolean;
  /** `allowed` / `isolated, no rule allows` / `not a pod`, per side. */
  readonly egress: string;
  readonly ingress: string;
}

type Obj = Readonly<Record<string, unknown>>;

function obj(v: unknown): Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {};
}

/** A list as Go decodes it: `null`/absent → empty; `null` elements stay for the caller. */
function list(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

// ---------------------------------------------------------------------------------------
// Addresses, as the apiserver (Go's net package, legacy parser) reads them.

interface RefNet {
  readonly family: 4 | 6;
  readonly bits: bigint;
  readonly prefix: number;
}

/** Kubernetes' `ParseCIDRSloppy`/`ParseIPSloppy`: strip leading zeros of a dotted quad and prefix. */
const SLOPPY_ZEROS = /(^|:)0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)\.0*(0|[1-9][0-9]*)((\/)0*(0|[1-9][0-9]*))?$/;

function v4Bits(text: string): bigint {
  return text.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
}

function v6Bits(text: string): bigint {
  let head = text;
  const groups: number[] = [];
  let tail: bigint | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail = v4Bits(text.slice(lastColon + 1));
    head = text.slice(0, lastColon) + (text.slice(0, lastColon).endsWith(':') ? ':' : '');
  }
  const want = tail === undefined ? 8 : 6;
  const split = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const gap = head.indexOf('::');
  if (gap < 0) groups.push(...split(head));
  else {
    const left = split(head.slice(0, gap));
    const right = split(head.slice(gap + 2));
    groups.push(...left, ...new Array<number>(want - left.length - right.length).fill(0), ...right);
  }
  let bits = groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
  if (tail !== undefined) bits = (bits << 32n) | tail;
  return bits;
}

/** An address or `addr/len` → a network; an IPv4-mapped one with ≥ 96 bits is IPv4. */
function refNet(text: string, requirePrefix: boolean): RefNet | undefined {
  if (text.includes('%')) return undefined;
  const stripped = text.replace(SLOPPY_ZEROS, '$1$2.$3.$4.$5$7$8');
  const slash = stripped.indexOf('/');
  if (requirePrefix && slash < 0) return undefined;
  const addr = slash < 0 ? stripped : stripped.slice(0, slash);
  const family = isIPv4(addr) ? 4 : isIPv6(addr) ? 6 : undefined;
  if (family === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  const lenText = slash < 0 ? String(max) : stripped.slice(slash + 1);
  if (!/^\d+$/.test(lenText) || Number(lenText) > max) return undefined;
  let prefix = Number(lenText);
  let bits = family === 4 ? v4Bits(addr) : v6Bits(addr);
  const hostBits = BigInt(max - prefix);
  bits = (bits >> hostBits) << hostBits;
  // Go's IPNet: a network still inside ::ffff:0:0/96 once masked is the IPv4 network.
  if (family === 6 && prefix >= 96 && bits >> 32n === 0xffffn) {
    prefix -= 96;
    bits &= 0xffffffffn;
    return { family: 4, bits, prefix };
  }
  return { family, bits, prefix };
}

function contains(net: RefNet, addr: RefNet): boolean {
  if (net.family !== addr.family) return false;
  const host = BigInt((net.family === 4 ? 32 : 128) - net.prefix);
  return addr.bits >> host === net.bits >> host;
}

// ---------------------------------------------------------------------------------------
// Selectors.

/** A LabelSelector: `null`/absent is "no selector" (undefined), `{}` matches everything. */
function selectorMatches(sel: Obj, labels: Readonly<Record<string, string>>): boolean {
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(labels, k);
  for (const [k, v] of Object.entries(obj(sel['matchLabels']))) {
    if (!has(k) || labels[k] !== v) return false;
  }
  for (const raw of list(sel['matchExpressions'])) {
    const e = obj(raw);
    const key = String(e['key'] ?? '');
    const values = list(e['values']).map((v) => String(v ?? ''));
    switch (e['operator']) {
      case 'In':
        if (!has(key) || !values.includes(labels[key] ?? '')) return false;
        break;
      case 'NotIn':
        if (has(key) && values.includes(labels[key] ?? '')) return false;
        break;
      case 'Exists':
        if (!has(key)) return false;
        break;
      case 'DoesNotExist':
        if (has(key)) return false;
        break;
      default:
        // Not an operator the API defines (the apiserver rejects the object). Read as no
        // requirement, as Go's zero value of a `null` element would be skipped.
        break;
    }
  }
  return true;
}

function namespaceLabels(ns: RefNamespace | undefined, name: string): Readonly<Record<string, string>> {
  return { ...(ns?.labels ?? {}), 'kubernetes.io/metadata.name': name };
}

// ---------------------------------------------------------------------------------------
// The evaluator.

type Direction = 'ingress' | 'egress';

interface End {
  readonly ip: RefNet;
  readonly pod?: RefPod;
}

export class RefEvaluator {
  readonly #cluster: RefCluster;
  readonly #namespaces: Map<string, RefNamespace>;
  readonly #podByIp = new Map<string, RefPod>();

  constructor(cluster: RefCluster) {
    this.#cluster = cluster;
    this.#namespaces = new Map(cluster.namespaces.map((n) => [n.name, n]));
    for (const pod of cluster.pods) {
      for (const ip of pod.ips) {
        const n = refNet(ip, false);
        if (n !== undefined) this.#podByIp.set(key(n), pod);
      }
    }
  }

  /** The verdict for `pkt`; throws a RangeError for an address that does not parse. */
  decide(pkt: RefPacket): RefVerdict {
    const src = this.#end(pkt.src);
    const dst = this.#end(pkt.dst);
    const egress = src.pod === undefined ? 'not a pod' : this.#side(src.pod, 'egress', src, dst, pkt);
    const ingress = dst.pod === undefined ? 'not a pod' : this.#side(dst.pod, 'ingress', src, dst, pkt);
    return { allowed: egress !== 'isolated, no rule allows' && ingress !== 'isolated, no rule allows', egress, ingress };
  }

  #end(text: string): End {
    const ip = refNet(text, false);
    if (ip === undefined) throw new RangeError(`packet address ${JSON.stringify(text)} is not an IP address`);
    const pod = this.#podByIp.get(key(ip));
    return pod === undefined ? { ip } : { ip, pod };
  }

  /** `allowed`, `not isolated`, or `isolated, no rule allows` for `pod`'s side. */
  #side(pod: RefPod, dir: Direction, src: End, dst: End, pkt: RefPacket): string {
    let isolated = false;
    for (const np of this.#cluster.policies) {
      if (np.metadata.namespace !== pod.namespace) continue;
      const spec = obj(np.spec);
      if (!selectorMatches(obj(spec['podSelector']), pod.labels)) continue;
      if (!affects(spec, dir)) continue;
      isolated = true;
      for (const raw of list(spec[dir])) {
        const rule = obj(raw);
        const peers = list(rule[dir === 'ingress' ? 'from' : 'to']);
        const other = dir === 'ingress' ? src : dst;
        const peerOk = peers.length === 0 || peers.some((p) => this.#peerMatches(obj(p), np.metadata.namespace, other));
        const ports = list(rule['ports']);
        const portOk = ports.length === 0 || ports.some((p) => portMatches(obj(p), pkt, dst.pod));
        if (peerOk && portOk) return 'allowed';
      }
    }
    return isolated ? 'isolated, no rule allows' : 'not isolated';
  }

  #peerMatches(peer: Obj, policyNamespace: string, other: End): boolean {
    const block = peer['ipBlock'];
    if (block !== undefined && block !== null) {
      const b = obj(block);
      const cidr = refNet(String(b['cidr'] ?? ''), true);
      if (cidr === undefined || !contains(cidr, other.ip)) return false;
      return !list(b['except']).some((e) => {
        const ex = refNet(String(e ?? ''), true);
        return ex !== undefined && contains(ex, other.ip);
      });
    }
    if (other.pod === undefined) return false;
    const podSel = peer['podSelector'];
    const nsSel = peer['namespaceSelector'];
    const nsOk =
      nsSel === undefined || nsSel === null
        ? other.pod.namespace === policyNamespace
        : selectorMatches(obj(nsSel), namespaceLabels(this.#namespaces.get(other.pod.namespace), other.pod.namespace));
    const podOk = podSel === undefined || podSel === null ? true : selectorMatches(obj(podSel), other.pod.labels);
    return nsOk && podOk;
  }
}

/** Whether a policy's types include `dir` (defaulted as the documentation says when unset). */
function affects(spec: Obj, dir: Direction): boolean {
  const types = list(spec['policyTypes']);
  if (types.length === 0) return dir === 'ingress' || list(spec['egress']).length > 0;
  return types.includes(dir === 'ingress' ? 'Ingress' : 'Egress');
}

function portMatches(p: Obj, pkt: RefPacket, dstPod: RefPod | undefined): boolean {
  const protocol = p['protocol'] === undefined || p['protocol'] === null ? 'TCP' : p['protocol'];
  if (protocol !== pkt.protocol) return false;
  const port = p['port'];
  if (port === undefined || port === null) return true;
  if (typeof port === 'number') {
    const end = typeof p['endPort'] === 'number' ? p['endPort'] : port;
    return pkt.port >= port && pkt.port <= end;
  }
  // A named port: the destination pod's container port with that name and protocol.
  return (dstPod?.ports ?? []).some((c) => c.name === port && (c.protocol ?? 'TCP') === protocol && c.containerPort === pkt.port);
}

function key(n: RefNet): string {
  return `${n.family}/${n.bits.toString(16)}`;
}

/** The reading of a CIDR the evaluator uses, for tests of the evaluator itself. */
export function refCidr(text: string): { family: 4 | 6; network: string; prefix: number } | undefined {
  const n = refNet(text, true);
  if (n === undefined) return undefined;
  return { family: n.family, network: n.bits.toString(16), prefix: n.prefix };
}
