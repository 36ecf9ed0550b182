/**
 * A valid policy whose rule iptables-restore really rejects, on a real kernel (issue 12 point 6):
 * the rejection is contained to that policy's chain, whose endpoints fail closed, while every
 * other policy is programmed and enforced, the driver keeps applying, and the rejection is
 * logged with the policy and rule and counted.
 *
 * The rejected rule: an Allow whose destination has 50 named `notPorts` (the CRD's maximum).
 * Each negated named port is its own `-m set ! --match-set <set> dst,dst` on the rule's one
 * iptables line (as Felix renders them), 6 arguments each, and iptables-restore's parser takes
 * at most 255 per line: `Parser cannot handle more arguments` / `Error occurred at line: N`,
 * with either backend. (SCTP, the first candidate, is no rejection here: this kernel has
 * xt_sctp, and iptables-nft matches SCTP ports natively — checked with `-p sctp --dport 80` and
 * `-p sctp -m multiport` in a network namespace; so are every protocol, ICMP type/code and
 * action a valid policy can render.)
 *
 * Tiers and Pass: a `security` tier in front of `default` accepts `other` → web outright and
 * passes `client` → web on to `default`, where the rejected policy stands. The fail-closed
 * stand-in (a DROP in the rejected policy's chain) must drop exactly what reaches that policy —
 * the passed client traffic — and leave the verdicts of earlier tiers alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { NetworkPolicy, Tier, V3Resource } from '../../src/api/index.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { BACKEND, Harness, NAMESPACE, networkPolicy } from './harness.ts';
import type { Expectation } from './probes.ts';
import type { Update } from '../../src/syncer/index.ts';

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

/** `p0` … `p49`: named ports no pod declares (empty sets), so the real rule would allow any TCP port. */
const NAMED_NOT_PORTS = Array.from({ length: 50 }, (_, i) => `p${i}`);
const REJECTED_CHAIN = 'cali-pi-np/shop/web-rejected';

const webRejected = (notPorts: ReadonlyArray<string | number>): NetworkPolicy =>
  networkPolicy('web-rejected', {
    selector: "app == 'web'",
    types: ['Ingress'],
    ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { notPorts: [...notPorts] } }],
  });

const securityTier: Tier = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100, defaultAction: 'Deny' } };
const securityWeb = networkPolicy('security.web', {
  tier: 'security',
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [
    { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'other'" } },
    { action: 'Pass', source: { selector: "app == 'client'" } },
  ],
});
/** client accepts TCP from web only. */
const clientIngress = (from: string): NetworkPolicy =>
  networkPolicy('client-ingress', {
    selector: "app == 'client'",
    types: ['Ingress'],
    ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: from } }],
  });

const expect4 = (from: string, to: string, kind: 'tcp' | 'udp', allowed: boolean): Expectation => ({ from, to, kind, family: 4, allowed });

describe(`dataplane: a rule iptables-restore rejects is contained (${BACKEND})`, () => {
  let h: Harness;
  const registry = newRegistry();
  const logLines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  const metric = async (name: string): Promise<number> => Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'm').exec(await registry.metrics())?.[1] ?? NaN);

  beforeAll(async () => {
    h = await Harness.create({ registry, logger });
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('the kernel really rejects the policy: its endpoint fails closed, other policies are enforced, the driver keeps going', async () => {
    await h.update(upsert(...h.baseResources(), securityTier, securityWeb, webRejected(NAMED_NOT_PORTS), clientIngress("app == 'web'")));

    // Applied: the apply succeeded (flushed resolved) and nothing is failing.
    expect(h.driver.health()).toMatchObject({ consecutiveFailures: 0, rejectedChains: 1 });
    expect(await h.check([
      // web-rejected's own traffic: what reaches it is dropped. Real rule: client → web TCP allowed.
      expect4('client', 'web', 'tcp', false),
      expect4('client', 'web', 'udp', false),
      // Decided by the security tier before the rejected policy: unaffected.
      expect4('other', 'web', 'tcp', true),
      expect4('other', 'web', 'udp', false),
      // client's own policy is programmed and enforced.
      expect4('web', 'client', 'tcp', true),
      expect4('web', 'client', 'udp', false),
      expect4('other', 'client', 'tcp', false),
      // other has no policy: its profile allows.
      expect4('web', 'other', 'tcp', true),
      expect4('client', 'other', 'udp', true),
    ])).toEqual([]);

    // In the kernel: the stand-in, naming why; the endpoint still jumps to it.
    const save = h.saveNode();
    expect(save.split('\n').filter((l) => l.startsWith(`-A ${REJECTED_CHAIN} `))).toEqual([
      expect.stringMatching(/-m comment --comment "Tessera: iptables-restore rejected rule 1 of this chain, fail closed" -j DROP$/),
    ]);
    expect(save).toMatch(new RegExp(`-A cali-tw-${h.topo.pod('web').iface} .*-j ${REJECTED_CHAIN.replace(/\//g, '\\/')}`));

    // Counted, and logged once with the policy, its rule and iptables-restore's message.
    expect(await metric('tessera_dataplane_rejected_chains')).toBe(1);
    expect(await metric('tessera_dataplane_chain_rejections')).toBe(1);
    expect(await metric('felix_iptables_restore_errors')).toBeGreaterThanOrEqual(2);
    const rejections = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['chain'] === REJECTED_CHAIN && l['level'] === 50);
    expect(rejections).toEqual([
      expect.objectContaining({
        kind: 'NetworkPolicy',
        namespace: NAMESPACE,
        name: 'web-rejected',
        tier: 'default',
        rule: 1,
        ownerRule: expect.stringMatching(/^ingress\[0\] \(rule /),
        err: expect.stringMatching(/Parser cannot handle more arguments Error occurred at line: \d+/),
      }),
    ]);
  });

  it('keeps programming everything else while the rejection stands', async () => {
    await h.update(upsert(clientIngress("app == 'web' || app == 'other'")));
    expect(await h.check([expect4('other', 'client', 'tcp', true), expect4('client', 'web', 'tcp', false), expect4('other', 'web', 'tcp', true)])).toEqual([]);
    expect(h.driver.health()).toMatchObject({ consecutiveFailures: 0, rejectedChains: 1 });
  });

  it('a version of the policy the kernel accepts is tried at once and enforced', async () => {
    await h.update(upsert(webRejected([9999])));
    expect(await h.check([expect4('client', 'web', 'tcp', true), expect4('client', 'web', 'udp', false), expect4('other', 'web', 'tcp', true)])).toEqual([]);
    expect(h.driver.health().rejectedChains).toBe(0);
    expect(await metric('tessera_dataplane_rejected_chains')).toBe(0);
    expect(h.saveNode()).not.toContain('Tessera: iptables-restore rejected');
  });
});
