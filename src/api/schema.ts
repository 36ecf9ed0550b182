/**
 * The projectcalico.org/v3 schema, declared once: every field of every kind Tessera reads, its
 * description, its OpenAPI facets and its CEL rules. From this declaration come
 * - the TypeScript types (types.ts: `Static<…>` of these specs),
 * - the CRDs' OpenAPI schemas (schema-openapi.ts, schema-crd.ts; crds/generate.ts writes them),
 * - the field sets and limits validation checks objects against (schema-fields.ts),
 * - the test's schema checker (e2e/crds.unit.test.ts runs ajv over the generated CRDs).
 * The semantic checks (selectors, ports, CIDRs, rule combinations, names) stay hand-written in
 * validation.ts and rule-validation.ts: a schema language says them badly or not at all.
 *
 * The fields follow Calico's Go types (projectcalico/api pkg/apis/projectcalico/v3 and
 * libcalico-go/lib/apis/internalapi/workloadendpoint.go); optional fields are optional exactly
 * where Calico's are (`omitempty`).
 */
import type { Static, TObject } from '@sinclair/typebox';
import { Unsafe } from '@sinclair/typebox';
import { arr, bool, cel, celRegex, int, intOrString, num, obj, opt, requiredInOrder, str, strEnum, stringMap } from './schema-node.ts';
import type { CelRule } from './schema-node.ts';
import { LABEL_PATTERN, NET_PATTERN, PORT_NAME_PATTERN, rules, selector } from './schema-rule.ts';

export type PolicyType = 'Ingress' | 'Egress';
export const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

/** The only performance hint Calico defines. */
export type PolicyPerformanceHint = 'AssumeNeededOnEveryNode';

/** Workload endpoint ports must use a protocol that has ports (Protocol.SupportsPorts). */
const ENDPOINT_PORT_PROTOCOL_PATTERN = '^(TCP|UDP|SCTP|0*(6|17|132))$';
const IP_PATTERN = '^[0-9a-fA-F:.]+$';

// ----- policies (networkpolicy.go, globalnetworkpolicy.go) ---------------------------------

// Calico: `validate:"omitempty,name"`, a DNS-1123 subdomain (a Tier's own name is a label, so a
// dotted tier names no Tier: the policy is enforced in a tier ordered after every existing one).
const TIER_FIELD = str('The tier this policy belongs to; the tier must exist. Defaults to "default".', {
  default: 'default',
  maxLength: 253,
  pattern: `^${LABEL_PATTERN}(\\.${LABEL_PATTERN})*$`,
});
const ORDER_FIELD = num('Position within the tier: lower orders apply first; omitted means last; ties are broken by name.');
const POLICY_SELECTOR = selector('Selects the endpoints this policy applies to, e.g. app == "web". Empty means all().');
const TYPES_FIELD = arr(
  'Directions this policy governs. When omitted Calico derives it from the rules present: ' +
    '[Ingress] unless only egress rules exist ([Egress]) or both do ([Ingress, Egress]).',
  strEnum(undefined, POLICY_TYPES),
  // Calico: MinItems=1, MaxItems=2, a set. (Absent is fine: then the types are derived.)
  { minItems: 1, maxItems: 2, 'x-kubernetes-list-type': 'set' },
);
const SA_SELECTOR = selector('Further restricts the selected endpoints to pods whose service account matches this selector.');
const PERFORMANCE_HINTS = arr(
  'Hints to the policy engine that never change enforcement. AssumeNeededOnEveryNode preloads the policy everywhere.',
  strEnum<PolicyPerformanceHint>(undefined, ['AssumeNeededOnEveryNode']),
  { 'x-kubernetes-list-type': 'set' },
);

function noGlobal(field: string): CelRule {
  return {
    rule: `!has(self.${field}) || !self.${field}.contains('global(')`,
    message: `${field}: global() can only be used in a rule's namespaceSelector`,
    fieldPath: `.${field}`,
    reason: 'FieldValueInvalid',
  };
}

export const NETWORK_POLICY_SPEC = obj(
  'The policy.',
  {
    tier: opt(TIER_FIELD),
    order: opt(ORDER_FIELD),
    selector: opt(POLICY_SELECTOR),
    types: opt(TYPES_FIELD),
    ingress: opt(rules('ingress')),
    egress: opt(rules('egress')),
    serviceAccountSelector: opt(SA_SELECTOR),
    performanceHints: opt(PERFORMANCE_HINTS),
  },
  cel(noGlobal('selector'), noGlobal('serviceAccountSelector')),
);

export const GLOBAL_NETWORK_POLICY_SPEC = obj(
  'The policy.',
  {
    tier: opt(TIER_FIELD),
    order: opt(ORDER_FIELD),
    selector: opt(POLICY_SELECTOR),
    namespaceSelector: opt(selector('Further restricts the selected endpoints to namespaces matching this selector.')),
    serviceAccountSelector: opt(SA_SELECTOR),
    types: opt(TYPES_FIELD),
    ingress: opt(rules('ingress')),
    egress: opt(rules('egress')),
    doNotTrack: opt(bool('Apply the rules before connection tracking; allowed packets are not tracked. Host endpoints only.')),
    preDNAT: opt(bool('Apply the rules before DNAT. Host endpoints only; ingress only.')),
    applyOnForward: opt(bool('Also apply the rules to traffic forwarded through host endpoints; required with doNotTrack or preDNAT.')),
    performanceHints: opt(PERFORMANCE_HINTS),
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
);

// ----- tier.go -------------------------------------------------------------------------------

export const TIER_SPEC = obj('The tier.', {
  order: opt(num('Position among tiers: lower orders apply first; omitted means last; ties are broken by name.')),
  defaultAction: opt(
    strEnum(
      'Action for traffic that reaches the end of the tier after at least one of its policies selected the endpoint: Deny (default) or Pass.',
      ['Deny', 'Pass'],
      { default: 'Deny' },
    ),
  ),
});

/** metav1.Condition, so a Tier exported from Calico (which reports status) is accepted as is. */
const CONDITION = obj('One aspect of the tier\'s current state.', {
  type: str('Condition type, e.g. Ready.', { maxLength: 316 }),
  status: strEnum('True, False or Unknown.', ['True', 'False', 'Unknown']),
  observedGeneration: opt(int('The metadata.generation the condition was computed from.', { format: 'int64', minimum: 0 })),
  lastTransitionTime: str('When the status last changed.', { format: 'date-time' }),
  reason: str('Machine-readable CamelCase reason.', { maxLength: 1024 }),
  message: str('Human-readable details.', { maxLength: 32768 }),
});

export const TIER_STATUS = obj('Observed state, as reported by Calico; Tessera does not write it.', {
  conditions: opt(
    arr('Current conditions of the tier.', CONDITION, {
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
});

// ----- profile.go ----------------------------------------------------------------------------

export const PROFILE_SPEC = obj('The profile.', {
  ingress: opt(rules('ingress')),
  egress: opt(rules('egress')),
  labelsToApply: opt(stringMap('Labels every endpoint referencing this profile inherits; the endpoint\'s own labels win.')),
});

// ----- workloadendpoint.go (libcalico-go internalapi) -----------------------------------------

const qos = (what: string) => opt(int(what, { format: 'int64', minimum: 0 }));

const ENDPOINT_PORT = requiredInOrder(
  obj(
    'One endpoint port.',
    {
      name: opt(
        str('Port name; named-port rules match on it. May be empty when hostPort is set.', {
          maxLength: 128,
          pattern: '^[a-zA-Z0-9_.-]{0,128}$',
        }),
      ),
      protocol: intOrString('TCP, UDP or SCTP.', {
        minimum: 1,
        maximum: 255,
        maxLength: 10,
        pattern: ENDPOINT_PORT_PROTOCOL_PATTERN,
      }),
      port: int('The port number on the endpoint.', { minimum: 1, maximum: 65535 }),
      hostPort: opt(int('The host port mapped to it; 0 for none.', { minimum: 0, maximum: 65535 })),
      hostIP: opt(str('The host IP the host port binds to.', { maxLength: 64 })),
    },
    cel(
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
  ),
  ['port', 'protocol'],
);

/**
 * libcalico-go requires interfaceName (validated without omitempty). Tessera does not:
 * `tessera controllers --workload-interface-naming none` writes endpoints without one for CNIs
 * whose host-side names it cannot know, and the agent resolves the interface from the pod's
 * host route (src/dataplane/endpoint-manager.ts).
 */
export const WORKLOAD_ENDPOINT_SPEC = obj('The endpoint.', {
  orchestrator: opt(str('The orchestrator that created the workload, "k8s" for pods.', { maxLength: 253 })),
  workload: opt(str('The workload name; empty for Kubernetes pods.', { maxLength: 253 })),
  node: opt(str('The node the endpoint lives on.', { maxLength: 253 })),
  containerID: opt(str('The container ID.', { maxLength: 253 })),
  pod: opt(str('The pod name.', { maxLength: 253 })),
  endpoint: opt(str('The endpoint name inside the pod, e.g. eth0.', { maxLength: 253 })),
  serviceAccountName: opt(str("The pod's service account.", { maxLength: 253 })),
  ipNetworks: opt(arr('The /32 (IPv4) or /128 (IPv6) addresses of the endpoint.', str(undefined, { maxLength: 64, pattern: NET_PATTERN }))),
  ipNATs: opt(
    arr(
      '1:1 NAT mappings to apply to the endpoint.',
      obj('One NAT mapping.', {
        internalIP: str('An address of this endpoint (from ipNetworks).', { maxLength: 64, pattern: IP_PATTERN }),
        externalIP: str('The external address mapped to it.', { maxLength: 64, pattern: IP_PATTERN }),
      }),
    ),
  ),
  ipv4Gateway: opt(str('The IPv4 gateway for traffic from the workload.', { maxLength: 64, pattern: NET_PATTERN })),
  ipv6Gateway: opt(str('The IPv6 gateway for traffic from the workload.', { maxLength: 64, pattern: NET_PATTERN })),
  profiles: opt(arr('Profiles applied after all tiers, in this order; e.g. kns.<namespace>, ksa.<namespace>.<sa>.', str(undefined, { maxLength: 253 }))),
  interfaceName: opt(
    str("The host-side interface name, e.g. cali0123456789a. Empty or absent: the agent finds it from the host route to the endpoint's address.", {
      maxLength: 15,
      pattern: '^([a-zA-Z0-9_.-]{0,15}|\\*)$',
    }),
  ),
  mac: opt(str('The MAC address of the endpoint interface.', { maxLength: 64 })),
  ports: opt(arr("The endpoint's named (and host-mapped) ports, which policy rules can refer to by name.", ENDPOINT_PORT)),
  allowSpoofedSourcePrefixes: opt(arr('CIDRs the endpoint may send from, bypassing the RPF check.', str(undefined, { maxLength: 64, pattern: NET_PATTERN }))),
  qosControls: opt(
    obj('Bandwidth, packet-rate and connection limits for the endpoint.', {
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
      dscp: opt(
        intOrString('DSCP value for egress traffic: 0-63 or a name such as EF, AF11 or CS1.', {
          minimum: 0,
          maximum: 63,
          maxLength: 4,
          pattern: '^(DF|EF|AF[1-4][1-3]|CS[0-6]|[0-9]{1,2})$',
        }),
      ),
    }),
  ),
});

// ----- hostendpoint.go ------------------------------------------------------------------------

/**
 * A host endpoint's named port (`EndpointPort`): every field required. Calico checks the name
 * as a Kubernetes port name (`portName`) and the protocol with `SupportsPorts` (TCP, UDP, SCTP
 * or their numbers); names may repeat (validator_test "name-clashing ports").
 */
const HOST_ENDPOINT_PORT = requiredInOrder(
  obj(
    'One named port of the host endpoint.',
    {
      name: str('Port name (a Kubernetes port name); policy rules refer to the port by it.', { maxLength: 15, pattern: PORT_NAME_PATTERN }),
      protocol: intOrString('TCP, UDP or SCTP (or 6, 17, 132).', {
        minimum: 1,
        maximum: 255,
        maxLength: 10,
        pattern: ENDPOINT_PORT_PROTOCOL_PATTERN,
      }),
      port: int('The port number.', { minimum: 1, maximum: 65535 }),
    },
    cel({
      rule: 'type(self.protocol) == string || self.protocol == 6 || self.protocol == 17 || self.protocol == 132',
      message: 'protocol: a host endpoint port needs a protocol with ports (TCP, UDP, SCTP or 6, 17, 132)',
      fieldPath: '.protocol',
      reason: 'FieldValueInvalid',
    }),
  ),
  ['name', 'port', 'protocol'],
);

/**
 * HostEndpointSpec. `node` and one of `interfaceName`/`expectedIPs` are required by CEL rules
 * (Calico's own, with its messages), not by `required`: Calico declares the fields `omitempty`.
 * `expectedIPs` and `profiles` are sets, as in Calico's CRD: the apiserver rejects a repeat.
 */
export const HOST_ENDPOINT_SPEC = obj(
  'The host endpoint.',
  {
    node: opt(str("The node whose interfaces this endpoint covers: only that node's agent enforces it. Required.", { maxLength: 253 })),
    interfaceName: opt(
      str(
        '"*" for all of the host\'s traffic through any interface, the name of one interface (e.g. eth0), or empty to take the interface that has one of expectedIPs.',
        { maxLength: 15, pattern: '^(\\*|[a-zA-Z0-9_.-]{1,15})?$' },
      ),
    ),
    expectedIPs: opt(
      arr(
        "The host's IPv4/IPv6 addresses on this endpoint: policy rules that select the endpoint by label match them, and with no interfaceName they pick the interface.",
        str(undefined, { maxLength: 64, pattern: IP_PATTERN }),
        { 'x-kubernetes-list-type': 'set' },
      ),
    ),
    profiles: opt(
      arr('Profiles applied after all tiers, in this order; e.g. projectcalico-default-allow.', str(undefined, { maxLength: 253 }), {
        'x-kubernetes-list-type': 'set',
      }),
    ),
    ports: opt(arr("The endpoint's named ports, which policy rules can refer to by name.", HOST_ENDPOINT_PORT, { 'x-kubernetes-list-type': 'atomic' })),
  },
  cel(
    {
      rule: '(has(self.interfaceName) && size(self.interfaceName) > 0) || (has(self.expectedIPs) && size(self.expectedIPs) > 0)',
      message: 'at least one of interfaceName or expectedIPs must be specified',
      fieldPath: '.interfaceName',
      reason: 'FieldValueRequired',
    },
    {
      rule: 'has(self.node) && size(self.node) > 0',
      message: 'node must be specified',
      fieldPath: '.node',
      reason: 'FieldValueRequired',
    },
  ),
);

// ----- networkset.go, globalnetworkset.go ------------------------------------------------------

export const NETWORK_SET_SPEC = obj('The set.', {
  nets: opt(arr('CIDRs or single addresses, IPv4 and IPv6; host bits are cleared.', str(undefined, { maxLength: 64, pattern: NET_PATTERN }))),
});

// ----- staged kinds (Calico 3.30 OSS) ----------------------------------------------------------

/** Calico's enum (`+kubebuilder:validation:Enum=Set;Delete;Learn;Ignore`, api/staged.ts). */
export const STAGED_ACTION = strEnum(
  'Set: committing creates or replaces the policy of the same name; Delete: committing deletes it (the spec must then be empty but for stagedAction and tier). ' +
    "Learn, Ignore: Calico Enterprise's policy-recommendation actions, accepted and never enforced; Tessera's simulate and explain do not preview them, the agent counts them as any staged policy. Set when absent.",
  ['Set', 'Delete', 'Learn', 'Ignore'],
);

/** An object kept as written (a Kubernetes rule, a label selector requirement). */
const OPAQUE = Unsafe<Record<string, unknown>>({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });

/**
 * StagedKubernetesNetworkPolicy: a networking.k8s.io/v1 NetworkPolicy spec plus `stagedAction`,
 * kept as written. Its fields are declared (loosely) so that the Delete rule (schema-crd.ts) can
 * see them: a CEL rule reads only declared fields.
 */
export const STAGED_KUBERNETES_NETWORK_POLICY_SPEC = obj(
  'The Kubernetes NetworkPolicy spec (podSelector, policyTypes, ingress, egress) and stagedAction.',
  {
    stagedAction: opt(STAGED_ACTION),
    podSelector: opt(
      obj(
        'The pods the policy selects (a Kubernetes label selector).',
        { matchLabels: opt(stringMap('Labels the pods must carry.')), matchExpressions: opt(arr('Label requirements (key, operator, values) the pods must meet.', OPAQUE)) },
        { 'x-kubernetes-preserve-unknown-fields': true },
      ),
    ),
    policyTypes: opt(arr('Ingress, Egress.', str(undefined))),
    ingress: opt(arr('The Kubernetes ingress rules.', OPAQUE)),
    egress: opt(arr('The Kubernetes egress rules.', OPAQUE)),
  },
  { 'x-kubernetes-preserve-unknown-fields': true },
);

// ----- per kind --------------------------------------------------------------------------------

/** What the schema says about one kind beyond its spec: the object-level description and rules. */
export interface KindSchema {
  readonly description: string;
  readonly spec: TObject;
  /** Calico's CRDs require `spec` on policies and tiers (`json:"spec"`). */
  readonly specRequired: boolean;
  readonly status?: TObject;
  /** CEL rules on the whole object (names, well-known tiers). */
  readonly rules?: readonly CelRule[];
}

function wellKnownTier(name: string, action: 'Deny' | 'Pass', order: number): CelRule[] {
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

/** The enforced v3 kinds, each declared once. Staged kinds are derived in schema-crd.ts. */
export const KIND_SCHEMAS = {
  NetworkPolicy: {
    description: 'A Calico network policy: ordered rules for the endpoints its selector picks in its namespace.',
    spec: NETWORK_POLICY_SPEC,
    specRequired: true,
    rules: [
      {
        // Calico's networkPolicyNameRegex: a label, optionally "<tier>.<label>", or a converted
        // Kubernetes policy "knp.default.<k8s name>" (and OpenStack's "ossg.default.").
        // The apiserver already requires a DNS-1123 subdomain for every custom resource name,
        // so the prefixed forms only need the prefix checked (one regex over both forms
        // exceeds the CEL cost budget).
        rule:
          "self.metadata.name.startsWith('knp.default.') || self.metadata.name.startsWith('ossg.default.') || " +
          `self.metadata.name.matches('${celRegex(`^${LABEL_PATTERN}(\\.${LABEL_PATTERN})?$`)}')`,
        message:
          'metadata.name: must be a DNS-1123 label, optionally prefixed "<tier>.", or "knp.default.<name>" for converted Kubernetes policies',
        reason: 'FieldValueInvalid',
      },
    ],
  },
  GlobalNetworkPolicy: {
    description: 'A cluster-wide Calico network policy: ordered rules for the endpoints its selectors pick in any namespace.',
    spec: GLOBAL_NETWORK_POLICY_SPEC,
    specRequired: true,
    rules: [
      {
        // Calico's globalNetworkPolicyNameRegex: a label, optionally prefixed "<tier>.".
        rule: `self.metadata.name.matches('${celRegex(`^(${LABEL_PATTERN}\\.)?${LABEL_PATTERN}$`)}')`,
        message: 'metadata.name: must be a DNS-1123 label, optionally prefixed "<tier>."',
        reason: 'FieldValueInvalid',
      },
    ],
  },
  Tier: {
    description:
      'A tier groups policies. Tiers apply in ascending order; traffic that a tier\'s policies select but no rule ' +
      'decides gets the tier\'s defaultAction.',
    spec: TIER_SPEC,
    specRequired: true,
    status: TIER_STATUS,
    rules: [
      {
        // Tier names appear inside policy names and label values, so they are single labels.
        rule: `self.metadata.name.matches('^${LABEL_PATTERN}$') && size(self.metadata.name) <= 63`,
        message: 'metadata.name: a tier name must be a DNS-1123 label (lower-case alphanumerics and "-", at most 63 characters)',
        reason: 'FieldValueInvalid',
      },
      ...wellKnownTier('default', 'Deny', 1_000_000),
      ...wellKnownTier('kube-admin', 'Pass', 1_000),
      ...wellKnownTier('kube-baseline', 'Pass', 10_000_000),
    ],
  },
  Profile: {
    description:
      'A profile gives the endpoints that list it extra labels (labelsToApply) and rules that apply after all tiers. ' +
      'kns.<namespace> and ksa.<namespace>.<serviceaccount> profiles are generated from Namespaces and ServiceAccounts.',
    spec: PROFILE_SPEC,
    specRequired: false,
  },
  WorkloadEndpoint: {
    description:
      'A workload endpoint: one network interface of a pod, with the IPs, labels and profiles policy is evaluated on. ' +
      'Named <node>-k8s-<pod>-<endpoint>, with "-" inside each part doubled.',
    spec: WORKLOAD_ENDPOINT_SPEC,
    specRequired: false,
  },
  NetworkSet: {
    description:
      'A namespaced set of CIDRs (addresses outside the cluster, usually), selected by its labels in policy rules as endpoints are; ' +
      'only rules of policies in its own namespace, or with a namespaceSelector matching it, select it.',
    spec: NETWORK_SET_SPEC,
    specRequired: false,
  },
  GlobalNetworkSet: {
    description: 'A cluster-wide set of CIDRs (addresses outside the cluster, usually), selected by its labels in policy rules as endpoints are.',
    spec: NETWORK_SET_SPEC,
    specRequired: false,
  },
  HostEndpoint: {
    description:
      "A host endpoint: one or all (\"*\") of a node's own interfaces, with labels that GlobalNetworkPolicies select (never a namespaced " +
      "policy: it has no namespace), the host addresses rules match, profiles and named ports. Without a policy or profile, the host's " +
      'traffic through it is denied, failsafe ports excepted.',
    spec: HOST_ENDPOINT_SPEC,
    // A HostEndpoint without a spec has no node, which Calico rejects.
    specRequired: true,
  },
} as const satisfies Record<string, KindSchema>;

export type NetworkPolicySpec = Static<typeof NETWORK_POLICY_SPEC>;
export type GlobalNetworkPolicySpec = Static<typeof GLOBAL_NETWORK_POLICY_SPEC>;
export type TierSpec = Static<typeof TIER_SPEC>;
export type ProfileSpec = Static<typeof PROFILE_SPEC>;
export type WorkloadEndpointSpec = Static<typeof WORKLOAD_ENDPOINT_SPEC>;
export type WorkloadEndpointPort = Static<typeof ENDPOINT_PORT>;
export type NetworkSetSpec = Static<typeof NETWORK_SET_SPEC>;
export type HostEndpointSpec = Static<typeof HOST_ENDPOINT_SPEC>;
export type HostEndpointPort = Static<typeof HOST_ENDPOINT_PORT>;
