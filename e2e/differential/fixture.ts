/**
 * The fixed small cluster every differential round runs on: three namespaces, six dual-stack
 * pods on two nodes, three ServiceAccount names, and the ports every pod serves. Only
 * policies change between rounds, so the network namespaces, veths and servers are built
 * once.
 *
 * The labels are chosen so that every generated selector splits the pods in a different way:
 * `app` takes three values and is missing on one pod, `role` is on two pods only, the
 * namespaces share `team` values, and ServiceAccounts of one name sit in different namespaces.
 */
import type { ScenarioPod } from '../../src/simulate/scenario-file.ts';

export const NODES = ['node-1', 'node-2'] as const;

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
