/**
 * The SIG-Network ClusterNetworkPolicy schema (`sigs.k8s.io/network-policy-api` v0.3.0,
 * `apis/v1beta1`; v1alpha2 is served with the same schema), declared once in the vocabulary of
 * schema-node.ts: every field, every facet (enums, bounds, list limits, `minProperties` /
 * `maxProperties` for "exactly one of") and every CEL rule of upstream's CRDs, in both channels.
 * From it come crds/ (cluster-network-policy-crd.ts) and the field sets
 * cluster-network-policy-validation.ts checks objects against.
 *
 * e2e/cluster-network-policy-crds.unit.test.ts proves the generated schema of each channel equal
 * to upstream's (the module's config/crd YAML) once descriptions are set aside: the facets, the
 * rules and their messages are upstream's, the descriptions are Tessera's own words (every node
 * upstream describes is described here, and no other).
 *
 * The experimental channel adds exactly three fields — `destinationNamedPort` on a protocol,
 * `nodes` and `domainNames` on an egress peer — and one rule on an egress rule (no named port
 * towards a `networks`/`nodes`/`domainNames` peer). The standard CRD does not know them, so the
 * API server rejects them there as unknown fields.
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import { arr, cel, int, obj, opt, str, strEnum, stringMap } from './schema-node.ts';
import type { CelRule } from './schema-node.ts';

export type CnpChannel = 'standard' | 'experimental';
export const CNP_CHANNELS: readonly CnpChannel[] = ['standard', 'experimental'];

/** Upstream's limit on rules per direction, peers per rule, protocols per rule, CIDRs and domain names per peer. */
export const CNP_MAX_ITEMS = 25;
export const CNP_MAX_PRIORITY = 1000;
export const CNP_RULE_NAME_MAX_LENGTH = 100;
export const CNP_CIDR_MAX_LENGTH = 43;
export const CNP_ACTIONS = ['Accept', 'Deny', 'Pass'] as const;
export const CNP_TIERS = ['Admin', 'Baseline'] as const;
/** Upstream's `DomainName` pattern: an optional `*.` prefix, then at least two labels, an optional final dot. */
export const CNP_DOMAIN_NAME_PATTERN = '^(\\*\\.)?([a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\\.)+[a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\\.?$';

export const CNP_RANGE_RULE: CelRule = { rule: 'self.start < self.end', message: 'Start port must be less than End port' };
export const CNP_CIDR_RULE: CelRule = { rule: 'isCIDR(self) && cidr(self) == cidr(self).masked()', message: 'Invalid CIDR format provided' };
/** Experimental channel only: a named port needs a pod peer. */
export const CNP_NAMED_PORT_RULE: CelRule = {
  rule:
    '!(self.to.exists(peer, has(peer.networks) || has(peer.nodes) || has(peer.domainNames)) && has(self.protocols) && self.protocols.exists(protocol, has(protocol.destinationNamedPort)))',
  message: 'networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for networks/nodes/domainNames',
};

const EXACTLY_ONE = { maxProperties: 1, minProperties: 1 } as const;
const LIMITED = { maxItems: CNP_MAX_ITEMS, minItems: 1 } as const;
const INT32 = { format: 'int32' } as const;

// ----- label selectors (metav1.LabelSelector, as controller-gen renders it) -------------------

function labelSelector(description: string): TObject {
  return obj(
    description,
    {
      matchExpressions: opt(
        arr(
          'Requirements on label keys, all of which must hold.',
          obj(
            'One requirement: a key, an operator, and the values the operator compares with.',
            {
              key: str('The label key the requirement is about.'),
              operator: str('How the key relates to the values: In, NotIn, Exists or DoesNotExist.'),
              values: opt(
                arr(
                  'The values for In and NotIn (then at least one); empty for Exists and DoesNotExist.',
                  str(undefined),
                  { 'x-kubernetes-list-type': 'atomic' },
                ),
              ),
            },
          ),
          { 'x-kubernetes-list-type': 'atomic' },
        ),
      ),
      matchLabels: opt(stringMap('Labels that must all be present with these values (each one an In requirement of one value).')),
    },
    { 'x-kubernetes-map-type': 'atomic' },
  );
}

function namespacedPods(description: string): TObject {
  return obj(description, {
    namespaceSelector: opt(labelSelector('The namespaces the pods are in; empty selects every namespace.')),
    podSelector: labelSelector('The pods, within those namespaces; empty selects every pod.'),
  });
}

const NAMESPACES_PEER = labelSelector('Every pod of the namespaces this selector picks (host-network pods never).');
const PODS_PEER = namespacedPods('The pods these selectors pick (host-network pods never).');

// ----- protocols and ports --------------------------------------------------------------------

function port(description: string): TSchema {
  return int(description, { ...INT32, maximum: 65535, minimum: 1 });
}

function protocolMatch(name: string): TObject {
  return obj(
    `Matches ${name} traffic, to the destination port given.`,
    {
      destinationPort: opt(
        obj(
          'The destination port: one number or one range.',
          {
            number: opt(port('One port, 1-65535.')),
            range: opt(
              obj(
                'A contiguous range of ports, both ends included.',
                { end: port('The last port of the range; greater than start.'), start: port('The first port of the range; less than end.') },
                cel(CNP_RANGE_RULE),
              ),
            ),
          },
          EXACTLY_ONE,
        ),
      ),
    },
    { minProperties: 1 },
  );
}

function protocols(channel: CnpChannel): TSchema {
  return arr(
    'The protocols and destination ports the rule matches (any of them); absent matches all traffic.',
    obj(
      'One protocol match: exactly one field set.',
      {
        ...(channel === 'experimental'
          ? { destinationNamedPort: opt(str('Experimental: a destination port by its container port name; only towards pods, which name their ports.')) }
          : {}),
        sctp: opt(protocolMatch('SCTP')),
        tcp: opt(protocolMatch('TCP')),
        udp: opt(protocolMatch('UDP')),
      },
      EXACTLY_ONE,
    ),
    LIMITED,
  );
}

// ----- peers and rules ------------------------------------------------------------------------

const FAIL_CLOSED =
  ' Exactly one field is set; a peer with none set was written against a newer CRD and fails closed (an Accept rule matches nothing, Deny and Pass deny all).';

const INGRESS_PEER = obj(`A source of traffic.${FAIL_CLOSED}`, { namespaces: opt(NAMESPACES_PEER), pods: opt(PODS_PEER) }, EXACTLY_ONE);

function egressPeer(channel: CnpChannel): TObject {
  const experimental = channel === 'experimental';
  return obj(
    `A destination of traffic.${FAIL_CLOSED}`,
    {
      ...(experimental
        ? {
            domainNames: opt(
              arr(
                'Experimental: destinations by DNS name, only for Accept rules (Tessera, as Calico 3.32, fails such a peer closed).',
                str('A domain name, or `*.` and a domain name for every name below it.', { pattern: CNP_DOMAIN_NAME_PATTERN }),
                { ...LIMITED, 'x-kubernetes-list-type': 'set' },
              ),
            ),
          }
        : {}),
      namespaces: opt(NAMESPACES_PEER),
      networks: opt(
        arr(
          'Destinations by address: canonical CIDRs, IPv4 or IPv6 (ICMP included). Cluster traffic matches too: 0.0.0.0/0 also matches every IPv4 pod.',
          str('A CIDR, its host bits zero (10.0.0.0/8, fd00::/8).', { maxLength: CNP_CIDR_MAX_LENGTH, ...cel(CNP_CIDR_RULE) }),
          { ...LIMITED, 'x-kubernetes-list-type': 'set' },
        ),
      ),
      ...(experimental ? { nodes: opt(labelSelector('Experimental: the addresses (status.addresses) of the Nodes this selector picks; empty picks every Node.')) } : {}),
      pods: opt(PODS_PEER),
    },
    EXACTLY_ONE,
  );
}

const ACTION = strEnum(
  'What matching traffic gets: Accept (no further cluster or namespaced policy in this direction; egress still meets the destination\'s ingress), Deny (dropped), or Pass (the rest of this tier is skipped).',
  CNP_ACTIONS,
);
const RULE_NAME = str('A name for the rule, for observability (Tessera\'s explain prints it); at most 100 characters.', { maxLength: CNP_RULE_NAME_MAX_LENGTH });

const INGRESS_RULE = (channel: CnpChannel): TObject =>
  obj('An action on traffic to the subject from the peers listed.', {
    action: ACTION,
    from: arr('The sources (any of them) the rule applies to; at least one.', INGRESS_PEER, LIMITED),
    name: opt(RULE_NAME),
    protocols: opt(protocols(channel)),
  });

function egressRule(channel: CnpChannel): TObject {
  return obj(
    'An action on traffic from the subject to the peers listed.',
    {
      action: ACTION,
      name: opt(RULE_NAME),
      protocols: opt(protocols(channel)),
      to: arr('The destinations (any of them) the rule applies to; at least one.', egressPeer(channel), LIMITED),
    },
    channel === 'experimental' ? cel(CNP_NAMED_PORT_RULE) : {},
  );
}

function spec(channel: CnpChannel): TObject {
  return obj('What the policy selects and its rules.', {
    egress: opt(arr('Egress rules, in precedence order (the first that matches decides); at most 25. None: egress is not affected.', egressRule(channel), { maxItems: CNP_MAX_ITEMS })),
    ingress: opt(arr('Ingress rules, in precedence order (the first that matches decides); at most 25. None: ingress is not affected.', INGRESS_RULE(channel), { maxItems: CNP_MAX_ITEMS })),
    priority: int('Precedence within the tier, 0-1000: lower runs first. Equal priorities run in an order Tessera fixes (see its README).', {
      ...INT32,
      maximum: CNP_MAX_PRIORITY,
      minimum: 0,
    }),
    subject: obj(
      'The pods the policy applies to: exactly one of namespaces and pods. Host-network pods are never selected.',
      {
        namespaces: opt(labelSelector('Every pod of the namespaces this selector picks.')),
        pods: opt(namespacedPods('The pods these selectors pick.')),
      },
      EXACTLY_ONE,
    ),
    tier: strEnum(
      'Admin runs before every NetworkPolicy (Calico tier kube-admin), Baseline after them, only for pods no NetworkPolicy isolates (kube-baseline).',
      CNP_TIERS,
    ),
  });
}

// ----- status (metav1.Condition) --------------------------------------------------------------

const CONDITION = obj('One condition of the policy, as its implementation reports it.', {
  lastTransitionTime: str('When the condition last changed status.', { format: 'date-time' }),
  message: str('Details of the last transition, for people; may be empty.', { maxLength: 32768 }),
  observedGeneration: opt(int('The metadata.generation the condition was set for.', { format: 'int64', minimum: 0 })),
  reason: str('Why the condition last changed, as a CamelCase identifier; never empty.', {
    maxLength: 1024,
    minLength: 1,
    pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
  }),
  status: strEnum('True, False or Unknown.', ['True', 'False', 'Unknown']),
  type: str('The condition type, CamelCase or foo.example.com/CamelCase.', {
    maxLength: 316,
    pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
  }),
});

const STATUS = obj('What the implementation reports about the policy.', {
  conditions: arr(undefined, CONDITION, { 'x-kubernetes-list-map-keys': ['type'], 'x-kubernetes-list-type': 'map' }),
});

/** The whole object's schema (`openAPIV3Schema`) of `channel`: the same for v1beta1 and v1alpha2. */
export function clusterNetworkPolicySchema(channel: CnpChannel): TObject {
  return obj('A cluster-wide network policy, in the Admin or the Baseline tier.', {
    apiVersion: opt(str('The versioned schema of this object: policy.networking.k8s.io/v1beta1 (or v1alpha2).')),
    kind: opt(str('The REST resource this object represents: ClusterNetworkPolicy.')),
    metadata: { type: 'object' } as unknown as TSchema,
    spec: spec(channel),
    status: opt(STATUS),
  });
}

/** The `spec` node of `channel` (validation walks it). */
export function clusterNetworkPolicySpecSchema(channel: CnpChannel): TObject {
  return spec(channel);
}
