import { describe, expect, it } from 'vitest';
import type { DataplaneMessage, Rule } from '../../src/proto/index.ts';
import { ContractViolation, MockDataplane } from './mock-dataplane.ts';

const rule = (ids: Partial<Rule>): Rule => ({
  action: 'allow',
  srcNets: [], notSrcNets: [], dstNets: [], notDstNets: [],
  srcPorts: [], notSrcPorts: [], dstPorts: [], notDstPorts: [],
  srcIpSetIds: [], notSrcIpSetIds: [], dstIpSetIds: [], notDstIpSetIds: [],
  srcNamedPortIpSetIds: [], notSrcNamedPortIpSetIds: [], dstNamedPortIpSetIds: [], notDstNamedPortIpSetIds: [], dstIpPortSetIds: [],
  ruleId: 'r:x',
  ...ids,
});
const pid = { tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' } as const;
const policyUsing = (id: string): DataplaneMessage => ({
  type: 'ActivePolicyUpdate',
  id: pid,
  policy: { inboundRules: [rule({ srcIpSetIds: [id] })], outboundRules: [], untracked: false, preDnat: false, applyOnForward: false },
});

function inSync(): MockDataplane {
  const dp = new MockDataplane();
  dp.graphInSync = true;
  return dp;
}

describe('MockDataplane contract checks', () => {
  it('fails on output before in-sync', () => {
    expect(() => new MockDataplane().apply([{ type: 'IPSetRemove', id: 'x' }])).toThrow(ContractViolation);
  });
  it('fails on a delta to an unknown set', () => {
    expect(() => inSync().apply([{ type: 'IPSetDeltaUpdate', id: 'x', added: ['a'], removed: [] }])).toThrow(/unknown IP set/);
  });
  it('fails on a policy referencing a missing set', () => {
    expect(() => inSync().apply([policyUsing('s:1')])).toThrow(/missing IP set/);
  });
  it('fails on an endpoint referencing an unknown policy or profile', () => {
    const ep = (tiers: boolean, profiles: string[]): DataplaneMessage => ({
      type: 'WorkloadEndpointUpdate',
      id: { namespace: 'ns', name: 'ep' },
      endpoint: {
        interfaceName: 'c', state: 'active', mac: '', ipv4Nets: [], ipv6Nets: [], profileIds: profiles,
        tiers: tiers ? [{ name: 'default', defaultAction: 'Deny', ingressPolicies: [pid], egressPolicies: [] }] : [],
      },
    });
    expect(() => inSync().apply([ep(true, [])])).toThrow(/unknown policy/);
    expect(() => inSync().apply([ep(false, ['prof'])])).toThrow(/unknown profile/);
  });
  it('fails on removing something never added, or a set still in use', () => {
    expect(() => inSync().apply([{ type: 'ActivePolicyRemove', id: pid }])).toThrow(/unknown policy/);
    expect(() => inSync().apply([{ type: 'WorkloadEndpointRemove', id: { namespace: 'a', name: 'b' } }])).toThrow(/unknown endpoint/);
    expect(() =>
      inSync().apply([{ type: 'IPSetUpdate', id: 's:1', ipsetType: 'hash:net', members: [] }, policyUsing('s:1'), { type: 'IPSetRemove', id: 's:1' }]),
    ).toThrow(/while policy/);
  });
});
