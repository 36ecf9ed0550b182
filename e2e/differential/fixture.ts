/**
 * The fixed small cluster every differential round runs on: three namespaces, six dual-stack
 * pods on two nodes, three ServiceAccount names, and the ports every pod serves. Only
 * policies change between rounds, so the network namespaces, veths and servers are built
 * once.
 *
 * The labels are chosen so that every generated selector splits the pods in a different way:
 * `app` takes three values and is missing on one pod, `role` is on two pods only, the
 * namespaces share `team` values, and ServiceAccounts of one name sit in different namespaces.
 * Services and EndpointSlices (SERVICE_OBJECTS) give `services` rule matches their members.
 */
import { SERVICE_NAME_LABEL, type K8sEndpointSlice, type K8sService } from '../../src/api/index.ts';
import { FELIX_FAILSAFE_INBOUND, FELIX_FAILSAFE_OUTBOUND, type FailsafeConfig } from '../../src/dataplane/index.ts';
import type { ScenarioPod } from '../../src/simulate/scenario-file.ts';
import type { ScenarioNode } from '../../src/simulate/scenario-nodes.ts';

export const NODES = ['node-1', 'node-2'] as const;

/** What every node serves in its host network namespace: TCP 22 is a Felix failsafe port (inbound), the others are not. */
export const HOST_PORTS: ReadonlyArray<{ readonly port: number; readonly protocol: 'TCP' | 'UDP' }> = [
  { port: 22, protocol: 'TCP' },
  { port: 8080, protocol: 'TCP' },
  { port: 5353, protocol: 'UDP' },
];

/**
 * Felix's `DefaultEndpointToHostAction` on every side of every differential: the last rule of
 * `cali-wl-to-host`, which decides pod → own host after the pod's egress policy. ACCEPT, what
 * Calico's manifests set (Felix's own default is DROP), so that the pod's egress policy decides
 * and the probes compare it. Felix (e2e/felix/felix-process.ts), Tessera's agents
 * (`--default-endpoint-to-host-action`, e2e/felix/tessera-agents.ts), the kernel differential's
 * drivers (kernel-cluster.ts) and the verdict engine (differential.ts) are all given this value.
 */
export const ENDPOINT_TO_HOST_ACTION = 'ACCEPT' as const;

/**
 * The failsafe ports on every side: Felix's defaults (FailsafeInboundHostPorts /
 * FailsafeOutboundHostPorts, which Felix keeps: felix-process.ts sets none). Tessera's agent
 * defaults to more inbound ports (its pods' health ports and the kubelet's, dataplane/failsafes.ts),
 * so its agents (`--failsafe-inbound-host-ports`/`--failsafe-outbound-host-ports`), the kernel
 * differential's drivers and the verdict engine are given these.
 */
export const FAILSAFES: FailsafeConfig = Object.freeze({ inbound: FELIX_FAILSAFE_INBOUND, outbound: FELIX_FAILSAFE_OUTBOUND });

/**
 * The nodes as hosts (the scenario format's `nodes`, "Hosts as endpoints"): each has an address
 * of its own per family, in the pods' /16 and /32 but in no pod's /24 or /64, held by its
 * `uplink` — the node namespace's link to the other node (e2e/runner/network.ts names the link
 * to node index `j` `tsn<j>`), through which every packet between the nodes passes — so a
 * HostEndpoint naming the uplink, one expecting the address, and a `*` one all govern the
 * traffic that crosses nodes. Labels are the Node objects' (the Felix differential creates them
 * so); HostEndpoints copy them now and then, as automatic host endpoints do.
 */
export const FIXTURE_NODES: ReadonlyArray<ScenarioNode & { readonly name: (typeof NODES)[number]; readonly ip: string; readonly ip6: string; readonly uplink: string; readonly labels: Readonly<Record<string, string>> }> = [
  { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1', zone: 'east', 'node-role': 'edge' }, ip: '10.66.0.1', ip6: 'fd00:66::1', uplink: 'tsn1', hostPorts: HOST_PORTS },
  { name: 'node-2', labels: { 'kubernetes.io/hostname': 'node-2', zone: 'west' }, ip: '10.66.0.2', ip6: 'fd00:66::2', uplink: 'tsn0', hostPorts: HOST_PORTS },
];

/** `kubernetes.io/metadata.name` is added by the translation, as the API server adds it. */
export const NAMESPACES: ReadonlyArray<{ readonly name: string; readonly labels: Readonly<Record<string, string>> }> = [
  { name: 'alpha', labels: { team: 'red' } },
  { name: 'beta', labels: { team: 'blue' } },
  { name: 'gamma', labels: { team: 'red', env: 'prod' } },
];

/** Every pod serves all of these on both families; named ones differ per pod (see PODS). */
export const SERVED_PORTS: ReadonlyArray<{ readonly port: number; readonly protocol: 'TCP' | 'UDP' }> = [
  { port: 80, protocol: 'TCP' },
  { port: 8080, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
  { port: 5353, protocol: 'UDP' },
];

const http = { name: 'http', containerPort: 80, protocol: 'TCP' } as const;
const httpAlt = { name: 'http', containerPort: 8080, protocol: 'TCP' } as const;
const dns = { name: 'dns', containerPort: 53, protocol: 'UDP' } as const;
const mdns = { name: 'dns', containerPort: 5353, protocol: 'UDP' } as const;

/**
 * The pods, as a scenario file writes them (so a failing round is a scenario file as it is).
 * ServiceAccounts carry no labels (a scenario file cannot give them any): service-account
 * selectors match on `projectcalico.org/name`, which every ServiceAccount profile carries.
 *
 * Three pods try to pass for another identity with the labels only the translation may set
 * (issue 27): a2 (account default) claims `front` and `ops` through `pcsa.projectcalico.org/name`
 * and `projectcalico.org/serviceaccount`; b2 (in beta, team blue) claims alpha and team red
 * through `projectcalico.org/namespace` and `pcns.*`; g2 claims another orchestrator and account
 * `ops`. Every round's service-account, namespace and orchestrator terms run over them.
 */
export const PODS: ReadonlyArray<ScenarioPod & { readonly ip: string; readonly ip6: string; readonly node: string }> = [
  { namespace: 'alpha', name: 'a1', node: 'node-1', ip: '10.66.1.11', ip6: 'fd00:66:1::11', serviceAccount: 'front', labels: { app: 'web', role: 'admin' }, containerPorts: [http, dns] },
  { namespace: 'alpha', name: 'a2', node: 'node-2', ip: '10.66.1.12', ip6: 'fd00:66:1::12', serviceAccount: 'default', labels: { app: 'db', 'pcsa.projectcalico.org/name': 'front', 'projectcalico.org/serviceaccount': 'ops' }, containerPorts: [httpAlt] },
  { namespace: 'beta', name: 'b1', node: 'node-1', ip: '10.66.2.21', ip6: 'fd00:66:2::21', serviceAccount: 'ops', labels: { app: 'web' }, containerPorts: [http, mdns] },
  { namespace: 'beta', name: 'b2', node: 'node-2', ip: '10.66.2.22', ip6: 'fd00:66:2::22', serviceAccount: 'default', labels: { app: 'cache', role: 'client', 'projectcalico.org/namespace': 'alpha', 'pcns.team': 'red', 'pcns.projectcalico.org/name': 'alpha' }, containerPorts: [] },
  { namespace: 'gamma', name: 'g1', node: 'node-1', ip: '10.66.3.31', ip6: 'fd00:66:3::31', serviceAccount: 'ops', labels: { app: 'db' }, containerPorts: [dns] },
  { namespace: 'gamma', name: 'g2', node: 'node-2', ip: '10.66.3.32', ip6: 'fd00:66:3::32', serviceAccount: 'front', labels: { role: 'client', 'projectcalico.org/orchestrator': 'other', 'pcsa.projectcalico.org/name': 'ops' }, containerPorts: [httpAlt, mdns] },
];

export const podKey = (p: { readonly namespace: string; readonly name: string }): string => `${p.namespace}/${p.name}`;

/** An EndpointSlice given as is (as one listed from a cluster), of Service `namespace/service`. */
function slice(namespace: string, service: string, name: string, addressType: 'IPv4' | 'IPv6', addresses: readonly string[][], ports: K8sEndpointSlice['ports']): K8sEndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { [SERVICE_NAME_LABEL]: service } },
    addressType,
    endpoints: addresses.map((a) => ({ addresses: [...a] })),
    ports,
  };
}

/**
 * What `services` rule matches read (issue 27): EndpointSlices, some given as they would be
 * listed from a cluster and some derived by the simulator from v1 Services and the pods. The
 * translation turns both into the same EndpointSlice resources, which the verdict engine's
 * and the kernel's calc graphs are both fed. Every member port is one the pods serve, so
 * probes hit members as well as their other ports:
 * - `alpha/http`: a named targetPort that resolves differently per pod — a1 on TCP 80, a2 on
 *   TCP 8080 (two slices, as the EndpointSlice controller groups them) — with an address that
 *   is no pod's (10.66.9.50) beside a2; IPv6 lists a1 only, so a2 is a member over IPv4 only;
 * - `gamma/dns`: UDP; g1 on 53 and g2 on 5353 over IPv4, a slice port without a number
 *   (contributes nothing), and one IPv6 slice listing both pods on UDP 53;
 * - `beta/remote`: a slice in beta whose endpoint is a pod of gamma (g1, TCP 80 and UDP 53);
 * - `beta/web`: a v1 Service the simulator derives slices for — `app: web` (b1), dual-stack,
 *   TCP 80 → `http` and UDP 53 → `dns` (b1's 5353);
 * - `beta/external`: a Service without a selector, so with no slices at all;
 * - `gamma/idle`: a Service whose selector matches no pod (only the empty placeholder slice).
 */
export const SERVICE_OBJECTS: ReadonlyArray<K8sEndpointSlice | K8sService> = [
  slice('alpha', 'http', 'http-a', 'IPv4', [['10.66.1.11']], [{ name: 'http', protocol: 'TCP', port: 80 }]),
  slice('alpha', 'http', 'http-b', 'IPv4', [['10.66.1.12'], ['10.66.9.50']], [{ name: 'http', protocol: 'TCP', port: 8080 }]),
  slice('alpha', 'http', 'http-c', 'IPv6', [['fd00:66:1::11']], [{ name: 'http', protocol: 'TCP', port: 80 }]),
  slice('gamma', 'dns', 'dns-a', 'IPv4', [['10.66.3.31']], [{ name: 'dns', protocol: 'UDP', port: 53 }, { name: 'any' }]),
  slice('gamma', 'dns', 'dns-b', 'IPv4', [['10.66.3.32']], [{ name: 'dns', protocol: 'UDP', port: 5353 }]),
  slice('gamma', 'dns', 'dns-c', 'IPv6', [['fd00:66:3::31'], ['fd00:66:3::32']], [{ name: 'dns', protocol: 'UDP', port: 53 }]),
  slice('beta', 'remote', 'remote-a', 'IPv4', [['10.66.3.31']], [{ name: 'http', protocol: 'TCP', port: 80 }, { name: 'dns', protocol: 'UDP', port: 53 }]),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'beta' },
    spec: {
      selector: { app: 'web' },
      ipFamilyPolicy: 'PreferDualStack',
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' },
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 'dns' },
      ],
    },
  },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'external', namespace: 'beta' }, spec: { ports: [{ port: 80 }] } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'idle', namespace: 'gamma' }, spec: { selector: { app: 'none' }, ports: [{ port: 80 }] } },
];

/** The Services `services` rule matches name: every one above and one that does not exist. */
export const SERVICE_REFS: ReadonlyArray<{ readonly namespace: string; readonly name: string }> = [
  { namespace: 'alpha', name: 'http' },
  { namespace: 'gamma', name: 'dns' },
  { namespace: 'beta', name: 'remote' },
  { namespace: 'beta', name: 'web' },
  { namespace: 'beta', name: 'external' },
  { namespace: 'gamma', name: 'idle' },
  { namespace: 'alpha', name: 'missing' },
];
