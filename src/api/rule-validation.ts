/**
 * Validation of rule lists (policy and profile `ingress` / `egress`) and of the entity
 * rules inside them.
 *
 * The checks are Calico's (`validateRule`, `validateEntityRule`, `validateICMPFields`,
 * `validatePort`, `validateProtocol` in libcalico-go/lib/validator/v3/validator.go, and the
 * CEL rules on `Rule` / `EntityRule` in api/pkg/apis/projectcalico/v3/policy_common.go):
 * - `action` is one of Allow, Deny, Log, Pass; `ipVersion` is 4 or 6;
 * - `protocol` / `notProtocol`: a known name or 1–255;
 * - ICMP `type` 0–254, `code` 0–255, `code` only with `type`; `icmp` only with protocol ICMP
 *   or ICMPv6; protocol ICMP needs ipVersion 4 (or none), ICMPv6 needs 6 (or none);
 * - ports: without a protocol only named ports are allowed (Felix matches them by the named
 *   port's own protocol); with a protocol other than TCP/UDP/SCTP no ports at all;
 * - nets: valid, strictly masked CIDRs or addresses; the same IP version across the rule and
 *   as `ipVersion`; `notNets` may not be the catch-all `0.0.0.0/0` or `::/0`;
 * - `global()` only as the whole of a `namespaceSelector`;
 * - `services` is exclusive with selectors, namespace selector, service accounts, nets and
 *   ports, needs a name, may appear only in an ingress rule's source or an egress rule's
 *   destination, and in a GlobalNetworkPolicy needs a namespace.
 */
import { parseCidr } from './cidr.ts';
import type { IPVersion } from './cidr.ts';
import { fieldPath, indexPath } from './field-error.ts';
import type { FieldErrorCollector } from './field-error.ts';
import { checkHTTPMatch } from './http.ts';
import { isDns1123Subdomain, qualifiedNameProblems } from './names.ts';
import { parsePort } from './port.ts';
import type { Port } from './port.ts';
import { isICMPv4, isICMPv6, parseProtocol, supportsPorts } from './protocol.ts';
import type { Protocol } from './protocol.ts';
import { checkSelectorField } from './selector-field.ts';
import { ENTITY_RULE_SHAPE, ICMP_SHAPE, RULE_METADATA_SHAPE, RULE_SHAPE, SERVICE_ACCOUNTS_SHAPE, SERVICES_SHAPE } from './schema-fields.ts';
import { MAX_NETS, MAX_PORTS, MAX_RULES } from './schema-rule.ts';
import {
  describeType,
  expectArray,
  expectString,
  expectStringMap,
  isAbsent,
  isRecord,
} from './shape.ts';
import { ACTIONS } from './types.ts';
import type { Action } from './types.ts';

/**
 * An empty `services.namespace` in a namespaced policy: Tessera matches the Service in the
 * policy's own namespace, as Calico's API documents (ServiceMatch.Namespace). Calico's Felix
 * keys the Service `"/<name>"` instead (felix/calc/rule_scanner.go, v3.28 to v3.32), so there the
 * rule matches no traffic: said, because the two differ (the Felix differential found it).
 */
export const SERVICES_NAMESPACE_DEFAULT_MESSAGE =
  "no namespace: Tessera matches this Service in the policy's own namespace, as Calico documents; Calico's Felix matches no Service here (it looks up \"/<name>\"), so give the namespace to mean the same on both";

// The CRD limits, declared with the schema (schema-rule.ts).
export { MAX_RULES };

export type RuleDirection = 'ingress' | 'egress';
export type RuleOwnerKind = 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'Profile';

export interface RuleListContext {
  readonly direction: RuleDirection;
  readonly owner: RuleOwnerKind;
}

/** Checks a rule list at `path` (e.g. `spec.ingress`). Returns the valid actions seen. */
export function checkRuleList(
  c: FieldErrorCollector,
  path: string,
  value: unknown,
  ctx: RuleListContext,
): Action[] {
  if (isAbsent(value) || !expectArray(c, path, value, MAX_RULES)) return [];
  const actions: Action[] = [];
  value.forEach((rule, i) => {
    const action = checkRule(c, indexPath(path, i), rule, ctx);
    if (action !== undefined) actions.push(action);
  });
  return actions;
}

function isAction(value: unknown): value is Action {
  return typeof value === 'string' && (ACTIONS as readonly string[]).includes(value);
}

function checkAction(c: FieldErrorCollector, path: string, value: unknown): Action | undefined {
  if (isAbsent(value) || value === '') {
    c.error(path, 'action is required (Allow, Deny, Log or Pass)');
    return undefined;
  }
  if (isAction(value)) return value;
  const folded = ACTIONS.find((a) => typeof value === 'string' && a.toLowerCase() === value.toLowerCase());
  c.error(
    path,
    folded !== undefined
      ? `action ${JSON.stringify(value)} is not valid: actions are case-sensitive (use "${folded}")`
      : `action ${JSON.stringify(value)} is not valid (use Allow, Deny, Log or Pass)`,
  );
  return undefined;
}

function checkProtocolField(c: FieldErrorCollector, path: string, value: unknown): Protocol | undefined {
  if (isAbsent(value)) return undefined;
  const result = parseProtocol(value);
  if (result.ok) return result.value;
  c.error(path, result.message);
  return undefined;
}

function checkICMPFields(c: FieldErrorCollector, path: string, value: unknown): void {
  if (isAbsent(value) || !ICMP_SHAPE.check(c, path, value)) return;
  const bounded = (field: 'type' | 'code', max: number): boolean => {
    const v = value[field];
    if (isAbsent(v)) return false;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
      c.error(fieldPath(path, field), `ICMP ${field} must be an integer 0-${max}, not ${JSON.stringify(v)}`);
    }
    return true;
  };
  // 255 is reserved as "any type" in iptables, hence 254 (ICMPFields.Type lte=254).
  const hasType = bounded('type', 254);
  const hasCode = bounded('code', 255);
  if (hasCode && !hasType) c.error(fieldPath(path, 'code'), 'ICMP code specified without an ICMP type');
}

interface EntitySummary {
  /** Parsed ports by field, for the rule-level protocol checks. */
  readonly ports: { readonly field: 'ports' | 'notPorts'; readonly list: Port[]; readonly given: boolean }[];
  readonly hasServices: boolean;
  readonly serviceNamespace: string | undefined;
}

function checkEntityRule(
  c: FieldErrorCollector,
  path: string,
  value: unknown,
): EntitySummary {
  const summary: EntitySummary = { ports: [], hasServices: false, serviceNamespace: undefined };
  if (isAbsent(value) || !ENTITY_RULE_SHAPE.check(c, path, value)) return summary;

  checkSelectorField(c, fieldPath(path, 'selector'), value['selector']);
  // Calico checks global() in `selector` only; `notSelector` is parsed.
  checkSelectorField(c, fieldPath(path, 'notSelector'), value['notSelector'], { checkGlobal: false });
  checkSelectorField(c, fieldPath(path, 'namespaceSelector'), value['namespaceSelector'], { allowGlobal: true });

  for (const field of ['ports', 'notPorts'] as const) {
    const list = value[field];
    const at = fieldPath(path, field);
    const parsedPorts: Port[] = [];
    const given = !isAbsent(list) && Array.isArray(list) && list.length > 0;
    if (!isAbsent(list) && expectArray(c, at, list, MAX_PORTS)) {
      list.forEach((p, i) => {
        const result = parsePort(p);
        if (result.ok) parsedPorts.push(result.value);
        else c.error(indexPath(at, i), result.message);
      });
    }
    summary.ports.push({ field, list: parsedPorts, given });
  }

  const sa = value['serviceAccounts'];
  const saPath = fieldPath(path, 'serviceAccounts');
  if (!isAbsent(sa) && SERVICE_ACCOUNTS_SHAPE.check(c, saPath, sa)) {
    const names = sa['names'];
    const namesPath = fieldPath(saPath, 'names');
    if (!isAbsent(names) && expectArray(c, namesPath, names)) {
      // Calico does not check the names (`validate:"omitempty"`); the CRD makes the list a
      // set, so only a repeat is an error. An empty name is admitted and matches no pod.
      const seen = new Set<string>();
      names.forEach((n, i) => {
        if (!expectString(c, indexPath(namesPath, i), n)) return;
        if (seen.has(n)) c.error(indexPath(namesPath, i), `${JSON.stringify(n)} is listed more than once`);
        else if (n === '') c.warning(indexPath(namesPath, i), 'an empty service account name matches no pod');
        seen.add(n);
      });
    }
    checkSelectorField(c, fieldPath(saPath, 'selector'), sa['selector']);
  }

  const services = value['services'];
  const svcPath = fieldPath(path, 'services');
  if (!isAbsent(services) && SERVICES_SHAPE.check(c, svcPath, services)) {
    const name = services['name'];
    if (isAbsent(name) || name === '') {
      c.error(svcPath, 'services must specify a service name');
    } else if (expectString(c, fieldPath(svcPath, 'name'), name) && !isDns1123Subdomain(name)) {
      c.error(fieldPath(svcPath, 'name'), `${JSON.stringify(name)} is not a valid service name (DNS-1123 subdomain)`);
    }
    const ns = services['namespace'];
    let serviceNamespace: string | undefined;
    if (!isAbsent(ns) && ns !== '' && expectString(c, fieldPath(svcPath, 'namespace'), ns)) {
      serviceNamespace = ns;
      if (!isDns1123Subdomain(ns)) {
        c.error(fieldPath(svcPath, 'namespace'), `${JSON.stringify(ns)} is not a valid namespace name`);
      }
    }
    const present = (f: string): boolean => {
      const v = value[f];
      return !isAbsent(v) && v !== '' && !(Array.isArray(v) && v.length === 0);
    };
    if (present('namespaceSelector')) c.error(svcPath, 'cannot specify NamespaceSelector and Services on the same rule');
    if (present('selector') || present('notSelector')) {
      c.error(svcPath, 'cannot specify Selector/NotSelector and Services on the same rule');
    }
    if (present('serviceAccounts')) c.error(svcPath, 'cannot specify ServiceAccounts and Services on the same rule');
    if (present('nets') || present('notNets')) c.error(svcPath, 'cannot specify Nets/NotNets and Services on the same rule');
    return { ...summary, hasServices: true, serviceNamespace };
  }
  return summary;
}

/**
 * Nets across the whole rule, in Calico's scan order: each entry valid and strictly masked,
 * versions consistent with each other and with `ipVersion`, no catch-all in `notNets`.
 */
function checkRuleNets(
  c: FieldErrorCollector,
  rulePath: string,
  rule: Record<string, unknown>,
  ipVersion: IPVersion | undefined,
): void {
  let seenV4 = false;
  let seenV6 = false;
  for (const side of ['source', 'destination'] as const) {
    const entity = rule[side];
    if (!isRecord(entity)) continue;
    for (const field of ['nets', 'notNets'] as const) {
      const list = entity[field];
      const at = fieldPath(fieldPath(rulePath, side), field);
      if (isAbsent(list) || !expectArray(c, at, list, MAX_NETS)) continue;
      let v4 = false;
      let v6 = false;
      // The CRD makes nets and notNets sets (`+listType=set`): the API server refuses a repeat.
      const seen = new Set<string>();
      list.forEach((n, i) => {
        const itemPath = indexPath(at, i);
        if (typeof n !== 'string') {
          c.error(itemPath, `must be a CIDR string, not ${describeType(n)}`);
          return;
        }
        if (seen.has(n)) c.error(itemPath, `${JSON.stringify(n)} is listed more than once`);
        seen.add(n);
        const result = parseCidr(n);
        if (!result.ok) {
          c.error(itemPath, result.message);
          return;
        }
        const cidr = result.value;
        if (cidr.hasHostBits) {
          c.error(itemPath, `${JSON.stringify(n)} has host bits set (did you mean ${JSON.stringify(cidr.network)}?)`);
        }
        if (field === 'notNets' && cidr.prefixLength === 0) {
          c.error(itemPath, 'catch-all CIDR in negation creates logical contradiction (matches no traffic)');
        }
        if (ipVersion !== undefined && cidr.version !== ipVersion) {
          c.error(itemPath, `${JSON.stringify(n)} is an IPv${cidr.version} CIDR but the rule has ipVersion ${ipVersion}`);
        }
        v4 ||= cidr.version === 4;
        v6 ||= cidr.version === 6;
      });
      if ((v4 && seenV6) || (v6 && seenV4) || (v4 && v6)) c.error(at, 'rule contains both IPv4 and IPv6 CIDRs');
      seenV4 ||= v4;
      seenV6 ||= v6;
    }
  }
}

/** Checks one rule; returns its action when valid. */
export function checkRule(
  c: FieldErrorCollector,
  path: string,
  rule: unknown,
  ctx: RuleListContext,
): Action | undefined {
  if (!RULE_SHAPE.check(c, path, rule)) return undefined;

  const action = checkAction(c, fieldPath(path, 'action'), rule['action']);

  let ipVersion: IPVersion | undefined;
  const ipv = rule['ipVersion'];
  if (!isAbsent(ipv)) {
    if (ipv === 4 || ipv === 6) ipVersion = ipv;
    else c.error(fieldPath(path, 'ipVersion'), `ipVersion must be 4 or 6, not ${JSON.stringify(ipv)}`);
  }

  const protocol = checkProtocolField(c, fieldPath(path, 'protocol'), rule['protocol']);
  const notProtocol = checkProtocolField(c, fieldPath(path, 'notProtocol'), rule['notProtocol']);
  const protocolGiven = !isAbsent(rule['protocol']);

  checkICMPFields(c, fieldPath(path, 'icmp'), rule['icmp']);
  checkICMPFields(c, fieldPath(path, 'notICMP'), rule['notICMP']);
  if (!isAbsent(rule['icmp'])) {
    const icmpProtocol = protocol !== undefined && (isICMPv4(protocol) || isICMPv6(protocol));
    // An invalid protocol was reported already; only a missing or non-ICMP one is news.
    if (!protocolGiven || (protocol !== undefined && !icmpProtocol)) {
      c.error(fieldPath(path, 'icmp'), 'ICMP fields require protocol to be ICMP or ICMPv6');
    }
  }

  if (ipVersion !== undefined) {
    for (const [field, p] of [
      ['protocol', protocol],
      ['notProtocol', notProtocol],
    ] as const) {
      if (p === undefined) continue;
      if (isICMPv4(p) && ipVersion !== 4) {
        c.error(fieldPath(path, 'ipVersion'), `${field} ICMP requires ipVersion 4`);
      }
      if (isICMPv6(p) && ipVersion !== 6) {
        c.error(fieldPath(path, 'ipVersion'), `${field} ICMPv6 requires ipVersion 6`);
      }
    }
  }

  const source = checkEntityRule(c, fieldPath(path, 'source'), rule['source']);
  const destination = checkEntityRule(c, fieldPath(path, 'destination'), rule['destination']);

  // Ports need a protocol that has ports. Without a protocol, named ports are still fine:
  // each named port carries its own protocol on the endpoint (validator.go, HEAD).
  for (const [side, summary] of [
    ['source', source],
    ['destination', destination],
  ] as const) {
    for (const { field, list, given } of summary.ports) {
      const at = fieldPath(fieldPath(path, side), field);
      if (!protocolGiven) {
        if (list.some((p) => p.kind === 'range')) {
          c.error(at, 'rules with numeric port or port range must set protocol to TCP or UDP or SCTP');
        }
      } else if (protocol !== undefined && !supportsPorts(protocol) && given) {
        c.error(at, 'rules that specify ports must set protocol to TCP or UDP or SCTP');
      }
    }
  }

  checkRuleNets(c, path, rule, ipVersion);

  if (destination.hasServices && destination.ports.some((p) => p.given)) {
    c.error(fieldPath(path, 'destination'), 'ports and notPorts cannot be specified with services');
  }
  if (ctx.owner !== 'Profile') {
    if (ctx.direction === 'egress' && source.hasServices) {
      c.error(fieldPath(path, 'source.services'), 'services are not allowed in the source of an egress rule');
    }
    if (ctx.direction === 'ingress' && destination.hasServices) {
      c.error(fieldPath(path, 'destination.services'), 'services are not allowed in the destination of an ingress rule');
    }
    const peer = ctx.direction === 'egress' ? ['destination', destination] as const : ['source', source] as const;
    if (peer[1].hasServices && peer[1].serviceNamespace === undefined) {
      if (ctx.owner === 'GlobalNetworkPolicy') {
        c.error(fieldPath(path, `${peer[0]}.services.namespace`), 'a GlobalNetworkPolicy must give the namespace of a service');
      } else {
        c.warning(fieldPath(path, `${peer[0]}.services.namespace`), SERVICES_NAMESPACE_DEFAULT_MESSAGE);
      }
    }
  }

  checkHTTPMatch(c, fieldPath(path, 'http'), rule['http'], {
    action,
    protocol: protocolGiven ? protocol : undefined,
    inPolicyEgress: ctx.owner !== 'Profile' && ctx.direction === 'egress',
  });

  const metadata = rule['metadata'];
  const metaPath = fieldPath(path, 'metadata');
  if (!isAbsent(metadata) && RULE_METADATA_SHAPE.check(c, metaPath, metadata)) {
    checkAnnotations(c, fieldPath(metaPath, 'annotations'), metadata['annotations']);
  }
  return action;
}

// validator.go: totalAnnotationSizeLimitB = 256 kB.
const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/** Annotation keys are qualified names (checked lower-cased, as Calico does); ≤ 256 KiB. */
export function checkAnnotations(c: FieldErrorCollector, path: string, value: unknown): void {
  if (isAbsent(value) || !expectStringMap(c, path, value)) return;
  let total = 0;
  for (const [k, v] of Object.entries(value)) {
    for (const problem of qualifiedNameProblems(k.toLowerCase())) c.error(indexPath(path, k), problem);
    total += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (total > MAX_ANNOTATIONS_BYTES) {
    c.error(path, `total size of annotations is too large by ${total - MAX_ANNOTATIONS_BYTES} bytes`);
  }
}
