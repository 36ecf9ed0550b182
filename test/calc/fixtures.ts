/**
 * Resources and state lists modelled on Felix's `resources_for_test.go` and
 * `states_for_test.go` (calico-semantics §6.5), in v3 form. Endpoint keys are
 * `<namespace>/<name>`; policy keys are `policyIdKey` strings.
 */
import type {
  GlobalNetworkSet,
  NetworkSet,
  GlobalNetworkPolicy,
  NetworkPolicy,
  Profile,
  Rule,
  Tier,
  WorkloadEndpoint,
  WorkloadEndpointPort,
} from '../../src/api/index.ts';
import { policyIdKey, type PolicyKind } from '../../src/proto/index.ts';
import { namedPortIpSetId, parseSelector, type NamedPortProtocol } from '../../src/selector/index.ts';
import { LOCAL_NODE } from './harness.ts';
import { StateBuilder, emptyState, type State } from './state.ts';

export const REMOTE_NODE = 'remote-host';

// ---- id helpers ----------------------------------------------------------------------------

export function sel(text: string): string {
  return parseSelector(text).uniqueId();
}

export function np(selector: string, proto: NamedPortProtocol, name: string): string {
  return namedPortIpSetId(parseSelector(selector), proto, name);
}

export function pk(name: string, opts: { tier?: string; namespace?: string; kind?: PolicyKind } = {}): string {
  const kind = opts.kind ?? (opts.namespace === undefined ? 'GlobalNetworkPolicy' : 'NetworkPolicy');
  return policyIdKey({ tier: opts.tier ?? 'default', name, ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }), kind });
}

// ---- resource builders ---------------------------------------------------------------------

export function wep(
  name: string,
  opts: {
    node?: string;
    namespace?: string;
    labels: Record<string, string>;
    ips: string[];
    profiles?: string[];
    ports?: WorkloadEndpointPort[];
  },
): WorkloadEndpoint {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace: opts.namespace ?? 'default', labels: opts.labels },
    spec: {
      node: opts.node ?? LOCAL_NODE,
      orchestrator: 'k8s',
      endpoint: 'eth0',
      interfaceName: `cali${name.replace(/[^a-z0-9]/g, '')}`.slice(0, 15),
      ipNetworks: opts.ips,
      profiles: opts.profiles ?? [],
      ...(opts.ports === undefined ? {} : { ports: opts.ports }),
    },
  };
}

export function gnp(
  name: string,
  spec: { order?: number; tier?: string; selector: string; ingress?: Rule[]; egress?: Rule[]; types?: ('Ingress' | 'Egress')[]; namespaceSelector?: string },
): GlobalNetworkPolicy {
  const tier = spec.tier ?? 'default';
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: { name: tier === 'default' ? name : `${tier}.${name}` },
    spec: { ...spec, tier, types: spec.types ?? ['Ingress', 'Egress'] },
  };
}

export function knp(
  namespace: string,
  name: string,
  spec: { order?: number; selector: string; ingress?: Rule[]; egress?: Rule[]; types?: ('Ingress' | 'Egress')[] },
): NetworkPolicy {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec: { ...spec, tier: 'default', types: spec.types ?? ['Ingress', 'Egress'] },
  };
}

/** A NetworkSet (`namespace` given) or a GlobalNetworkSet. */
export function netset(name: string, opts: { namespace?: string; labels: Record<string, string>; nets: string[] }): NetworkSet | GlobalNetworkSet {
  const metadata = { name, labels: opts.labels };
  return opts.namespace === undefined
    ? { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata, spec: { nets: opts.nets } }
    : { apiVersion: 'projectcalico.org/v3', kind: 'NetworkSet', metadata: { ...metadata, namespace: opts.namespace }, spec: { nets: opts.nets } };
}

export function tier(name: string, order: number | undefined): Tier {
  return { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name }, spec: { ...(order === undefined ? {} : { order }), defaultAction: 'Deny' } };
}

export function profile(name: string, labels: Record<string, string> | undefined, rules = false): Profile {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Profile',
    metadata: { name },
    spec: {
      ...(labels === undefined ? {} : { labelsToApply: labels }),
      ...(rules ? { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] } : {}),
    },
  };
}

// ---- Felix's endpoints and policy ----------------------------------------------------------

const EP1_IPS = ['10.0.0.1/32', '10.0.0.2/32', 'fc00:fe11::1/128', 'fc00:fe11::2/128'];
const EP2_IPS = ['10.0.0.2/32', '10.0.0.3/32', 'fc00:fe11::2/128', 'fc00:fe11::3/128'];

export const localWlEp1 = wep('ep1', {
  labels: { id: 'loc-ep-1', a: 'a', b: 'b' },
  ips: EP1_IPS,
  profiles: ['prof-1', 'prof-2', 'prof-missing'],
  ports: [
    { name: 'tcpport', protocol: 'TCP', port: 8080 },
    { name: 'tcpport2', protocol: 'TCP', port: 1234 },
    { name: 'udpport', protocol: 'UDP', port: 9091 },
  ],
});

export const localWlEp2 = wep('ep2', {
  labels: { id: 'loc-ep-2', a: 'a', b: 'b2' },
  ips: EP2_IPS,
  profiles: ['prof-2', 'prof-3'],
  ports: [
    { name: 'tcpport', protocol: 'TCP', port: 8080 },
    { name: 'tcpport2', protocol: 'TCP', port: 2345 },
    { name: 'udpport', protocol: 'UDP', port: 9090 },
  ],
});

export const localWlEp1NewIPs = wep('ep1', {
  labels: { id: 'loc-ep-1', a: 'a', b: 'b' },
  ips: ['11.0.0.1/32', '11.0.0.2/32', 'fc00:fe12::1/128', 'fc00:fe12::2/128'],
  profiles: ['prof-1', 'prof-2', 'prof-missing'],
  ports: localWlEp1.spec.ports ?? [],
});

export const remoteWlEp1 = wep('rem-ep1', {
  node: REMOTE_NODE,
  labels: { id: 'rem-ep-1', a: 'a', b: 'b' },
  ips: ['10.1.0.1/32', 'fc00:fe12::1/128'],
  profiles: ['prof-1'],
  ports: [{ name: 'tcpport', protocol: 'TCP', port: 8080 }],
});

/** A remote endpoint sharing 10.0.0.2 with the local ones. */
export const remoteWlEp2 = wep('rem-ep2', {
  node: REMOTE_NODE,
  labels: { id: 'rem-ep-2', a: 'x', b: 'b' },
  ips: ['10.0.0.2/32', '10.1.0.2/32'],
  profiles: ['prof-3'],
});

export const policy1Order20 = gnp('pol-1', {
  order: 20,
  selector: "a == 'a'",
  ingress: [{ action: 'Allow', source: { selector: 'all()' } }],
  egress: [{ action: 'Allow', source: { selector: "b == 'b'" } }],
});

const ALL = sel('all()');
const B_EQ_B = sel("b == 'b'");
const EP1_TIERS = [{ name: 'default', ingress: ['pol-1'], egress: ['pol-1'] }];
const EP1_PROFILES = ['prof-1', 'prof-2', 'prof-missing'];
const EP2_PROFILES = ['prof-2', 'prof-3'];

const withPolicy = StateBuilder.from().withName('withPolicy').withKVUpdates(policy1Order20);

const localEp1WithPolicy = withPolicy
  .withName('localEp1WithPolicy')
  .withKVUpdates(localWlEp1)
  .withIPSet(ALL, EP1_IPS)
  .withIPSet(B_EQ_B, EP1_IPS)
  .withActivePolicies(pk('pol-1'))
  .withActiveProfiles(...EP1_PROFILES)
  .withEndpoint('default/ep1', EP1_TIERS);

const localEp2WithPolicy = withPolicy
  .withName('localEp2WithPolicy')
  .withKVUpdates(localWlEp2)
  .withIPSet(ALL, EP2_IPS)
  .withIPSet(B_EQ_B, [])
  .withActivePolicies(pk('pol-1'))
  .withActiveProfiles(...EP2_PROFILES)
  .withEndpoint('default/ep2', EP1_TIERS);

const localEpsWithPolicy = localEp1WithPolicy
  .withName('localEpsWithPolicy')
  .withKVUpdates(localWlEp2)
  .withIPSet(ALL, [...new Set([...EP1_IPS, ...EP2_IPS])])
  .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
  .withEndpoint('default/ep2', EP1_TIERS);

const localEpsWithPolicyUpdatedIPs = localEpsWithPolicy
  .withName('localEpsWithPolicyUpdatedIPs')
  .withKVUpdates(localWlEp1NewIPs)
  .withIPSet(ALL, [...localWlEp1NewIPs.spec.ipNetworks!, ...EP2_IPS])
  .withIPSet(B_EQ_B, localWlEp1NewIPs.spec.ipNetworks!);

const localAndRemoteEpsWithPolicy = localEpsWithPolicy
  .withName('localAndRemoteEpsWithPolicy')
  .withKVUpdates(remoteWlEp1, remoteWlEp2)
  .withIPSet(ALL, [...new Set([...EP1_IPS, ...EP2_IPS, '10.1.0.1/32', 'fc00:fe12::1/128', '10.1.0.2/32'])])
  .withIPSet(B_EQ_B, [...EP1_IPS, '10.1.0.1/32', 'fc00:fe12::1/128', '10.1.0.2/32']);

const remoteOnlyWithPolicy = withPolicy.withName('remoteOnlyWithPolicy').withKVUpdates(remoteWlEp1, remoteWlEp2);

const localEp1WithProfiles = localEp1WithPolicy
  .withName('localEp1WithRealProfiles')
  .withKVUpdates(profile('prof-1', { 'prof-label': 'one' }, true), profile('prof-2', undefined, true));

export const endpointStates: readonly State[] = [
  withPolicy.build(),
  localEp1WithPolicy.build(),
  localEpsWithPolicy.build(),
  localEpsWithPolicyUpdatedIPs.build(),
  localEp2WithPolicy.build(),
  localAndRemoteEpsWithPolicy.build(),
  remoteOnlyWithPolicy.build(),
  localEp1WithProfiles.build(),
];

// ---- policy and tier order ------------------------------------------------------------------

function orderedPolicy(name: string, order: number | undefined, tierName = 'default'): GlobalNetworkPolicy {
  return gnp(name, {
    ...(order === undefined ? {} : { order }),
    tier: tierName,
    selector: "a == 'a'",
    ingress: [{ action: 'Allow', source: { selector: 'all()' } }],
    egress: [{ action: 'Allow', source: { selector: "b == 'b'" } }],
  });
}

function policyOrderState(name: string, orders: readonly (number | undefined)[], expected: readonly string[]): State {
  const pols = orders.map((o, i) => orderedPolicy(`pol-${i + 1}`, o));
  return StateBuilder.from()
    .withName(name)
    .withKVUpdates(localWlEp1, ...pols)
    .withIPSet(ALL, EP1_IPS)
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(...pols.map((p) => pk(p.metadata.name)))
    .withActiveProfiles(...EP1_PROFILES)
    .withEndpoint('default/ep1', [{ name: 'default', ingress: expected, egress: expected }])
    .build();
}

export const policyOrderStates: readonly State[] = [
  policyOrderState('policyOrder 10/20/30', [10, 20, 30], ['pol-1', 'pol-2', 'pol-3']),
  policyOrderState('policyOrder 30/20/10', [30, 20, 10], ['pol-3', 'pol-2', 'pol-1']),
  policyOrderState('policyOrder equal', [5, 5, 5], ['pol-1', 'pol-2', 'pol-3']),
  policyOrderState('policyOrder nil last', [undefined, 20, 10], ['pol-3', 'pol-2', 'pol-1']),
  policyOrderState('policyOrder fractional', [1.5, 1.25, 1], ['pol-3', 'pol-2', 'pol-1']),
];

function tierOrderState(name: string, orders: readonly (number | undefined | 'missing')[], expected: readonly string[]): State {
  const tiers = orders.flatMap((o, i) => (o === 'missing' ? [] : [tier(`tier-${i + 1}`, o)]));
  const pols = orders.map((_, i) => orderedPolicy(`pol`, 10, `tier-${i + 1}`));
  return StateBuilder.from()
    .withName(name)
    .withKVUpdates(localWlEp1, ...tiers, ...pols)
    .withIPSet(ALL, EP1_IPS)
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(...pols.map((p) => pk(p.metadata.name, { tier: p.spec.tier! })))
    .withActiveProfiles(...EP1_PROFILES)
    .withEndpoint(
      'default/ep1',
      expected.map((t) => ({ name: t, ingress: [`${t}.pol`], egress: [`${t}.pol`] })),
    )
    .build();
}

export const tierOrderStates: readonly State[] = [
  tierOrderState('tierOrder 10/20/30', [10, 20, 30], ['tier-1', 'tier-2', 'tier-3']),
  tierOrderState('tierOrder 30/20/10', [30, 20, 10], ['tier-3', 'tier-2', 'tier-1']),
  tierOrderState('tierOrder equal', [10, 10, 10], ['tier-1', 'tier-2', 'tier-3']),
  tierOrderState('tierOrder nil order last', [undefined, 20, 10], ['tier-3', 'tier-2', 'tier-1']),
  tierOrderState('tierOrder missing Tier object last', ['missing', 20, 30], ['tier-2', 'tier-3', 'tier-1']),
];

// ---- direction-only policies ----------------------------------------------------------------

const ingressOnly = gnp('pol-in', { order: 10, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny', source: { nets: ['10.9.0.0/16'] } }] });
const egressOnly = gnp('pol-out', { order: 20, selector: "id == 'loc-ep-1'", types: ['Egress'], egress: [{ action: 'Pass', destination: { notSelector: "b == 'b'" } }] });

const untrackedPol = { ...gnp('untracked', { order: 1, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny', source: { selector: "b == 'b'" } }] }) };
untrackedPol.spec = { ...untrackedPol.spec, doNotTrack: true, applyOnForward: true };
const preDnatPol = { ...gnp('pre-dnat', { order: 2, selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Deny', source: { nets: ['10.8.0.0/16'] } }] }) };
preDnatPol.spec = { ...preDnatPol.spec, preDNAT: true, applyOnForward: true };

export const directionStates: readonly State[] = [
  StateBuilder.from()
    .withName('untracked and pre-DNAT policies are active but not in workload endpoint tiers')
    .withKVUpdates(localWlEp1, untrackedPol, preDnatPol, ingressOnly)
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(pk('untracked'), pk('pre-dnat'), pk('pol-in'))
    .withActiveProfiles(...EP1_PROFILES)
    .withEndpoint('default/ep1', [{ name: 'default', ingress: ['pol-in'], egress: [] }])
    .build(),
  StateBuilder.from()
    .withName('ingress-only and egress-only policies')
    .withKVUpdates(localWlEp1, localWlEp2, ingressOnly, egressOnly)
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(pk('pol-in'), pk('pol-out'))
    .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
    .withEndpoint('default/ep1', [{ name: 'default', ingress: ['pol-in'], egress: ['pol-out'] }])
    .withEndpoint('default/ep2', [{ name: 'default', ingress: ['pol-in'], egress: [] }])
    .build(),
  StateBuilder.from()
    .withName('egress-only policy alone')
    .withKVUpdates(localWlEp1, localWlEp2, egressOnly)
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(pk('pol-out'))
    .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
    .withEndpoint('default/ep1', [{ name: 'default', ingress: [], egress: ['pol-out'] }])
    .withEndpoint('default/ep2', [])
    .build(),
];

// ---- named ports ---------------------------------------------------------------------------

const EP1_TCPPORT = ['10.0.0.1,tcp:8080', '10.0.0.2,tcp:8080', 'fc00:fe11::1,tcp:8080', 'fc00:fe11::2,tcp:8080'];
const EP2_TCPPORT = ['10.0.0.2,tcp:8080', '10.0.0.3,tcp:8080', 'fc00:fe11::2,tcp:8080', 'fc00:fe11::3,tcp:8080'];

function namedPortPolicy(rule: Rule): GlobalNetworkPolicy {
  return gnp('pol-1', {
    order: 20,
    selector: "a == 'a'",
    ingress: [rule],
    egress: [{ action: 'Allow', source: { selector: "b == 'b'" } }],
  });
}

const namedPortBase = (name: string, rule: Rule): StateBuilder =>
  StateBuilder.from()
    .withName(name)
    .withKVUpdates(localWlEp1, namedPortPolicy(rule))
    .withIPSet(B_EQ_B, EP1_IPS)
    .withActivePolicies(pk('pol-1'))
    .withActiveProfiles(...EP1_PROFILES)
    .withEndpoint('default/ep1', EP1_TIERS);

const localEp1WithNamedPortPolicy = namedPortBase('localEp1WithNamedPortPolicy', {
  action: 'Allow',
  protocol: 'TCP',
  source: { selector: 'all()', ports: ['tcpport'] },
}).withIPSet(np('all()', 'tcp', 'tcpport'), EP1_TCPPORT);

const localEpsWithNamedPortPolicy = localEp1WithNamedPortPolicy
  .withName('localEpsWithNamedPortPolicy')
  .withKVUpdates(localWlEp2)
  .withIPSet(np('all()', 'tcp', 'tcpport'), [...new Set([...EP1_TCPPORT, ...EP2_TCPPORT])])
  .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
  .withEndpoint('default/ep2', EP1_TIERS);

const sharedIpDifferentPorts = namedPortBase('two endpoints, shared IP, different port numbers', {
  action: 'Allow',
  protocol: 'TCP',
  destination: { ports: ['tcpport2'] },
})
  .withKVUpdates(localWlEp2)
  .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
  .withEndpoint('default/ep2', EP1_TIERS)
  .withIPSet(np('all()', 'tcp', 'tcpport2'), [
    '10.0.0.1,tcp:1234',
    '10.0.0.2,tcp:1234',
    'fc00:fe11::1,tcp:1234',
    'fc00:fe11::2,tcp:1234',
    '10.0.0.2,tcp:2345',
    '10.0.0.3,tcp:2345',
    'fc00:fe11::2,tcp:2345',
    'fc00:fe11::3,tcp:2345',
  ]);

const protocolMismatch = namedPortBase('named port with mismatched protocol', {
  action: 'Allow',
  protocol: 'UDP',
  destination: { ports: ['tcpport', 'udpport'] },
})
  .withIPSet(np('all()', 'udp', 'tcpport'), [])
  .withIPSet(np('all()', 'udp', 'udpport'), ['10.0.0.1,udp:9091', '10.0.0.2,udp:9091', 'fc00:fe11::1,udp:9091', 'fc00:fe11::2,udp:9091']);

const NEG_MERGED = "(all()) && (!(foo == 'bar'))";
const negatedNamedPort = namedPortBase('negated named port', {
  action: 'Allow',
  protocol: 'TCP',
  source: { selector: 'all()', notSelector: "foo == 'bar'", notPorts: ['tcpport'] },
})
  .withIPSet(np(NEG_MERGED, 'tcp', 'tcpport'), EP1_TCPPORT)
  .withIPSet(sel(NEG_MERGED), EP1_IPS);

const namedAndNumericPorts = namedPortBase('named and numeric ports on one side', {
  action: 'Allow',
  protocol: 'TCP',
  source: { selector: "b == 'b'", ports: ['tcpport', 80] },
}).withIPSet(np("b == 'b'", 'tcp', 'tcpport'), EP1_TCPPORT);

const namedPortNoProtocol = namedPortBase('named port, rule without protocol matches every protocol', {
  action: 'Allow',
  destination: { ports: ['udpport'] },
}).withIPSet(np('all()', 'any', 'udpport'), ['10.0.0.1,udp:9091', '10.0.0.2,udp:9091', 'fc00:fe11::1,udp:9091', 'fc00:fe11::2,udp:9091']);

export const namedPortStates: readonly State[] = [
  localEp1WithNamedPortPolicy.build(),
  localEpsWithNamedPortPolicy.build(),
  sharedIpDifferentPorts.build(),
  protocolMismatch.build(),
  negatedNamedPort.build(),
  namedAndNumericPorts.build(),
  namedPortNoProtocol.build(),
];

// ---- named port through inherited profile labels -------------------------------------------

const inheritPolicy = gnp('pol-1', {
  order: 20,
  selector: "a == 'a'",
  types: ['Ingress'],
  ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "shared == 'yes'", ports: ['tcpport'] } }],
});
const SHARED_NP = np("shared == 'yes'", 'tcp', 'tcpport');
const inheritBase = StateBuilder.from()
  .withKVUpdates(localWlEp1, localWlEp2, inheritPolicy)
  .withActivePolicies(pk('pol-1'))
  .withActiveProfiles('prof-1', 'prof-2', 'prof-3', 'prof-missing')
  .withEndpoint('default/ep1', [{ name: 'default', ingress: ['pol-1'], egress: [] }])
  .withEndpoint('default/ep2', [{ name: 'default', ingress: ['pol-1'], egress: [] }]);

export const inheritStates: readonly State[] = [
  inheritBase.withName('no profile labels').withIPSet(SHARED_NP, []).build(),
  inheritBase
    .withName('prof-1 carries the label: ep1 only')
    .withKVUpdates(profile('prof-1', { shared: 'yes' }))
    .withIPSet(SHARED_NP, EP1_TCPPORT)
    .build(),
  inheritBase
    .withName('prof-2 carries the label too: both endpoints')
    .withKVUpdates(profile('prof-1', { shared: 'yes' }), profile('prof-2', { shared: 'yes' }))
    .withIPSet(SHARED_NP, [...new Set([...EP1_TCPPORT, ...EP2_TCPPORT])])
    .build(),
  inheritBase
    .withName('prof-2 label changed: ep1 only')
    .withKVUpdates(profile('prof-1', { shared: 'yes' }), profile('prof-2', { shared: 'no' }))
    .withIPSet(SHARED_NP, EP1_TCPPORT)
    .build(),
  inheritBase
    .withName('endpoint label wins over profile label')
    .withKVUpdates(
      profile('prof-1', { shared: 'yes' }),
      profile('prof-2', { shared: 'yes' }),
      wep('ep2', { ...epOpts(localWlEp2), labels: { ...localWlEp2.metadata.labels, shared: 'no' } }),
    )
    .withIPSet(SHARED_NP, EP1_TCPPORT)
    .build(),
  inheritBase
    .withName('earlier profile wins over later one')
    .withKVUpdates(profile('prof-2', { shared: 'no' }), profile('prof-3', { shared: 'yes' }))
    .withIPSet(SHARED_NP, [])
    .build(),
  inheritBase
    .withName('ep1 drops its profiles')
    .withKVUpdates(profile('prof-1', { shared: 'yes' }), wep('ep1', { ...epOpts(localWlEp1), profiles: [] }))
    .withActiveProfiles('prof-2', 'prof-3')
    .withIPSet(SHARED_NP, [])
    .build(),
];

function epOpts(ep: WorkloadEndpoint): Parameters<typeof wep>[1] {
  return {
    node: ep.spec.node!,
    namespace: ep.metadata.namespace!,
    labels: ep.metadata.labels ?? {},
    ips: ep.spec.ipNetworks ?? [],
    profiles: ep.spec.profiles ?? [],
    ports: ep.spec.ports ?? [],
  };
}

// ---- namespaced vs global selectors --------------------------------------------------------

const nsEp = (name: string, ns: string, ip: string, labels: Record<string, string>): WorkloadEndpoint =>
  wep(name, { namespace: ns, labels, ips: [ip], profiles: [`kns.${ns}`] });
const webProd = nsEp('web', 'prod', '10.2.0.1/32', { app: 'web' });
const dbProd = nsEp('db', 'prod', '10.2.0.2/32', { app: 'db' });
const webDev = nsEp('web', 'dev', '10.3.0.1/32', { app: 'web' });
const dbDevRemote = wep('db', { node: REMOTE_NODE, namespace: 'dev', labels: { app: 'db' }, ips: ['10.3.0.2/32'], profiles: ['kns.dev'] });
const knsProd = profile('kns.prod', { 'pcns.team': 'shop', 'pcns.projectcalico.org/name': 'prod' }, true);
const knsDev = profile('kns.dev', { 'pcns.team': 'dev', 'pcns.projectcalico.org/name': 'dev' }, true);

const npWeb = knp('prod', 'allow-db', {
  selector: "app == 'web'",
  egress: [{ action: 'Allow', destination: { selector: "app == 'db'" } }],
  types: ['Egress'],
});
const NS_PROD_DB = sel("(projectcalico.org/namespace == 'prod') && (app == 'db')");
const gnpDb = gnp('global-db', {
  order: 5,
  selector: "app == 'web'",
  egress: [{ action: 'Allow', destination: { selector: "app == 'db'" } }],
  types: ['Egress'],
});
const GLOBAL_DB = sel("app == 'db'");
const npNsSel = knp('prod', 'from-dev', {
  selector: 'all()',
  ingress: [{ action: 'Allow', source: { namespaceSelector: "team == 'dev'", selector: "app == 'db'" } }],
  types: ['Ingress'],
});
const PCNS_DEV_DB = sel("(pcns.team == 'dev') && (app == 'db')");
const npAllNs = knp('prod', 'from-all-ns', {
  order: 1,
  selector: "app == 'db'",
  ingress: [{ action: 'Allow', source: { namespaceSelector: 'all()' } }],
  types: ['Ingress'],
});
const ALL_NS = sel('has(projectcalico.org/namespace)');

const nsBase = StateBuilder.from().withKVUpdates(knsProd, knsDev, webProd, dbProd, webDev, dbDevRemote);

export const namespaceStates: readonly State[] = [
  nsBase
    .withName('namespaced policy scopes its selector and rule selector to its namespace')
    .withKVUpdates(npWeb)
    .withIPSet(NS_PROD_DB, ['10.2.0.2/32'])
    .withActivePolicies(pk('allow-db', { namespace: 'prod' }))
    .withActiveProfiles('kns.dev', 'kns.prod')
    .withEndpoint('prod/web', [{ name: 'default', ingress: [], egress: ['allow-db'] }])
    .withEndpoint('prod/db', [])
    .withEndpoint('dev/web', [])
    .build(),
  nsBase
    .withName('global policy selects across namespaces')
    .withKVUpdates(gnpDb)
    .withIPSet(GLOBAL_DB, ['10.2.0.2/32', '10.3.0.2/32'])
    .withActivePolicies(pk('global-db'))
    .withActiveProfiles('kns.dev', 'kns.prod')
    .withEndpoint('prod/web', [{ name: 'default', ingress: [], egress: ['global-db'] }])
    .withEndpoint('prod/db', [])
    .withEndpoint('dev/web', [{ name: 'default', ingress: [], egress: ['global-db'] }])
    .build(),
  nsBase
    .withName('namespaceSelector uses pcns. labels; all() means any namespace')
    .withKVUpdates(npNsSel, npAllNs, npWeb)
    .withIPSet(PCNS_DEV_DB, ['10.3.0.2/32'])
    .withIPSet(ALL_NS, ['10.2.0.1/32', '10.2.0.2/32', '10.3.0.1/32', '10.3.0.2/32'])
    .withIPSet(NS_PROD_DB, ['10.2.0.2/32'])
    .withActivePolicies(pk('from-dev', { namespace: 'prod' }), pk('from-all-ns', { namespace: 'prod' }), pk('allow-db', { namespace: 'prod' }))
    .withActiveProfiles('kns.dev', 'kns.prod')
    .withEndpoint('prod/web', [{ name: 'default', ingress: ['from-dev'], egress: ['allow-db'] }])
    .withEndpoint('prod/db', [{ name: 'default', ingress: ['from-all-ns', 'from-dev'], egress: [] }])
    .withEndpoint('dev/web', [])
    .build(),
  nsBase
    .withName('namespace profile labels changed')
    .withKVUpdates(npNsSel, profile('kns.dev', { 'pcns.team': 'other' }, true))
    .withIPSet(PCNS_DEV_DB, [])
    .withActivePolicies(pk('from-dev', { namespace: 'prod' }))
    .withActiveProfiles('kns.dev', 'kns.prod')
    .withEndpoint('prod/web', [{ name: 'default', ingress: ['from-dev'], egress: [] }])
    .withEndpoint('prod/db', [{ name: 'default', ingress: ['from-dev'], egress: [] }])
    .withEndpoint('dev/web', [])
    .build(),
];

// ---- endpoint lifecycle on this node ------------------------------------------------------------

export const lifecycleStates: readonly State[] = [
  localEp1WithPolicy.withName('ep1 local').build(),
  localEp1WithPolicy
    .withName('ep1 moved to a remote node')
    .withKVUpdates(wep('ep1', { ...epOpts(localWlEp1), node: REMOTE_NODE }))
    .withoutIPSets()
    .withActivePolicies()
    .withActiveProfiles()
    .withEndpoint('default/ep1', null)
    .build(),
  localEp1WithPolicy
    .withName('ep1 labels no longer match the policy')
    .withKVUpdates(wep('ep1', { ...epOpts(localWlEp1), labels: { id: 'loc-ep-1', a: 'z', b: 'b' } }))
    .withoutIPSets()
    .withActivePolicies()
    .withEndpoint('default/ep1', [])
    .build(),
  localEp1WithPolicy
    .withName('policy replaced by one in another tier')
    .withKVDeletes('GlobalNetworkPolicy/pol-1')
    .withKVUpdates(gnp('pol-1', { ...policy1Order20.spec, selector: "a == 'a'", tier: 'security' }), tier('security', 100))
    .withActivePolicies(pk('security.pol-1', { tier: 'security' }))
    .withEndpoint('default/ep1', [{ name: 'security', ingress: ['security.pol-1'], egress: ['security.pol-1'] }])
    .build(),
  emptyState,
];

// ---- invalid policies are enforced fail-closed (src/calc/fail-closed.ts) ----------------------------

/** Its selector cannot be parsed: the GlobalNetworkPolicy's stand-in selects all(). */
const invalidSelectorPolicy = {
  ...policy1Order20,
  spec: { ...policy1Order20.spec, selector: "a == 'a' &&" },
} as GlobalNetworkPolicy;

/** A rule is invalid ("HTTP" is not a Kubernetes port name): the stand-in keeps the selector. */
const invalidRulePolicy = {
  ...policy1Order20,
  spec: { ...policy1Order20.spec, ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['HTTP'] } }] },
} as GlobalNetworkPolicy;

export const invalidStates: readonly State[] = [
  localEp1WithPolicy.withName('valid policy').build(),
  localEp1WithPolicy
    .withName('policy replaced by one with an unreadable selector: still applies to ep1 in both directions, with no rules')
    .withKVUpdates(invalidSelectorPolicy)
    .withoutIPSets()
    .build(),
  localEp1WithPolicy
    .withName('policy replaced by one with an invalid rule: same selector and directions, no rules')
    .withKVUpdates(invalidRulePolicy)
    .withoutIPSets()
    .build(),
];

export const stateLists: ReadonlyArray<{ readonly name: string; readonly states: readonly State[] }> = [
  { name: 'endpoints', states: endpointStates },
  { name: 'policy order', states: policyOrderStates },
  { name: 'tier order', states: tierOrderStates },
  { name: 'directions', states: directionStates },
  { name: 'named ports', states: namedPortStates },
  { name: 'inherited labels', states: inheritStates },
  { name: 'namespaces', states: namespaceStates },
  { name: 'lifecycle', states: lifecycleStates },
  { name: 'invalid objects', states: invalidStates },
];
