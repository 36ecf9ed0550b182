import { describe, expect, it } from 'vitest';
import { hostEndpoint } from '../../test/dataplane/fixtures.ts';
import type { HostEndpoint } from '../proto/index.ts';
import { HostInterfacesError, parseIpAddrJson, resolveHostEndpoints } from './host-interfaces.ts';

const ifaces = (m: Record<string, string[]>): Map<string, Set<string>> => new Map(Object.entries(m).map(([k, v]) => [k, new Set(v)]));
const heps = (m: Record<string, Partial<HostEndpoint>>): Map<string, HostEndpoint> => new Map(Object.entries(m).map(([k, v]) => [k, hostEndpoint(v)]));
const opts = { workloadPrefixes: ['cali'] };

// Felix dataplane/linux/endpoint_mgr_test.go host endpoint resolution, and §A.2 of the reference.
describe('resolveHostEndpoints (Felix resolveHostEndpoints)', () => {
  const local = ifaces({ eth0: ['10.0.0.1/32', 'fd00::1/128'], eth1: ['10.0.1.1/32'], cali1234: ['169.254.1.1/32'], 'kube-ipvs0': ['10.96.0.1/32'], lo: ['127.0.0.1/32'] });

  it('matches by name; an explicit name never falls back to the expected IPs', () => {
    expect(resolveHostEndpoints(local, heps({ a: { name: 'eth1', expectedIpv4Addrs: ['10.0.0.1'] } }), opts)).toEqual(new Map([['eth1', 'a']]));
  });

  it('matches an unnamed endpoint by any expected IP of either family, on every interface holding one', () => {
    expect(resolveHostEndpoints(local, heps({ a: { expectedIpv6Addrs: ['fd00:0:0::1'] } }), opts)).toEqual(new Map([['eth0', 'a']]));
    expect(resolveHostEndpoints(local, heps({ a: { expectedIpv4Addrs: ['10.0.0.1', '10.0.1.1'] } }), opts)).toEqual(
      new Map([
        ['eth0', 'a'],
        ['eth1', 'a'],
      ]),
    );
  });

  it('several matches for one interface: the smallest host endpoint name wins, whichever way it matched', () => {
    expect(resolveHostEndpoints(local, heps({ zz: { name: 'eth0' }, aa: { expectedIpv4Addrs: ['10.0.0.1'] }, mm: { name: 'eth0' } }), opts)).toEqual(new Map([['eth0', 'aa']]));
  });

  it('the * endpoint with the smallest name is the default, never matched by name or IP', () => {
    expect(resolveHostEndpoints(local, heps({ b: { name: '*', expectedIpv4Addrs: ['10.0.0.1'] }, a: { name: '*' } }), opts)).toEqual(new Map([['any-interface-at-all', 'a']]));
  });

  it('workload interfaces and kube-ipvs0 are never candidates; lo is', () => {
    const r = resolveHostEndpoints(local, heps({ w: { name: 'cali1234' }, v: { name: 'kube-ipvs0' }, l: { expectedIpv4Addrs: ['127.0.0.1'] } }), opts);
    expect(r).toEqual(new Map([['lo', 'l']]));
    expect(resolveHostEndpoints(local, heps({ v: { name: 'kube-ipvs0' } }), { ...opts, exclude: [] })).toEqual(new Map([['kube-ipvs0', 'v']]));
  });

  it('an interface without addresses can still be matched by name; an endpoint naming a missing interface matches nothing', () => {
    expect(resolveHostEndpoints(ifaces({ eth9: [] }), heps({ a: { name: 'eth9' }, b: { name: 'eth8' } }), opts)).toEqual(new Map([['eth9', 'a']]));
  });
});

describe('parseIpAddrJson', () => {
  it('reads every interface and its addresses in canonical form', () => {
    const out = JSON.stringify([
      { ifname: 'lo', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8 }] },
      { ifname: 'eth0', addr_info: [{ family: 'inet6', local: 'FD00:0::1', prefixlen: 64 }] },
      { ifname: 'dummy0' },
    ]);
    expect(parseIpAddrJson(out)).toEqual(ifaces({ lo: ['127.0.0.1/32'], eth0: ['fd00::1/128'], dummy0: [] }));
  });

  it('throws a HostInterfacesError for output that is not its JSON', () => {
    expect(() => parseIpAddrJson('1: lo: <LOOPBACK>')).toThrow(HostInterfacesError);
    expect(() => parseIpAddrJson('{}')).toThrow(HostInterfacesError);
  });
});
