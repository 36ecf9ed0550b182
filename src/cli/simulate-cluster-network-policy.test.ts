/**
 * `tessera simulate` reads ClusterNetworkPolicies (issue 30) from scenario files and `-f`
 * files, any served version, with Nodes from a scenario's `nodes` (name, labels, ip) and from
 * Node objects: the verdicts follow Calico 3.32's tiers — kube-admin before the Kubernetes and
 * Calico policies of `default`, kube-baseline after them — and the egress `nodes` peer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runExplain } from './explain.ts';
import { runRender } from './render.ts';
import { runSimulate } from './simulate.ts';
import { capture } from './testdata/capture.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tessera-cnp-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

const namespaces = [
  { name: 'shop', labels: { team: 'shop' } },
  { name: 'other', labels: { team: 'other' } },
];
const pods = [
  { namespace: 'shop', name: 'a', labels: { app: 'a' }, ip: '10.65.0.1', node: 'node-1' },
  { namespace: 'shop', name: 'b', labels: { app: 'b' }, ip: '10.65.0.2', node: 'node-1' },
  { namespace: 'other', name: 'c', labels: { app: 'c' }, ip: '10.65.1.1', node: 'node-2' },
];
const nodes = [
  { name: 'node-1', labels: { role: 'worker' }, ip: '192.168.0.1', hostPorts: [{ port: 10250 }] },
  { name: 'node-2', labels: { role: 'control-plane' }, ip: '192.168.0.2', hostPorts: [{ port: 10250 }] },
];
const shop = { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } } };
const fromOther = [{ namespaces: { matchLabels: { team: 'other' } } }];
const cnp = (name: string, spec: unknown, version = 'v1beta1'): unknown => ({ apiVersion: `policy.networking.k8s.io/${version}`, kind: 'ClusterNetworkPolicy', metadata: { name }, spec });
const np = (name: string, app: string, from: unknown[]): unknown => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'shop' },
  spec: { podSelector: { matchLabels: { app } }, policyTypes: ['Ingress'], ingress: [{ from }] },
});
const probe = (from: string, to: string, expected: boolean, port = 80): unknown => ({ from, to, protocol: 'TCP', port, expected });

const SCENARIOS = {
  schema: 'calico-truth-tables/v1',
  scenarios: [
    {
      name: 'admin Deny over a NetworkPolicy allow',
      namespaces,
      pods,
      policies: [np('allow-all-to-b', 'b', [{ namespaceSelector: {} }]), cnp('deny-other', { tier: 'Admin', priority: 10, subject: shop, ingress: [{ name: 'no-other', action: 'Deny', from: fromOther }] })],
      probes: [probe('other/c', 'shop/b', false), probe('shop/a', 'shop/b', true)],
    },
    {
      name: 'Pass goes to the NetworkPolicies, skipping the rest of kube-admin (v1alpha2)',
      namespaces,
      pods,
      policies: [
        np('only-a-to-b', 'b', [{ podSelector: { matchLabels: { app: 'a' } } }]),
        cnp('pass-other', { tier: 'Admin', priority: 10, subject: shop, ingress: [{ action: 'Pass', from: fromOther }] }, 'v1alpha2'),
        cnp('deny-all', { tier: 'Admin', priority: 20, subject: shop, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] }),
      ],
      probes: [probe('other/c', 'shop/b', false), probe('other/c', 'shop/a', true), probe('shop/b', 'shop/a', false)],
    },
    {
      name: 'Baseline only where no NetworkPolicy isolates',
      namespaces,
      pods,
      policies: [np('other-to-b', 'b', [{ namespaceSelector: { matchLabels: { team: 'other' } } }]), cnp('baseline-deny', { tier: 'Baseline', priority: 0, subject: shop, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] })],
      probes: [probe('other/c', 'shop/b', true), probe('other/c', 'shop/a', false)],
      steps: [{ deletePolicies: [{ kind: 'NetworkPolicy', namespace: 'shop', name: 'other-to-b' }], probes: [probe('other/c', 'shop/b', false)] }],
    },
    {
      name: 'admin Accept over a NetworkPolicy that isolates; rule order inside a CNP; lower priority first',
      namespaces,
      pods,
      policies: [
        np('isolate-b', 'b', []),
        cnp('accept-other', { tier: 'Admin', priority: 5, subject: shop, ingress: [{ action: 'Accept', from: fromOther }, { action: 'Deny', from: [{ namespaces: {} }] }] }),
        cnp('deny-other-first-but-later', { tier: 'Admin', priority: 6, subject: shop, ingress: [{ action: 'Deny', from: fromOther }] }),
      ],
      probes: [probe('other/c', 'shop/b', true), probe('shop/a', 'shop/b', false)],
    },
    {
      name: 'egress networks 0.0.0.0/0 also matches pods',
      namespaces,
      pods,
      policies: [cnp('no-egress', { tier: 'Admin', priority: 1, subject: shop, egress: [{ action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] }] })],
      probes: [probe('shop/a', 'other/c', false), probe('other/c', 'shop/a', true)],
    },
    {
      name: 'egress nodes peer: the addresses of the Nodes the selector picks',
      namespaces,
      pods,
      nodes,
      policies: [cnp('no-kubelet-on-workers', { tier: 'Admin', priority: 1, subject: shop, egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'worker' } } }], protocols: [{ tcp: { destinationPort: { number: 10250 } } }] }] })],
      probes: [probe('shop/a', 'node-1', false, 10250), probe('shop/a', 'node-2', true, 10250), probe('other/c', 'node-1', true, 10250)],
    },
    {
      // Calico 3.32 writes a `namespaces` peer as a bare namespaceSelector, which also selects the
      // NetworkSets of those namespaces; the API's peer is their pods only (the converter's one
      // deliberate difference from Calico): node-2's address listed in a NetworkSet of `other`
      // is not denied by a Deny to `namespaces: other`.
      name: 'a namespaces peer is the pods of those namespaces, not their NetworkSets',
      namespaces,
      pods,
      nodes,
      policies: [
        { apiVersion: 'projectcalico.org/v3', kind: 'NetworkSet', metadata: { name: 'node-2', namespace: 'other', labels: { any: 'x' } }, spec: { nets: ['192.168.0.2/32'] } },
        cnp('no-egress-to-other', { tier: 'Admin', priority: 1, subject: shop, egress: [{ action: 'Deny', to: [{ namespaces: { matchLabels: { team: 'other' } } }] }] }),
      ],
      probes: [probe('shop/a', 'other/c', false), probe('shop/a', 'node-2', true, 10250)],
    },
  ],
};

describe('tessera simulate: ClusterNetworkPolicy scenarios', () => {
  it('every probe as expected: admin Deny over NP allow, Pass to NP, Baseline only where no NP isolates, admin Accept over NP isolation, rule order and priority, networks 0.0.0.0/0, the nodes peer, namespaces peers without NetworkSets', async () => {
    writeFileSync(path.join(dir, 'cnp.json'), JSON.stringify(SCENARIOS));
    const r = await capture(runSimulate, ['--scenarios', path.join(dir, 'cnp.json')]);
    expect(lines(r.stderr)).toEqual([]);
    expect(JSON.parse(lines(r.stdout).at(-1)!)).toEqual({ scenarios: 7, probes: 17, passed: 17, failed: 0 });
    expect(r.code).toBe(0);
  });
});

const FILES = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop, labels: {app: a}}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 10.65.0.1, podIPs: [{ip: 10.65.0.1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: shop, labels: {app: b}}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 10.65.0.2, podIPs: [{ip: 10.65.0.2}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {role: worker}}
status: {addresses: [{type: InternalIP, address: 192.168.0.1}, {type: Hostname, address: node-1}]}
---
apiVersion: policy.networking.k8s.io/v1beta1
kind: ClusterNetworkPolicy
metadata: {name: deny-b}
spec:
  tier: Admin
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}}
  ingress: [{name: no-one-to-b, action: Deny, from: [{namespaces: {}}]}]
  egress:
  - {name: no-dns-names, action: Deny, to: [{domainNames: [example.com]}]}
`;

describe('tessera simulate / explain -f: ClusterNetworkPolicy and Node objects', () => {
  beforeAll(() => writeFileSync(path.join(dir, 'files.yaml'), FILES));

  it('the CNP decides; a domainNames rule fails closed with a note', async () => {
    const r = await capture(runSimulate, ['-f', path.join(dir, 'files.yaml'), '--port', '80']);
    expect(r.stdout).toContain('0 of 2 pairs allowed, 2 denied.');
    expect(lines(r.stderr)).toEqual([
      "note: policy.networking.k8s.io/v1beta1 ClusterNetworkPolicy deny-b: k8s rule couldn't be converted: spec.egress[0].to[0].domainNames: domainNames peers are not supported (as in Calico 3.32): the rule fails closed (enforced as a bare Deny)",
    ]);
  });

  it('explain names the ClusterNetworkPolicy, its tier and the rule', async () => {
    const r = await capture(runExplain, ['-f', path.join(dir, 'files.yaml'), '--from', 'shop/a', '--to', 'shop/b', '--port', '80']);
    expect(r.stdout).toContain('ingress of shop/b (10.65.0.2 on node-1): denied by ClusterNetworkPolicy deny-b rule "no-one-to-b" (spec.ingress[0]) as ingress[0] (Deny) in tier kube-admin');
    const back = await capture(runExplain, ['-f', path.join(dir, 'files.yaml'), '--from', 'shop/b', '--to', 'shop/a', '--port', '80']);
    expect(back.stdout).toContain('egress of shop/b (10.65.0.2 on node-1): denied by ClusterNetworkPolicy deny-b rule "no-dns-names" (spec.egress[0], failed closed) as egress[0] (Deny) in tier kube-admin');
  });
});

describe('tessera render and the HTML report: ClusterNetworkPolicies', () => {
  beforeAll(() => writeFileSync(path.join(dir, 'files.yaml'), FILES));

  it('render prints its chains, cali-pi-kcnp/<name> and cali-po-kcnp/<name>, jumped to in tier kube-admin', async () => {
    const r = await capture(runRender, ['--node', 'node-1', '-f', path.join(dir, 'files.yaml')]);
    expect(r.stdout).toContain(':cali-pi-kcnp/deny-b - [0:0]');
    expect(r.stdout).toContain(':cali-po-kcnp/deny-b - [0:0]');
    expect(r.stdout).toMatch(/Start of tier kube-admin[^\n]*\n[^\n]*-j cali-pi-kcnp\/deny-b/);
  });

  it('the HTML report lists the CNP in its tier, with its priority as order', async () => {
    const r = await capture(runSimulate, ['-f', path.join(dir, 'files.yaml'), '--port', '80', '--output', 'html']);
    const rows = r.stdout.slice(r.stdout.indexOf('tier kube-admin'), r.stdout.indexOf('tier default ('));
    expect(rows).toContain('<td>ClusterNetworkPolicy</td><td>deny-b</td><td>10</td>');
  });
});
