/**
 * Objects of policy kinds Tessera does not enforce are never dropped silently (issue 27 item 7):
 * every tool names each one (`NOT ENFORCED: <apiVersion> <Kind> <ns/name>: <why>`) and exits
 * `EXIT_UNENFORCED`; a kind that is not policy is a note and changes nothing. `simulate`
 * prints the warnings `validate` prints (an `http` match; QoS limits).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_UNSUPPORTED_MESSAGE } from '../api/http.ts';
import { QOS_TC_UNENFORCED_MESSAGE } from '../api/qos-validation.ts';
import { unreadKind } from '../api/unenforced-kinds.ts';
import { QOS_NOT_SIMULATED_MESSAGE } from '../simulate/cluster-objects.ts';
import { EXIT_UNENFORCED } from './exit-status.ts';
import { runExplain } from './explain.ts';
import { runRender } from './render.ts';
import { runSimulate } from './simulate.ts';
import { capture } from './testdata/capture.ts';
import { runValidate } from './validate.ts';

const SHOP = `apiVersion: v1
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
`;

const HOST_ENDPOINT = `apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-1-eth0, labels: {host: node-1}}
spec: {node: node-1, interfaceName: eth0, expectedIPs: [192.168.0.1]}
`;

const ADMIN_NETWORK_POLICY = `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-shop}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: shop}}}
  ingress: [{action: Deny, name: all, from: [{namespaces: {}}]}]
`;

const IP_POOL = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv4}
spec: {cidr: 10.65.0.0/16}
`;

const HTTP_POLICY = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: http-only-get, namespace: shop}
spec:
  selector: app == 'b'
  ingress: [{action: Allow, protocol: TCP, http: {methods: [GET]}}]
`;

const QOS_POD = `apiVersion: v1
kind: Pod
metadata:
  name: c
  namespace: shop
  annotations: {qos.projectcalico.org/ingressBandwidth: 10M, qos.projectcalico.org/ingressMaxConnections: "5"}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 10.65.0.3, podIPs: [{ip: 10.65.0.3}]}
`;

const reason = (apiVersion: string, kind: string): string => {
  const k = unreadKind(apiVersion, kind);
  if (k.status !== 'not-enforced') throw new Error(`${kind} is enforced`);
  return k.reason;
};
const ANP_LINE = `NOT ENFORCED: policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy deny-shop: ${reason('policy.networking.k8s.io/v1alpha1', 'AdminNetworkPolicy')}`;

let dir: string;
const at = (name: string): string => path.join(dir, name);

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tessera-unenforced-'));
  writeFileSync(at('shop.yaml'), SHOP);
  writeFileSync(at('hep.yaml'), HOST_ENDPOINT);
  writeFileSync(at('anp.yaml'), ADMIN_NETWORK_POLICY);
  writeFileSync(at('ippool.yaml'), IP_POOL);
  writeFileSync(at('http.yaml'), HTTP_POLICY);
  writeFileSync(at('qos-pod.yaml'), QOS_POD);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

describe('tessera simulate: an AdminNetworkPolicy (v1alpha1) in the input (a HostEndpoint is read)', () => {
  it('names it on stderr as NOT ENFORCED and exits 4, after the matrix that leaves it out; the HostEndpoint beside it is no note', async () => {
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('hep.yaml'), '-f', at('anp.yaml'), '--port', '80']);
    expect(r.code).toBe(EXIT_UNENFORCED);
    expect(lines(r.stderr)).toEqual([ANP_LINE]);
    expect(r.stdout).toContain('2 of 2 pairs allowed, 0 denied.');
  });

  it('a HostEndpoint alone is read and enforced: no note, exit 0', async () => {
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('hep.yaml')]);
    expect(lines(r.stderr)).toEqual([]);
    expect(r.code).toBe(0);
  });

  it('--output json lists them too', async () => {
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('anp.yaml'), '--output', 'json']);
    expect(r.code).toBe(EXIT_UNENFORCED);
    expect((JSON.parse(r.stdout) as { unenforced: unknown }).unenforced).toEqual([
      { apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'AdminNetworkPolicy', name: 'deny-shop', reason: reason('policy.networking.k8s.io/v1alpha1', 'AdminNetworkPolicy') },
    ]);
  });

  it('an object that is not policy (an IPPool) is a note, and the exit status stays 0', async () => {
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('ippool.yaml')]);
    expect(r.code).toBe(0);
    expect(lines(r.stderr)).toEqual(['note: projectcalico.org/v3 IPPool default-ipv4: not a policy kind; ignored']);
  });

  it('in a scenario file: named once, exit 4 even with every probe as expected', async () => {
    const scenario = {
      schema: 'calico-truth-tables/v1',
      scenarios: [
        {
          name: 'anp',
          namespaces: [{ name: 'shop' }],
          pods: [
            { namespace: 'shop', name: 'a', labels: { app: 'a' }, ip: '10.65.0.1', node: 'node-1' },
            { namespace: 'shop', name: 'b', labels: { app: 'b' }, ip: '10.65.0.2', node: 'node-1' },
          ],
          policies: [{ apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'AdminNetworkPolicy', metadata: { name: 'deny-shop' }, spec: { priority: 10, subject: { namespaces: {} }, ingress: [] } }],
          probes: [{ from: 'shop/a', to: 'shop/b', protocol: 'TCP', port: 80, expected: true }],
          steps: [{ probes: [{ from: 'shop/b', to: 'shop/a', protocol: 'TCP', port: 80, expected: true }] }],
        },
      ],
    };
    writeFileSync(at('scenario.json'), JSON.stringify(scenario));
    const r = await capture(runSimulate, ['--scenarios', at('scenario.json')]);
    expect(JSON.parse(lines(r.stdout).at(-1)!)).toEqual({ scenarios: 1, probes: 2, passed: 2, failed: 0 });
    expect(lines(r.stderr)).toEqual([ANP_LINE]);
    expect(r.code).toBe(EXIT_UNENFORCED);
  });
});

describe('tessera explain, render and validate: the same objects', () => {
  it('explain names them and exits 4', async () => {
    const r = await capture(runExplain, ['-f', at('shop.yaml'), '-f', at('hep.yaml'), '-f', at('anp.yaml'), '--from', 'shop/a', '--to', 'shop/b', '--port', '80']);
    expect(r.code).toBe(EXIT_UNENFORCED);
    expect(lines(r.stderr)).toEqual([ANP_LINE]);
  });

  it('render names them and exits 4', async () => {
    const r = await capture(runRender, ['--node', 'node-1', '-f', at('shop.yaml'), '-f', at('anp.yaml')]);
    expect(r.code).toBe(EXIT_UNENFORCED);
    expect(lines(r.stderr)).toEqual([ANP_LINE]);
  });

  it('validate names them and exits 4', async () => {
    const r = await capture(runValidate, ['-f', at('hep.yaml'), '-f', at('anp.yaml')]);
    expect(r.code).toBe(EXIT_UNENFORCED);
    expect(lines(r.stdout)).toEqual(['ok  HostEndpoint node-1-eth0', `${at('anp.yaml')} (document 1): ${ANP_LINE}`, '1 valid, 0 invalid, 1 NOT ENFORCED']);
  });
});

describe('tessera simulate prints the warnings validate prints', () => {
  it('an http match: the same message as validate, on stderr; the verdict is as if http were absent', async () => {
    const v = await capture(runValidate, ['-f', at('http.yaml')]);
    expect(v.stdout).toContain(`warning: NetworkPolicy shop/http-only-get: spec.ingress[0].http: ${HTTP_UNSUPPORTED_MESSAGE}`);
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('http.yaml'), '--port', '80']);
    expect(r.code).toBe(0);
    expect(lines(r.stderr)).toEqual([`warning: NetworkPolicy shop/http-only-get: spec.ingress[0].http: ${HTTP_UNSUPPORTED_MESSAGE}`]);
  });

  it("a pod's QoS annotations: bandwidth not enforced, the connection limit not modelled by the simulator", async () => {
    const r = await capture(runSimulate, ['-f', at('shop.yaml'), '-f', at('qos-pod.yaml'), '--port', '80']);
    expect(r.code).toBe(0);
    const wep = 'Pod shop/c (as WorkloadEndpoint shop/node--1-k8s-c-eth0)';
    expect(lines(r.stderr)).toEqual([
      `warning: ${wep}: spec.qosControls.ingressBandwidth: ${QOS_TC_UNENFORCED_MESSAGE}`,
      `warning: ${wep}: spec.qosControls.ingressBurst: ${QOS_TC_UNENFORCED_MESSAGE}`,
      `warning: ${wep}: spec.qosControls.ingressMaxConnections: ${QOS_NOT_SIMULATED_MESSAGE}`,
    ]);
  });
});
