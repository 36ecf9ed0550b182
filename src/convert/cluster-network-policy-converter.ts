/**
 * SIG-Network ClusterNetworkPolicy (api/cluster-network-policy.ts) → a `projectcalico.org/v3`
 * GlobalNetworkPolicy, as Calico 3.32 maps it (`libcalico-go/lib/backend/k8s/conversion/
 * clusternetworkpolicy.go`, `K8sClusterNetworkPolicyToCalico`; reference
 * cluster-network-policy.md §2):
 *
 * - name = the CNP's name; tier by `spec.tier` (`CNP_CALICO_TIER`: Admin → kube-admin, Baseline
 *   → kube-baseline); order = `spec.priority` (absent: 0, Go's zero value);
 * - subject `namespaces` → `namespaceSelector` = that selector, `selector` =
 *   `projectcalico.org/orchestrator == 'k8s'`; subject `pods` → `namespaceSelector` from
 *   `pods.namespaceSelector` (absent or empty: `all()`), `selector` = the orchestrator term AND
 *   the pod selector's terms. The orchestrator term keeps host endpoints (and network sets) out
 *   of every subject;
 * - peers: a `pods` peer is `namespaceSelector` + a pod `selector` WITH the orchestrator term,
 *   as Calico writes it; a `namespaces` peer is that `namespaceSelector` + the orchestrator term
 *   alone. **One deliberate difference from Calico**, whose `namespaces` peer is a bare
 *   `namespaceSelector`: a bare one also selects the namespaced NetworkSets of those namespaces,
 *   so an Accept from `namespaces: {}` would admit every CIDR listed in any NetworkSet — the API
 *   says the peer is the pods of those namespaces, and only the pods match here; egress
 *   `networks` → `nets` (each CIDR as Go's `net.ParseCIDR` prints its network);
 * - `types`: Ingress / Egress only when the converted rule list of that direction is non-empty
 *   (both tiers default to Pass, so a policy with no rules in a direction changes nothing there);
 * - per CNP rule: its `protocols` grouped by protocol (TCP, UDP, SCTP; named ports in a
 *   protocol-less group, Felix matches them by the port's own protocol), the groups in Go's
 *   `sort.Strings` order (named ports first, then SCTP < TCP < UDP), each crossed with the
 *   peers in written order: one Calico rule per (protocol group × peer); each group's ports
 *   simplified as Calico's `SimplifyPorts`; no `protocols` → one protocol-less group (all
 *   traffic);
 * - Accept → Allow, Deny → Deny, Pass → Pass.
 *
 * Every converted rule carries `metadata.annotations`: Calico's `name` (the CNP rule's name,
 * when it has one) and Tessera's {@link CNP_RULE_DIRECTION_ANNOTATION} /
 * {@link CNP_RULE_INDEX_ANNOTATION} naming the CNP rule it came from, so `explain` can name it.
 *
 * **Fails closed**, per rule, as Calico does: a rule that does not convert becomes a bare
 * `{action: Deny}` (annotated, with {@link CNP_RULE_FAILED_ANNOTATION} giving the reason) when its
 * action is Deny or Pass, and is dropped when it is Accept (it then allows nothing). A rule
 * whose action is not one of the three is dropped, as in Calico. What does not convert:
 * - a peer with none of the fields this side knows, or more than one (`{}`, a newer CRD's peer
 *   kind, `namespaces` + `pods`), and every `domainNames` peer (as Calico 3.32);
 * - any field Tessera does not know in a rule, peer, protocol or port (a newer CRD's field
 *   that might narrow the match; Calico's Go decoder would drop it and widen the rule);
 * - a protocol entry with no known protocol, or a protocol whose `destinationPort` is missing
 *   (Calico would read both as "every port" / "all traffic");
 * - a port number outside 1–65535, a range whose start is above its end, a CIDR Go cannot
 *   parse or without a prefix length, a label selector with an operator Kubernetes does not
 *   know or a selector Calico's parser would not read;
 * - any rule the caller names in `failRules` (the API validation's findings).
 *
 * A named port that is not an IANA service name (`"8080"`, `"HTTP"`) can name no container port
 * (Kubernetes validates pod port names so), so it matches nothing: it is left out of its group,
 * and a group left with no port emits no rule — never "every port". Calico keeps it as a name
 * that matches nothing (the same verdicts) — except an all-digit name, which Typha's JSON round
 * trip turns into that port number (e2e/calico-cnp/README.md, Findings).
 *
 * **Beyond Calico** (which rejects it): the experimental egress `nodes` peer → `nets` = the /32
 * (IPv4) and /128 (IPv6) of every `status.addresses` IP of every Node its selector picks, among
 * `nodes` (sorted by name, duplicates removed). A selector that picks no Node (or Nodes with no
 * address) names no destination: the peer emits no Calico rule at all, whatever the action —
 * an Accept allows nothing more, and a Deny or Pass denies or passes nothing (a rule without
 * `nets` would match every destination, which the peer never asked for). The result says
 * whether the policy reads Nodes (`readsNodes`), so the node side re-converts it when a Node's
 * labels or addresses change.
 *
 * Whole-policy problems (no readable tier, no subject or an ambiguous one, a priority that is
 * not a number) give no policy (`policy: null`, `problem` says why): Calico's tombstone — the
 * CRD's schema rejects all of them, so only hand-written files meet this.
 *
 * Pure: no I/O.
 */
import { formatIP, parseCidr, parseIP } from '../api/cidr.ts';
import { CNP_CALICO_TIER, type ClusterNetworkPolicy, type CnpTier, type NodePeerInfo } from '../api/cluster-network-policy.ts';
import { isValidEndpointPortName } from '../api/names.ts';
import { show } from '../api/parse-result.ts';
import { formatPort, MAX_PORT, MIN_PORT, type Port } from '../api/port.ts';
import { API_VERSION, type EntityRule, type GlobalNetworkPolicy, type PolicyType, type PortSpec, type Rule } from '../api/types.ts';
import { k8sLabelSelectorToCalico, ORCHESTRATOR_LABEL, type K8sLabelSelector } from '../selector/k8s-label-selector.ts';
import { parseSelector, type Selector } from '../selector/index.ts';
import { simplifyPorts } from './policy-converter.ts';

/** Calico `K8sCNPRuleNameLabel`: the CNP rule's `name`. */
export const CNP_RULE_NAME_ANNOTATION = 'name';
/** `ingress` or `egress`: the list of the CNP rule a Calico rule came from. */
export const CNP_RULE_DIRECTION_ANNOTATION = 'tessera.io/cnp-rule-direction';
/** The CNP rule's index in its list, in decimal. */
export const CNP_RULE_INDEX_ANNOTATION = 'tessera.io/cnp-rule-index';
/** Set on a fail-closed stand-in rule: why the CNP rule did not convert. */
export const CNP_RULE_FAILED_ANNOTATION = 'tessera.io/cnp-rule-failed-closed';

/** Calico `k8sSelectorToCalico(nil, SelectorPod)`: every Kubernetes pod, never a host endpoint. */
export const CNP_POD_SELECTOR = `${ORCHESTRATOR_LABEL} == 'k8s'`;

export type CnpDirection = 'ingress' | 'egress';

/** A CNP rule that did not convert and what became of it. */
export interface CnpRuleError {
  readonly direction: CnpDirection;
  readonly index: number;
  /** The field that failed, e.g. `spec.egress[1].to[0].domainNames`. */
  readonly field: string;
  readonly reason: string;
  /** `deny`: replaced by a bare Deny rule (Deny/Pass); `dropped`: left out (Accept, unknown action). */
  readonly outcome: 'deny' | 'dropped';
}

export interface CnpConversionResult {
  /** The converted policy, or `null` when it cannot be placed (see `problem`). */
  readonly policy: GlobalNetworkPolicy | null;
  readonly problem?: string;
  readonly errors: readonly CnpRuleError[];
  /** Whether some egress rule has a `nodes` peer (its rules depend on the Nodes). */
  readonly readsNodes: boolean;
}

export interface CnpConvertOptions {
  /**
   * Rules to fail closed whatever they say, keyed `ingress/<index>` / `egress/<index>`, with
   * the reason (the API validation's findings on that rule).
   */
  readonly failRules?: ReadonlyMap<string, string>;
}

/** The key of {@link CnpConvertOptions.failRules}. */
export function cnpRuleKey(direction: CnpDirection, index: number): string {
  return `${direction}/${index}`;
}

/** Why one rule cannot be converted; caught per rule, which then fails closed. */
class UnconvertibleRule extends Error {
  override readonly name = 'UnconvertibleRule';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isAbsent(v: unknown): boolean {
  return v === undefined || v === null;
}

/** An object whose keys are all in `known`; anything else is a field from a newer CRD. */
function knownObject(v: unknown, at: string, known: readonly string[]): Record<string, unknown> {
  if (!isRecord(v)) throw new UnconvertibleRule(at, `${at}: ${show(v)} is not an object`);
  for (const k of Object.keys(v)) {
    if (!known.includes(k)) throw new UnconvertibleRule(`${at}.${k}`, `${at}.${k}: a field this converter does not know (a newer CRD?)`);
  }
  return v;
}

/** A list; absent or `null` is empty. */
function list(v: unknown, at: string): unknown[] {
  if (isAbsent(v)) return [];
  if (!Array.isArray(v)) throw new UnconvertibleRule(at, `${at}: ${show(v)} is not a list`);
  return v;
}

const OPERATORS: ReadonlySet<unknown> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/**
 * A Kubernetes LabelSelector (absent → `undefined`), checked as the API server checks a
 * LabelSelector: known fields and operators, values only with In/NotIn (and then some). Calico
 * skips an unknown operator, which would widen the selector; here it does not convert.
 */
function labelSelector(v: unknown, at: string): K8sLabelSelector | undefined {
  if (isAbsent(v)) return undefined;
  const o = knownObject(v, at, ['matchLabels', 'matchExpressions']);
  if (!isAbsent(o['matchLabels'])) {
    const ml = o['matchLabels'];
    if (!isRecord(ml)) throw new UnconvertibleRule(`${at}.matchLabels`, `${at}.matchLabels: ${show(ml)} is not an object`);
    for (const [k, val] of Object.entries(ml)) {
      if (typeof val !== 'string') throw new UnconvertibleRule(`${at}.matchLabels.${k}`, `${at}.matchLabels.${k}: ${show(val)} is not a string`);
    }
  }
  list(o['matchExpressions'], `${at}.matchExpressions`).forEach((e, i) => {
    const ea = `${at}.matchExpressions[${i}]`;
    const r = knownObject(e, ea, ['key', 'operator', 'values']);
    if (typeof r['key'] !== 'string' || r['key'] === '') throw new UnconvertibleRule(`${ea}.key`, `${ea}.key: ${show(r['key'])} is not a label key`);
    if (!OPERATORS.has(r['operator'])) throw new UnconvertibleRule(`${ea}.operator`, `${ea}.operator: ${show(r['operator'])} is not In, NotIn, Exists or DoesNotExist`);
    const values = list(r['values'], `${ea}.values`);
    if (values.some((x) => typeof x !== 'string')) throw new UnconvertibleRule(`${ea}.values`, `${ea}.values: every value must be a string`);
    const needsValues = r['operator'] === 'In' || r['operator'] === 'NotIn';
    if (needsValues !== values.length > 0) {
      throw new UnconvertibleRule(`${ea}.values`, `${ea}.values: ${needsValues ? 'In and NotIn need values' : 'Exists and DoesNotExist take no values'}`);
    }
  });
  return o as K8sLabelSelector;
}

/** Calico's selector text for `sel`, checked to parse (it is handed on as written). */
function calicoSelector(sel: K8sLabelSelector | undefined, pod: boolean, at: string): string {
  const text = k8sLabelSelectorToCalico(sel, { pod });
  parsed(text, at);
  return text;
}

function parsed(text: string, at: string): Selector {
  try {
    return parseSelector(text === '' ? 'all()' : text);
  } catch (err) {
    throw new UnconvertibleRule(at, `${at}: the selector ${JSON.stringify(text)} does not parse: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** A `pods` peer or subject: Calico's `(nsSelector, podSelector)`; an absent namespaceSelector is `{}` (Go's zero struct), so `all()`. */
function namespacedPod(v: unknown, at: string): { namespaceSelector: string; selector: string } {
  const o = knownObject(v, at, ['namespaceSelector', 'podSelector']);
  return {
    namespaceSelector: calicoSelector(labelSelector(o['namespaceSelector'], `${at}.namespaceSelector`) ?? {}, false, `${at}.namespaceSelector`),
    selector: calicoSelector(labelSelector(o['podSelector'], `${at}.podSelector`) ?? {}, true, `${at}.podSelector`),
  };
}

/** What one peer contributes: entity fields for one rule each, or `null` for a peer that names no destination (a `nodes` peer picking no address). */
type PeerFields = EntityRule | null;

const INGRESS_PEER_FIELDS = ['namespaces', 'pods'] as const;
const EGRESS_PEER_FIELDS = ['namespaces', 'pods', 'networks', 'nodes', 'domainNames'] as const;

function peerFields(v: unknown, at: string, direction: CnpDirection, nodes: readonly NodePeerInfo[]): PeerFields {
  const fields: readonly string[] = direction === 'ingress' ? INGRESS_PEER_FIELDS : EGRESS_PEER_FIELDS;
  const o = knownObject(v, at, fields);
  // `networks: []` is "not set" to Calico (`len(peer.Networks) != 0`).
  const set = fields.filter((f) => !isAbsent(o[f]) && !(Array.isArray(o[f]) && (o[f] as unknown[]).length === 0));
  if (set.length === 0) throw new UnconvertibleRule(at, `${at}: none of supported fields in '${direction === 'ingress' ? 'From' : 'To'}' is set`);
  if (set.length > 1) throw new UnconvertibleRule(at, `${at}: more than one peer field is set (${set.join(', ')}); a peer is exactly one`);
  const field = set[0] as string;
  const fa = `${at}.${field}`;
  switch (field) {
    case 'namespaces':
      // Pods only, never the namespaces' NetworkSets (module comment: the one difference from Calico).
      return { selector: CNP_POD_SELECTOR, namespaceSelector: calicoSelector(labelSelector(o[field], fa) ?? {}, false, fa) };
    case 'pods': {
      const p = namespacedPod(o[field], fa);
      return { selector: p.selector, namespaceSelector: p.namespaceSelector };
    }
    case 'networks':
      return { nets: list(o[field], fa).map((n, i) => network(n, `${fa}[${i}]`)) };
    case 'nodes':
      return nodeNets(labelSelector(o[field], fa) ?? {}, fa, nodes);
    default:
      throw new UnconvertibleRule(fa, `${fa}: ${field} peers are not supported (as in Calico 3.32): the rule fails closed`);
  }
}

/** A `networks` entry as Calico reads it (`cnet.ParseCIDR`, then the network's text). */
function network(v: unknown, at: string): string {
  const r = parseCidr(v);
  if (!r.ok || r.value.isAddress) throw new UnconvertibleRule(at, `${at}: ${show(v)} is not a CIDR (${r.ok ? 'no prefix length' : r.message})`);
  return r.value.network;
}

/** The `nodes` peer: the host CIDR of every address of every Node the selector picks; `null` for none. */
function nodeNets(sel: K8sLabelSelector, at: string, nodes: readonly NodePeerInfo[]): PeerFields {
  const selector = parsed(calicoSelector(sel, false, at), at);
  const nets = new Set<string>();
  for (const node of [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!selector.evaluate(node.labels)) continue;
    for (const address of node.addresses) {
      const ip = parseIP(address);
      if (ip.ok) nets.add(`${formatIP(ip.value.bytes)}/${ip.value.version === 4 ? 32 : 128}`);
    }
  }
  return nets.size === 0 ? null : { nets: [...nets] };
}

const PROTOCOL_FIELDS = ['tcp', 'udp', 'sctp', 'destinationNamedPort'] as const;
const CALICO_PROTOCOL: Readonly<Record<string, string>> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };

/**
 * `protocols` → protocol ('' for named ports, and for "all traffic") → ports (`null`: every
 * port of it), in Calico's `unpackCNPProtocols` way. A group may end up empty (named ports that
 * can name no container port): it then matches nothing and emits no rule.
 */
function protocolGroups(v: unknown, at: string): Map<string, Port[] | null> {
  const entries = list(v, at);
  const groups = new Map<string, Port[] | null>();
  if (entries.length === 0) {
    groups.set('', null);
    return groups;
  }
  entries.forEach((e, i) => {
    const ea = `${at}[${i}]`;
    const o = knownObject(e, ea, PROTOCOL_FIELDS);
    const set = PROTOCOL_FIELDS.filter((f) => !isAbsent(o[f]) && o[f] !== '');
    if (set.length !== 1) throw new UnconvertibleRule(ea, `${ea}: exactly one of tcp, udp, sctp and destinationNamedPort must be set (found ${set.length === 0 ? 'none' : set.join(', ')})`);
    const field = set[0] as (typeof PROTOCOL_FIELDS)[number];
    if (field === 'destinationNamedPort') {
      const name = o[field];
      if (typeof name !== 'string') throw new UnconvertibleRule(`${ea}.${field}`, `${ea}.${field}: ${show(name)} is not a port name`);
      const group = groups.get('') ?? [];
      // Not an IANA service name: no container port has it, so it matches nothing.
      if (isValidEndpointPortName(name)) group.push({ kind: 'named', name });
      groups.set('', group);
      return;
    }
    const pa = `${ea}.${field}`;
    const proto = knownObject(o[field], pa, ['destinationPort']);
    if (isAbsent(proto['destinationPort'])) throw new UnconvertibleRule(`${pa}.destinationPort`, `${pa}.destinationPort: missing`);
    const port = destinationPort(proto['destinationPort'], `${pa}.destinationPort`);
    const name = CALICO_PROTOCOL[field] as string;
    const group = groups.get(name);
    if (group === null) return;
    groups.set(name, [...(group ?? []), port]);
  });
  return groups;
}

function portNumber(v: unknown, at: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < MIN_PORT || v > MAX_PORT) throw new UnconvertibleRule(at, `${at}: ${show(v)} is not a port number (${MIN_PORT}-${MAX_PORT})`);
  return v;
}

function destinationPort(v: unknown, at: string): Port {
  const o = knownObject(v, at, ['number', 'range']);
  const hasNumber = !isAbsent(o['number']) && o['number'] !== 0;
  const hasRange = !isAbsent(o['range']);
  if (hasNumber === hasRange) throw new UnconvertibleRule(at, `${at}: exactly one of number and range must be set`);
  if (hasNumber) {
    const n = portNumber(o['number'], `${at}.number`);
    return { kind: 'range', min: n, max: n };
  }
  const r = knownObject(o['range'], `${at}.range`, ['start', 'end']);
  const start = portNumber(r['start'], `${at}.range.start`);
  const end = portNumber(r['end'], `${at}.range.end`);
  // Calico's numorstring.PortFromRange refuses only start > end.
  if (start > end) throw new UnconvertibleRule(`${at}.range`, `${at}.range: minimum port number (${start}) is greater than maximum port number (${end}) in port range`);
  return { kind: 'range', min: start, max: end };
}

const ACTIONS: Readonly<Record<string, Rule['action']>> = { Accept: 'Allow', Deny: 'Deny', Pass: 'Pass' };

function ruleMetadata(direction: CnpDirection, index: number, name: unknown, failed?: string): NonNullable<Rule['metadata']> {
  const annotations: Record<string, string> = {};
  if (typeof name === 'string' && name !== '') annotations[CNP_RULE_NAME_ANNOTATION] = name;
  annotations[CNP_RULE_DIRECTION_ANNOTATION] = direction;
  annotations[CNP_RULE_INDEX_ANNOTATION] = String(index);
  if (failed !== undefined) annotations[CNP_RULE_FAILED_ANNOTATION] = failed;
  return { annotations };
}

/** One CNP rule → Calico rules; throws `UnconvertibleRule`. */
function convertRule(v: unknown, at: string, direction: CnpDirection, index: number, nodes: readonly NodePeerInfo[]): Rule[] {
  const peersField = direction === 'ingress' ? 'from' : 'to';
  const o = knownObject(v, at, ['name', 'action', peersField, 'protocols']);
  const action = ACTIONS[o['action'] as string];
  if (action === undefined) throw new UnconvertibleRule(`${at}.action`, `${at}.action: unsupported cluster network policy action ${show(o['action'])}`);
  const groups = protocolGroups(o['protocols'], `${at}.protocols`);
  // Every peer converts before a rule is emitted: one bad peer fails the whole rule.
  const peers = list(o[peersField], `${at}.${peersField}`).map((p, i) => peerFields(p, `${at}.${peersField}[${i}]`, direction, nodes));
  const metadata = ruleMetadata(direction, index, o['name']);
  const rules: Rule[] = [];
  for (const protocol of [...groups.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const group = groups.get(protocol);
    if (group !== null && group !== undefined && group.length === 0) continue;
    const ports = group === null || group === undefined ? undefined : (simplifyPorts(group).map(formatPort) as PortSpec[]);
    for (const peer of peers) {
      if (peer === null) continue;
      const rule: Rule = { action, metadata: { annotations: { ...metadata.annotations } } };
      if (protocol !== '') rule.protocol = protocol;
      const portsPart: EntityRule = ports === undefined ? {} : { ports: [...ports] };
      if (direction === 'ingress') {
        rule.source = { ...peer };
        rule.destination = portsPart;
      } else {
        rule.destination = { ...portsPart, ...peer };
      }
      rules.push(rule);
    }
  }
  return rules;
}

function readsNodes(spec: Record<string, unknown>): boolean {
  const egress = spec['egress'];
  if (!Array.isArray(egress)) return false;
  return egress.some((r) => isRecord(r) && Array.isArray(r['to']) && r['to'].some((p) => isRecord(p) && !isAbsent(p['nodes'])));
}

function subjectSelectors(v: unknown): { namespaceSelector: string; selector: string } | string {
  const at = 'spec.subject';
  if (!isRecord(v)) return `${at}: no subject`;
  try {
    const o = knownObject(v, at, ['namespaces', 'pods']);
    const hasNs = !isAbsent(o['namespaces']);
    const hasPods = !isAbsent(o['pods']);
    if (hasNs === hasPods) return `${at}: exactly one of namespaces and pods must be set`;
    if (hasNs) return { namespaceSelector: calicoSelector(labelSelector(o['namespaces'], `${at}.namespaces`) ?? {}, false, `${at}.namespaces`), selector: CNP_POD_SELECTOR };
    return namespacedPod(o['pods'], `${at}.pods`);
  } catch (err) {
    if (err instanceof UnconvertibleRule) return err.message;
    throw err;
  }
}

/** The CNP → GlobalNetworkPolicy conversion (module comment). */
export function convertClusterNetworkPolicy(cnp: ClusterNetworkPolicy, nodes: readonly NodePeerInfo[], opts: CnpConvertOptions = {}): CnpConversionResult {
  const raw: unknown = cnp;
  const name = isRecord(raw) && isRecord(raw['metadata']) && typeof raw['metadata']['name'] === 'string' ? raw['metadata']['name'] : '';
  const spec: Record<string, unknown> = isRecord(raw) && isRecord(raw['spec']) ? raw['spec'] : {};
  const uses = readsNodes(spec);
  const none = (problem: string): CnpConversionResult => ({ policy: null, problem, errors: [], readsNodes: uses });
  if (name === '') return none('metadata.name: missing');
  const tierName = spec['tier'];
  if (tierName !== 'Admin' && tierName !== 'Baseline') return none(`spec.tier: invalid cluster network policy tier ${show(tierName)}`);
  const tier = CNP_CALICO_TIER[tierName as CnpTier];
  const priority = spec['priority'] ?? 0;
  if (typeof priority !== 'number' || !Number.isFinite(priority)) return none(`spec.priority: ${show(priority)} is not a number`);
  const subject = subjectSelectors(spec['subject']);
  if (typeof subject === 'string') return none(subject);

  const errors: CnpRuleError[] = [];
  const rulesOf = (direction: CnpDirection): Rule[] => {
    const out: Rule[] = [];
    const at = `spec.${direction}`;
    let entries: unknown[];
    try {
      entries = list(spec[direction], at);
    } catch (err) {
      if (!(err instanceof UnconvertibleRule)) throw err;
      // No rule can be read, so none can be known to be an Accept: deny the direction.
      errors.push({ direction, index: 0, field: err.field, reason: err.message, outcome: 'deny' });
      return [{ action: 'Deny', metadata: ruleMetadata(direction, 0, undefined, err.message) }];
    }
    entries.forEach((r, index) => {
      const ra = `${at}[${index}]`;
      try {
        const failed = opts.failRules?.get(cnpRuleKey(direction, index));
        if (failed !== undefined) throw new UnconvertibleRule(ra, failed);
        out.push(...convertRule(r, ra, direction, index, nodes));
      } catch (err) {
        if (!(err instanceof UnconvertibleRule)) throw err;
        const action = isRecord(r) ? r['action'] : undefined;
        const deny = action === 'Deny' || action === 'Pass';
        errors.push({ direction, index, field: err.field, reason: `k8s rule couldn't be converted: ${err.message}`, outcome: deny ? 'deny' : 'dropped' });
        if (deny) out.push({ action: 'Deny', metadata: ruleMetadata(direction, index, isRecord(r) ? r['name'] : undefined, err.message) });
      }
    });
    return out;
  };
  const ingress = rulesOf('ingress');
  const egress = rulesOf('egress');
  const types: PolicyType[] = [];
  if (ingress.length > 0) types.push('Ingress');
  if (egress.length > 0) types.push('Egress');

  const meta = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : {};
  const policy: GlobalNetworkPolicy = {
    apiVersion: API_VERSION,
    kind: 'GlobalNetworkPolicy',
    metadata: {
      name,
      ...(typeof meta['uid'] === 'string' ? { uid: meta['uid'] } : {}),
      ...(typeof meta['resourceVersion'] === 'string' ? { resourceVersion: meta['resourceVersion'] } : {}),
      ...(typeof meta['creationTimestamp'] === 'string' ? { creationTimestamp: meta['creationTimestamp'] } : {}),
    },
    spec: {
      tier,
      order: priority,
      namespaceSelector: subject.namespaceSelector,
      selector: subject.selector,
      ...(types.length > 0 ? { types } : {}),
      ...(ingress.length > 0 ? { ingress } : {}),
      ...(egress.length > 0 ? { egress } : {}),
    },
  };
  return { policy, errors, readsNodes: uses };
}
