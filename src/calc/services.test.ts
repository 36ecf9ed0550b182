/**
 * `services` rule matches in the calc graph (reference §D): Felix's ids, the rule fields
 * they land in, and the service index's reference counting.
 */
import { describe, expect, it } from 'vitest';

import { graphWith } from '../../test/calc/harness.ts';
import { gnp, knp, pk, wep } from '../../test/calc/fixtures.ts';
import { endpointSlice, SVC_NOPORTS_ID, SVC_PORTS_ID } from '../../test/calc/service-fixtures.ts';
import { serviceIPSet } from './ipset-data.ts';
import { endpointSliceModel } from './endpoint-slice-model.ts';
import { ServiceIndex } from './service-index.ts';
import type { V3Resource } from '../api/index.ts';

describe('services IP sets', () => {
  it("have Felix's ids: svc: with ports, svcnoport: without (states_for_test.go)", () => {
    expect(serviceIPSet('default/svc', true)).toEqual({ id: SVC_PORTS_ID, service: 'default/svc', includePorts: true, type: 'hash:ip,port' });
    expect(serviceIPSet('default/svc', false)).toEqual({ id: SVC_NOPORTS_ID, service: 'default/svc', includePorts: false, type: 'hash:net' });
  });

  it('an egress destination service is a dstIpPortSetIds match; an ingress source service is AND-ed into srcIpSetIds', () => {
    const client = wep('client', { labels: { app: 'client' }, ips: ['10.65.0.1/32'] });
    const { dp } = graphWith([
      client,
      gnp('out', { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { services: { name: 'svc', namespace: 'default' } } }] }),
      gnp('in', { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow', source: { services: { name: 'svc', namespace: 'default' } } }] }),
      endpointSlice('svc-1', { service: 'svc', addresses: [['10.0.0.1']], ports: [{ port: 80 }] }) as unknown as V3Resource,
    ]);
    const out = dp.policies.get(pk('out'))?.policy.outboundRules[0];
    expect(out).toMatchObject({ dstIpPortSetIds: [SVC_PORTS_ID], dstIpSetIds: [], dstNamedPortIpSetIds: [], srcIpSetIds: [] });
    const inbound = dp.policies.get(pk('in'))?.policy.inboundRules[0];
    expect(inbound).toMatchObject({ srcIpSetIds: [SVC_NOPORTS_ID], dstIpPortSetIds: [] });
    expect([...(dp.ipSets.get(SVC_PORTS_ID)?.members ?? [])]).toEqual(['10.0.0.1,tcp:80']);
    expect(dp.ipSets.get(SVC_PORTS_ID)?.type).toBe('hash:ip,port');
    expect([...(dp.ipSets.get(SVC_NOPORTS_ID)?.members ?? [])]).toEqual(['10.0.0.1/32']);
    expect(dp.ipSets.get(SVC_NOPORTS_ID)?.type).toBe('hash:net');
  });

  it('a rule without services keeps the id it had before services were read', () => {
    const { dp } = graphWith([wep('c', { labels: {}, ips: ['10.65.0.1/32'] }), gnp('p', { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80] } }] })]);
    const rule = dp.policies.get(pk('p'))?.policy.outboundRules[0];
    expect(rule?.dstIpPortSetIds).toEqual([]);
    // The id main computed before services were read: the (empty) field is left out of the hash.
    expect(rule?.ruleId).toBe('r:SqtLfm33Puxg30KorpjJg9-0mQVC0hnQ7tzgYQ');
  });

  it("a namespaced policy's services in another namespace names that namespace", () => {
    const { dp } = graphWith([
      wep('c', { labels: {}, ips: ['10.65.0.1/32'] }),
      knp('default', 'p', { selector: 'all()', types: ['Egress'], egress: [{ action: 'Allow', destination: { services: { name: 'svc', namespace: 'prod' } } }] }),
    ]);
    expect(dp.policies.get(pk('p', { namespace: 'default' }))?.policy.outboundRules[0]?.dstIpPortSetIds).toEqual([serviceIPSet('prod/svc', true).id]);
  });
});

describe('EndpointSlice → service index model', () => {
  it('keeps IP addresses canonical, drops FQDNs, port names and ports without a number; protocol UDP, SCTP, else TCP', () => {
    const m = endpointSliceModel({
      metadata: { name: 's', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
      endpoints: [{ addresses: ['10.0.0.1', 'fd00:0:0::1', 'not-an-ip'] }, null, { addresses: null }],
      ports: [{ name: 'a', protocol: 'UDP', port: 53 }, { protocol: 'SCTP', port: 9 }, { protocol: 'tcp', port: 1 }, { port: 2 }, { name: 'all', port: null }, null, { port: 70000 }],
    });
    expect(m).toEqual({
      key: 'ns/s',
      service: 'ns/web',
      addresses: ['10.0.0.1', 'fd00::1'],
      ports: [{ protocol: 'udp', port: 53 }, { protocol: 'sctp', port: 9 }, { protocol: 'tcp', port: 1 }, { protocol: 'tcp', port: 2 }],
    });
  });

  it('a slice without the service-name label belongs to no Service', () => {
    expect(endpointSliceModel({ metadata: { name: 's', namespace: 'ns' }, endpoints: [{ addresses: ['10.0.0.1'] }] })).toBeUndefined();
  });
});

describe('ServiceIndex', () => {
  const events: string[] = [];
  const index = (): ServiceIndex => {
    events.length = 0;
    return new ServiceIndex({ onMemberAdded: (id, m) => events.push(`+${id.split(':')[0]} ${m}`), onMemberRemoved: (id, m) => events.push(`-${id.split(':')[0]} ${m}`) });
  };
  const slice = (key: string, addresses: string[], port = 80) => ({ key, service: 'default/svc', addresses, ports: [{ protocol: 'tcp' as const, port }] });

  it('fills a set only while active, and reports its current members on activation', () => {
    const ix = index();
    ix.onEndpointSliceUpdate('default/a', slice('default/a', ['10.0.0.1']));
    expect(events).toEqual([]);
    ix.onIPSetActive(serviceIPSet('default/svc', true));
    expect(events).toEqual(['+svc 10.0.0.1,tcp:80']);
    ix.onIPSetInactive(SVC_PORTS_ID);
    ix.onEndpointSliceUpdate('default/a', null);
    expect(events).toEqual(['+svc 10.0.0.1,tcp:80']);
    expect(ix.activeSetCount).toBe(0);
  });

  it('counts a member across slices: removed only with its last contributor; a changed slice churns only its difference', () => {
    const ix = index();
    ix.onIPSetActive(serviceIPSet('default/svc', true));
    ix.onIPSetActive(serviceIPSet('default/svc', false));
    ix.onEndpointSliceUpdate('default/a', slice('default/a', ['10.0.0.1', '10.0.0.2']));
    ix.onEndpointSliceUpdate('default/b', slice('default/b', ['10.0.0.2']));
    events.length = 0;
    ix.onEndpointSliceUpdate('default/a', slice('default/a', ['10.0.0.2', '10.0.0.3']));
    expect(events.sort()).toEqual(['+svc 10.0.0.3,tcp:80', '+svcnoport 10.0.0.3/32', '-svc 10.0.0.1,tcp:80', '-svcnoport 10.0.0.1/32'].sort());
    events.length = 0;
    ix.onEndpointSliceUpdate('default/a', null);
    expect(events.sort()).toEqual(['-svc 10.0.0.3,tcp:80', '-svcnoport 10.0.0.3/32']);
    expect(ix.membersOf(SVC_PORTS_ID)).toEqual(['10.0.0.2,tcp:80']);
  });

  it('a slice that moves to another Service leaves the first one', () => {
    const ix = index();
    ix.onIPSetActive(serviceIPSet('default/svc', true));
    ix.onEndpointSliceUpdate('default/a', slice('default/a', ['10.0.0.1']));
    ix.onEndpointSliceUpdate('default/a', { ...slice('default/a', ['10.0.0.1']), service: 'default/other' });
    expect(ix.membersOf(SVC_PORTS_ID)).toEqual([]);
  });
});
