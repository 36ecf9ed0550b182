/**
 * `tessera render` of a node's host endpoints: the resources go to `renderNode` as Calico
 * objects directly (so this holds whatever api/unenforced-kinds.ts says of the kind).
 */
import { describe, expect, it } from 'vitest';
import type { V3Resource } from '../api/index.ts';
import { translateCluster } from '../simulate/index.ts';
import { renderNode } from './render.ts';

const objects = (calico: readonly object[]) =>
  translateCluster({ namespaces: [], serviceAccounts: [], pods: [], networkPolicies: [], calico: calico as V3Resource[] }).resources.values();

const hep = (name: string, spec: object): object => ({ apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name, labels: { 'host-endpoint': 'true' } }, spec: { node: 'node-1', ...spec } });
const preDnat = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'pre-deny-9090' },
  spec: { selector: 'has(host-endpoint)', preDNAT: true, applyOnForward: true, types: ['Ingress'], ingress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [9090] } }] },
};

/** The `-A` rules of `table` whose chain is `chain`. */
function rules(iptables: ReadonlyArray<readonly [string, string]>, table: string, chain: string): string[] {
  const text = iptables.map(([, stdin]) => stdin).find((s) => s.startsWith(`*${table}\n`)) ?? '';
  return text.split('\n').filter((l) => l.startsWith(`-A ${chain} `));
}

describe('tessera render: host endpoint chains', () => {
  it('a * endpoint: filter th/fh/thfw/fhfw with the * default in the dispatch chains, and its preDNAT chain in mangle', async () => {
    const r = await renderNode(objects([hep('hep-node-1', { interfaceName: '*', profiles: ['projectcalico-default-allow'] }), preDnat]), 'node-1');
    expect(r.endpoints).toBe(1);
    expect(rules(r.iptables, 'filter', 'cali-from-host-endpoint').at(-1)).toMatch(/-g cali-fh-any-interface-at-all$/);
    expect(rules(r.iptables, 'filter', 'cali-from-hep-forward').at(-1)).toMatch(/-g cali-fhfw-_Nqh4HyA73udmyanQI$/);
    expect(rules(r.iptables, 'filter', 'cali-th-any-interface-at-all').some((l) => l.includes('-j cali-failsafe-out'))).toBe(true);
    expect(rules(r.iptables, 'mangle', 'cali-fh-any-interface-at-all').some((l) => l.includes('-j cali-pi-gnp/pre-deny-9090'))).toBe(true);
  });

  it('an endpoint matched by expectedIPs: the rendered host has one interface, eth0, holding them', async () => {
    const r = await renderNode(objects([hep('eth0-node-1', { expectedIPs: ['10.72.0.1'] })]), 'node-1');
    expect(rules(r.iptables, 'filter', 'cali-from-host-endpoint')).toEqual([expect.stringMatching(/-i eth0 -g cali-fh-eth0$/)]);
    expect(rules(r.iptables, 'filter', 'cali-fh-eth0').at(-1)).toMatch(/Drop if no profiles matched.*-j DROP$/);
  });
});
