import { describe, expect, it } from 'vitest';

import type { K8sNode } from '../api/kubernetes.ts';
import { validateResource } from '../api/validation.ts';
import {
  autoHostEndpointExpectedIPs,
  autoHostEndpointName,
  autoHostEndpointNode,
  isAutoHostEndpoint,
  nodeToAutoHostEndpoint,
} from './auto-host-endpoint-builder.ts';
import { projectNode } from './node-projection.ts';

const node = (over: Partial<K8sNode['metadata']> = {}, addresses: Array<{ type: string; address: string }> = []): K8sNode => ({
  metadata: { name: 'node-1', uid: 'uid-1', labels: { 'kubernetes.io/hostname': 'node-1', zone: 'a' }, ...over },
  status: { addresses },
});

describe('autoHostEndpointName (kube-controllers hashNameIfTooLong)', () => {
  it('is <node>-auto-hep up to 253 bytes', () => {
    expect(autoHostEndpointName('node-1')).toBe('node-1-auto-hep');
    const longest = 'n'.repeat(253 - '-auto-hep'.length);
    expect(autoHostEndpointName(longest)).toBe(`${longest}-auto-hep`);
  });

  it('hashes a longer name as Calico does (its FV test vector, auto_hep_fv_test.go "should properly hash hostendpoint name")', () => {
    const generateName =
      'the-quick-brown-fox-jumps-over-the-lazy-dog-the-quick-brown-fox-jumps-over-the-lazy-dog-the-quick-brown-fox-jumps-over-the-lazy-dog-the-quick-brown-fox-jumps-over-the-lazy-dog-the-quick-brown-fox-jumps-over-the-lazy-dog-the-quick-brown-fox-jumps';
    // Calico hashes `<node>-<template>-auto-hep`; the same string reaches the hash here.
    expect(autoHostEndpointName(`calinodename-${generateName}`)).toBe('2vhzifmgzoee1hgruafve8iewjr1cabezq3o51myej0-auto-hep');
    const hashed = autoHostEndpointName('n'.repeat(253 - '-auto-hep'.length + 1));
    expect(hashed).toMatch(/^[a-z0-9]+-auto-hep$/);
    expect(hashed.length).toBeLessThanOrEqual(253);
  });

  it('autoHostEndpointNode inverts the name through spec.node, hashed or not', () => {
    const long = 'n'.repeat(250);
    expect(autoHostEndpointNode({ metadata: { name: autoHostEndpointName(long) }, spec: { node: long } })).toBe(long);
    expect(autoHostEndpointNode({ metadata: { name: 'node-1-auto-hep' }, spec: { node: 'node-1' } })).toBe('node-1');
    expect(autoHostEndpointNode({ metadata: { name: 'node-1-auto-hep' }, spec: { node: 'node-2' } })).toBeUndefined();
    expect(autoHostEndpointNode({ metadata: { name: 'eth0' }, spec: {} })).toBeUndefined();
  });
});

describe('autoHostEndpointExpectedIPs', () => {
  it('takes the calico-node annotations in Calico order (BGP prefix stripped), then InternalIPs; each once, canonical', () => {
    const n = node(
      {
        annotations: {
          'projectcalico.org/IPv6Address': '2001:DB8:0:0::10/64',
          'projectcalico.org/IPv4Address': '192.168.0.10/24',
          'projectcalico.org/IPv4VXLANTunnelAddr': '10.244.1.0',
          'projectcalico.org/IPv4IPIPTunnelAddr': '10.244.1.1',
          'projectcalico.org/IPv6VXLANTunnelAddr': 'fd00:244::1',
          'projectcalico.org/IPv4WireguardInterfaceAddr': '10.244.1.2',
          'projectcalico.org/IPv6WireguardInterfaceAddr': 'fd00:244::2',
          'unrelated/annotation': '1.2.3.4',
        },
      },
      [
        { type: 'InternalIP', address: '192.168.0.10' },
        { type: 'ExternalIP', address: '203.0.113.7' },
        { type: 'Hostname', address: 'node-1' },
        { type: 'InternalIP', address: '2001:db8::10' },
        { type: 'InternalIP', address: '192.168.1.10' },
      ],
    );
    expect(autoHostEndpointExpectedIPs(n)).toEqual([
      '192.168.0.10',
      '2001:db8::10',
      '10.244.1.1',
      '10.244.1.0',
      'fd00:244::1',
      '10.244.1.2',
      'fd00:244::2',
      '192.168.1.10',
    ]);
  });

  it('drops what is not an address of the right family: empty, garbage, a CIDR InternalIP, a v6 value in a v4 annotation', () => {
    const n = node(
      {
        annotations: {
          'projectcalico.org/IPv4Address': 'fd00::1/64',
          'projectcalico.org/IPv6Address': '',
          'projectcalico.org/IPv4IPIPTunnelAddr': 'not-an-ip',
        },
      },
      [
        { type: 'InternalIP', address: '10.0.0.1/24' },
        { type: 'InternalIP', address: '10.0.0.256' },
        { type: 'InternalIP', address: '' },
        { type: 'InternalIP', address: '10.0.0.2' },
      ],
    );
    expect(autoHostEndpointExpectedIPs(n)).toEqual(['10.0.0.2']);
  });
});

describe('nodeToAutoHostEndpoint', () => {
  it("builds `*`, the node's labels plus created-by, its addresses and projectcalico-default-allow; the result is valid", () => {
    const hep = nodeToAutoHostEndpoint(node({}, [{ type: 'InternalIP', address: '10.0.0.1' }]));
    expect(hep).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'HostEndpoint',
      metadata: { name: 'node-1-auto-hep', labels: { 'kubernetes.io/hostname': 'node-1', zone: 'a', 'projectcalico.org/created-by': 'calico-kube-controllers' } },
      spec: { node: 'node-1', interfaceName: '*', expectedIPs: ['10.0.0.1'], profiles: ['projectcalico-default-allow'] },
    });
    expect(validateResource(hep)).toEqual([]);
    expect(isAutoHostEndpoint(hep!)).toBe(true);
  });

  it('created-by wins over a node label of that key; no addresses means no expectedIPs field; no name means no endpoint', () => {
    const hep = nodeToAutoHostEndpoint(node({ labels: { 'projectcalico.org/created-by': 'someone-else' } }));
    expect(hep?.metadata.labels).toEqual({ 'projectcalico.org/created-by': 'calico-kube-controllers' });
    expect(hep?.spec).toEqual({ node: 'node-1', interfaceName: '*', profiles: ['projectcalico-default-allow'] });
    expect(validateResource(hep)).toEqual([]);
    expect(nodeToAutoHostEndpoint({ metadata: {} })).toBeUndefined();
    expect(nodeToAutoHostEndpoint({})).toBeUndefined();
  });
});

describe('projectNode', () => {
  it('keeps exactly what the builder reads: the endpoint from a projected node equals the one from the full node', () => {
    const full = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'node-1',
        uid: 'uid-1',
        resourceVersion: '42',
        labels: { zone: 'a' },
        annotations: { 'projectcalico.org/IPv4Address': '192.168.0.10/24', 'node.alpha.kubernetes.io/ttl': '0', 'kubeadm.alpha.kubernetes.io/cri-socket': 'x' },
        managedFields: [{ manager: 'kubelet' }],
      },
      spec: { podCIDR: '10.244.1.0/24', providerID: 'kind://node-1' },
      status: {
        addresses: [
          { type: 'InternalIP', address: '192.168.0.11' },
          { type: 'Hostname', address: 'node-1' },
        ],
        images: [{ names: ['registry/big:1'], sizeBytes: 1 }],
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    };
    const projected = projectNode(full);
    expect(projected).toEqual({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-1', uid: 'uid-1', resourceVersion: '42', labels: { zone: 'a' }, annotations: { 'projectcalico.org/IPv4Address': '192.168.0.10/24' } },
      status: { addresses: [{ type: 'InternalIP', address: '192.168.0.11' }] },
    });
    expect(nodeToAutoHostEndpoint(projected)).toEqual(nodeToAutoHostEndpoint(full));
    expect(projectNode({ metadata: { name: 'bare' } })).toEqual({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'bare' }, status: {} });
  });
});
