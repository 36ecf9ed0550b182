/**
 * Real traffic through real iptables: a node namespace with three pods, the calc graph's
 * output for a sequence of policy states, and TCP + UDP probes after each apply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import { Harness, NAMESPACE, globalNetworkPolicy, matrix, networkPolicy } from './harness.ts';
import type { Update } from '../../src/syncer/index.ts';

const webIngress = networkPolicy('web-ingress', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } }],
});
const webIngressWithDns = networkPolicy('web-ingress', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [
    { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } },
    { action: 'Allow', protocol: 'UDP', source: { selector: "app == 'client'" }, destination: { ports: ['dns'] } },
  ],
});
const otherUdpOnly = globalNetworkPolicy('other-udp-only', {
  selector: "app == 'other'",
  types: ['Egress'],
  egress: [{ action: 'Allow', protocol: 'UDP' }],
});
const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

describe('dataplane: policy states enforced on real traffic', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await Harness.create();
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('state 0, namespace profile only: everything allowed', async () => {
    await h.update(upsert(...h.baseResources()));
    expect(await h.check(matrix([]))).toEqual([]);
  });

  it('state 1, web accepts only TCP 8080 from client', async () => {
    await h.update(upsert(webIngress));
    expect(await h.check(matrix(['client->web/udp', 'other->web/tcp', 'other->web/udp']))).toEqual([]);
  });

  it('state 2, web also accepts UDP on the named port dns from client', async () => {
    await h.update(upsert(webIngressWithDns));
    expect(await h.check(matrix(['other->web/tcp', 'other->web/udp']))).toEqual([]);
  });

  it('state 3, other may only send UDP (a global egress policy)', async () => {
    await h.update(upsert(otherUdpOnly));
    expect(await h.check(matrix(['other->web/tcp', 'other->web/udp', 'other->client/tcp']))).toEqual([]);
  });

  it('state 4, policies deleted: everything allowed again and their chains and sets are gone', async () => {
    await h.update([
      { op: 'delete', kind: 'NetworkPolicy', name: 'web-ingress', namespace: NAMESPACE },
      { op: 'delete', kind: 'GlobalNetworkPolicy', name: 'other-udp-only' },
    ]);
    expect(await h.check(matrix([]))).toEqual([]);
    const save = h.saveNode();
    expect(save).not.toMatch(/cali-p[io]-/);
    // Set deletions are rate-limited to one per apply; they finish within a few throttled applies.
    const deadline = Date.now() + 5_000;
    let sets = '';
    while (Date.now() < deadline) {
      sets = h.topo.exec(h.topo.nodeNs, ['ipset', 'list', '-n']);
      if (!/cali4/.test(sets)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(sets).not.toMatch(/cali4/);
  });
});
