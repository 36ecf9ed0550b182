/**
 * Seeded random ClusterNetworkPolicies for the Calico differential (README.md here).
 *
 * `validCnp` draws from the whole of the standard channel plus `destinationNamedPort`: both
 * tiers, priorities 0–1000, a `namespaces` or `pods` subject, 0–4 rules per direction with or
 * without a name, every action, `namespaces`/`pods` peers (and egress `networks`: IPv4 and
 * IPv6, canonical — the CRD rejects host bits — and `/0`), 0–3 protocol entries (TCP/UDP/SCTP with a port number
 * or a range, named ports), and label selectors with matchLabels and all four operators —
 * in a policy drawn with `oddLabels`, now and then what the CRD admits but no Kubernetes object
 * can carry: label text that breaks Calico's unescaped selector text, In/NotIn without values,
 * Exists with values. It
 * never draws `nodes` or `domainNames` (Calico fails both closed; Tessera converts `nodes`: the
 * documented difference). The caller keeps only what `validateClusterNetworkPolicy` accepts.
 *
 * `failClosedCnp` is a valid policy whose one direction holds a single rule with one of the
 * inputs Tessera deliberately fails closed where Calico's Go decoder widens (the converter's
 * module comment): an unknown field, an unknown selector operator, a two-field peer, a protocol
 * entry without a port, port 0, a protocol entry with two protocols, a port with a number and a
 * range, a named port that no container port can have — and two that
 * both sides fail closed: a `domainNames` peer (egress; an empty peer on ingress) and `{}`.
 */
import type { CnpDirection } from '../../src/convert/cluster-network-policy-converter.ts';

type Json = Record<string, unknown>;

/** Draws from a seeded source (src/runtime/seeded-random.ts). */
export class Draw {
  constructor(readonly next: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)] as T;
  }
  times<T>(min: number, max: number, f: () => T): T[] {
    return Array.from({ length: this.int(min, max) }, f);
  }
}

const KEYS = ['app', 'tier', 'env', 'team', 'kubernetes.io/metadata.name', 'app.kubernetes.io/name', 'x'];
const VALUES = ['a', 'b', 'web', 'db', 'prod', 'kube-system', '', 'v1.2', 'A_b-c'];
/** Label text no Kubernetes object can carry, which the CRD's LabelSelector schema still admits. */
const ODD = ["it's", 'a"b', 'x y', 'a\\', 'has(x)', '}', 'a,b', 'ü'];
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
const RULE_NAMES = ['allow-dns', 'deny-all', 'r', 'pass to baseline', 'x'.repeat(100), ''];
const NAMED_PORTS = ['http', 'https', 'dns', 'dns-tcp', 'metrics', 'web8080', 'a'];

/** Draws, and whether label selectors may hold what the CRD admits but no Kubernetes object can carry. */
export interface Gen {
  readonly d: Draw;
  readonly oddLabels: boolean;
}

export function labelSelector(g: Gen): Json {
  const d = g.d;
  const odd = (p: number): boolean => g.oddLabels && d.chance(p);
  const sel: Json = {};
  // Explicitly empty lists and maps now and then: the same as absent to both sides.
  if (d.chance(0.05)) sel['matchLabels'] = {};
  if (d.chance(0.05)) sel['matchExpressions'] = [];
  if (d.chance(0.5)) {
    const labels: Record<string, string> = {};
    for (let i = d.int(1, 2); i > 0; i--) labels[odd(0.03) ? d.pick(ODD) : d.pick(KEYS)] = odd(0.05) ? d.pick(ODD) : d.pick(VALUES);
    sel['matchLabels'] = labels;
  }
  if (d.chance(0.5)) {
    sel['matchExpressions'] = d.times(1, 2, () => {
      const operator = d.pick(OPERATORS);
      const e: Json = { key: odd(0.03) ? d.pick(ODD) : d.pick(KEYS), operator };
      // metav1 wants values with In/NotIn only; the CRD does not check (3% break the rule).
      const wantsValues = (operator === 'In' || operator === 'NotIn') !== odd(0.03);
      if (wantsValues) e['values'] = d.times(1, 3, () => (odd(0.05) ? d.pick(ODD) : d.pick(VALUES)));
      return e;
    });
  }
  return sel;
}

function namespacedPod(g: Gen): Json {
  // namespaceSelector is optional (Go's zero LabelSelector: every namespace).
  return g.d.chance(0.2) ? { podSelector: labelSelector(g) } : { namespaceSelector: labelSelector(g), podSelector: labelSelector(g) };
}

const hex = (n: number): string => n.toString(16);

function cidr(d: Draw): string {
  // Go prints an IPv4-mapped network as IPv4 (`::ffff:10.0.0.0/104` → `10.0.0.0/8`), upper-case hex in lower case.
  const special = ['0.0.0.0/0', '::/0', '10.0.0.0/8', '192.168.1.7/32', 'fd00::/8', '2001:db8::1/128', '::ffff:10.0.0.0/104', '::ffff:0:0/96', '::ffff:10.1.2.3/128', '2001:DB8::/32', '::1.2.3.4/128'];
  if (d.chance(0.2)) return d.pick(special);
  if (d.chance(0.6)) {
    const bits = d.int(0, 32);
    let addr = (d.int(0, 0xffff) * 0x10000 + d.int(0, 0xffff)) >>> 0;
    addr = bits === 0 ? 0 : (addr & (~0 << (32 - bits))) >>> 0;
    return `${[24, 16, 8, 0].map((s) => (addr >>> s) & 0xff).join('.')}/${bits}`;
  }
  const bits = d.int(0, 128);
  const groups = Array.from({ length: 8 }, (_, i) => {
    let g = d.chance(0.4) ? 0 : d.int(0, 0xffff);
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    g = keep === 0 ? 0 : g & ((0xffff << (16 - keep)) & 0xffff);
    return hex(g);
  });
  return `${groups.join(':')}/${bits}`;
}

function peer(g: Gen, direction: CnpDirection): Json {
  const d = g.d;
  const kinds = direction === 'ingress' ? ['namespaces', 'pods'] : ['namespaces', 'pods', 'networks'];
  switch (d.pick(kinds)) {
    case 'namespaces':
      return { namespaces: labelSelector(g) };
    case 'pods':
      return { pods: namespacedPod(g) };
    default:
      return { networks: d.times(1, 3, () => cidr(d)) };
  }
}

function port(d: Draw): Json {
  if (d.chance(0.6)) return { number: d.chance(0.2) ? d.pick([1, 53, 80, 443, 65535]) : d.int(1, 65535) };
  const start = d.int(1, 65534);
  return { range: { start, end: d.chance(0.3) ? Math.min(65535, start + d.int(1, 3)) : d.int(start + 1, 65535) } };
}

function protocol(d: Draw): Json {
  const kind = d.pick(['tcp', 'udp', 'sctp', 'tcp', 'destinationNamedPort']);
  if (kind === 'destinationNamedPort') return { destinationNamedPort: d.pick(NAMED_PORTS) };
  return { [kind]: { destinationPort: port(d) } };
}

export function rule(g: Gen, direction: CnpDirection): Json {
  const d = g.d;
  const r: Json = {};
  if (d.chance(0.5)) r['name'] = d.pick(RULE_NAMES);
  r['action'] = d.pick(['Accept', 'Deny', 'Pass']);
  r[direction === 'ingress' ? 'from' : 'to'] = d.times(1, 3, () => peer(g, direction));
  if (d.chance(0.7)) r['protocols'] = d.times(1, 3, () => protocol(d));
  return r;
}

function policy(g: Gen, name: string, ingress: Json[], egress: Json[]): Json {
  const d = g.d;
  const spec: Json = {
    tier: d.pick(['Admin', 'Baseline']),
    priority: d.chance(0.2) ? d.pick([0, 1000]) : d.int(0, 1000),
    subject: d.chance(0.5) ? { namespaces: labelSelector(g) } : { pods: namespacedPod(g) },
  };
  if (ingress.length > 0 || d.chance(0.2)) spec['ingress'] = ingress;
  if (egress.length > 0 || d.chance(0.2)) spec['egress'] = egress;
  return { apiVersion: 'policy.networking.k8s.io/v1beta1', kind: 'ClusterNetworkPolicy', metadata: { name }, spec };
}

export function validCnp(g: Gen, name: string): Json {
  return policy(
    g,
    name,
    g.d.times(0, 4, () => rule(g, 'ingress')),
    g.d.times(0, 4, () => rule(g, 'egress')),
  );
}

/** The fail-closed inputs (module comment), each a change to one valid rule. */
export const FAIL_CLOSED_KINDS = [
  'unknown rule field',
  'unknown peer field',
  'unknown selector operator',
  'two-field peer',
  'protocol without port',
  'port 0',
  'non-IANA named port',
  'domainNames peer',
  'empty peer',
  'two-protocol entry',
  'number and range',
] as const;
export type FailClosedKind = (typeof FAIL_CLOSED_KINDS)[number];

function peersOf(r: Json, direction: CnpDirection): Json[] {
  return r[direction === 'ingress' ? 'from' : 'to'] as Json[];
}

function mutate(g: Gen, r: Json, direction: CnpDirection, kind: FailClosedKind): void {
  const d = g.d;
  const peers = peersOf(r, direction);
  switch (kind) {
    case 'unknown rule field':
      r['ports'] = [{ portNumber: { port: 80, protocol: 'TCP' } }];
      return;
    case 'unknown peer field':
      peers.push({ domainSelector: labelSelector(g) });
      return;
    case 'unknown selector operator': {
      const p: Json = { namespaces: { matchExpressions: [{ key: d.pick(KEYS), operator: d.pick(['Equals', 'Gt', 'in']), values: ['a'] }] } };
      peers.splice(d.int(0, peers.length), 0, p);
      return;
    }
    case 'two-field peer':
      peers.splice(d.int(0, peers.length), 0, { namespaces: labelSelector(g), pods: namespacedPod(g) });
      return;
    case 'protocol without port':
      r['protocols'] = [...((r['protocols'] as Json[] | undefined) ?? []), { [d.pick(['tcp', 'udp', 'sctp'])]: {} }];
      return;
    case 'port 0':
      r['protocols'] = [...((r['protocols'] as Json[] | undefined) ?? []), { [d.pick(['tcp', 'udp', 'sctp'])]: { destinationPort: { number: 0 } } }];
      return;
    case 'domainNames peer':
      if (direction === 'egress') {
        peers.splice(d.int(0, peers.length), 0, { domainNames: ['example.com', '*.example.org'] });
        return;
      }
      peers.splice(d.int(0, peers.length), 0, {});
      return;
    case 'empty peer':
      peers.splice(d.int(0, peers.length), 0, {});
      return;
    case 'two-protocol entry':
      r['protocols'] = [...((r['protocols'] as Json[] | undefined) ?? []), { tcp: { destinationPort: port(d) }, udp: { destinationPort: port(d) } }];
      return;
    case 'number and range':
      r['protocols'] = [...((r['protocols'] as Json[] | undefined) ?? []), { [d.pick(['tcp', 'udp', 'sctp'])]: { destinationPort: { number: d.int(1, 65535), range: { start: 1, end: 100 } } } }];
      return;
    case 'non-IANA named port':
      r['protocols'] = [...((r['protocols'] as Json[] | undefined) ?? []), { destinationNamedPort: d.pick(['8080', 'HTTP', 'web--x', '-a', 'abcdefghijklmnop']) }];
      return;
  }
}

/** A policy whose `direction` holds one rule with a fail-closed input of `kind`. */
export function failClosedCnp(g: Gen, name: string, direction: CnpDirection, kind: FailClosedKind): Json {
  const bad = rule(g, direction);
  mutate(g, bad, direction, kind);
  const other = g.d.times(0, 3, () => rule(g, direction === 'ingress' ? 'egress' : 'ingress'));
  return direction === 'ingress' ? policy(g, name, [bad], other) : policy(g, name, other, [bad]);
}
