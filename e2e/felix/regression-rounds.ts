/**
 * Fixed rounds of the Felix differential, one per defect of the Calico surface audit (issue 27)
 * that Felix v3.28 can express: each round is the audit's input written over the differential's
 * fixture (e2e/differential/fixture.ts), run through Felix and Tessera with every probe. Before
 * the audit's fixes Tessera's side got each of these wrong; a random round may or may not draw
 * them, these always do.
 *
 * Left out, because Felix v3.28 has no such feature or differs on purpose: the tie at order
 * 1000 (Calico 3.32's tie key, which Tessera follows; v3.28 breaks ties by name), `qosControls`
 * (not in v3.28's WorkloadEndpoint), profiles with rules (Kubernetes-datastore Calico derives
 * Profiles from Namespaces and ServiceAccounts only), staged kinds and tiers (not in v3.28), and
 * inputs the API server refuses before Felix could see them (a Kubernetes NetworkPolicy with
 * `protocol: tcp` or `port: 0`), and the two Felix defects README.md lists (`protocol` next to
 * `notProtocol`; a `services` match without a namespace).
 */
const v3 = 'projectcalico.org/v3';

export interface RegressionRound {
  readonly name: string;
  /** The audit item and what went wrong. */
  readonly defect: string;
  readonly policies: readonly unknown[];
}

export const REGRESSION_ROUNDS: readonly RegressionRound[] = [
  {
    name: 'notnets-other-family',
    defect: 'item 2: an Allow whose only CIDRs are IPv6 notNets matched IPv4 traffic (Felix leaves the rule out of the IPv4 chain)',
    policies: [
      { apiVersion: v3, kind: 'NetworkPolicy', metadata: { name: 'web', namespace: 'alpha' }, spec: { selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Allow', source: { notNets: ['fd00:66:2::/64'] } }] } },
      { apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 'egress-v4' }, spec: { order: 10, selector: "app == 'db'", types: ['Egress'], egress: [{ action: 'Deny', destination: { notNets: ['10.66.1.0/24'] } }, { action: 'Allow' }] } },
    ],
  },
  {
    name: 'spoofed-service-account',
    defect: 'item 3: a pod label claiming projectcalico.org/serviceaccount or pcsa.projectcalico.org/name passed for that account (a2 claims front and ops; g2 claims ops)',
    policies: [
      {
        apiVersion: v3,
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'accounts' },
        spec: {
          order: 10,
          types: ['Ingress'],
          ingress: [
            { action: 'Deny', source: { serviceAccounts: { names: ['front'] } } },
            { action: 'Allow', source: { serviceAccounts: { selector: "projectcalico.org/name == 'ops'" } } },
            { action: 'Deny', source: { selector: "projectcalico.org/serviceaccount == 'ops' || pcsa.projectcalico.org/name == 'ops'" } },
            { action: 'Allow' },
          ],
        },
      },
    ],
  },
  {
    name: 'spoofed-namespace',
    defect: 'item 3: pod labels claiming projectcalico.org/namespace or pcns.* passed for that namespace (b2, in beta, claims alpha and team red)',
    policies: [
      {
        apiVersion: v3,
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'namespaces' },
        spec: {
          order: 20,
          types: ['Ingress'],
          ingress: [
            { action: 'Deny', source: { namespaceSelector: "team == 'red'" } },
            { action: 'Deny', source: { selector: "projectcalico.org/namespace == 'alpha' || pcns.team == 'red' || projectcalico.org/orchestrator == 'other'" } },
            { action: 'Allow' },
          ],
        },
      },
    ],
  },
  {
    name: 'gnp-service-account-selector-all',
    defect: "item 6: a GlobalNetworkPolicy's serviceAccountSelector all() (Calico rewrites it to has(projectcalico.org/serviceaccount))",
    policies: [
      { apiVersion: v3, kind: 'GlobalNetworkPolicy', metadata: { name: 'sa-all' }, spec: { order: 30, serviceAccountSelector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80] } }] } },
    ],
  },
  {
    name: 'services-and-source-ports',
    defect: 'items 1 and 11: services matches (named targetPorts per pod, slices given and derived, a Service without slices) and source ports next to a source Service',
    policies: [
      {
        apiVersion: v3,
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'to-services' },
        spec: {
          order: 40,
          selector: "app == 'web' || app == 'db'",
          types: ['Egress'],
          egress: [
            { action: 'Allow', destination: { services: { name: 'http', namespace: 'alpha' } } },
            { action: 'Allow', destination: { services: { name: 'web', namespace: 'beta' } } },
            { action: 'Allow', destination: { services: { name: 'external', namespace: 'beta' } } },
            { action: 'Deny' },
          ],
        },
      },
      {
        apiVersion: v3,
        kind: 'NetworkPolicy',
        metadata: { name: 'from-dns', namespace: 'gamma' },
        spec: { order: 50, types: ['Ingress'], ingress: [{ action: 'Allow', protocol: 'UDP', source: { services: { name: 'dns', namespace: 'gamma' }, ports: ['1024:65535'] } }, { action: 'Allow', protocol: 'UDP', source: { services: { name: 'remote', namespace: 'beta' } } }] },
      },
    ],
  },
  {
    name: 'kubernetes-peers',
    defect: 'item 13 and the converter: ipBlock with except, named ports, endPort, empty and absent peer lists',
    policies: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'web', namespace: 'beta' },
        spec: {
          podSelector: { matchLabels: { app: 'web' } },
          ingress: [
            { from: [{ ipBlock: { cidr: '10.66.0.0/16', except: ['10.66.1.0/24'] } }, { ipBlock: { cidr: 'fd00:66::/32', except: ['fd00:66:3::32/128'] } }], ports: [{ port: 'http' }, { protocol: 'UDP', port: 5000, endPort: 6000 }] },
            { from: [{ namespaceSelector: { matchLabels: { team: 'red' } }, podSelector: { matchExpressions: [{ key: 'role', operator: 'DoesNotExist' }] } }] },
          ],
        },
      },
      { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-egress', namespace: 'gamma' }, spec: { podSelector: {}, policyTypes: ['Egress'], egress: [{ to: [] , ports: [{ port: 'dns', protocol: 'UDP' }] }] } },
    ],
  },
  {
    name: 'icmp-and-protocols',
    defect: "the kernel differential's first finds: notProtocol, ICMP type/code, notICMP, ICMPv6 (protocol next to notProtocol is not drawn: Felix v3.28 renders both as -p flags, which iptables refuses, and exits)",
    policies: [
      {
        apiVersion: v3,
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'icmp' },
        spec: {
          order: 60,
          types: ['Ingress', 'Egress'],
          ingress: [
            { action: 'Deny', notProtocol: 'TCP', source: { nets: ['10.66.2.0/24', '10.66.3.32/32'] } },
            { action: 'Allow', protocol: 'ICMP', icmp: { type: 8, code: 0 } },
            { action: 'Allow', protocol: 'ICMPv6', notICMP: { type: 128, code: 3 } },
            { action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } },
          ],
          egress: [{ action: 'Deny', protocol: 'ICMP', icmp: { type: 8, code: 1 } }, { action: 'Pass', protocol: 17 }, { action: 'Allow' }],
        },
      },
    ],
  },
];
