/**
 * An invalid policy that reaches the agent fails closed, on a real kernel with real packets
 * (issue 27 item 9): before, the calc graph turned it into a delete and its endpoints lost the
 * policy (web, left with only its namespace profile, accepted everything).
 *
 * web's policy allows TCP from client. Its invalid version keeps that rule and adds one whose
 * port "HTTP" is not a Kubernetes port name (Calico's validator refuses it too): the rule that
 * allowed client → web would still be there, yet the stand-in has no rules, so everything
 * that reaches it — client → web included — is dropped at the end of the default tier. client
 * and other, which it does not select, are unaffected. Fixing the policy restores it. The calc
 * graph logs the policy with its field path and counts it in `tessera_invalid_policies`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { NetworkPolicy, V3Resource } from '../../src/api/index.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { BACKEND, Harness, NAMESPACE, networkPolicy, PODS } from './harness.ts';
import type { Expectation } from './probes.ts';
import type { Update } from '../../src/syncer/index.ts';

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

const allowClient = { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" } } as const;
const webPolicy = (extra: NetworkPolicy['spec']['ingress'] = []): NetworkPolicy =>
  networkPolicy('web', { selector: "app == 'web'", types: ['Ingress'], ingress: [allowClient, ...(extra ?? [])] });
/** "HTTP" is no Kubernetes port name: invalid for Tessera and for Calico. */
const invalidWeb = webPolicy([{ action: 'Allow', protocol: 'TCP', destination: { ports: ['HTTP'] } }]);

const expect4 = (from: string, to: string, kind: 'tcp' | 'udp', allowed: boolean): Expectation => ({ from, to, kind, family: 4, allowed });

/** What the valid policy allows; every flow not into web is decided by the namespace profile (allow). */
const VALID: readonly Expectation[] = [
  expect4('client', 'web', 'tcp', true),
  expect4('client', 'web', 'udp', false),
  expect4('other', 'web', 'tcp', false),
  expect4('web', 'client', 'tcp', true),
  expect4('other', 'client', 'udp', true),
  expect4('client', 'other', 'tcp', true),
];

describe(`dataplane: an invalid policy fails closed (${BACKEND})`, () => {
  let h: Harness;
  const registry = newRegistry();
  const logLines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  const invalidPolicies = async (): Promise<number> => Number(/^tessera_invalid_policies\{kind="NetworkPolicy"\} (\d+)$/m.exec(await registry.metrics())?.[1] ?? 0);

  beforeAll(async () => {
    h = await Harness.create({}, PODS, { registry, logger });
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('the valid policy allows client → web TCP only', async () => {
    await h.update(upsert(...h.baseResources(), webPolicy()));
    expect(await h.check(VALID)).toEqual([]);
    expect(await invalidPolicies()).toBe(0);
  });

  it('its invalid version denies everything into web, leaves other endpoints alone, and is logged and counted', async () => {
    await h.update(upsert(invalidWeb));
    expect(await h.check([
      // Allowed by the valid policy and by the invalid one's first rule: now denied.
      expect4('client', 'web', 'tcp', false),
      expect4('client', 'web', 'udp', false),
      expect4('other', 'web', 'tcp', false),
      expect4('other', 'web', 'udp', false),
      // Not selected by it: unaffected.
      expect4('web', 'client', 'tcp', true),
      expect4('other', 'client', 'udp', true),
      expect4('client', 'other', 'tcp', true),
      expect4('web', 'other', 'udp', true),
    ])).toEqual([]);
    expect(await invalidPolicies()).toBe(1);
    const logged = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['kind'] === 'NetworkPolicy' && l['name'] === 'web');
    expect(logged).toEqual([
      expect.objectContaining({
        level: 50,
        namespace: NAMESPACE,
        reason: expect.stringContaining('spec.ingress[1].destination.ports[0]: "HTTP" is not a valid port name'),
        msg: expect.stringMatching(/^invalid policy enforced fail-closed/),
      }),
    ]);
  });

  it('fixing the policy restores it', async () => {
    await h.update(upsert(webPolicy()));
    expect(await h.check(VALID)).toEqual([]);
    expect(await invalidPolicies()).toBe(0);
  });
});
