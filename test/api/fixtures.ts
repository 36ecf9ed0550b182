/**
 * Realistic, valid v3 objects for tests: the kind of manifests a Calico user writes (or
 * Calico's controllers generate). Each must validate with no findings at all. Tests derive
 * broken variants with `withSpec` / structuredClone rather than editing these.
 */
import type { GlobalNetworkPolicy, NetworkPolicy, Profile, Tier, V3Resource, WorkloadEndpoint } from '../../src/api/types.ts';

export const securityTier: Tier = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name: 'security' },
  spec: { order: 100, defaultAction: 'Pass' },
};

export const defaultTier: Tier = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name: 'default' },
  spec: { order: 1_000_000, defaultAction: 'Deny' },
};

/** A shop front end: ingress from the ingress controller, egress to the API and DNS. */
export const shopFrontend: NetworkPolicy = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'frontend', namespace: 'shop', labels: { 'app.kubernetes.io/part-of': 'shop' } },
  spec: {
    order: 100,
    selector: "app == 'frontend'",
    types: ['Ingress', 'Egress'],
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: {
          selector: "app.kubernetes.io/name == 'ingress-nginx'",
          namespaceSelector: "kubernetes.io/metadata.name == 'ingress-nginx'",
        },
        destination: { ports: [8080, 'http', '9000:9010'] },
      },
    ],
    egress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        destination: { selector: "app == 'api'", ports: [443] },
      },
      {
        action: 'Allow',
        protocol: 'UDP',
        destination: {
          namespaceSelector: "kubernetes.io/metadata.name == 'kube-system'",
          selector: "k8s-app == 'kube-dns'",
          ports: [53],
        },
      },
      { action: 'Deny' },
    ],
  },
};

/** A tiered GlobalNetworkPolicy: quarantine, ICMP, nets, Log before Deny, Pass at the end. */
export const securityBaseline: GlobalNetworkPolicy = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'security.baseline' },
  spec: {
    tier: 'security',
    order: 10,
    selector: 'all()',
    namespaceSelector: "has(projectcalico.org/name) && projectcalico.org/name not in {'kube-system'}",
    types: ['Ingress', 'Egress'],
    ingress: [
      { action: 'Log', source: { selector: "quarantine == 'true'" } },
      { action: 'Deny', source: { selector: "quarantine == 'true'" } },
      { action: 'Allow', protocol: 'ICMP', ipVersion: 4, icmp: { type: 8, code: 0 } },
      { action: 'Allow', protocol: 'ICMPv6', ipVersion: 6, icmp: { type: 128 } },
      { action: 'Pass' },
    ],
    egress: [
      {
        action: 'Deny',
        destination: { nets: ['169.254.169.254/32'], notNets: ['10.0.0.0/8'] },
        metadata: { annotations: { reason: 'block the cloud metadata service' } },
      },
      { action: 'Allow', protocol: 'TCP', destination: { nets: ['2001:db8::/32'], ports: ['443'] } },
      {
        action: 'Allow',
        destination: { namespaceSelector: 'global()', selector: "role == 'bastion'" },
      },
      { action: 'Pass' },
    ],
  },
};

/** Host-protection style pre-DNAT policy. */
export const preDnatBlock: GlobalNetworkPolicy = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'block-nodeport-scanners' },
  spec: {
    order: 20,
    preDNAT: true,
    applyOnForward: true,
    selector: "has(kubernetes-host)",
    types: ['Ingress'],
    ingress: [
      { action: 'Deny', protocol: 'TCP', source: { nets: ['192.0.2.0/24'] }, destination: { ports: ['30000:32767'] } },
    ],
  },
};

/** The profile Calico generates for a namespace (`kns.<ns>`). */
export const namespaceProfile: Profile = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'Profile',
  metadata: { name: 'kns.shop' },
  spec: {
    ingress: [{ action: 'Allow' }],
    egress: [{ action: 'Allow' }],
    labelsToApply: { 'pcns.projectcalico.org/name': 'shop', 'pcns.team': 'payments' },
  },
};

/** What Calico's pod→WEP conversion writes for a pod with one named port. */
export const frontendEndpoint: WorkloadEndpoint = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'WorkloadEndpoint',
  metadata: {
    name: 'node1-k8s-frontend--7d4b9c-eth0',
    namespace: 'shop',
    labels: {
      app: 'frontend',
      'projectcalico.org/namespace': 'shop',
      'projectcalico.org/orchestrator': 'k8s',
      'projectcalico.org/serviceaccount': 'frontend',
    },
  },
  spec: {
    orchestrator: 'k8s',
    node: 'node1',
    pod: 'frontend-7d4b9c',
    endpoint: 'eth0',
    containerID: '1a2b3c4d5e6f',
    serviceAccountName: 'frontend',
    ipNetworks: ['10.244.1.17/32', 'fd00:10:244:1::11/128'],
    profiles: ['kns.shop', 'ksa.shop.frontend'],
    interfaceName: 'cali0a1b2c3d4e5',
    mac: 'ee:ee:ee:ee:ee:ee',
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  },
};

export const VALID_FIXTURES: readonly V3Resource[] = [
  securityTier,
  defaultTier,
  shopFrontend,
  securityBaseline,
  preDnatBlock,
  namespaceProfile,
  frontendEndpoint,
];
