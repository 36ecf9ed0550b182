import { describe, expect, it } from 'vitest';
import type { Policy } from '../proto/index.ts';
import { EventSequencer } from './event-sequencer.ts';

const POLICY: Policy = { inboundRules: [], outboundRules: [], untracked: false, preDnat: false, applyOnForward: false };
const PID = { tier: 'default', name: 'p', kind: 'GlobalNetworkPolicy' } as const;

describe('EventSequencer', () => {
  it('emits nothing for a set added and removed between flushes', () => {
    const s = new EventSequencer();
    s.onIPSetAdded('s:1', 'hash:net');
    s.onIPSetMemberAdded('s:1', '10.0.0.1/32');
    s.onIPSetRemoved('s:1');
    expect(s.flush()).toEqual([]);
  });

  it('puts members changed before the first flush into the IPSetUpdate', () => {
    const s = new EventSequencer();
    s.onIPSetAdded('s:1', 'hash:net');
    s.onIPSetMemberAdded('s:1', 'a');
    s.onIPSetMemberAdded('s:1', 'b');
    s.onIPSetMemberRemoved('s:1', 'a');
    expect(s.flush()).toEqual([{ type: 'IPSetUpdate', id: 's:1', ipsetType: 'hash:net', members: ['b'] }]);
  });

  it('keeps one delta per set and cancels a member added and removed between flushes', () => {
    const s = new EventSequencer();
    s.onIPSetAdded('s:1', 'hash:net');
    s.flush();
    s.onIPSetMemberAdded('s:1', 'a');
    s.onIPSetMemberRemoved('s:1', 'a');
    s.onIPSetMemberAdded('s:1', 'b');
    expect(s.flush()).toEqual([{ type: 'IPSetDeltaUpdate', id: 's:1', added: ['b'], removed: [] }]);
    s.onIPSetMemberRemoved('s:1', 'b');
    s.onIPSetMemberAdded('s:1', 'b');
    expect(s.flush()).toEqual([]);
  });

  it('flushes in dependency order and only removes what was sent', () => {
    const s = new EventSequencer();
    s.onPolicyRemove('never-sent', PID);
    s.onEndpointUpdate('ns/ep', { namespace: 'ns', name: 'ep' }, { interfaceName: 'cali1', state: 'active', mac: '', ipv4Nets: [], ipv6Nets: [], profileIds: ['prof'], tiers: [] });
    s.onProfileUpdate('prof', { inboundRules: [], outboundRules: [] });
    s.onPolicyUpdate('p', PID, POLICY);
    s.onIPSetAdded('s:1', 'hash:net');
    expect(s.flush().map((m) => m.type)).toEqual(['IPSetUpdate', 'ActivePolicyUpdate', 'ActiveProfileUpdate', 'WorkloadEndpointUpdate']);
    s.onIPSetRemoved('s:1');
    s.onPolicyRemove('p', PID);
    s.onProfileRemove('prof');
    s.onEndpointRemove('ns/ep', { namespace: 'ns', name: 'ep' });
    expect(s.flush().map((m) => m.type)).toEqual(['WorkloadEndpointRemove', 'ActiveProfileRemove', 'ActivePolicyRemove', 'IPSetRemove']);
  });

  it('coalesces a remove followed by a re-add of a sent set into one full update', () => {
    const s = new EventSequencer();
    s.onIPSetAdded('s:1', 'hash:net');
    s.onIPSetMemberAdded('s:1', 'a');
    s.flush();
    s.onIPSetRemoved('s:1');
    s.onIPSetAdded('s:1', 'hash:net');
    s.onIPSetMemberAdded('s:1', 'c');
    expect(s.flush()).toEqual([{ type: 'IPSetUpdate', id: 's:1', ipsetType: 'hash:net', members: ['c'] }]);
  });
});
