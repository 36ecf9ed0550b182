/**
 * `services` rule matches on real IPv4 and IPv6 traffic: client may send only to Service
 * shop/web's endpoints on the slice's ports (`--match-set cali{4,6}0svc:… dst,dst`, a
 * hash:ip,port set per family); web accepts only from Service shop/clients' endpoints
 * (`svcnoport:`, hash:net, `src`). The slices change under the rules, and a deleted slice
 * empties the set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import type { AnyUpdate, SyncedObject, Update } from '../../src/syncer/index.ts';
import { DUAL_STACK_PODS, Harness, NAMESPACE, globalNetworkPolicy, networkPolicy } from './harness.ts';
import { TCP_PORT, type Expectation } from './probes.ts';

const pod = (name: string): { ip: string; ip6: string } => {
  const p = DUAL_STACK_PODS.find((x) => x.name === name)!;
  return { ip: p.ip, ip6: p.ip6! };
};

function slice(name: string, service: string, addressType: 'IPv4' | 'IPv6', addresses: string[], ports: Array<{ protocol?: string; port: number | null }>): AnyUpdate {
  return {
    op: 'upsert',
    resource: {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': service } },
      addressType,
      endpoints: addresses.map((a) => ({ addresses: [a] })),
      ports,
    } as SyncedObject,
  };
}
const deleteSlice = (name: string): AnyUpdate => ({ op: 'delete', apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: NAMESPACE, name });

/** Client's egress: only to Service web (the policy's namespace: no `namespace` given). */
const clientToWeb = networkPolicy('client-to-web', { selector: "app == 'client'", types: ['Egress'], egress: [{ action: 'Allow', destination: { services: { name: 'web' } } }] });
/** Web's ingress: only from Service clients. */
const webFromClients = globalNetworkPolicy('web-from-clients', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [{ action: 'Allow', source: { services: { name: 'clients', namespace: NAMESPACE } } }],
});
const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

const expect4and6 = (from: string, to: string, kind: 'tcp' | 'udp', allowed: boolean): Expectation[] => [
  { from, to, kind, family: 4, allowed },
  { from, to, kind, family: 6, allowed },
];

describe('dataplane: services rule matches on real traffic (IPv4 and IPv6)', () => {
  let h: Harness;
  const node = (args: readonly string[]): string => h.topo.exec(h.topo.nodeNs, args);

  beforeAll(async () => {
    h = await Harness.create({ ipVersions: [4, 6] }, DUAL_STACK_PODS);
    await h.update(upsert(...h.baseResources()));
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('egress to a Service: the member on the listed port is allowed; another port and a non-member denied', async () => {
    const web = pod('web');
    await h.update([
      ...upsert(clientToWeb),
      slice('web-v4', 'web', 'IPv4', [web.ip], [{ protocol: 'TCP', port: TCP_PORT }, { port: null }]),
      slice('web-v6', 'web', 'IPv6', [web.ip6], [{ port: TCP_PORT }]),
    ]);
    expect(await h.check([...expect4and6('client', 'web', 'tcp', true), ...expect4and6('client', 'web', 'udp', false), ...expect4and6('client', 'other', 'tcp', false), ...expect4and6('other', 'web', 'udp', true)])).toEqual([]);
    const sets = node(['ipset', 'list', '-o', 'save']);
    expect(sets).toMatch(new RegExp(`^add cali40svc:\\S+ ${web.ip.replace(/\./g, '\\.')},tcp:${TCP_PORT}$`, 'm'));
    expect(sets).toMatch(new RegExp(`^add cali60svc:\\S+ ${web.ip6},tcp:${TCP_PORT}$`, 'm'));
    expect(sets).toMatch(/^create cali60svc:\S+ hash:ip,port family inet6/m);
    expect(h.saveNode(4)).toMatch(/-m set --match-set cali40svc:\S+ dst,dst/);
    expect(h.saveNode(6)).toMatch(/-m set --match-set cali60svc:\S+ dst,dst/);
  });

  it("the slice changes: other becomes a member on the UDP port, web's TCP port leaves", async () => {
    const web = pod('web');
    const other = pod('other');
    await h.update([slice('web-v4', 'web', 'IPv4', [web.ip, other.ip], [{ protocol: 'UDP', port: 5353 }]), slice('web-v6', 'web', 'IPv6', [web.ip6, other.ip6], [{ protocol: 'UDP', port: 5353 }])]);
    expect(await h.check([...expect4and6('client', 'web', 'tcp', false), ...expect4and6('client', 'web', 'udp', true), ...expect4and6('client', 'other', 'udp', true), ...expect4and6('client', 'other', 'tcp', false)])).toEqual([]);
  });

  it('ingress from a Service admits only its endpoint addresses; a deleted slice matches nothing again', async () => {
    const client = pod('client');
    await h.update([...upsert(webFromClients), slice('clients-v4', 'clients', 'IPv4', [client.ip], []), slice('clients-v6', 'clients', 'IPv6', [client.ip6], [])]);
    expect(await h.check([...expect4and6('client', 'web', 'udp', true), ...expect4and6('other', 'web', 'tcp', false), ...expect4and6('other', 'web', 'udp', false)])).toEqual([]);
    expect(h.saveNode(4)).toMatch(/-m set --match-set cali40svcnoport:\S+ src/);
    await h.update([deleteSlice('clients-v4'), deleteSlice('clients-v6')]);
    expect(await h.check(expect4and6('client', 'web', 'udp', false))).toEqual([]);
  });
});
