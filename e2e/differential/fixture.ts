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
 */
export const PODS: ReadonlyArray<ScenarioPod & { readonly ip: string; readonly ip6: string; readonly node: string }> = [
  { namespace: 'alpha', name: 'a1', node: 'node-1', ip: '10.66.1.11', ip6: 'fd00:66:1::11', serviceAccount: 'front', labels: { app: 'web', role: 'admin' }, containerPorts: [http, dns] },
  { namespace: 'alpha', name: 'a2', node: 'node-2', ip: '10.66.1.12', ip6: 'fd00:66:1::12', serviceAccount: 'default', labels: { app: 'db' }, containerPorts: [httpAlt] },
  { namespace: 'beta', name: 'b1', node: 'node-1', ip: '10.66.2.21', ip6: 'fd00:66:2::21', serviceAccount: 'ops', labels: { app: 'web' }, containerPorts: [http, mdns] },
  { namespace: 'beta', name: 'b2', node: 'node-2', ip: '10.66.2.22', ip6: 'fd00:66:2::22', serviceAccount: 'default', labels: { app: 'cache', role: 'client' }, containerPorts: [] },
  { namespace: 'gamma', name: 'g1', node: 'node-1', ip: '10.66.3.31', ip6: 'fd00:66:3::31', serviceAccount: 'ops', labels: { app: 'db' }, containerPorts: [dns] },
  { namespace: 'gamma', name: 'g2', node: 'node-2', ip: '10.66.3.32', ip6: 'fd00:66:3::32', serviceAccount: 'front', labels: { role: 'client' }, containerPorts: [httpAlt, mdns] },
];

export const podKey = (p: { readonly namespace: string; readonly name: string }): string => `${p.namespace}/${p.name}`;
