/**
 * Kubernetes `networking.k8s.io/v1` NetworkPolicy → Calico `projectcalico.org/v3`
 * NetworkPolicy `knp.default.<name>`, exactly as Calico's converter does it
 * (`libcalico-go/lib/backend/k8s/conversion/conversion.go` at v3.30.3; calico-semantics §3):
 *
 * - order 1000, tier `default`, the pod selector translated with the orchestrator term;
 * - `types`: Ingress then Egress as listed in `policyTypes`; none listed → `[Ingress]`;
 * - per k8s rule: ports grouped by protocol (TCP when omitted; a port entry without a
 *   number means every port of its protocol and overrides that protocol's numbers; no
 *   ports → one protocol-less group), groups emitted in sorted protocol order, each
 *   crossed with the peers in order; ports simplified per group (`SimplifyPorts`);
 * - `endPort` → a `port:endPort` range; named ports stay names; ipBlock → nets/notNets,
 *   read by Go's `net.ParseCIDR` (api/cidr.ts: `/08` is `/8`, `::ffff:10.0.0.0/104` is
 *   `10.0.0.0/8`).
 * - the protocol is read as `numorstring.ProtocolFromString` reads it: a name equal to one of
 *   Calico's ignoring case (Go's `strings.EqualFold`) becomes that name, so `protocol: tcp`
 *   is `TCP` and groups with it; any other string is kept as written.
 * - port 0 (`port: 0`, `"0"`, or the low end of `port: 0, endPort: n`) is the port number 0 to
 *   Calico's converter, a match on destination port 0. A v3 rule cannot carry it (Calico's
 *   validator, and so the CRDs and the agent, want 1–65535), so Tessera leaves port 0 out of
 *   the protocol's ports — `0:n` becomes `1:n` — and a protocol left with no port emits no
 *   rule (never "every port"). Traffic to port 0 is therefore denied where Calico would allow
 *   it; nothing else differs. A warning says so.
 *
 * Input is decoded as Go decodes it (the objects of `tessera convert/simulate -f` are
 * hand-written YAML): a `null` list element is that element's zero value — `ingress: [null]`
 * is `ingress: [{}]` (allow all), `from: [null]` is a peer with no selectors (the policy's
 * namespace's pods), `ports: [null]` is `{}` (every TCP port), a `null` matchExpression has
 * no operator and is ignored — and a `null` list is an absent one.
 *
 * **Never fails open.** A rule that cannot be converted is dropped and reported in `errors`
 * with the field that failed, and the rest of the policy is kept (Calico's KDD driver drops
 * rules whose ports do not parse the same way). Where Calico itself widens — an ipBlock
 * whose `cidr` or an `except` entry Go cannot parse gives Calico a rule with no address
 * criterion, or one with fewer exceptions — Tessera drops the rule instead: a dropped allow
 * rule only ever narrows what the policy allows. That covers CIDRs the apiserver still
 * accepts, with a warning, through Kubernetes' legacy parser (`010.0.0.0/8`: leading zeros
 * in an IPv4 field, which Go ≥ 1.17 rejects and Kubernetes reads as decimal).
 *
 * Pure: no I/O. The caller adds ownership (labels, ownerReferences) before writing.
 */
import type { EntityRule, NetworkPolicy, PolicyType, PortSpec, Rule } from '../api/types.ts';
import { API_VERSION } from '../api/types.ts';
import { KNP_NAME_PREFIX } from '../api/names.ts';
import { DEFAULT_TIER_NAME } from '../api/tiers.ts';
import { formatPort, MIN_PORT, parsePort, type Port } from '../api/port.ts';
import { PROTOCOL_NAMES } from '../api/protocol.ts';
import { parseCidr } from '../api/cidr.ts';
import { show } from '../api/parse-result.ts';
import { k8sLabelSelectorToCalico, type K8sLabelSelector } from '../selector/k8s-label-selector.ts';
import type { K8sNetworkPolicy } from '../api/kubernetes.ts';

/** Calico: the order of every converted Kubernetes policy. */
export const KNP_ORDER = 1000;

/** A dropped rule: which one and why (Calico `ErrorPolicyConversionRule`). */
export interface RuleConversionError {
  direction: 'ingress' | 'egress';
  /** Index of the rule in `spec.ingress` / `spec.egress` of the Kubernetes policy. */
  index: number;
  /** The field that could not be converted, e.g. `spec.ingress[0].from[1].ipBlock.cidr`. */
  field: string;
  reason: string;
}

export interface ConversionResult {
  policy: NetworkPolicy;
  /** Rules that were dropped; the policy holds the rest. */
  errors: RuleConversionError[];
  /** Converted, but probably not what the author meant (logged by callers). */
  warnings: string[];
}

/** `knp.default.<name>`. */
export function convertedPolicyName(k8sName: string): string {
  return `${KNP_NAME_PREFIX}${k8sName}`;
}

/** Why one rule cannot be converted; caught per rule, which is then dropped. */
class UnconvertibleRuleError extends Error {
  override readonly name = 'UnconvertibleRuleError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A decoded port entry: Calico fills in TCP when the protocol is omitted. */
interface DecodedPort {
  readonly field: string;
  readonly protocol: string;
  readonly port?: number | string;
  readonly endPort?: number;
}

/** A decoded peer; `null` stands for "no peer" (absent or empty `from`/`to`). */
interface DecodedPeer {
  readonly field: string;
  readonly podSelector?: K8sLabelSelector;
  readonly namespaceSelector?: K8sLabelSelector;
  readonly ipBlock?: { readonly cidr: unknown; readonly except: readonly string[] };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A list as Go decodes it: absent or `null` → empty. Each element goes to `element`, a
 * `null` one too: the element decoder returns the zero value for it.
 */
function decodeList<T>(value: unknown, field: string, element: (v: unknown, at: string) => T): T[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new UnconvertibleRuleError(field, `${field}: ${show(value)} is not a list`);
  return value.map((v: unknown, i) => element(v ?? null, `${field}[${i}]`));
}

/** An object; `null` is the zero value `{}`. */
function decodeObject(v: unknown, at: string): Record<string, unknown> {
  if (v === null) return {};
  if (!isRecord(v)) throw new UnconvertibleRuleError(at, `${at}: ${show(v)} is not an object`);
  return v;
}

/** A string; `null` is the zero value `""`. */
function decodeString(v: unknown, at: string): string {
  if (v === null) return '';
  if (typeof v !== 'string') throw new UnconvertibleRuleError(at, `${at}: ${show(v)} is not a string`);
  return v;
}

/** A LabelSelector pointer: `null` (or absent) is no selector. */
function decodeSelector(v: unknown, at: string): K8sLabelSelector | undefined {
  if (v === undefined || v === null) return undefined;
  return decodeObject(v, at) as K8sLabelSelector;
}

/** A peer; `null` is the zero value, a peer with no fields set. */
function decodePeer(v: unknown, at: string): DecodedPeer {
  const o = decodeObject(v, at);
  const podSelector = decodeSelector(o['podSelector'], `${at}.podSelector`);
  const namespaceSelector = decodeSelector(o['namespaceSelector'], `${at}.namespaceSelector`);
  const block = o['ipBlock'];
  if (block === undefined || block === null) {
    return { field: at, ...(podSelector ? { podSelector } : {}), ...(namespaceSelector ? { namespaceSelector } : {}) };
  }
  const b = decodeObject(block, `${at}.ipBlock`);
  const except = decodeList(b['except'], `${at}.ipBlock.except`, decodeString);
  return { field: at, ipBlock: { cidr: b['cidr'], except } };
}

/** A port entry; `null` is the zero value `{}` (every TCP port). */
function decodePort(v: unknown, at: string): DecodedPort {
  const o = decodeObject(v, at);
  const protocol = o['protocol'] === undefined || o['protocol'] === null ? 'TCP' : protocolFromString(decodeString(o['protocol'], `${at}.protocol`));
  const port = o['port'];
  const endPort = o['endPort'];
  if (port !== undefined && port !== null && typeof port !== 'string' && !Number.isInteger(port)) {
    throw new UnconvertibleRuleError(`${at}.port`, `${at}.port: ${show(port)} is not a port number or name`);
  }
  if (endPort !== undefined && endPort !== null && !Number.isInteger(endPort)) {
    throw new UnconvertibleRuleError(`${at}.endPort`, `${at}.endPort: ${show(endPort)} is not a port number`);
  }
  return {
    field: at,
    protocol,
    ...(port !== undefined && port !== null ? { port: port as number | string } : {}),
    ...(endPort !== undefined && endPort !== null ? { endPort: endPort as number } : {}),
  };
}

/**
 * Go's `strings.EqualFold` folds only two non-ASCII characters onto letters of Calico's protocol
 * names: 'ſ' (U+017F) onto s and the Kelvin sign (U+212A) onto k.
 */
function foldProtocolName(s: string): string {
  return s.replace(/[\u017f\u212a]/g, (c) => (c === '\u017f' ? 's' : 'k')).replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** `numorstring.ProtocolFromString`: Calico's name for `p` if they are equal ignoring case, else `p`. */
export function protocolFromString(p: string): string {
  const folded = foldProtocolName(p);
  return PROTOCOL_NAMES.find((n) => n.toLowerCase() === folded) ?? p;
}

/**
 * Port 0 in a parsed-as-Calico port text: `"0"` / `"0:0"` match destination port 0 only
 * (`null`: nothing a v3 rule can say), `"0:n"` becomes `"1:n"`; other texts are unchanged.
 */
function withoutPortZero(text: string): string | null {
  const m = /^(\d+)(?::(\d+))?$/.exec(text);
  if (m === null || Number(m[1]) !== 0) return text;
  if (m[2] === undefined || Number(m[2]) === 0) return null;
  return `${MIN_PORT}:${m[2]}`;
}

const KNOWN_OPERATORS: ReadonlySet<unknown> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** Warns about matchExpressions Calico skips (a `null` one, an unknown operator). */
function warnIgnoredExpressions(sel: unknown, at: string, warnings: string[]): void {
  if (!isRecord(sel) || !Array.isArray(sel['matchExpressions'])) return;
  sel['matchExpressions'].forEach((e: unknown, i) => {
    const op = isRecord(e) ? e['operator'] : undefined;
    if (!KNOWN_OPERATORS.has(op)) {
      warnings.push(`${at}.matchExpressions[${i}]: operator ${show(op)} is not In, NotIn, Exists or DoesNotExist: ignored, as Calico does`);
    }
  });
}

export function convertNetworkPolicy(np: K8sNetworkPolicy): ConversionResult {
  const name = np.metadata?.name ?? '';
  const namespace = np.metadata?.namespace ?? 'default';
  const spec: Record<string, unknown> = isRecord(np.spec) ? np.spec : {};
  const errors: RuleConversionError[] = [];
  const warnings: string[] = [];

  const rulesOf = (direction: 'ingress' | 'egress'): Rule[] => {
    const out: Rule[] = [];
    const list = spec[direction];
    if (list !== undefined && list !== null && !Array.isArray(list)) {
      warnings.push(`spec.${direction}: ${show(list)} is not a list: no ${direction} rules converted`);
      return out;
    }
    (list ?? []).forEach((raw: unknown, index: number) => {
      const at = `spec.${direction}[${index}]`;
      try {
        out.push(...convertRule(decodeObject(raw ?? null, at), at, direction === 'ingress', warnings));
      } catch (e) {
        if (!(e instanceof UnconvertibleRuleError)) throw e;
        errors.push({ direction, index, field: e.field, reason: `k8s rule couldn't be converted: ${e.message}` });
      }
    });
    return out;
  };
  const ingress = rulesOf('ingress');
  const egress = rulesOf('egress');

  const listed = Array.isArray(spec['policyTypes']) ? (spec['policyTypes'] as unknown[]) : [];
  const types: PolicyType[] = [];
  if (listed.includes('Ingress')) types.push('Ingress');
  if (listed.includes('Egress')) types.push('Egress');
  else if (egress.length > 0) warnings.push('policyTypes does not include Egress: the egress rules are converted but not enforced');
  if (types.length === 0) types.push('Ingress');

  warnIgnoredExpressions(spec['podSelector'], 'spec.podSelector', warnings);
  const policy: NetworkPolicy = {
    apiVersion: API_VERSION,
    kind: 'NetworkPolicy',
    metadata: { name: convertedPolicyName(name), namespace },
    spec: {
      tier: DEFAULT_TIER_NAME,
      order: KNP_ORDER,
      selector: k8sLabelSelectorToCalico(isRecord(spec['podSelector']) ? (spec['podSelector'] as K8sLabelSelector) : undefined, { pod: true }),
      types,
      ...(ingress.length > 0 ? { ingress } : {}),
      ...(egress.length > 0 ? { egress } : {}),
    },
  };
  return { policy, errors, warnings };
}

/** One k8s rule (at `at`) → Calico rules; throws `UnconvertibleRuleError`. */
function convertRule(rule: Record<string, unknown>, at: string, ingress: boolean, warnings: string[]): Rule[] {
  const peerField = ingress ? 'from' : 'to';
  const peers = decodeList(rule[peerField], `${at}.${peerField}`, decodePeer);
  const ports = decodeList(rule['ports'], `${at}.ports`, decodePort);

  // protocol → ports; `null` means every port of that protocol.
  const byProtocol = new Map<string, Port[] | null>();
  if (ports.length === 0) byProtocol.set('', null);
  for (const p of ports) {
    if (p.port === undefined) {
      byProtocol.set(p.protocol, null);
      continue;
    }
    const text = p.endPort === undefined ? String(p.port) : `${String(p.port)}:${p.endPort}`;
    const usable = withoutPortZero(text);
    if (usable !== text) {
      warnings.push(
        `${p.field}: port ${text} includes port 0, which Calico's converter keeps as a match on destination port 0 and a v3 rule cannot carry: ` +
          (usable === null ? 'the entry matches nothing and is left out' : `converted as ${usable}`),
      );
    }
    const existing = byProtocol.get(p.protocol);
    if (usable === null) {
      // Calico's group for this protocol exists (port 0 only); it must not read as "every port".
      if (existing === undefined) byProtocol.set(p.protocol, []);
      continue;
    }
    const parsed = parsePort(/^\d+$/.test(usable) ? Number(usable) : usable);
    if (!parsed.ok) throw new UnconvertibleRuleError(p.field, `failed to parse k8s port: invalid port ${text}: ${parsed.message}`);
    if (existing === null) continue; // all ports of this protocol already allowed
    if (existing === undefined) byProtocol.set(p.protocol, [parsed.value]);
    else existing.push(parsed.value);
  }

  // Every peer is converted before any rule is emitted: one bad peer drops the whole rule.
  const peerList: Array<DecodedPeer | null> = peers.length === 0 ? [null] : peers;
  const fields = peerList.map((p) => peerFields(p, warnings));
  const rules: Rule[] = [];
  // Go's sort.Strings: byte order; "" (no protocol) first, then SCTP < TCP < UDP.
  for (const protocol of [...byProtocol.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const group = byProtocol.get(protocol);
    if (group !== null && group !== undefined && group.length === 0) continue; // port 0 only: matches nothing here
    const portSpecs = group === null || group === undefined ? undefined : simplifyPorts(group).map(formatPort);
    for (const peer of fields) {
      const rule: Rule = { action: 'Allow' };
      if (protocol !== '') rule.protocol = protocol;
      const portsPart: EntityRule = portSpecs === undefined ? {} : { ports: portSpecs as PortSpec[] };
      if (ingress) {
        rule.source = { ...peer };
        rule.destination = portsPart;
      } else {
        rule.source = {};
        rule.destination = { ...portsPart, ...peer };
      }
      rules.push(rule);
    }
  }
  return rules;
}

/** An ipBlock CIDR as Go's `net.ParseCIDR` reads it, or the reason the rule is dropped. */
function ipBlockNet(text: unknown, at: string): string {
  const r = parseCidr(text);
  if (r.ok && !r.value.isAddress) return r.value.network;
  const why = r.ok ? 'no prefix length' : r.message;
  const legacy = why.includes('leading zero') ? "; Kubernetes' legacy parser reads the zeros as decimal, Go's (and so Calico's) rejects them" : '';
  throw new UnconvertibleRuleError(
    at,
    `${at}: ${show(text)} is not a CIDR as Go's net.ParseCIDR reads it (${why})${legacy}; the rule is dropped rather than match any address`,
  );
}

/** calico-semantics §3.5 (`k8sPeerToCalicoFields`), except that an unparseable CIDR drops the rule. */
function peerFields(peer: DecodedPeer | null, warnings: string[]): EntityRule {
  if (peer === null) return {};
  if (peer.ipBlock !== undefined) {
    const out: EntityRule = { nets: [ipBlockNet(peer.ipBlock.cidr, `${peer.field}.ipBlock.cidr`)] };
    // Deduplicated after normalising: the v3 CRD declares notNets a set (the API server refuses
    // a repeat, and so does the validator), while a Kubernetes except list may repeat a CIDR
    // or spell one CIDR two ways; the match is the same.
    const notNets = [...new Set(peer.ipBlock.except.map((e, i) => ipBlockNet(e, `${peer.field}.ipBlock.except[${i}]`)))];
    if (notNets.length > 0) out.notNets = notNets;
    return out;
  }
  warnIgnoredExpressions(peer.podSelector, `${peer.field}.podSelector`, warnings);
  warnIgnoredExpressions(peer.namespaceSelector, `${peer.field}.namespaceSelector`, warnings);
  const out: EntityRule = { selector: k8sLabelSelectorToCalico(peer.podSelector, { pod: true }) };
  const ns = k8sLabelSelectorToCalico(peer.namespaceSelector, { pod: false });
  if (ns !== '') out.namespaceSelector = ns;
  return out;
}

/**
 * Calico `SimplifyPorts`: a list of at most one entry, or whose numeric entries cover at most
 * one port number, is unchanged; otherwise named ports first (in order), then the numeric
 * ports sorted, de-duplicated and coalesced into ranges (overlapping or adjacent ranges
 * merge). Calico counts the numeric ports by expanding every range, so `[80:82, "http"]`
 * (three port numbers) becomes `["http", "80:82"]`.
 */
export function simplifyPorts(ports: readonly Port[]): Port[] {
  const numeric = ports.filter((p): p is Extract<Port, { kind: 'range' }> => p.kind === 'range');
  const expanded = numeric.reduce((n, r) => n + (r.max - r.min + 1), 0);
  if (ports.length <= 1 || expanded <= 1) return [...ports];
  const out: Port[] = ports.filter((p) => p.kind === 'named');
  const sorted = [...numeric].sort((a, b) => a.min - b.min || a.max - b.max);
  let cur: { min: number; max: number } | undefined;
  for (const r of sorted) {
    if (cur !== undefined && r.min <= cur.max + 1) {
      cur.max = Math.max(cur.max, r.max);
      continue;
    }
    if (cur !== undefined) out.push({ kind: 'range', ...cur });
    cur = { min: r.min, max: r.max };
  }
  if (cur !== undefined) out.push({ kind: 'range', ...cur });
  return out;
}
