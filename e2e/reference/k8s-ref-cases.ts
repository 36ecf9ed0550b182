/**
 * Random clusters for the reference differential (k8s-ref-differential.ts): namespaces with
 * labels, pods with labels, dual-stack addresses and named container ports, Kubernetes
 * NetworkPolicies, and the packets to decide. fast-check arbitraries, so a failing case
 * shrinks to a small one on its own.
 *
 * What the policies cover: pod/namespace/both/ipBlock peers (IPv4 and IPv6; `except`; CIDRs
 * written every way the apiserver accepts — host bits, leading zeros in the prefix length,
 * IPv4-mapped (dotted and hex), upper-case and unabbreviated IPv6 — and, rarely, leading zeros in an IPv4
 * field, which Go rejects), numeric and named ports, `endPort` ranges, TCP/UDP/SCTP and the
 * omitted protocol, absent vs empty vs `null` lists (`from`, `to`, `ports`, `ingress`,
 * `egress`, `policyTypes`), `[null]` elements, every `policyTypes` spelling, label selectors
 * with matchLabels and all four operators.
 *
 * Addresses come from a fixed pool (pod i has the i-th addresses), so every generated CIDR
 * selects some subset of the pods and of the outside addresses.
 */
import fc from 'fast-check';
import type { RefContainerPort, RefNamespace, RefNetworkPolicy, RefPod, RefProtocol } from './k8s-ref-netpol-evaluator.ts';

export const NAMESPACES = ['alpha', 'beta', 'gamma'] as const;
export const MAX_PODS = 5;
export const PROTOCOLS: readonly RefProtocol[] = ['TCP', 'UDP', 'SCTP'];
/** The destination ports every case probes (named container ports use them too). */
export const PROBE_PORTS = [53, 80, 81, 82, 443, 8080] as const;

/** Pod i's IPv4 address: two /24s so /24 and longer prefixes split the pods. */
export function podIPv4(i: number): string {
  return i % 2 === 0 ? `10.0.0.${10 + i}` : `10.0.1.${10 + i}`;
}

/** Pod i's IPv6 address (canonical text). */
export function podIPv6(i: number): string {
  const last = (10 + i).toString(16);
  return i % 2 === 0 ? `fd00::${last}` : `fd00:0:0:1::${last}`;
}

/** Addresses that belong to no pod. */
export const OUTSIDE_V4 = ['10.0.0.200', '10.9.0.1', '192.168.1.1'] as const;
export const OUTSIDE_V6 = ['fd00::c8', 'fd00:9::1', '2001:db8::1'] as const;

const V4_POOL = [...Array.from({ length: MAX_PODS }, (_, i) => podIPv4(i)), ...OUTSIDE_V4];
const V6_POOL = [...Array.from({ length: MAX_PODS }, (_, i) => podIPv6(i)), ...OUTSIDE_V6];

/** A pod as generated; its name, namespace and addresses follow from its index. */
export interface GenPod extends RefPod {
  readonly node: string;
}

export interface GenCase {
  readonly namespaces: readonly RefNamespace[];
  readonly pods: readonly GenPod[];
  readonly policies: readonly RefNetworkPolicy[];
  /**
   * True when a CIDR is written in a form the apiserver accepts but Go rejects (a leading
   * zero in an IPv4 field): Tessera must then drop those rules, so it may allow less than
   * Kubernetes, never more.
   */
  readonly hasGoRejectedCidr: boolean;
  /**
   * True when a namespaceSelector holds only `null` requirements (hand-written YAML the
   * apiserver rejects). The reference reads it as no requirement (every namespace); Calico,
   * and so Tessera, as an empty selector text — the policy's own namespace. Narrower, so
   * allowed: Tessera may allow less here, never more.
   */
  readonly hasNullOnlyNamespaceSelector: boolean;
}

// ---------------------------------------------------------------------------------------
// Labels and selectors.

const POD_KEYS = ['app', 'role'] as const;
const POD_VALUES = ['web', 'db', ''] as const;
const NS_KEYS = ['team', 'env'] as const;
const NS_VALUES = ['a', 'b'] as const;

const labelsArb = (keys: readonly string[], values: readonly string[]): fc.Arbitrary<Record<string, string>> =>
  fc.tuple(...keys.map(() => fc.option(fc.constantFrom(...values), { nil: undefined }))).map((vs) => {
    const out: Record<string, string> = {};
    vs.forEach((v, i) => {
      if (v !== undefined) out[keys[i] as string] = v;
    });
    return out;
  });

const requirementArb = (keys: readonly string[], values: readonly string[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.record({
      key: fc.constantFrom(...keys),
      operator: fc.constantFrom('In', 'NotIn'),
      values: fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: 2 }),
    }),
    fc.record({ key: fc.constantFrom(...keys), operator: fc.constantFrom('Exists', 'DoesNotExist') }),
    // Hand-written YAML: a null requirement (Go: the zero value, no operator).
    { arbitrary: fc.constant(null), weight: 1 },
  );

/** A LabelSelector: `{}`, matchLabels, matchExpressions or both (each may be `null`). */
const selectorArb = (keys: readonly string[], values: readonly string[]): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record(
      {
        matchLabels: fc.oneof(labelsArb(keys, values), fc.constant(null)),
        matchExpressions: fc.oneof(fc.array(requirementArb(keys, values), { maxLength: 2 }), fc.constant(null)),
      },
      { requiredKeys: [] },
    )
    .map((s) => ({ ...s }));

const podSelectorArb = selectorArb(POD_KEYS, POD_VALUES);
const namespaceSelectorArb = fc.oneof(
  selectorArb(NS_KEYS, NS_VALUES),
  fc.constantFrom(...NAMESPACES).map((n) => ({ matchLabels: { 'kubernetes.io/metadata.name': n } })),
);

// ---------------------------------------------------------------------------------------
// CIDRs, written the ways the apiserver accepts.

function v4Int(a: string): number {
  return a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function v4Text(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

function v4Mask(a: string, prefix: number): string {
  const n = v4Int(a);
  const size = 2 ** (32 - prefix);
  return v4Text(n - (n % size));
}

function v6Groups(a: string): number[] {
  const [head = '', tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head === '' ? [] : head.split(':').map((g) => parseInt(g, 16));
  const t = tail === undefined || tail === '' ? [] : tail.split(':').map((g) => parseInt(g, 16));
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

function v6Mask(a: string, prefix: number): number[] {
  return v6Groups(a).map((g, i) => {
    const keep = Math.max(0, Math.min(16, prefix - i * 16));
    return keep === 0 ? 0 : g & (0xffff << (16 - keep)) & 0xffff;
  });
}

function v6Inside(net: string, prefix: number, a: string): boolean {
  return v6Mask(a, prefix).join(':') === v6Mask(net, prefix).join(':');
}

type V4Form = 'canonical' | 'host-bits' | 'zero-prefix' | 'mapped' | 'mapped-hex' | 'octet-zero';
type V6Form = 'canonical' | 'host-bits' | 'zero-prefix' | 'unabbreviated';

/** A v4 CIDR in a written form; `octet-zero` is the one Go (and so Tessera) rejects. */
function writeV4(anchor: string, prefix: number, form: V4Form): string {
  const net = v4Mask(anchor, prefix);
  switch (form) {
    case 'canonical':
      return `${net}/${prefix}`;
    case 'host-bits':
      return `${anchor}/${prefix}`;
    case 'zero-prefix':
      return `${net}/0${prefix}`;
    case 'mapped':
      return `::ffff:${net}/${96 + prefix}`;
    case 'mapped-hex': {
      const n = v4Int(net);
      return `::FFFF:${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}/${96 + prefix}`;
    }
    case 'octet-zero':
      return `${net.replace(/^(\d+)/, '0$1')}/${prefix}`;
  }
}

function writeV6(anchor: string, prefix: number, form: V6Form): string {
  const groups = form === 'host-bits' ? v6Groups(anchor) : v6Mask(anchor, prefix);
  const text = (gs: number[]): string => {
    // Shortest form is not required: the apiserver accepts any RFC 4291 text.
    const s = gs.map((g) => g.toString(16)).join(':');
    return s.replace(/(^|:)0(:0)+(:|$)/, '::').replace(/^:::/, '::').replace(/:::$/, '::');
  };
  switch (form) {
    case 'canonical':
    case 'host-bits':
      return `${text(groups)}/${prefix}`;
    case 'zero-prefix':
      return `${text(groups)}/00${prefix}`;
    case 'unabbreviated':
      return `${groups.map((g) => g.toString(16).padStart(4, '0').toUpperCase()).join(':')}/${prefix}`;
  }
}

interface IpBlockChoice {
  readonly v6: boolean;
  readonly anchor: number;
  readonly prefix: number;
  readonly form: number;
  readonly except: ReadonlyArray<{ readonly anchor: number; readonly extra: number; readonly form: number }>;
}

const V4_PREFIXES = [0, 8, 16, 23, 24, 28, 31, 32];
const V6_PREFIXES = [0, 32, 64, 96, 112, 124, 128];
const V4_FORMS: readonly V4Form[] = ['canonical', 'canonical', 'host-bits', 'zero-prefix', 'mapped', 'canonical', 'host-bits', 'zero-prefix', 'mapped-hex', 'octet-zero'];
const V6_FORMS: readonly V6Form[] = ['canonical', 'host-bits', 'zero-prefix', 'unabbreviated'];

const ipBlockChoiceArb: fc.Arbitrary<IpBlockChoice> = fc.record({
  v6: fc.boolean(),
  anchor: fc.nat({ max: V4_POOL.length - 1 }),
  prefix: fc.nat({ max: V4_PREFIXES.length - 1 }),
  form: fc.nat({ max: V4_FORMS.length - 1 }),
  except: fc.array(fc.record({ anchor: fc.nat({ max: V4_POOL.length - 1 }), extra: fc.integer({ min: 1, max: 16 }), form: fc.nat({ max: V4_FORMS.length - 1 }) }), {
    maxLength: 2,
  }),
});

/** The ipBlock for a choice: `except` entries are strictly inside `cidr`, as the API requires. */
function ipBlockOf(c: IpBlockChoice): { ipBlock: { cidr: string; except?: string[] }; goRejects: boolean } {
  const pool = c.v6 ? V6_POOL : V4_POOL;
  const anchor = pool[c.anchor % pool.length] as string;
  const prefixes = c.v6 ? V6_PREFIXES : V4_PREFIXES;
  const prefix = prefixes[c.prefix % prefixes.length] as number;
  const max = c.v6 ? 128 : 32;
  const v4Form = (i: number): V4Form => V4_FORMS[i % V4_FORMS.length] as V4Form;
  const write = (a: string, p: number, form: number): string =>
    c.v6 ? writeV6(a, p, V6_FORMS[form % V6_FORMS.length] as V6Form) : writeV4(a, p, v4Form(form));
  const cidr = write(anchor, prefix, c.form);
  let goRejects = !c.v6 && v4Form(c.form) === 'octet-zero';
  // The apiserver compares mask lengths as written: an IPv4-mapped cidr needs IPv4-mapped
  // exceptions, and a plain one plain exceptions (of the same family).
  const mapped = !c.v6 && (v4Form(c.form) === 'mapped' || v4Form(c.form) === 'mapped-hex');
  const except: string[] = [];
  for (const e of c.except) {
    if (prefix >= max) break;
    const inside = pool.filter((a) => (c.v6 ? v6Inside(anchor, prefix, a) : v4Mask(a, prefix) === v4Mask(anchor, prefix)));
    const a = inside[e.anchor % inside.length] as string;
    const p = Math.min(max, prefix + e.extra);
    let form = e.form;
    const isMapped = (f: number): boolean => v4Form(f) === 'mapped' || v4Form(f) === 'mapped-hex';
    if (!c.v6 && mapped && !isMapped(form)) form = V4_FORMS.indexOf('mapped');
    else if (!c.v6 && !mapped && isMapped(form)) form = 0;
    if (!c.v6 && v4Form(form) === 'octet-zero') goRejects = true;
    except.push(write(a, p, form));
  }
  return { ipBlock: except.length > 0 ? { cidr, except } : { cidr }, goRejects };
}

// ---------------------------------------------------------------------------------------
// Peers, ports, rules, policies.

/** A generated peer or rule, with what it implies for the comparison (see `GenCase`). */
interface Gen {
  readonly value: unknown;
  readonly goRejects: boolean;
  readonly nullOnlyNamespaceSelector: boolean;
}

function nullOnly(sel: Record<string, unknown>): boolean {
  const labels = sel['matchLabels'];
  const exprs = sel['matchExpressions'];
  const noLabels = labels === undefined || labels === null || Object.keys(labels).length === 0;
  return noLabels && Array.isArray(exprs) && exprs.length > 0 && exprs.every((e) => e === null);
}

const selectorsPeer = (value: { podSelector?: Record<string, unknown>; namespaceSelector?: Record<string, unknown> }): Gen => ({
  value,
  goRejects: false,
  nullOnlyNamespaceSelector: value.namespaceSelector !== undefined && nullOnly(value.namespaceSelector),
});

const ipBlockPeer = ipBlockChoiceArb.map((c): Gen => {
  const { ipBlock, goRejects } = ipBlockOf(c);
  return { value: { ipBlock }, goRejects, nullOnlyNamespaceSelector: false };
});

const peerArb: fc.Arbitrary<Gen> = fc.oneof(
  podSelectorArb.map((podSelector) => selectorsPeer({ podSelector })),
  namespaceSelectorArb.map((namespaceSelector) => selectorsPeer({ namespaceSelector })),
  fc.tuple(podSelectorArb, namespaceSelectorArb).map(([podSelector, namespaceSelector]) => selectorsPeer({ podSelector, namespaceSelector })),
  ipBlockPeer,
  ipBlockPeer,
  // `from: [null]`: a peer with no fields (see the evaluator's reading).
  { arbitrary: fc.constant({ value: null, goRejects: false, nullOnlyNamespaceSelector: false }), weight: 1 },
);

const NAMED_PORTS = ['http', 'dns', 'metrics'] as const;

const portArb: fc.Arbitrary<unknown> = fc.oneof(
  fc
    .record(
      {
        protocol: fc.constantFrom<RefProtocol | null>('TCP', 'UDP', 'SCTP', null),
        port: fc.constantFrom(...PROBE_PORTS.filter((p) => p !== 82), 9090),
        endPort: fc.constantFrom(0, 1, 2, 400),
      },
      { requiredKeys: ['port'] },
    )
    .map(({ endPort, ...p }) => (endPort === undefined || endPort === 0 ? p : { ...p, endPort: p.port + endPort })),
  fc.record({ protocol: fc.constantFrom<RefProtocol | null>('TCP', 'UDP', 'SCTP', null), port: fc.constantFrom(...NAMED_PORTS, 'nope') }, { requiredKeys: ['port'] }),
  fc.record({ protocol: fc.constantFrom<RefProtocol | null>('TCP', 'UDP', 'SCTP', null) }, { requiredKeys: [] }),
  { arbitrary: fc.constant(null), weight: 1 },
);

/** A list that may be absent (undefined), `null`, empty or hold items. */
function listArb<T>(item: fc.Arbitrary<T>, maxLength: number): fc.Arbitrary<T[] | null | undefined> {
  return fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 2 },
    { arbitrary: fc.constant(null), weight: 1 },
    { arbitrary: fc.constant([] as T[]), weight: 2 },
    { arbitrary: fc.array(item, { minLength: 1, maxLength }), weight: 6 },
  );
}

const ruleArb = (peerField: 'from' | 'to'): fc.Arbitrary<Gen> =>
  fc.oneof(
    fc.tuple(listArb(peerArb, 3), listArb(portArb, 3)).map(([peers, ports]) => {
      const rule: Record<string, unknown> = {};
      if (peers !== undefined) rule[peerField] = peers === null ? null : peers.map((p) => p.value);
      if (ports !== undefined) rule['ports'] = ports;
      return {
        value: rule,
        goRejects: (peers ?? []).some((p) => p.goRejects),
        nullOnlyNamespaceSelector: (peers ?? []).some((p) => p.nullOnlyNamespaceSelector),
      };
    }),
    { arbitrary: fc.constant({ value: null, goRejects: false, nullOnlyNamespaceSelector: false }), weight: 1 },
  );

const POLICY_TYPES = [undefined, [], ['Ingress'], ['Egress'], ['Ingress', 'Egress'], ['Egress', 'Ingress']] as const;

const policyArb = fc.record({
  namespace: fc.nat({ max: NAMESPACES.length - 1 }),
  podSelector: fc.oneof({ arbitrary: podSelectorArb, weight: 6 }, { arbitrary: fc.constant(null), weight: 1 }, { arbitrary: fc.constant(undefined), weight: 1 }),
  policyTypes: fc.nat({ max: POLICY_TYPES.length - 1 }),
  ingress: listArb(ruleArb('from'), 3),
  egress: listArb(ruleArb('to'), 3),
});

const podArb = fc.record({
  namespace: fc.nat({ max: NAMESPACES.length - 1 }),
  labels: labelsArb(POD_KEYS, POD_VALUES),
  dualStack: fc.boolean(),
  node: fc.nat({ max: 1 }),
  ports: fc.uniqueArray(
    fc.record({ name: fc.constantFrom(...NAMED_PORTS), containerPort: fc.constantFrom(...PROBE_PORTS), protocol: fc.constantFrom<RefProtocol | undefined>('TCP', 'UDP', 'SCTP', undefined) }),
    { maxLength: 3, selector: (p) => p.name },
  ),
});

/** A whole case: 3 namespaces, 1-5 pods, 1-3 policies. */
export const caseArb: fc.Arbitrary<GenCase> = fc
  .record({
    nsLabels: fc.tuple(...NAMESPACES.map(() => labelsArb(NS_KEYS, NS_VALUES))),
    pods: fc.array(podArb, { minLength: 1, maxLength: MAX_PODS }),
    policies: fc.array(policyArb, { minLength: 1, maxLength: 3 }),
  })
  .map(({ nsLabels, pods, policies }) => {
    const namespaces: RefNamespace[] = NAMESPACES.map((name, i) => ({ name, labels: nsLabels[i] ?? {} }));
    const genPods: GenPod[] = pods.map((p, i) => ({
      namespace: NAMESPACES[p.namespace] as string,
      name: `pod-${i}`,
      labels: p.labels,
      ips: p.dualStack ? [podIPv4(i), podIPv6(i)] : [podIPv4(i)],
      ports: p.ports.map((c): RefContainerPort => (c.protocol === undefined ? { name: c.name, containerPort: c.containerPort } : c)),
      node: `node-${p.node + 1}`,
    }));
    let hasGoRejectedCidr = false;
    let hasNullOnlyNamespaceSelector = false;
    const genPolicies: RefNetworkPolicy[] = policies.map((p, i) => {
      const spec: Record<string, unknown> = {};
      if (p.podSelector !== undefined) spec['podSelector'] = p.podSelector;
      const types = POLICY_TYPES[p.policyTypes];
      if (types !== undefined) spec['policyTypes'] = [...types];
      for (const [dir, rules] of [
        ['ingress', p.ingress],
        ['egress', p.egress],
      ] as const) {
        if (rules === undefined) continue;
        spec[dir] = rules === null ? null : rules.map((r) => r.value);
        if ((rules ?? []).some((r) => r.goRejects)) hasGoRejectedCidr = true;
        if ((rules ?? []).some((r) => r.nullOnlyNamespaceSelector)) hasNullOnlyNamespaceSelector = true;
      }
      return { metadata: { name: `np-${i}`, namespace: NAMESPACES[p.namespace] as string }, spec };
    });
    return { namespaces, pods: genPods, policies: genPolicies, hasGoRejectedCidr, hasNullOnlyNamespaceSelector };
  });

/** One probe: an address pair of one family (at least one a pod's), a protocol and a port. */
export interface Probe {
  readonly src: string;
  readonly dst: string;
  readonly protocol: RefProtocol;
  readonly port: number;
}

/** Every probe of a case: all same-family address pairs with a pod at one end, every protocol and port. */
export function probesOf(c: GenCase): Probe[] {
  const out: Probe[] = [];
  for (const [family, outside] of [
    [0, OUTSIDE_V4],
    [1, OUTSIDE_V6],
  ] as const) {
    const pods = c.pods.flatMap((p) => (p.ips[family] === undefined ? [] : [{ ip: p.ips[family] as string, pod: p.name }]));
    const all = [...pods, ...outside.map((ip) => ({ ip, pod: undefined }))];
    for (const s of all) {
      for (const d of all) {
        if (s.pod === undefined && d.pod === undefined) continue;
        if (s.ip === d.ip) continue;
        for (const protocol of PROTOCOLS) for (const port of PROBE_PORTS) out.push({ src: s.ip, dst: d.ip, protocol, port });
      }
    }
  }
  return out;
}
