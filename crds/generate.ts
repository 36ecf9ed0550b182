/**
 * Source of truth for the projectcalico.org/v3 CustomResourceDefinitions in crds/.
 *
 * Why a generator: Calico's Rule schema appears six times (ingress and egress of
 * NetworkPolicy, GlobalNetworkPolicy and Profile). Writing it once here keeps the copies
 * identical; e2e/crds.unit.test.ts fails when a YAML file drifts from this output.
 * Regenerate with `npx tsx crds/generate.ts`.
 *
 * The fields follow Calico's Go types (projectcalico/api pkg/apis/projectcalico/v3 and
 * libcalico-go/lib/apis/internalapi/workloadendpoint.go). Limits (maxItems, maxLength) and
 * most CEL rules follow Calico's own v3 CRDs (calico api/config/crd, v3.32 era): the limits
 * are what keep the CEL cost estimate of a 1024-rule policy under the apiserver's budget.
 * Checks that need to iterate over ports or parse CIDRs are left to src/api validation.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';

export type Schema = { [key: string]: unknown };

export interface CrdFile {
  /** File name inside crds/. */
  file: string;
  crd: Schema;
}

const GROUP = 'projectcalico.org';
const VERSION = 'v3';

// ----- shared value patterns -------------------------------------------------------------

/** A DNS-1123 label: Calico tier names, and each half of a policy name. */
const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';

/** 1–65535, without leading zeros (those are allowed separately with `0*`). */
const PORT_NUMBER = '(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})';
/**
 * numorstring.PortFromString: all digits → one port; `a:b` → a range; anything else must be a
 * named port `[a-zA-Z0-9_.-]{1,128}`. A named port therefore always has a non-digit
 * character, which is how "0" or "70000" fail here instead of passing as names. The
 * min ≤ max check of a range needs string parsing, which is too costly for CEL on an
 * int-or-string value; src/api validation covers it.
 */
export const PORT_PATTERN = `^(0*${PORT_NUMBER}|0*${PORT_NUMBER}:0*${PORT_NUMBER}|[a-zA-Z0-9_.-]*[a-zA-Z_.-][a-zA-Z0-9_.-]*)$`;
/**
 * numorstring.Protocol: Calico's validator accepts exactly these (case-sensitive) names or a
 * number 1–255; a numeric string such as "6" is parsed as the number.
 */
export const PROTOCOL_PATTERN = '^(TCP|UDP|ICMP|ICMPv6|SCTP|UDPLite|0*([1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5]))$';
/** Workload endpoint ports must use a protocol that has ports (Protocol.SupportsPorts). */
const ENDPOINT_PORT_PROTOCOL_PATTERN = '^(TCP|UDP|SCTP|0*(6|17|132))$';
/**
 * Loose shape of an IP or CIDR: it catches names and typos, not every malformed address
 * (CEL's isCIDR() cannot be used: Calico also accepts a bare IP here, and the library's
 * availability depends on the apiserver's compatibility version).
 */
const NET_PATTERN = '^[0-9a-fA-F:.]+(/[0-9]{1,3})?$';
const IP_PATTERN = '^[0-9a-fA-F:.]+$';
/** RFC 3986 path as Calico checks it: starts with "/", no "?", "#" or space (empty = unset). */
const HTTP_PATH_PATTERN = '^(/[^?# ]*)?$';

// ----- schema helpers --------------------------------------------------------------------

function str(description: string, extra: Schema = {}): Schema {
  return { type: 'string', description, ...extra };
}

function bool(description: string): Schema {
  return { type: 'boolean', description };
}

function int(description: string, extra: Schema = {}): Schema {
  return { type: 'integer', description, ...extra };
}

function obj(description: string, properties: Record<string, Schema>, extra: Schema = {}): Schema {
  return { type: 'object', description, properties, ...extra };
}

function arr(description: string, items: Schema, extra: Schema = {}): Schema {
  return { type: 'array', description, items, ...extra };
}

function stringMap(description: string): Schema {
  return { type: 'object', description, additionalProperties: { type: 'string' } };
}

/** An x-kubernetes-int-or-string node: no `type`, the anyOf form that controller-gen emits. */
function intOrString(description: string, extra: Schema = {}): Schema {
  return {
    description,
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    ...extra,
  };
}

interface Validation {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

function cel(...rules: Validation[]): Schema {
  return { 'x-kubernetes-validations': rules };
}

/** A regex as a CEL single-quoted string literal body (CEL rejects unknown escapes like `\.`). */
function celRegex(re: string): string {
  return re.replace(/\\/g, '\\\\');
}

function selector(description: string): Schema {
  return str(description, { maxLength: 1024 });
}

// ----- policy building blocks (policy_common.go) ------------------------------------------

function protocol(description: string): Schema {
  return intOrString(description, { minimum: 1, maximum: 255, maxLength: 10, pattern: PROTOCOL_PATTERN });
}

function ports(description: string): Schema {
  return arr(
    description,
    intOrString('A port number (1-65535), a range "min:max", or the name of a named port.', {
      minimum: 1,
      maximum: 65535,
      maxLength: 128,
      pattern: PORT_PATTERN,
    }),
    { maxItems: 50 },
  );
}

function nets(description: string): Schema {
  return arr(description, { type: 'string', maxLength: 64, pattern: NET_PATTERN }, { maxItems: 256 });
}

function icmpFields(description: string): Schema {
  return obj(
    description,
    {
      type: int('ICMP type, for example 8 for echo request.', { minimum: 0, maximum: 254 }),
      code: int('ICMP code; requires type to be set as well.', { minimum: 0, maximum: 255 }),
    },
    cel({
      rule: '!has(self.code) || has(self.type)',
      message: 'code: an ICMP code requires an ICMP type',
      fieldPath: '.code',
      reason: 'FieldValueRequired',
    }),
  );
}

function entityRule(side: 'source' | 'destination'): Schema {
  const ends = side === 'source' ? 'originates from' : 'terminates at';
  return obj(
    `Match criteria for the ${side} of the traffic. All fields present must match.`,
    {
      nets: nets(`Match traffic that ${ends} an address in one of these CIDRs.`),
      notNets: nets(`Match traffic that does not ${side === 'source' ? 'originate from' : 'terminate at'} any of these CIDRs.`),
      selector: selector(`Match traffic that ${ends} an endpoint matching this selector.`),
      notSelector: selector(`Match traffic that does not ${side === 'source' ? 'originate from' : 'terminate at'} an endpoint matching this selector.`),
      namespaceSelector: selector(
        'Match endpoints in the namespaces this selector selects. Empty means the policy\'s own namespace for a ' +
          'NetworkPolicy and all namespaces for a GlobalNetworkPolicy; global() selects non-namespaced endpoints.',
      ),
      ports: ports('Match these ports (numbers, "min:max" ranges or named ports). Numeric ports need protocol TCP, UDP or SCTP.'),
      notPorts: ports('Match traffic not on any of these ports.'),
      serviceAccounts: obj(`Match traffic that ${ends} a pod running as one of these service accounts.`, {
        names: arr('Service account names; any of them matches.', { type: 'string', maxLength: 253 }),
        selector: selector('A selector over service account labels; AND-ed with names.'),
      }),
      services: obj(
        `Match traffic that ${ends} the endpoints of a Kubernetes Service. Cannot be combined with selectors, nets or serviceAccounts.`,
        {
          name: str('Name of the Service.', { maxLength: 253 }),
          namespace: str("Namespace of the Service; empty means the policy's namespace.", { maxLength: 253 }),
        },
      ),
    },
    cel(
      {
        rule: "!has(self.selector) || !self.selector.contains('global(')",
        message: 'selector: global() can only be used in namespaceSelector',
        fieldPath: '.selector',
        reason: 'FieldValueInvalid',
      },
      {
        rule: "!has(self.notSelector) || !self.notSelector.contains('global(')",
        message: 'notSelector: global() can only be used in namespaceSelector',
        fieldPath: '.notSelector',
        reason: 'FieldValueInvalid',
      },
      {
        rule: '!has(self.services) || (has(self.services.name) && size(self.services.name) > 0)',
        message: 'services.name: a services match must name a Service',
        fieldPath: '.services',
        reason: 'FieldValueRequired',
      },
      {
        rule:
          '!has(self.services) || ((!has(self.selector) || size(self.selector) == 0) && ' +
          '(!has(self.notSelector) || size(self.notSelector) == 0) && ' +
          '(!has(self.namespaceSelector) || size(self.namespaceSelector) == 0))',
        message: 'services: cannot be combined with selector, notSelector or namespaceSelector',
        fieldPath: '.services',
        reason: 'FieldValueForbidden',
      },
      {
        rule: '!has(self.services) || ((!has(self.nets) || size(self.nets) == 0) && (!has(self.notNets) || size(self.notNets) == 0))',
        message: 'services: cannot be combined with nets or notNets',
        fieldPath: '.services',
        reason: 'FieldValueForbidden',
      },
      {
        rule: '!has(self.services) || !has(self.serviceAccounts)',
        message: 'services: cannot be combined with serviceAccounts',
        fieldPath: '.services',
        reason: 'FieldValueForbidden',
      },
    ),
  );
}

/** CEL: this protocol field is one that has ports (TCP, UDP, SCTP by name or number). */
function hasPortsProtocol(field: string): string {
  const p = `self.${field}`;
  return `(${p} == 'TCP' || ${p} == 'UDP' || ${p} == 'SCTP' || ${p} == 6 || ${p} == 17 || ${p} == 132 || ${p} == '6' || ${p} == '17' || ${p} == '132')`;
}

function noPorts(side: 'source' | 'destination'): string {
  return (
    `(!has(self.${side}) || ((!has(self.${side}.ports) || size(self.${side}.ports) == 0) && ` +
    `(!has(self.${side}.notPorts) || size(self.${side}.notPorts) == 0)))`
  );
}

function rule(): Schema {
  return obj(
    'A rule: match criteria and the action to take when a packet matches all of them.',
    {
      action: str('What to do with a matching packet: Allow, Deny, Log (and continue) or Pass (to the next tier).', {
        enum: ['Allow', 'Deny', 'Log', 'Pass'],
      }),
      ipVersion: int('Match only IPv4 (4) or IPv6 (6) traffic.', { enum: [4, 6] }),
      protocol: protocol('Match this IP protocol: TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255.'),
      notProtocol: protocol('Match any protocol except this one.'),
      icmp: icmpFields('Match this ICMP type/code; requires protocol ICMP or ICMPv6.'),
      notICMP: icmpFields('Match any ICMP type/code except this one.'),
      source: entityRule('source'),
      destination: entityRule('destination'),
      http: obj('Match HTTP requests (application layer policy); only on Allow rules with protocol TCP or unset.', {
        // Calico rejects duplicate methods, which is what a set list type does.
        methods: arr('HTTP methods, e.g. GET; any of them matches.', { type: 'string', maxLength: 64 }, {
          maxItems: 20,
          'x-kubernetes-list-type': 'set',
        }),
        paths: arr(
          'HTTP paths; any of them matches. Each entry sets exactly one of exact or prefix.',
          obj(
            'One HTTP path match.',
            {
              exact: str('Match this path exactly.', { maxLength: 1024, pattern: HTTP_PATH_PATTERN }),
              prefix: str('Match paths that start with this prefix.', { maxLength: 1024, pattern: HTTP_PATH_PATTERN }),
            },
            cel({
              rule: '(has(self.exact) && size(self.exact) > 0) != (has(self.prefix) && size(self.prefix) > 0)',
              message: 'exactly one of exact or prefix must be set',
              reason: 'FieldValueInvalid',
            }),
          ),
          { maxItems: 20 },
        ),
      }),
      metadata: obj('Extra information about the rule.', {
        annotations: stringMap('Free-form key/value annotations, e.g. a rule id for log correlation.'),
      }),
    },
    {
      required: ['action'],
      ...cel(
        {
          rule: "!has(self.http) || !has(self.protocol) || self.protocol == 'TCP' || self.protocol == 6 || self.protocol == '6'",
          message: 'protocol: rules with an http match must use protocol TCP or leave it unset',
          fieldPath: '.protocol',
          reason: 'FieldValueInvalid',
        },
        {
          rule: "!has(self.http) || self.action == 'Allow'",
          message: 'http: an http match is only valid on Allow rules',
          fieldPath: '.http',
          reason: 'FieldValueForbidden',
        },
        {
          rule:
            '!has(self.destination) || !has(self.destination.services) || ' +
            '((!has(self.destination.ports) || size(self.destination.ports) == 0) && ' +
            '(!has(self.destination.notPorts) || size(self.destination.notPorts) == 0))',
          message: 'destination.ports: ports and notPorts cannot be combined with destination.services',
          fieldPath: '.destination',
          reason: 'FieldValueForbidden',
        },
        {
          rule: `!has(self.protocol) || ${hasPortsProtocol('protocol')} || (${noPorts('source')} && ${noPorts('destination')})`,
          message: 'protocol: rules that specify ports must set protocol to TCP, UDP or SCTP',
          fieldPath: '.protocol',
          reason: 'FieldValueInvalid',
        },
        {
          rule:
            "!has(self.icmp) || (has(self.protocol) && (self.protocol == 'ICMP' || self.protocol == 'ICMPv6' || " +
            "self.protocol == 1 || self.protocol == 58 || self.protocol == '1' || self.protocol == '58'))",
          message: 'icmp: an icmp match requires protocol ICMP or ICMPv6',
          fieldPath: '.icmp',
          reason: 'FieldValueInvalid',
        },
        {
          rule: "!has(self.ipVersion) || self.ipVersion == 4 || !has(self.protocol) || (self.protocol != 'ICMP' && self.protocol != 1 && self.protocol != '1')",
          message: 'ipVersion: protocol ICMP requires ipVersion 4',
          fieldPath: '.ipVersion',
          reason: 'FieldValueInvalid',
        },
        {
          rule: "!has(self.ipVersion) || self.ipVersion == 6 || !has(self.protocol) || (self.protocol != 'ICMPv6' && self.protocol != 58 && self.protocol != '58')",
          message: 'ipVersion: protocol ICMPv6 requires ipVersion 6',
          fieldPath: '.ipVersion',
          reason: 'FieldValueInvalid',
        },
        {
          rule: "!has(self.ipVersion) || self.ipVersion == 4 || !has(self.notProtocol) || (self.notProtocol != 'ICMP' && self.notProtocol != 1 && self.notProtocol != '1')",
          message: 'ipVersion: notProtocol ICMP requires ipVersion 4',
          fieldPath: '.ipVersion',
          reason: 'FieldValueInvalid',
        },
        {
          rule: "!has(self.ipVersion) || self.ipVersion == 6 || !has(self.notProtocol) || (self.notProtocol != 'ICMPv6' && self.notProtocol != 58 && self.notProtocol != '58')",
          message: 'ipVersion: notProtocol ICMPv6 requires ipVersion 6',
          fieldPath: '.ipVersion',
          reason: 'FieldValueInvalid',
        },
      ),
    },
  );
}

function rules(direction: 'ingress' | 'egress'): Schema {
  return arr(`The ordered ${direction} rules; the first rule that matches decides (Log rules log and continue).`, rule(), {
    maxItems: 1024,
  });
}

const TIER_FIELD = str(
  'The tier this policy belongs to; the tier must exist. Defaults to "default".',
  { default: 'default', maxLength: 63, pattern: `^${LABEL}$` },
);
const ORDER_FIELD = {
  type: 'number',
  description: 'Position within the tier: lower orders apply first; omitted means last; ties are broken by name.',
};
const POLICY_SELECTOR = selector('Selects the endpoints this policy applies to, e.g. app == "web". Empty means all().');
const TYPES_FIELD = arr(
  'Directions this policy governs. When omitted Calico derives it from the rules present: ' +
    '[Ingress] unless only egress rules exist ([Egress]) or both do ([Ingress, Egress]).',
  { type: 'string', enum: ['Ingress', 'Egress'] },
  { maxItems: 2, 'x-kubernetes-list-type': 'set' },
);
const SA_SELECTOR = selector('Further restricts the selected endpoints to pods whose service account matches this selector.');
const PERFORMANCE_HINTS = arr(
  'Hints to the policy engine that never change enforcement. AssumeNeededOnEveryNode preloads the policy everywhere.',
  { type: 'string', enum: ['AssumeNeededOnEveryNode'] },
  { 'x-kubernetes-list-type': 'set' },
);

function noGlobal(field: string): Validation {
  return {
    rule: `!has(self.${field}) || !self.${field}.contains('global(')`,
    message: `${field}: global() can only be used in a rule's namespaceSelector`,
    fieldPath: `.${field}`,
    reason: 'FieldValueInvalid',
  };
}

// ----- resources -------------------------------------------------------------------------

interface ResourceOptions {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  spec: Schema;
  specRequired: boolean;
  printerColumns: Schema[];
  rootValidations?: Validation[];
  extraRootProperties?: Record<string, Schema>;
  selectableFields?: string[];
}

const AGE_COLUMN: Schema = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

function crd(o: ResourceOptions): Schema {
  const root: Schema = {
    type: 'object',
    description: o.description,
    properties: {
      apiVersion: str('The versioned schema of this object: projectcalico.org/v3.'),
      kind: str(`The REST resource this object represents: ${o.kind}.`),
      metadata: { type: 'object' },
      spec: o.spec,
      ...o.extraRootProperties,
    },
    ...(o.specRequired ? { required: ['spec'] } : {}),
    ...(o.rootValidations ? cel(...o.rootValidations) : {}),
  };
  const version: Schema = {
    name: VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: root },
    additionalPrinterColumns: o.printerColumns,
    ...(o.selectableFields ? { selectableFields: o.selectableFields.map((jsonPath) => ({ jsonPath })) } : {}),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${o.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: o.scope,
      names: {
        kind: o.kind,
        listKind: `${o.kind}List`,
        plural: o.plural,
        singular: o.singular,
        ...(o.shortNames.length > 0 ? { shortNames: o.shortNames } : {}),
      },
      versions: [version],
    },
  };
}

const POLICY_COLUMNS: Schema[] = [
  { name: 'Tier', type: 'string', jsonPath: '.spec.tier', description: 'Tier the policy belongs to' },
  { name: 'Order', type: 'number', jsonPath: '.spec.order', description: 'Order within the tier (lower first)' },
  { name: 'Selector', type: 'string', jsonPath: '.spec.selector', description: 'Endpoints the policy applies to' },
  AGE_COLUMN,
];

function networkPolicy(): Schema {
  return crd({
    kind: 'NetworkPolicy',
    plural: 'networkpolicies',
    singular: 'networkpolicy',
    // Calico's own short names; `netpol` and `np` stay with networking.k8s.io.
    shortNames: ['cnp', 'caliconetworkpolicy'],
    scope: 'Namespaced',
    description: 'A Calico network policy: ordered rules for the endpoints its selector picks in its namespace.',
    specRequired: true,
    spec: obj(
      'The policy.',
      {
        tier: TIER_FIELD,
        order: ORDER_FIELD,
        selector: POLICY_SELECTOR,
        types: TYPES_FIELD,
        ingress: rules('ingress'),
        egress: rules('egress'),
        serviceAccountSelector: SA_SELECTOR,
        performanceHints: PERFORMANCE_HINTS,
      },
      cel(noGlobal('selector'), noGlobal('serviceAccountSelector')),
    ),
    rootValidations: [
      {
        // Calico's networkPolicyNameRegex: a label, optionally "<tier>.<label>", or a converted
        // Kubernetes policy "knp.default.<k8s name>" (and OpenStack's "ossg.default.").
        // The apiserver already requires a DNS-1123 subdomain for every custom resource name,
        // so the prefixed forms only need the prefix checked (one regex over both forms
        // exceeds the CEL cost budget).
        rule:
          "self.metadata.name.startsWith('knp.default.') || self.metadata.name.startsWith('ossg.default.') || " +
          `self.metadata.name.matches('${celRegex(`^${LABEL}(\\.${LABEL})?$`)}')`,
        message:
          'metadata.name: must be a DNS-1123 label, optionally prefixed "<tier>.", or "knp.default.<name>" for converted Kubernetes policies',
        reason: 'FieldValueInvalid',
      },
    ],
    printerColumns: POLICY_COLUMNS,
    selectableFields: ['.spec.tier'],
  });
}

function globalNetworkPolicy(): Schema {
  return crd({
    kind: 'GlobalNetworkPolicy',
    plural: 'globalnetworkpolicies',
    singular: 'globalnetworkpolicy',
    shortNames: ['gnp', 'cgnp'],
    scope: 'Cluster',
    description: 'A cluster-wide Calico network policy: ordered rules for the endpoints its selectors pick in any namespace.',
    specRequired: true,
    spec: obj(
      'The policy.',
      {
        tier: TIER_FIELD,
        order: ORDER_FIELD,
        selector: POLICY_SELECTOR,
        namespaceSelector: selector('Further restricts the selected endpoints to namespaces matching this selector.'),
        serviceAccountSelector: SA_SELECTOR,
        types: TYPES_FIELD,
        ingress: rules('ingress'),
        egress: rules('egress'),
        doNotTrack: bool('Apply the rules before connection tracking; allowed packets are not tracked. Host endpoints only.'),
        preDNAT: bool('Apply the rules before DNAT. Host endpoints only; ingress only.'),
        applyOnForward: bool('Also apply the rules to traffic forwarded through host endpoints; required with doNotTrack or preDNAT.'),
        performanceHints: PERFORMANCE_HINTS,
      },
      cel(
        noGlobal('selector'),
        noGlobal('namespaceSelector'),
        noGlobal('serviceAccountSelector'),
        {
          rule: '!(has(self.doNotTrack) && self.doNotTrack && has(self.preDNAT) && self.preDNAT)',
          message: 'preDNAT: preDNAT and doNotTrack cannot both be true',
          fieldPath: '.preDNAT',
          reason: 'FieldValueForbidden',
        },
        {
          rule: '!has(self.preDNAT) || !self.preDNAT || !has(self.egress) || size(self.egress) == 0',
          message: 'egress: a preDNAT policy cannot have egress rules',
          fieldPath: '.egress',
          reason: 'FieldValueForbidden',
        },
        {
          rule: "!has(self.preDNAT) || !self.preDNAT || !has(self.types) || !self.types.exists(t, t == 'Egress')",
          message: 'types: a preDNAT policy cannot have type Egress',
          fieldPath: '.types',
          reason: 'FieldValueForbidden',
        },
        {
          rule:
            '(has(self.applyOnForward) && self.applyOnForward) || ' +
            '((!has(self.doNotTrack) || !self.doNotTrack) && (!has(self.preDNAT) || !self.preDNAT))',
          message: 'applyOnForward: must be true when preDNAT or doNotTrack is true',
          fieldPath: '.applyOnForward',
          reason: 'FieldValueInvalid',
        },
      ),
    ),
    rootValidations: [
      {
        // Calico's globalNetworkPolicyNameRegex: a label, optionally prefixed "<tier>.".
        rule: `self.metadata.name.matches('${celRegex(`^(${LABEL}\\.)?${LABEL}$`)}')`,
        message: 'metadata.name: must be a DNS-1123 label, optionally prefixed "<tier>."',
        reason: 'FieldValueInvalid',
      },
    ],
    printerColumns: POLICY_COLUMNS,
    selectableFields: ['.spec.tier'],
  });
}

function wellKnownTier(name: string, action: 'Deny' | 'Pass', order: number): Validation[] {
  return [
    {
      rule: `self.metadata.name != '${name}' || (has(self.spec.defaultAction) && self.spec.defaultAction == '${action}')`,
      message: `spec.defaultAction: the '${name}' tier must have defaultAction ${action}`,
      fieldPath: '.spec.defaultAction',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `self.metadata.name != '${name}' || (has(self.spec.order) && self.spec.order == ${order.toFixed(1)})`,
      message: `spec.order: the '${name}' tier must have order ${order}`,
      fieldPath: '.spec.order',
      reason: 'FieldValueInvalid',
    },
  ];
}

/** metav1.Condition, so a Tier exported from Calico (which reports status) is accepted as is. */
function condition(): Schema {
  return obj(
    'One aspect of the tier\'s current state.',
    {
      type: str('Condition type, e.g. Ready.', { maxLength: 316 }),
      status: str('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      observedGeneration: int('The metadata.generation the condition was computed from.', { format: 'int64', minimum: 0 }),
      lastTransitionTime: str('When the status last changed.', { format: 'date-time' }),
      reason: str('Machine-readable CamelCase reason.', { maxLength: 1024 }),
      message: str('Human-readable details.', { maxLength: 32768 }),
    },
    { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
  );
}

function tier(): Schema {
  return crd({
    kind: 'Tier',
    plural: 'tiers',
    singular: 'tier',
    shortNames: [],
    scope: 'Cluster',
    description:
      'A tier groups policies. Tiers apply in ascending order; traffic that a tier\'s policies select but no rule ' +
      'decides gets the tier\'s defaultAction.',
    specRequired: true,
    spec: obj('The tier.', {
      order: {
        type: 'number',
        description: 'Position among tiers: lower orders apply first; omitted means last; ties are broken by name.',
      },
      defaultAction: str(
        'Action for traffic that reaches the end of the tier after at least one of its policies selected the endpoint: Deny (default) or Pass.',
        { enum: ['Deny', 'Pass'], default: 'Deny' },
      ),
    }),
    extraRootProperties: {
      status: obj('Observed state, as reported by Calico; Tessera does not write it.', {
        conditions: arr('Current conditions of the tier.', condition(), {
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
        }),
      }),
    },
    rootValidations: [
      {
        // Tier names appear inside policy names and label values, so they are single labels.
        rule: `self.metadata.name.matches('^${LABEL}$') && size(self.metadata.name) <= 63`,
        message: 'metadata.name: a tier name must be a DNS-1123 label (lower-case alphanumerics and "-", at most 63 characters)',
        reason: 'FieldValueInvalid',
      },
      ...wellKnownTier('default', 'Deny', 1_000_000),
      ...wellKnownTier('kube-admin', 'Pass', 1_000),
      ...wellKnownTier('kube-baseline', 'Pass', 10_000_000),
    ],
    printerColumns: [
      { name: 'Order', type: 'number', jsonPath: '.spec.order', description: 'Order in which the tier applies (lower first)' },
      { name: 'DefaultAction', type: 'string', jsonPath: '.spec.defaultAction', description: 'Action at the end of the tier' },
      AGE_COLUMN,
    ],
  });
}

function profile(): Schema {
  return crd({
    kind: 'Profile',
    plural: 'profiles',
    singular: 'profile',
    // calicoctl's alias for profiles.
    shortNames: ['pro'],
    scope: 'Cluster',
    description:
      'A profile gives the endpoints that list it extra labels (labelsToApply) and rules that apply after all tiers. ' +
      'kns.<namespace> and ksa.<namespace>.<serviceaccount> profiles are generated from Namespaces and ServiceAccounts.',
    specRequired: false,
    spec: obj('The profile.', {
      ingress: rules('ingress'),
      egress: rules('egress'),
      labelsToApply: stringMap('Labels every endpoint referencing this profile inherits; the endpoint\'s own labels win.'),
    }),
    printerColumns: [AGE_COLUMN],
  });
}

function workloadEndpoint(): Schema {
  const qos = (what: string): Schema => int(what, { format: 'int64', minimum: 0 });
  return crd({
    kind: 'WorkloadEndpoint',
    plural: 'workloadendpoints',
    singular: 'workloadendpoint',
    // calicoctl's alias for workload endpoints.
    shortNames: ['wep'],
    scope: 'Namespaced',
    description:
      'A workload endpoint: one network interface of a pod, with the IPs, labels and profiles policy is evaluated on. ' +
      'Named <node>-k8s-<pod>-<endpoint>, with "-" inside each part doubled.',
    specRequired: false,
    spec: obj(
      'The endpoint.',
      {
        orchestrator: str('The orchestrator that created the workload, "k8s" for pods.', { maxLength: 253 }),
        workload: str('The workload name; empty for Kubernetes pods.', { maxLength: 253 }),
        node: str('The node the endpoint lives on.', { maxLength: 253 }),
        containerID: str('The container ID.', { maxLength: 253 }),
        pod: str('The pod name.', { maxLength: 253 }),
        endpoint: str('The endpoint name inside the pod, e.g. eth0.', { maxLength: 253 }),
        serviceAccountName: str("The pod's service account.", { maxLength: 253 }),
        ipNetworks: arr('The /32 (IPv4) or /128 (IPv6) addresses of the endpoint.', {
          type: 'string',
          maxLength: 64,
          pattern: NET_PATTERN,
        }),
        ipNATs: arr(
          '1:1 NAT mappings to apply to the endpoint.',
          obj(
            'One NAT mapping.',
            {
              internalIP: str('An address of this endpoint (from ipNetworks).', { maxLength: 64, pattern: IP_PATTERN }),
              externalIP: str('The external address mapped to it.', { maxLength: 64, pattern: IP_PATTERN }),
            },
            { required: ['internalIP', 'externalIP'] },
          ),
        ),
        ipv4Gateway: str('The IPv4 gateway for traffic from the workload.', { maxLength: 64, pattern: NET_PATTERN }),
        ipv6Gateway: str('The IPv6 gateway for traffic from the workload.', { maxLength: 64, pattern: NET_PATTERN }),
        profiles: arr('Profiles applied after all tiers, in this order; e.g. kns.<namespace>, ksa.<namespace>.<sa>.', {
          type: 'string',
          maxLength: 253,
        }),
        interfaceName: str(
          "The host-side interface name, e.g. cali0123456789a. Empty or absent: the agent finds it from the host route to the endpoint's address.",
          {
            maxLength: 15,
            pattern: '^([a-zA-Z0-9_.-]{0,15}|\\*)$',
          },
        ),
        mac: str('The MAC address of the endpoint interface.', { maxLength: 64 }),
        ports: arr(
          "The endpoint's named (and host-mapped) ports, which policy rules can refer to by name.",
          obj(
            'One endpoint port.',
            {
              name: str('Port name; named-port rules match on it. May be empty when hostPort is set.', {
                maxLength: 128,
                pattern: '^[a-zA-Z0-9_.-]{0,128}$',
              }),
              protocol: intOrString('TCP, UDP or SCTP.', {
                minimum: 1,
                maximum: 255,
                maxLength: 10,
                pattern: ENDPOINT_PORT_PROTOCOL_PATTERN,
              }),
              port: int('The port number on the endpoint.', { minimum: 1, maximum: 65535 }),
              hostPort: int('The host port mapped to it; 0 for none.', { minimum: 0, maximum: 65535 }),
              hostIP: str('The host IP the host port binds to.', { maxLength: 64 }),
            },
            {
              required: ['port', 'protocol'],
              ...cel(
                {
                  rule: 'type(self.protocol) == string || self.protocol == 6 || self.protocol == 17 || self.protocol == 132',
                  message: 'protocol: an endpoint port needs a protocol with ports (TCP, UDP, SCTP or 6, 17, 132)',
                  fieldPath: '.protocol',
                  reason: 'FieldValueInvalid',
                },
                {
                  rule: '(has(self.name) && size(self.name) > 0) || (has(self.hostPort) && self.hostPort > 0)',
                  message: 'name: an endpoint port needs a name unless it has a hostPort',
                  fieldPath: '.name',
                  reason: 'FieldValueRequired',
                },
              ),
            },
          ),
        ),
        allowSpoofedSourcePrefixes: arr('CIDRs the endpoint may send from, bypassing the RPF check.', {
          type: 'string',
          maxLength: 64,
          pattern: NET_PATTERN,
        }),
        qosControls: obj('Bandwidth, packet-rate and connection limits for the endpoint.', {
          ingressBandwidth: qos('Ingress bandwidth limit, bits per second.'),
          ingressBurst: qos('Ingress burst size, bits.'),
          ingressPeakrate: qos('Ingress peak rate, bits per second.'),
          ingressMinburst: qos('Ingress minimum burst, bytes.'),
          egressBandwidth: qos('Egress bandwidth limit, bits per second.'),
          egressBurst: qos('Egress burst size, bits.'),
          egressPeakrate: qos('Egress peak rate, bits per second.'),
          egressMinburst: qos('Egress minimum burst, bytes.'),
          ingressPacketRate: qos('Ingress packet rate limit, packets per second.'),
          ingressPacketBurst: qos('Ingress packet burst, packets.'),
          egressPacketRate: qos('Egress packet rate limit, packets per second.'),
          egressPacketBurst: qos('Egress packet burst, packets.'),
          ingressMaxConnections: qos('Maximum ingress connections.'),
          egressMaxConnections: qos('Maximum egress connections.'),
          dscp: intOrString('DSCP value for egress traffic: 0-63 or a name such as EF, AF11 or CS1.', {
            minimum: 0,
            maximum: 63,
            maxLength: 4,
            pattern: '^(DF|EF|AF[1-4][1-3]|CS[0-6]|[0-9]{1,2})$',
          }),
        }),
      },
      // libcalico-go requires interfaceName (validated without omitempty). Tessera does not:
      // `tessera controllers --workload-interface-naming none` writes endpoints without one for
      // CNIs whose host-side names it cannot know, and the agent resolves the interface from the
      // pod's host route (src/dataplane/endpoint-manager.ts).
    ),
    printerColumns: [
      { name: 'Node', type: 'string', jsonPath: '.spec.node', description: 'Node the endpoint lives on' },
      { name: 'Pod', type: 'string', jsonPath: '.spec.pod', description: 'Pod of the endpoint' },
      { name: 'Interface', type: 'string', jsonPath: '.spec.interfaceName', description: 'Host-side interface' },
      { name: 'Networks', type: 'string', jsonPath: '.spec.ipNetworks', description: 'Endpoint addresses' },
      AGE_COLUMN,
    ],
    // Lets an agent list/watch only its own node's endpoints (spec.node=<node>).
    selectableFields: ['.spec.node'],
  });
}

/** NetworkSet (namespaced) and GlobalNetworkSet (cluster-wide): the same spec, `nets`. */
function networkSet(kind: 'NetworkSet' | 'GlobalNetworkSet'): Schema {
  const global = kind === 'GlobalNetworkSet';
  return crd({
    kind,
    plural: global ? 'globalnetworksets' : 'networksets',
    singular: global ? 'globalnetworkset' : 'networkset',
    shortNames: [],
    scope: global ? 'Cluster' : 'Namespaced',
    description:
      `${global ? 'A cluster-wide' : 'A namespaced'} set of CIDRs (addresses outside the cluster, usually), selected by its labels in policy rules as endpoints are` +
      (global ? '.' : '; only rules of policies in its own namespace, or with a namespaceSelector matching it, select it.'),
    specRequired: false,
    spec: obj('The set.', {
      nets: arr('CIDRs or single addresses, IPv4 and IPv6; host bits are cleared.', { type: 'string', maxLength: 64, pattern: NET_PATTERN }),
    }),
    printerColumns: [AGE_COLUMN],
  });
}

const STAGED_ACTION: Schema = str('Set: committing creates or replaces the policy of the same name; Delete: committing deletes it. Set when absent.', {
  enum: ['Set', 'Delete'],
});

/**
 * A staged kind (Calico 3.30 OSS): the enforced kind's CRD renamed, with `stagedAction` in its
 * spec, which is then optional (a Delete needs nothing else). Never enforced; previewed by the tools.
 */
function staged(enforced: Schema, kind: string, plural: string, singular: string): Schema {
  const c = structuredClone(enforced) as { metadata: { name: string }; spec: { names: Schema; versions: Array<{ schema: { openAPIV3Schema: Schema } }> } };
  c.metadata.name = `${plural}.${GROUP}`;
  c.spec.names = { kind, listKind: `${kind}List`, plural, singular };
  const root = c.spec.versions[0]?.schema.openAPIV3Schema as { description: string; properties: { kind: Schema; spec: { properties: Record<string, Schema> } }; required?: string[] };
  root.description = `Staged (never enforced): ${root.description} Tessera's simulate and explain show what committing it would change.`;
  root.properties.kind = str(`The REST resource this object represents: ${kind}.`);
  root.properties.spec.properties['stagedAction'] = STAGED_ACTION;
  delete root.required;
  return c as unknown as Schema;
}

/** StagedKubernetesNetworkPolicy: a networking.k8s.io/v1 NetworkPolicy spec plus `stagedAction`, kept as written (Kubernetes validates it when committed). */
function stagedKubernetesNetworkPolicy(): Schema {
  return crd({
    kind: 'StagedKubernetesNetworkPolicy',
    plural: 'stagedkubernetesnetworkpolicies',
    singular: 'stagedkubernetesnetworkpolicy',
    shortNames: [],
    scope: 'Namespaced',
    description: "Staged (never enforced): a Kubernetes NetworkPolicy's spec. Tessera's simulate and explain show what committing it would change.",
    specRequired: false,
    spec: obj('The Kubernetes NetworkPolicy spec (podSelector, policyTypes, ingress, egress) and stagedAction.', { stagedAction: STAGED_ACTION }, { 'x-kubernetes-preserve-unknown-fields': true }),
    printerColumns: [AGE_COLUMN],
  });
}

export function buildCrds(): CrdFile[] {
  return [
    { file: 'projectcalico.org_networkpolicies.yaml', crd: networkPolicy() },
    { file: 'projectcalico.org_globalnetworkpolicies.yaml', crd: globalNetworkPolicy() },
    { file: 'projectcalico.org_tiers.yaml', crd: tier() },
    { file: 'projectcalico.org_profiles.yaml', crd: profile() },
    { file: 'projectcalico.org_workloadendpoints.yaml', crd: workloadEndpoint() },
    { file: 'projectcalico.org_networksets.yaml', crd: networkSet('NetworkSet') },
    { file: 'projectcalico.org_globalnetworksets.yaml', crd: networkSet('GlobalNetworkSet') },
    { file: 'projectcalico.org_stagednetworkpolicies.yaml', crd: staged(networkPolicy(), 'StagedNetworkPolicy', 'stagednetworkpolicies', 'stagednetworkpolicy') },
    { file: 'projectcalico.org_stagedglobalnetworkpolicies.yaml', crd: staged(globalNetworkPolicy(), 'StagedGlobalNetworkPolicy', 'stagedglobalnetworkpolicies', 'stagedglobalnetworkpolicy') },
    { file: 'projectcalico.org_stagedkubernetesnetworkpolicies.yaml', crd: stagedKubernetesNetworkPolicy() },
  ];
}

export function renderCrd(c: CrdFile): string {
  const header =
    '# Generated by crds/generate.ts (`npx tsx crds/generate.ts`); edit that file, not this one.\n' +
    '# Schema modelled on Calico\'s projectcalico.org/v3 Go types; see crds/README.md.\n';
  return header + stringify(c.crd, { lineWidth: 0, aliasDuplicateObjects: false });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = dirname(fileURLToPath(import.meta.url));
  for (const c of buildCrds()) {
    writeFileSync(join(dir, c.file), renderCrd(c));
  }
}
