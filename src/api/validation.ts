/**
 * Validation of v3 resources: every problem, each as a field path and a message.
 *
 * `validateResource` takes anything (objects come from YAML, the API server or tests) and
 * returns all findings in document order, never just the first: wrong types, unknown
 * fields, Calico's rules for names, selectors, rules, ports, protocols, nets and ICMP (see
 * rule-validation.ts), the per-kind rules below, and warnings for things Tessera accepts
 * but does not enforce. It validates what it is given; run `applyDefaults` first to judge
 * an object the way the API server would after defaulting.
 *
 * Per kind (validator.go and the CEL rules in api/pkg/apis/projectcalico/v3):
 * - NetworkPolicy / GlobalNetworkPolicy: name shape and length; `tier` a DNS-1123 label;
 *   `order` a number; selectors parse, and `global()` is not allowed in the policy's own
 *   selectors; `types` are Ingress/Egress without repeats; GNP `preDNAT` excludes
 *   `doNotTrack`, egress rules and the Egress type, and `preDNAT`/`doNotTrack` need
 *   `applyOnForward`. A direction whose rules are all Log gets a warning (§4.6: the policy
 *   still selects the endpoint, so the end-of-tier action applies).
 * - Tier: a DNS-1123 label of at most 63; `defaultAction` Deny or Pass; the well-known
 *   tiers keep their order and default action.
 * - Profile: `labelsToApply` are valid labels, or what a generated profile carries (`checkProfileLabels`).
 * - WorkloadEndpoint: single-address `ipNetworks`, gateways of the right family, NATs
 *   inside the endpoint's networks, interface name, MAC, container ID and named ports.
 * - NetworkSet / GlobalNetworkSet: no `projectcalico.org/namespace` label (names.ts
 *   `NAMESPACE_LABEL`: it would place the set's addresses in that namespace's rules).
 * - HostEndpoint: node, interface, expected IPs, profiles and named ports
 *   (host-endpoint-validation.ts).
 *
 * What each object may contain comes from the schema declaration (schema.ts): every object
 * node is checked against the fields it declares (schema-fields.ts), the limits are the CRDs'
 * (schema-rule.ts), and `spec` is required where the schema requires it. The checks of each
 * field's value are written here, in one pass per object, because they own the messages and
 * their order.
 *
 * The `knp.default.` name prefix is not judged here: converter-written objects carry it
 * legitimately. `checkReservedName` says whether an object may use it.
 */
import { cidrContains, isCanonicalIPv4HostCidr, parseCidr, parseIP } from './cidr.ts';
import type { ParsedCidr } from './cidr.ts';
import { fieldPath, FieldErrorCollector, indexPath, isError } from './field-error.ts';
import type { FieldError } from './field-error.ts';
import { describeObject } from './keys.ts';
import {
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  isDns1123Label,
  isDns1123Subdomain,
  isGlobalNetworkPolicyName,
  isNetworkPolicyName,
  isReservedPolicyName,
  isValidEndpointPortName,
  isValidInterfaceName,
  isValidLabelValue,
  KNP_NAME_PREFIX,
  NAMESPACE_LABEL,
  qualifiedNameProblems,
} from './names.ts';
import { parseProtocol, supportsPorts } from './protocol.ts';
import { checkHostEndpointSpec } from './host-endpoint-validation.ts';
import { checkQoSControls } from './qos-validation.ts';
import { checkAnnotations, checkRuleList } from './rule-validation.ts';
import type { RuleOwnerKind } from './rule-validation.ts';
import { checkSelectorField } from './selector-field.ts';
import { KIND_SCHEMAS } from './schema.ts';
import { ENDPOINT_PORT_SHAPE, IPNAT_SHAPE, SPEC_SHAPES } from './schema-fields.ts';
import {
  describeType,
  expectArray,
  expectBoolean,
  expectNumber,
  expectRecord,
  expectString,
  expectStringMap,
  isAbsent,
  isRecord,
} from './shape.ts';
import { DEFAULT_TIER_NAME, wellKnownTier } from './tiers.ts';
import { API_VERSION, DECLARED_V3_KINDS, NAMESPACE_LABEL_PREFIX, NAMESPACED_KINDS, POLICY_TYPES, SERVICE_ACCOUNT_LABEL_PREFIX } from './types.ts';
import type { Action, PolicyType, V3Kind } from './types.ts';

export type { FieldError, Severity } from './field-error.ts';

// The envelope: every kind may carry a `status` (Calico reports one on some), which Tessera ignores.
const TOP_LEVEL_FIELDS: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);

// Fields of metadata that the API server manages or that Tessera has no opinion on; any
// other key is still accepted (ObjectMeta is open-ended for our purposes).
const NAME_FIELD = 'metadata.name';

/** Validates one object; returns every finding (errors and warnings). */
export function validateResource(resource: unknown): FieldError[] {
  const c = new FieldErrorCollector();
  if (!isRecord(resource)) {
    c.error('', `must be an object, not ${describeType(resource)}`);
    return c.findings;
  }
  for (const key in resource) {
    if (Object.prototype.hasOwnProperty.call(resource, key) && !TOP_LEVEL_FIELDS.has(key)) c.error(key, `unknown field ${JSON.stringify(key)}`);
  }
  if (resource['apiVersion'] !== API_VERSION) {
    c.error('apiVersion', `must be ${API_VERSION}, not ${JSON.stringify(resource['apiVersion'] ?? null)}`);
  }
  const kind = resource['kind'];
  if (typeof kind !== 'string' || !(DECLARED_V3_KINDS as readonly string[]).includes(kind)) {
    c.error('kind', `must be one of ${DECLARED_V3_KINDS.join(', ')}, not ${JSON.stringify(kind ?? null)}`);
    return c.findings;
  }
  const v3kind = kind as V3Kind;
  checkMetadata(c, v3kind, resource['metadata']);

  const spec = resource['spec'];
  if (isAbsent(spec)) {
    // The schema requires `spec` where Calico's CRDs do (policies and tiers, `json:"spec"`); a
    // Profile, a WorkloadEndpoint or a network set may omit it (their fields are all optional).
    if (v3kind === 'WorkloadEndpoint') checkWorkloadEndpointSpec(c, {});
    else if (KIND_SCHEMAS[v3kind].specRequired) c.error('spec', `spec is required for a ${v3kind}`);
    return c.findings;
  }
  if (!expectRecord(c, 'spec', spec)) return c.findings;
  switch (v3kind) {
    case 'NetworkPolicy':
    case 'GlobalNetworkPolicy':
      checkPolicySpec(c, v3kind, spec);
      break;
    case 'Tier':
      checkTierSpec(c, resource, spec);
      break;
    case 'Profile':
      checkProfileSpec(c, spec);
      break;
    case 'WorkloadEndpoint':
      checkWorkloadEndpointSpec(c, spec);
      break;
    case 'NetworkSet':
    case 'GlobalNetworkSet':
      checkNetworkSetSpec(c, v3kind, spec);
      break;
    case 'HostEndpoint':
      checkHostEndpointSpec(c, spec);
      break;
  }
  return c.findings;
}

function checkMetadata(c: FieldErrorCollector, kind: V3Kind, metadata: unknown): void {
  if (isAbsent(metadata)) {
    c.error('metadata', 'metadata is required (with at least a name)');
    return;
  }
  if (!expectRecord(c, 'metadata', metadata)) return;

  const name = metadata['name'];
  if (isAbsent(name) || name === '') c.error(NAME_FIELD, 'name is required');
  else if (expectString(c, NAME_FIELD, name)) checkName(c, kind, name);

  const namespace = metadata['namespace'];
  const nsPath = 'metadata.namespace';
  if (NAMESPACED_KINDS.has(kind)) {
    if (isAbsent(namespace) || namespace === '') {
      c.error(nsPath, `namespace is required: ${kind} is a namespaced kind`);
    } else if (expectString(c, nsPath, namespace) && !isDns1123Label(namespace)) {
      c.error(nsPath, `${JSON.stringify(namespace)} is not a valid namespace name (DNS-1123 label)`);
    }
  } else if (!isAbsent(namespace) && namespace !== '') {
    c.warning(nsPath, `${kind} is cluster-scoped; the namespace is ignored`);
  }

  const labels = metadata['labels'];
  if (!isAbsent(labels)) checkLabels(c, 'metadata.labels', labels);
  if ((kind === 'NetworkSet' || kind === 'GlobalNetworkSet') && isRecord(labels) && Object.prototype.hasOwnProperty.call(labels, NAMESPACE_LABEL)) {
    c.error(
      `metadata.labels.${NAMESPACE_LABEL}`,
      `${NAMESPACE_LABEL} is not a valid label name on a ${kind}: Calico sets it from the namespace an object is in, and namespace-scoped rule selectors would match the set's nets as that namespace's`,
    );
  }
  checkAnnotations(c, 'metadata.annotations', metadata['annotations']);
}

/**
 * Strings one check already found valid. A sync validates tens of thousands of objects that
 * repeat a few label keys and values (`app`, `pod-template-hash`), node, orchestrator and
 * profile names and port names; each check is a regular expression or two, and a set lookup
 * is cheaper. Only valid strings are remembered (an invalid one is re-checked, so its
 * messages are built as before). Bounded: cleared when full, so a stream of distinct strings
 * (pod names) costs one check each, as without it.
 */
class ValidStrings {
  readonly #valid = new Set<string>();
  readonly #check: (s: string) => boolean;

  constructor(check: (s: string) => boolean) {
    this.#check = check;
  }

  test(s: string): boolean {
    if (this.#valid.has(s)) return true;
    if (!this.#check(s)) return false;
    if (this.#valid.size >= 4096) this.#valid.clear();
    this.#valid.add(s);
    return true;
  }
}

const VALID_LABEL_KEYS = new ValidStrings((k) => qualifiedNameProblems(k).length === 0);
const VALID_LABEL_VALUES = new ValidStrings(isValidLabelValue);
const VALID_SUBDOMAINS = new ValidStrings(isDns1123Subdomain);
const VALID_PORT_NAMES = new ValidStrings(isValidEndpointPortName);

function checkLabels(c: FieldErrorCollector, path: string, labels: unknown): void {
  if (!expectStringMap(c, path, labels)) return;
  for (const k in labels) {
    if (!Object.prototype.hasOwnProperty.call(labels, k)) continue;
    const v = labels[k] as string;
    if (!VALID_LABEL_KEYS.test(k)) {
      for (const problem of qualifiedNameProblems(k)) c.error(indexPath(path, k), problem);
    }
    if (!VALID_LABEL_VALUES.test(v)) {
      c.error(indexPath(path, k), labelValueProblem(v));
    }
  }
}

function checkName(c: FieldErrorCollector, kind: V3Kind, name: string): void {
  const max = kind === 'Tier' ? DNS1123_LABEL_MAX_LENGTH : DNS1123_SUBDOMAIN_MAX_LENGTH;
  if (name.length > max) c.error(NAME_FIELD, `name is too long: ${name.length} bytes (at most ${max})`);
  // Quoted only for a message: this runs once per object of a sync.
  const shown = (): string => JSON.stringify(name);
  switch (kind) {
    case 'NetworkPolicy':
      if (!isNetworkPolicyName(name)) {
        c.error(
          NAME_FIELD,
          `${shown()} is not a valid NetworkPolicy name: use a DNS-1123 label or two labels joined by one '.' (lower-case letters, digits and '-')`,
        );
      }
      break;
    case 'GlobalNetworkPolicy':
      if (!isGlobalNetworkPolicyName(name)) {
        c.error(
          NAME_FIELD,
          `${shown()} is not a valid GlobalNetworkPolicy name: use a DNS-1123 label or two labels joined by one '.' (lower-case letters, digits and '-')`,
        );
      }
      break;
    case 'Tier':
      if (!isDns1123Label(name) && name.length <= max) {
        c.error(
          NAME_FIELD,
          `${shown()} is not a valid Tier name: use a DNS-1123 label (lower-case letters, digits and '-', no '.')`,
        );
      }
      break;
    default:
      if (!isDns1123Subdomain(name) && name.length <= max) {
        c.error(
          NAME_FIELD,
          `${shown()} is not a valid ${kind} name: use a DNS-1123 subdomain (lower-case letters, digits, '-' and '.')`,
        );
      }
  }
}

function checkPolicySpec(
  c: FieldErrorCollector,
  kind: Extract<RuleOwnerKind, 'NetworkPolicy' | 'GlobalNetworkPolicy'>,
  spec: Record<string, unknown>,
): void {
  const global = kind === 'GlobalNetworkPolicy';
  SPEC_SHAPES[kind].checkFields(c, 'spec', spec);

  // Calico checks a policy's tier as a name (`validate:"omitempty,name"`: a DNS-1123 subdomain).
  const tier = spec['tier'];
  if (!isAbsent(tier) && tier !== '' && expectString(c, 'spec.tier', tier) && !isDns1123Subdomain(tier)) {
    c.error('spec.tier', `${JSON.stringify(tier)} is not a valid tier name (DNS-1123 subdomain)`);
  }
  if (!isAbsent(spec['order'])) expectNumber(c, 'spec.order', spec['order']);

  checkSelectorField(c, 'spec.selector', spec['selector']);
  checkSelectorField(c, 'spec.serviceAccountSelector', spec['serviceAccountSelector']);
  if (global) checkSelectorField(c, 'spec.namespaceSelector', spec['namespaceSelector']);

  const types = checkPolicyTypes(c, spec['types']);

  const ingress = checkRuleList(c, 'spec.ingress', spec['ingress'], { direction: 'ingress', owner: kind });
  const egress = checkRuleList(c, 'spec.egress', spec['egress'], { direction: 'egress', owner: kind });
  warnLogOnly(c, 'spec.ingress', ingress, types, 'Ingress');
  warnLogOnly(c, 'spec.egress', egress, types, 'Egress');

  const hints = spec['performanceHints'];
  if (!isAbsent(hints) && expectArray(c, 'spec.performanceHints', hints)) {
    const seen = new Set<unknown>();
    hints.forEach((h, i) => {
      const at = indexPath('spec.performanceHints', i);
      if (h !== 'AssumeNeededOnEveryNode') {
        c.error(at, `${JSON.stringify(h)} is not a performance hint (the only one is AssumeNeededOnEveryNode)`);
      } else if (seen.has(h)) {
        c.error(at, `${JSON.stringify(h)} is listed more than once`);
      }
      seen.add(h);
    });
  }

  if (global) checkGlobalPolicyFlags(c, spec, types);
}

/** Returns the types that are valid (for later cross-checks). */
function checkPolicyTypes(c: FieldErrorCollector, value: unknown): PolicyType[] | undefined {
  if (isAbsent(value) || !expectArray(c, 'spec.types', value)) return undefined;
  const seen: PolicyType[] = [];
  value.forEach((t, i) => {
    const at = indexPath('spec.types', i);
    if (typeof t !== 'string' || !(POLICY_TYPES as readonly string[]).includes(t)) {
      c.error(at, `${JSON.stringify(t)} is not a policy type (use Ingress or Egress)`);
      return;
    }
    const type = t as PolicyType;
    if (seen.includes(type)) c.error(at, `'${type}' type specified more than once`);
    else seen.push(type);
  });
  return seen;
}

/**
 * calico-semantics §4.6 / Calico issue #3801: Log does not end evaluation, so a policy whose
 * rules for a direction are all Log still selects the endpoint and puts it in the tier —
 * traffic then reaches the end of the tier and gets the tier's default action (Deny for
 * `default`). Usually a surprise, so it is a warning.
 */
function warnLogOnly(
  c: FieldErrorCollector,
  path: string,
  actions: Action[],
  types: PolicyType[] | undefined,
  type: PolicyType,
): void {
  if (actions.length === 0 || !actions.every((a) => a === 'Log')) return;
  if (types !== undefined && types.length > 0 && !types.includes(type)) return;
  c.warning(
    path,
    "every rule is Log: Log does not end evaluation, so the policy still applies and traffic falls through to the end of the tier (dropped when the tier's defaultAction is Deny)",
  );
}

function checkGlobalPolicyFlags(
  c: FieldErrorCollector,
  spec: Record<string, unknown>,
  types: PolicyType[] | undefined,
): void {
  const flag = (field: string): boolean => {
    const v = spec[field];
    if (isAbsent(v)) return false;
    return expectBoolean(c, `spec.${field}`, v) && v;
  };
  const doNotTrack = flag('doNotTrack');
  const preDNAT = flag('preDNAT');
  const applyOnForward = flag('applyOnForward');
  if (doNotTrack && preDNAT) c.error('spec.preDNAT', 'preDNAT and doNotTrack cannot both be true');
  if (preDNAT) {
    const egress = spec['egress'];
    if (Array.isArray(egress) && egress.length > 0) c.error('spec.egress', 'preDNAT policy cannot have any egress rules');
    if (types?.includes('Egress')) c.error('spec.types', "preDNAT policy cannot have 'Egress' type");
  }
  if ((doNotTrack || preDNAT) && !applyOnForward) {
    c.error('spec.applyOnForward', 'applyOnForward must be true if either preDNAT or doNotTrack is true');
  }
}

function checkTierSpec(c: FieldErrorCollector, resource: Record<string, unknown>, spec: Record<string, unknown>): void {
  SPEC_SHAPES.Tier.checkFields(c, 'spec', spec);
  const order = spec['order'];
  const orderOk = !isAbsent(order) && expectNumber(c, 'spec.order', order);
  const action = spec['defaultAction'];
  let effectiveAction: string = 'Deny'; // CRD default
  if (!isAbsent(action)) {
    if (action === 'Deny' || action === 'Pass') effectiveAction = action;
    else {
      c.error('spec.defaultAction', `defaultAction ${JSON.stringify(action)} is not valid (use Deny or Pass)`);
      effectiveAction = '';
    }
  }
  const metadata = resource['metadata'];
  const name = isRecord(metadata) ? metadata['name'] : undefined;
  const known = typeof name === 'string' ? wellKnownTier(name) : undefined;
  if (known === undefined) return;
  if (effectiveAction !== '' && effectiveAction !== known.defaultAction) {
    c.error('spec.defaultAction', `the '${known.name}' tier must have default action '${known.defaultAction}'`);
  }
  if (!orderOk || order !== known.order) {
    c.error('spec.order', `${known.name} tier order must be ${known.order}`);
  }
}

function checkProfileSpec(c: FieldErrorCollector, spec: Record<string, unknown>): void {
  SPEC_SHAPES.Profile.checkFields(c, 'spec', spec);
  checkRuleList(c, 'spec.ingress', spec['ingress'], { direction: 'ingress', owner: 'Profile' });
  checkRuleList(c, 'spec.egress', spec['egress'], { direction: 'egress', owner: 'Profile' });
  const labels = spec['labelsToApply'];
  if (!isAbsent(labels)) checkProfileLabels(c, 'spec.labelsToApply', labels);
}

const GENERATED_LABEL_PREFIXES = [NAMESPACE_LABEL_PREFIX, SERVICE_ACCOUNT_LABEL_PREFIX] as const;
/** The label a `ksa.` profile carries its ServiceAccount's name in. */
const SERVICE_ACCOUNT_NAME_LABEL = `${SERVICE_ACCOUNT_LABEL_PREFIX}projectcalico.org/name`;

/**
 * `labelsToApply`: valid labels, except where a profile generated from a Namespace or a
 * ServiceAccount carries more than a label can, since libcalico-go builds those profiles
 * (`NamespaceToProfile`, `ServiceAccountToProfile`) without validating them and Felix takes
 * them as they are: a `pcns.`/`pcsa.` key is valid when the rest of it is a label key (a
 * valid Kubernetes label key can be too long once prefixed), and `pcsa.projectcalico.org/name`
 * holds a ServiceAccount name, a DNS subdomain of up to 253 characters. Rejecting either
 * would drop the whole profile — its endpoints' namespace or service-account labels, and a
 * `kns.` profile's allow rules — for a Namespace or ServiceAccount Kubernetes accepted.
 */
function checkProfileLabels(c: FieldErrorCollector, path: string, labels: unknown): void {
  if (!expectStringMap(c, path, labels)) return;
  const plain: Record<string, string> = {};
  for (const k in labels) {
    if (!Object.prototype.hasOwnProperty.call(labels, k)) continue;
    const v = labels[k] as string;
    const prefix = GENERATED_LABEL_PREFIXES.find((p) => k.startsWith(p));
    if (prefix === undefined) {
      plain[k] = v;
      continue;
    }
    const rest = k.slice(prefix.length);
    if (!VALID_LABEL_KEYS.test(rest)) {
      for (const problem of qualifiedNameProblems(rest)) c.error(indexPath(path, k), `after ${JSON.stringify(prefix)}: ${problem}`);
    }
    if (VALID_LABEL_VALUES.test(v)) continue;
    if (k !== SERVICE_ACCOUNT_NAME_LABEL) c.error(indexPath(path, k), labelValueProblem(v));
    else if (!VALID_SUBDOMAINS.test(v)) c.error(indexPath(path, k), `${JSON.stringify(v)} is neither a valid label value nor a ServiceAccount name (a DNS-1123 subdomain)`);
  }
  checkLabels(c, path, plain);
}

function labelValueProblem(v: string): string {
  return `${JSON.stringify(v)} is not a valid label value (at most 63 of alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric)`;
}

/** `spec.nets`: CIDRs or single addresses (Calico `cnet.ParseCIDROrIP`); host bits are cleared with a warning. */
function checkNetworkSetSpec(c: FieldErrorCollector, kind: 'NetworkSet' | 'GlobalNetworkSet', spec: Record<string, unknown>): void {
  SPEC_SHAPES[kind].checkFields(c, 'spec', spec);
  const nets = spec['nets'];
  if (isAbsent(nets) || !expectArray(c, 'spec.nets', nets)) return;
  nets.forEach((n, i) => {
    const at = indexPath('spec.nets', i);
    const result = parseCidr(n);
    if (!result.ok) c.error(at, result.message);
    else if (result.value.hasHostBits) c.warning(at, `${JSON.stringify(n)} has host bits set; the network ${result.value.network} is used`);
  });
}

// validator.go: containerIDFmt.
const containerIDRegex = /^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$/;
// Go net.ParseMAC forms: 6, 8 or 20 octets, ':' or '-' separated, or dotted groups of 4.
const macRegex =
  /^(?:[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$/;

function isValidMAC(mac: string): boolean {
  if (!macRegex.test(mac)) return false;
  // One separator throughout ("aa:bb-cc..." is not a MAC).
  return !(mac.includes(':') && mac.includes('-'));
}

/**
 * A WorkloadEndpoint name field (`spec.node`, `spec.pod`, …): a DNS-1123 subdomain. `repeats`:
 * its values repeat across endpoints (orchestrator, node, endpoint, service account), so
 * valid ones are remembered; `workload` and `pod` are unique per endpoint and always checked.
 */
function checkEndpointNameField(c: FieldErrorCollector, field: string, v: unknown, repeats: boolean): void {
  if (isAbsent(v) || v === '') return;
  if (typeof v === 'string' && (repeats ? VALID_SUBDOMAINS.test(v) : isDns1123Subdomain(v))) return;
  if (expectString(c, `spec.${field}`, v)) c.error(`spec.${field}`, `${JSON.stringify(v)} is not a valid name (DNS-1123 subdomain)`);
}

/** `spec.ipv4Gateway` / `spec.ipv6Gateway`: an address of that family. */
function checkGateway(c: FieldErrorCollector, field: string, v: unknown, version: 4 | 6): void {
  if (isAbsent(v) || v === '') return;
  const result = parseIP(v);
  if (!result.ok) c.error(`spec.${field}`, result.message);
  else if (result.value.version !== version) c.error(`spec.${field}`, `${JSON.stringify(v)} is not an IPv${version} address`);
}

function checkWorkloadEndpointSpec(c: FieldErrorCollector, spec: Record<string, unknown>): void {
  SPEC_SHAPES.WorkloadEndpoint.checkFields(c, 'spec', spec);

  // Runs on every endpoint update: paths are built only for an error, and each field is read
  // by its name (a loop over a field table made every read a keyed, megamorphic load).
  checkEndpointNameField(c, 'orchestrator', spec['orchestrator'], true);
  checkEndpointNameField(c, 'workload', spec['workload'], false);
  checkEndpointNameField(c, 'node', spec['node'], true);
  checkEndpointNameField(c, 'pod', spec['pod'], false);
  checkEndpointNameField(c, 'endpoint', spec['endpoint'], true);
  checkEndpointNameField(c, 'serviceAccountName', spec['serviceAccountName'], true);
  const containerID = spec['containerID'];
  if (!isAbsent(containerID) && containerID !== '' && expectString(c, 'spec.containerID', containerID)) {
    if (!containerIDRegex.test(containerID)) {
      c.error('spec.containerID', `${JSON.stringify(containerID)} is not a valid container ID (alphanumerics and '-')`);
    }
  }

  // libcalico-go requires interfaceName; Tessera lets it be empty or absent (controllers'
  // `--workload-interface-naming none`): the agent then resolves the interface from the host
  // route to the endpoint's address (dataplane/endpoint-manager.ts).
  const iface = spec['interfaceName'];
  if (!isAbsent(iface) && iface !== '' && expectString(c, 'spec.interfaceName', iface) && iface !== '*' && !isValidInterfaceName(iface)) {
    c.error('spec.interfaceName', `${JSON.stringify(iface)} is not a valid interface name (1-15 of alphanumerics, '_', '.' and '-')`);
  }

  const mac = spec['mac'];
  if (!isAbsent(mac) && mac !== '' && expectString(c, 'spec.mac', mac) && !isValidMAC(mac)) {
    c.error('spec.mac', `${JSON.stringify(mac)} is not a MAC address`);
  }

  const networks: ParsedCidr[] = [];
  const ipNetworks = spec['ipNetworks'];
  const nats = spec['ipNATs'];
  // The NAT check below reads the parsed networks; without NATs, a canonical IPv4 /32 (what
  // almost every endpoint has) is known valid without parsing it.
  const needNetworks = !isAbsent(nats);
  if (!isAbsent(ipNetworks) && expectArray(c, 'spec.ipNetworks', ipNetworks)) {
    for (let i = 0; i < ipNetworks.length; i++) {
      const n: unknown = ipNetworks[i];
      if (!needNetworks && typeof n === 'string' && isCanonicalIPv4HostCidr(n)) continue;
      const result = parseCidr(n);
      if (!result.ok) {
        c.error(indexPath('spec.ipNetworks', i), result.message);
        continue;
      }
      const cidr = result.value;
      const full = cidr.version === 4 ? 32 : 128;
      if (cidr.prefixLength !== full) {
        c.error(indexPath('spec.ipNetworks', i), `${JSON.stringify(n)} contains multiple addresses; an endpoint network must be a /${full}`);
      }
      networks.push(cidr);
    }
  }

  checkGateway(c, 'ipv4Gateway', spec['ipv4Gateway'], 4);
  checkGateway(c, 'ipv6Gateway', spec['ipv6Gateway'], 6);

  if (!isAbsent(nats) && expectArray(c, 'spec.ipNATs', nats)) {
    nats.forEach((nat, i) => {
      const at = indexPath('spec.ipNATs', i);
      if (!IPNAT_SHAPE.check(c, at, nat)) return;
      const internal = parseIP(nat['internalIP']);
      const external = parseIP(nat['externalIP']);
      if (!internal.ok) c.error(fieldPath(at, 'internalIP'), internal.message);
      if (!external.ok) c.error(fieldPath(at, 'externalIP'), external.message);
      if (internal.ok && external.ok && internal.value.version !== external.value.version) {
        c.error(at, 'internalIP and externalIP must be the same IP version');
      }
      if (internal.ok && !networks.some((n) => cidrContains(n, nat['internalIP'] as string))) {
        c.error(fieldPath(at, 'internalIP'), 'NAT is not in the endpoint networks');
      }
    });
  }

  const profiles = spec['profiles'];
  if (!isAbsent(profiles) && expectArray(c, 'spec.profiles', profiles)) {
    for (let i = 0; i < profiles.length; i++) {
      const p: unknown = profiles[i];
      if (typeof p === 'string' && VALID_SUBDOMAINS.test(p)) continue;
      const at = indexPath('spec.profiles', i);
      if (expectString(c, at, p)) c.error(at, `${JSON.stringify(p)} is not a valid profile name (DNS-1123 subdomain)`);
    }
  }

  const ports = spec['ports'];
  if (!isAbsent(ports) && expectArray(c, 'spec.ports', ports)) {
    ports.forEach((p, i) => checkEndpointPort(c, PORT_PATHS[i] ?? indexPath('spec.ports', i), p));
  }

  const spoofed = spec['allowSpoofedSourcePrefixes'];
  if (!isAbsent(spoofed) && expectArray(c, 'spec.allowSpoofedSourcePrefixes', spoofed)) {
    spoofed.forEach((p, i) => {
      const result = parseCidr(p);
      if (!result.ok) c.error(indexPath('spec.allowSpoofedSourcePrefixes', i), result.message);
    });
  }

  const qos = spec['qosControls'];
  if (!isAbsent(qos) && expectRecord(c, 'spec.qosControls', qos)) checkQoSControls(c, 'spec.qosControls', qos);
}

/** `spec.ports[i]` for the first few ports, built once: the path is passed down on every update. */
const PORT_PATHS: readonly string[] = Array.from({ length: 8 }, (_, i) => indexPath('spec.ports', i));

function checkEndpointPort(c: FieldErrorCollector, path: string, port: unknown): void {
  if (!ENDPOINT_PORT_SHAPE.check(c, path, port)) return;
  const name = port['name'];
  const hasName = !isAbsent(name) && name !== '';
  if (hasName && !(typeof name === 'string' && VALID_PORT_NAMES.test(name)) && expectString(c, fieldPath(path, 'name'), name)) {
    c.error(
      fieldPath(path, 'name'),
      `${JSON.stringify(name)} is not a valid port name (1-15 of lower-case letters, digits and '-', with at least one letter)`,
    );
  }
  const protocol = port['protocol'];
  if (isAbsent(protocol) || protocol === '') {
    c.error(fieldPath(path, 'protocol'), 'protocol is required (TCP, UDP or SCTP)');
  } else {
    const result = parseProtocol(protocol);
    if (!result.ok) c.error(fieldPath(path, 'protocol'), result.message);
    // validator_test: "should reject EndpointPort with numeric protocol" — names only.
    else if (result.value.name === undefined || !supportsPorts(result.value)) {
      c.error(fieldPath(path, 'protocol'), `${JSON.stringify(protocol)} does not have ports (use TCP, UDP or SCTP)`);
    }
  }
  const number = port['port'];
  if (isAbsent(number) || number === 0) c.error(fieldPath(path, 'port'), 'port is required (1-65535)');
  else if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 65535) {
    c.error(fieldPath(path, 'port'), `port must be an integer 1-65535, not ${JSON.stringify(number)}`);
  }
  const hostPort = port['hostPort'];
  let hasHostPort = false;
  if (!isAbsent(hostPort)) {
    if (typeof hostPort !== 'number' || !Number.isInteger(hostPort) || hostPort < 0 || hostPort > 65535) {
      c.error(fieldPath(path, 'hostPort'), `hostPort must be an integer 0-65535, not ${JSON.stringify(hostPort)}`);
    } else {
      hasHostPort = hostPort > 0;
    }
  }
  if (!hasName && !hasHostPort) c.error(fieldPath(path, 'name'), 'a port needs a name unless it has a hostPort');
  const hostIP = port['hostIP'];
  if (!isAbsent(hostIP) && hostIP !== '') {
    const result = parseCidr(hostIP);
    if (!result.ok) c.error(fieldPath(path, 'hostIP'), result.message);
    else if (result.value.hasHostBits) c.error(fieldPath(path, 'hostIP'), `${JSON.stringify(hostIP)} has host bits set`);
  }
}

/**
 * Whether `resource` may carry the `knp.default.` prefix: only objects written by the
 * Kubernetes NetworkPolicy converter (`asConverter: true`), and then only as a
 * NetworkPolicy in the default tier. Returns errors at `metadata.name` / `spec.tier`;
 * empty when the name is fine. Admission enforcement comes with a later issue.
 */
export function checkReservedName(resource: unknown, { asConverter }: { readonly asConverter: boolean }): FieldError[] {
  if (!isRecord(resource) || !isRecord(resource['metadata'])) return [];
  const name = resource['metadata']['name'];
  if (typeof name !== 'string' || !isReservedPolicyName(name)) return [];
  if (!asConverter) {
    return [
      {
        path: NAME_FIELD,
        message: `names starting "${KNP_NAME_PREFIX}" are reserved for policies converted from Kubernetes NetworkPolicies`,
      },
    ];
  }
  const findings: FieldError[] = [];
  if (resource['kind'] !== 'NetworkPolicy') {
    findings.push({ path: NAME_FIELD, message: `the converter writes "${KNP_NAME_PREFIX}" names only on NetworkPolicy` });
  }
  const spec = resource['spec'];
  const tier = isRecord(spec) ? spec['tier'] : undefined;
  if (!isAbsent(tier) && tier !== '' && tier !== DEFAULT_TIER_NAME) {
    findings.push({ path: 'spec.tier', message: `converted policies belong to the '${DEFAULT_TIER_NAME}' tier` });
  }
  return findings;
}

/** `Kind ns/name: path: message`, the one-line form of a finding. */
export function formatFinding(resource: unknown, finding: FieldError): string {
  const subject = describeObject(isRecord(resource) ? resource : {});
  return finding.path === '' ? `${subject}: ${finding.message}` : `${subject}: ${finding.path}: ${finding.message}`;
}

/**
 * An object failed validation. The message has one line per error, each naming the object
 * and the field: `NetworkPolicy shop/web: spec.ingress[0].destination.ports[1]: "80-90" is
 * not a port or a range (use "80:90")`.
 */
export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  readonly kind: string | undefined;
  readonly namespace: string | undefined;
  readonly resourceName: string | undefined;
  /** The errors (warnings are not included). */
  readonly errors: readonly FieldError[];

  constructor(resource: unknown, errors: readonly FieldError[]) {
    super(errors.map((e) => formatFinding(resource, e)).join('\n'));
    const meta = isRecord(resource) && isRecord(resource['metadata']) ? resource['metadata'] : {};
    this.kind = isRecord(resource) && typeof resource['kind'] === 'string' ? resource['kind'] : undefined;
    this.namespace = typeof meta['namespace'] === 'string' ? meta['namespace'] : undefined;
    this.resourceName = typeof meta['name'] === 'string' ? meta['name'] : undefined;
    this.errors = errors;
  }
}

/** Throws a `ValidationError` listing every error; warnings alone do not throw. */
export function assertValid(resource: unknown): void {
  const errors = validateResource(resource).filter(isError);
  if (errors.length > 0) throw new ValidationError(resource, errors);
}
