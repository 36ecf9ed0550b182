/**
 * The projectcalico.org/v3 Rule and EntityRule, declared once (policy_common.go): the ingress
 * and egress rules of NetworkPolicy, GlobalNetworkPolicy and Profile (six copies in the CRDs,
 * one declaration here). Limits (maxItems, maxLength) and most CEL rules follow Calico's own v3
 * CRDs (calico api/config/crd, v3.32 era): the limits are what keep the CEL cost estimate of a
 * 1024-rule policy under the apiserver's budget. Checks that need to iterate over ports or
 * parse CIDRs are semantic and live in rule-validation.ts.
 */
import type { Static } from '@sinclair/typebox';
import { arr, cel, int, intEnum, intOrString, obj, opt, str, strEnum, stringMap } from './schema-node.ts';

// ----- shared value patterns -------------------------------------------------------------

/** A DNS-1123 label: Calico tier names, and each half of a policy name. */
export const LABEL_PATTERN = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';

/** 1–65535, without leading zeros (those are allowed separately with `0*`). */
const PORT_NUMBER = '(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})';
/**
 * A named port as Calico's validator admits it (`PortName` is `validate:"portName"`, Kubernetes'
 * IsValidPortName): lower-case letters, digits and single '-' between them, with at least one
 * letter. The 15-character limit is not expressible in the same pattern; src/api validation
 * rejects a longer name.
 */
const PORT_NAME = '([a-z0-9]+-)*[0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*';
/** A whole value that is a named port (PORT_NAME): a host endpoint's `ports[].name`. */
export const PORT_NAME_PATTERN = `^${PORT_NAME}$`;
/**
 * numorstring.PortFromString: all digits → one port; `a:b` → a range; anything else must be a
 * named port (PORT_NAME). A named port therefore always has a letter, which is how "0" or
 * "70000" fail here instead of passing as names. The
 * min ≤ max check of a range needs string parsing, which is too costly for CEL on an
 * int-or-string value; src/api validation covers it.
 */
export const PORT_PATTERN = `^(0*${PORT_NUMBER}|0*${PORT_NUMBER}:0*${PORT_NUMBER}|${PORT_NAME})$`;
/**
 * numorstring.Protocol: Calico's validator accepts exactly these (case-sensitive) names or a
 * number 1–255; a numeric string such as "6" is parsed as the number.
 */
export const PROTOCOL_PATTERN = '^(TCP|UDP|ICMP|ICMPv6|SCTP|UDPLite|0*([1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5]))$';
/**
 * Loose shape of an IP or CIDR: it catches names and typos, not every malformed address
 * (CEL's isCIDR() cannot be used: Calico also accepts a bare IP here, and the library's
 * availability depends on the apiserver's compatibility version).
 */
export const NET_PATTERN = '^[0-9a-fA-F:.]+(/[0-9]{1,3})?$';
/** RFC 3986 path as Calico checks it: starts with "/", no "?", "#" or space (empty = unset). */
const HTTP_PATH_PATTERN = '^(/[^?# ]*)?$';

// ----- limits (policy_common.go, networkpolicy.go) ------------------------------------------

/** Rules per direction. */
export const MAX_RULES = 1024;
/** Entries in `nets` / `notNets`. */
export const MAX_NETS = 256;
/** Entries in `ports` / `notPorts`. */
export const MAX_PORTS = 50;
/** Characters in any selector field. */
export const MAX_SELECTOR_LENGTH = 1024;
/** Entries in an HTTP match's `methods` / `paths`. */
export const MAX_HTTP_ITEMS = 20;
/** Characters in an HTTP path. */
export const MAX_HTTP_PATH_LENGTH = 1024;

/** What a rule does when it matches (`felix/rules/policy.go`; see calico-semantics §4.6). */
export const ACTIONS = ['Allow', 'Deny', 'Log', 'Pass'] as const;
export type Action = (typeof ACTIONS)[number];

// ----- building blocks ---------------------------------------------------------------------

export function selector(description: string) {
  return str(description, { maxLength: MAX_SELECTOR_LENGTH });
}

function protocol(description: string) {
  return intOrString(description, { minimum: 1, maximum: 255, maxLength: 10, pattern: PROTOCOL_PATTERN });
}

function ports(description: string) {
  return arr(
    description,
    intOrString('A port number (1-65535), a range "min:max", or the name of a named port.', {
      minimum: 1,
      maximum: 65535,
      maxLength: 128,
      pattern: PORT_PATTERN,
    }),
    { maxItems: MAX_PORTS },
  );
}

function nets(description: string) {
  // Calico's EntityRule: `+listType=set` (a repeated CIDR is refused).
  return arr(description, str(undefined, { maxLength: 64, pattern: NET_PATTERN }), { maxItems: MAX_NETS, 'x-kubernetes-list-type': 'set' });
}

function icmpFields(description: string) {
  return obj(
    description,
    {
      type: opt(int('ICMP type, for example 8 for echo request.', { minimum: 0, maximum: 254 })),
      code: opt(int('ICMP code; requires type to be set as well.', { minimum: 0, maximum: 255 })),
    },
    cel({
      rule: '!has(self.code) || has(self.type)',
      message: 'code: an ICMP code requires an ICMP type',
      fieldPath: '.code',
      reason: 'FieldValueRequired',
    }),
  );
}

function entityRule(side: 'source' | 'destination') {
  const ends = side === 'source' ? 'originates from' : 'terminates at';
  return obj(
    `Match criteria for the ${side} of the traffic. All fields present must match.`,
    {
      nets: opt(nets(`Match traffic that ${ends} an address in one of these CIDRs.`)),
      notNets: opt(nets(`Match traffic that does not ${side === 'source' ? 'originate from' : 'terminate at'} any of these CIDRs.`)),
      selector: opt(selector(`Match traffic that ${ends} an endpoint matching this selector.`)),
      notSelector: opt(selector(`Match traffic that does not ${side === 'source' ? 'originate from' : 'terminate at'} an endpoint matching this selector.`)),
      namespaceSelector: opt(
        selector(
          'Match endpoints in the namespaces this selector selects. Empty means the policy\'s own namespace for a ' +
            'NetworkPolicy and all namespaces for a GlobalNetworkPolicy; global() selects non-namespaced endpoints.',
        ),
      ),
      ports: opt(ports('Match these ports (numbers, "min:max" ranges or named ports). Numeric ports need protocol TCP, UDP or SCTP.')),
      notPorts: opt(ports('Match traffic not on any of these ports.')),
      serviceAccounts: opt(
        obj(`Match traffic that ${ends} a pod running as one of these service accounts.`, {
          names: opt(arr('Service account names; any of them matches.', str(undefined, { maxLength: 253 }), { 'x-kubernetes-list-type': 'set' })),
          selector: opt(selector('A selector over service account labels; AND-ed with names.')),
        }),
      ),
      services: opt(
        obj(
          `Match traffic that ${ends} the endpoints of a Kubernetes Service. Cannot be combined with selectors, nets or serviceAccounts.`,
          {
            name: opt(str('Name of the Service.', { maxLength: 253 })),
            namespace: opt(str("Namespace of the Service; empty means the policy's namespace.", { maxLength: 253 })),
          },
        ),
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

function ruleSchema() {
  return obj(
    'A rule: match criteria and the action to take when a packet matches all of them.',
    {
      action: strEnum('What to do with a matching packet: Allow, Deny, Log (and continue) or Pass (to the next tier).', ACTIONS),
      ipVersion: opt(intEnum('Match only IPv4 (4) or IPv6 (6) traffic.', [4, 6] as const)),
      protocol: opt(protocol('Match this IP protocol: TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255.')),
      notProtocol: opt(protocol('Match any protocol except this one.')),
      icmp: opt(icmpFields('Match this ICMP type/code; requires protocol ICMP or ICMPv6.')),
      notICMP: opt(icmpFields('Match any ICMP type/code except this one.')),
      source: opt(entityRule('source')),
      destination: opt(entityRule('destination')),
      http: opt(
        obj('Match HTTP requests (application layer policy); only on Allow rules with protocol TCP or unset.', {
          // Calico rejects duplicate methods, which is what a set list type does.
          methods: opt(
            arr('HTTP methods, e.g. GET; any of them matches.', str(undefined, { maxLength: 64 }), {
              maxItems: MAX_HTTP_ITEMS,
              'x-kubernetes-list-type': 'set',
            }),
          ),
          paths: opt(
            arr(
              'HTTP paths; any of them matches. Each entry sets exactly one of exact or prefix.',
              obj(
                'One HTTP path match.',
                {
                  exact: opt(str('Match this path exactly.', { maxLength: MAX_HTTP_PATH_LENGTH, pattern: HTTP_PATH_PATTERN })),
                  prefix: opt(str('Match paths that start with this prefix.', { maxLength: MAX_HTTP_PATH_LENGTH, pattern: HTTP_PATH_PATTERN })),
                },
                cel({
                  rule: '(has(self.exact) && size(self.exact) > 0) != (has(self.prefix) && size(self.prefix) > 0)',
                  message: 'exactly one of exact or prefix must be set',
                  reason: 'FieldValueInvalid',
                }),
              ),
              { maxItems: MAX_HTTP_ITEMS },
            ),
          ),
        }),
      ),
      metadata: opt(
        obj('Extra information about the rule.', {
          annotations: opt(stringMap('Free-form key/value annotations, e.g. a rule id for log correlation.')),
        }),
      ),
    },
    {
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

/** One rule; every policy and profile direction holds a list of these. */
export const RULE = ruleSchema();

/** A rule list of `direction`. */
export function rules(direction: 'ingress' | 'egress') {
  return arr(`The ordered ${direction} rules; the first rule that matches decides (Log rules log and continue).`, RULE, {
    maxItems: MAX_RULES,
  });
}

/** The schema of an EntityRule (a rule's source; the destination differs only in descriptions). */
export const ENTITY_RULE = entityRule('source');
/** The schema of ICMPFields. */
export const ICMP_FIELDS = icmpFields('');

export type Rule = Static<typeof RULE>;
export type EntityRule = Static<typeof ENTITY_RULE>;
export type ICMPFields = Static<typeof ICMP_FIELDS>;
