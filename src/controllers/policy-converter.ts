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
 * - `endPort` → a `port:endPort` range; named ports stay names; ipBlock → nets/notNets.
 *
 * As in Calico's KDD driver, a rule that cannot be converted (its ports do not parse) is
 * dropped and reported in `errors`, and the rest of the policy is kept.
 *
 * Pure: no I/O. The caller adds ownership (labels, ownerReferences) before writing.
 */
import type { EntityRule, NetworkPolicy, PolicyType, PortSpec, Rule } from '../api/types.ts';
import { API_VERSION } from '../api/types.ts';
import { KNP_NAME_PREFIX } from '../api/names.ts';
import { DEFAULT_TIER_NAME } from '../api/tiers.ts';
import { formatPort, parsePort, type Port } from '../api/port.ts';
import { parseCidr } from '../api/cidr.ts';
import { k8sLabelSelectorToCalico, type K8sLabelSelector } from '../selector/k8s-label-selector.ts';

/** Calico: the order of every converted Kubernetes policy. */
export const KNP_ORDER = 1000;

/**
 * The structural shape of a Kubernetes NetworkPolicy (compatible with client-node's
 * `V1NetworkPolicy`, which this pure module does not import).
 */
export interface K8sNetworkPolicy {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: K8sNetworkPolicySpec;
}

export interface K8sNetworkPolicySpec {
  podSelector?: K8sLabelSelector | null;
  policyTypes?: string[];
  ingress?: Array<{ from?: K8sPeer[]; ports?: K8sPort[] }>;
  egress?: Array<{ to?: K8sPeer[]; ports?: K8sPort[] }>;
}

export interface K8sPeer {
  podSelector?: K8sLabelSelector | null;
  namespaceSelector?: K8sLabelSelector | null;
  ipBlock?: { cidr: string; except?: string[] } | null;
}

export interface K8sPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

/** A dropped rule: which one and why (Calico `ErrorPolicyConversionRule`). */
export interface RuleConversionError {
  direction: 'ingress' | 'egress';
  /** Index of the rule in `spec.ingress` / `spec.egress` of the Kubernetes policy. */
  index: number;
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

export function convertNetworkPolicy(np: K8sNetworkPolicy): ConversionResult {
  const name = np.metadata?.name ?? '';
  const namespace = np.metadata?.namespace ?? 'default';
  const spec = np.spec ?? {};
  const errors: RuleConversionError[] = [];
  const warnings: string[] = [];

  const ingress: Rule[] = [];
  (spec.ingress ?? []).forEach((r, index) => {
    const converted = convertRule(r.from ?? [], r.ports ?? [], true, warnings);
    if (typeof converted === 'string') errors.push({ direction: 'ingress', index, reason: converted });
    else ingress.push(...converted);
  });
  const egress: Rule[] = [];
  (spec.egress ?? []).forEach((r, index) => {
    const converted = convertRule(r.to ?? [], r.ports ?? [], false, warnings);
    if (typeof converted === 'string') errors.push({ direction: 'egress', index, reason: converted });
    else egress.push(...converted);
  });

  const listed = spec.policyTypes ?? [];
  const types: PolicyType[] = [];
  if (listed.includes('Ingress')) types.push('Ingress');
  if (listed.includes('Egress')) types.push('Egress');
  if (types.length === 0) {
    types.push('Ingress');
    if ((spec.egress ?? []).length > 0) {
      warnings.push('policyTypes is empty: the egress rules are converted but not enforced (types: [Ingress])');
    }
  }

  const policy: NetworkPolicy = {
    apiVersion: API_VERSION,
    kind: 'NetworkPolicy',
    metadata: { name: convertedPolicyName(name), namespace },
    spec: {
      tier: DEFAULT_TIER_NAME,
      order: KNP_ORDER,
      selector: k8sLabelSelectorToCalico(spec.podSelector, { pod: true }),
      types,
      ...(ingress.length > 0 ? { ingress } : {}),
      ...(egress.length > 0 ? { egress } : {}),
    },
  };
  return { policy, errors, warnings };
}

/** One k8s rule → Calico rules, or the reason it cannot be converted. */
function convertRule(peers: readonly K8sPeer[], ports: readonly K8sPort[], ingress: boolean, warnings: string[]): Rule[] | string {
  // protocol → ports; `null` means every port of that protocol.
  const byProtocol = new Map<string, Port[] | null>();
  if (ports.length === 0) {
    byProtocol.set('', null);
  } else {
    for (const p of ports) {
      const protocol = p.protocol ?? 'TCP';
      if (p.port === undefined || p.port === null) {
        byProtocol.set(protocol, null);
        continue;
      }
      const text = p.endPort === undefined || p.endPort === null ? String(p.port) : `${String(p.port)}:${p.endPort}`;
      const parsed = parsePort(/^\d+$/.test(text) ? Number(text) : text);
      if (!parsed.ok) return `k8s rule couldn't be converted: failed to parse k8s port: invalid port ${text}: ${parsed.message}`;
      const existing = byProtocol.get(protocol);
      if (existing === null) continue; // all ports of this protocol already allowed
      if (existing === undefined) byProtocol.set(protocol, [parsed.value]);
      else existing.push(parsed.value);
    }
  }

  const peerList: Array<K8sPeer | null> = peers.length === 0 ? [null] : [...peers];
  const rules: Rule[] = [];
  // Go's sort.Strings: byte order; "" (no protocol) first, then SCTP < TCP < UDP.
  for (const protocol of [...byProtocol.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const group = byProtocol.get(protocol);
    const portSpecs = group === null || group === undefined ? undefined : simplifyPorts(group).map(formatPort);
    for (const peer of peerList) {
      const fields = peerFields(peer, warnings);
      const rule: Rule = { action: 'Allow' };
      if (protocol !== '') rule.protocol = protocol;
      const portsPart: EntityRule = portSpecs === undefined ? {} : { ports: portSpecs as PortSpec[] };
      if (ingress) {
        rule.source = fields;
        rule.destination = portsPart;
      } else {
        rule.source = {};
        rule.destination = { ...portsPart, ...fields };
      }
      rules.push(rule);
    }
  }
  return rules;
}

/** calico-semantics §3.5 (`k8sPeerToCalicoFields`). */
function peerFields(peer: K8sPeer | null, warnings: string[]): EntityRule {
  if (peer === null) return {};
  if (peer.ipBlock !== undefined && peer.ipBlock !== null) {
    // Go's net.ParseCIDR needs a prefix length; a bare address does not parse.
    const cidr = parseGoCidr(peer.ipBlock.cidr);
    if (cidr === undefined) {
      // Calico's quirk, kept: the peer then has no criteria at all and matches any address.
      warnings.push(`ipBlock.cidr ${JSON.stringify(peer.ipBlock.cidr)} does not parse: the peer matches any address`);
      return {};
    }
    const out: EntityRule = { nets: [cidr] };
    const notNets: string[] = [];
    for (const e of peer.ipBlock.except ?? []) {
      const ex = parseGoCidr(e);
      if (ex === undefined) {
        warnings.push(`ipBlock.except ${JSON.stringify(e)} does not parse: it and later exceptions are ignored`);
        break;
      }
      notNets.push(ex);
    }
    if (notNets.length > 0) out.notNets = notNets;
    return out;
  }
  const out: EntityRule = { selector: k8sLabelSelectorToCalico(peer.podSelector, { pod: true }) };
  const ns = k8sLabelSelectorToCalico(peer.namespaceSelector, { pod: false });
  if (ns !== '') out.namespaceSelector = ns;
  return out;
}

function parseGoCidr(text: unknown): string | undefined {
  if (typeof text !== 'string' || !text.includes('/')) return undefined;
  const r = parseCidr(text);
  return r.ok ? r.value.network : undefined;
}

/**
 * Calico `SimplifyPorts`: with at most one numeric port the list is unchanged; otherwise
 * named ports first (in order), then the numeric ports sorted, de-duplicated and
 * coalesced into ranges (overlapping or adjacent ranges merge).
 */
export function simplifyPorts(ports: readonly Port[]): Port[] {
  const numeric = ports.filter((p): p is Extract<Port, { kind: 'range' }> => p.kind === 'range');
  if (ports.length <= 1 || numeric.length <= 1) return [...ports];
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
