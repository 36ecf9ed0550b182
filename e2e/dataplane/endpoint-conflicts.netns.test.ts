/**
 * Real traffic through real iptables: a WorkloadEndpoint that claims pod web's host interface
 * (or its address) with an allow-all profile must not replace web's own policy. While the
 * conflict lasts web's traffic drops in both directions; once the claimant is deleted, web's
 * own Deny decides again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource, WorkloadEndpoint } from '../../src/api/index.ts';
import { Harness, NAMESPACE, matrix, networkPolicy, workload } from './harness.ts';
import type { Update } from '../../src/syncer/index.ts';

const denyWebIngress = networkPolicy('deny-web-ingress', { selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny' }] });
const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));
const remove = (name: string): Update[] => [{ op: 'delete', kind: 'WorkloadEndpoint', name, namespace: NAMESPACE }];

/** web's own policy: nothing reaches web; web reaches everyone. */
const WEB_DENIED = ['client->web/tcp', 'client->web/udp', 'other->web/tcp', 'other->web/udp'];
/** Fail closed: web neither receives nor sends. */
const WEB_DROPPED = [...WEB_DENIED, 'web->client/tcp', 'web->client/udp'];

describe('dataplane: conflicting WorkloadEndpoint claims fail closed on real traffic', () => {
  let h: Harness;
  /** An endpoint named to sort before `web` (the old code let the first by key win), with the allow-all namespace profile. */
  let attacker: (over: Partial<WorkloadEndpoint['spec']>) => WorkloadEndpoint;

  beforeAll(async () => {
    h = await Harness.create();
    attacker = (over) => {
      const w = workload('aaa-attacker', '10.65.0.66', h.topo.pod('web').iface, { app: 'attacker' });
      return { ...w, spec: { ...w.spec, ...over } };
    };
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it("web's own policy: inbound denied", async () => {
    await h.update(upsert(...h.baseResources(), denyWebIngress));
    expect(await h.check(matrix(WEB_DENIED))).toEqual([]);
  });

  it("an endpoint claiming web's interface does not open web: web's traffic drops while the conflict lasts", async () => {
    await h.update(upsert(attacker({})));
    expect(await h.check(matrix(WEB_DROPPED))).toEqual([]);
    expect(h.saveNode()).toMatch(new RegExp(`-A cali-tw-${h.topo.pod('web').iface} .*Interface or address claimed by more than one endpoint.* -j DROP`));
  });

  it("once it is deleted, web's own policy decides again", async () => {
    await h.update(remove('aaa-attacker'));
    expect(await h.check(matrix(WEB_DENIED))).toEqual([]);
  });

  it("an endpoint claiming web's address on another interface drops web too, until it is deleted", async () => {
    await h.update(upsert(attacker({ interfaceName: 'caliak0', ipNetworks: ['10.65.0.2/32'] })));
    expect(await h.check(matrix(WEB_DROPPED))).toEqual([]);
    await h.update(remove('aaa-attacker'));
    expect(await h.check(matrix(WEB_DENIED))).toEqual([]);
  });
});
