/**
 * Tampering: someone flushes cali-FORWARD, deletes a policy chain, destroys an IP set and adds
 * a foreign rule and chain. The driver repairs everything it owns within the configured
 * refresh interval and leaves the foreign rule and chain alone.
 *
 * The kernel and commands are real; time is not: the driver runs on a fake clock, so "within
 * the refresh interval" is checked as "after the clock has moved exactly one refresh interval
 * past the tampering, and not before" — no wall-clock bound (a slow machine cannot fail it,
 * and a driver that waited longer than the interval cannot pass it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/runtime/clock.ts';
import type { V3Resource } from '../../src/api/index.ts';
import { BACKEND, Harness, matrix, networkPolicy } from './harness.ts';
import type { Update } from '../../src/syncer/index.ts';

const REFRESH_MS = 1_000;
const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

const webIngress = networkPolicy('web-ingress', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [
    { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } },
    { action: 'Allow', protocol: 'UDP', source: { selector: "app == 'client'" }, destination: { ports: ['dns'] } },
  ],
});
const BLOCKED = ['other->web/tcp', 'other->web/udp'];

/** Our rules and chains as iptables-save prints them (counters stripped). */
function owned(save: string): string[] {
  return save.split('\n').filter((l) => l.includes('cali:') || l.startsWith(':cali-')).map((l) => l.replace(/\[\d+:\d+\]/g, ''));
}

function ownedSets(h: Harness): string {
  return h.topo
    .exec(h.topo.nodeNs, ['ipset', 'list', '-o', 'save'])
    .split('\n')
    .filter((l) => / cali4/.test(l))
    .map((l) => l.replace(/ initval \S+/, ''))
    .sort()
    .join('\n');
}

/** Real-time liveness wait for the driver's commands to finish (not a bound on the driver). */
async function waitFor(cond: () => boolean, description: string, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('dataplane: tamper repair', () => {
  let h: Harness;
  const clock = new FakeClock();

  beforeAll(async () => {
    h = await Harness.create({ clock, iptablesRefreshIntervalMs: REFRESH_MS, ipsetsRefreshIntervalMs: REFRESH_MS, iptablesPostWriteCheckMs: 500 });
    await h.update(upsert(...h.baseResources(), webIngress));
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('repairs a flushed cali-FORWARD, a deleted policy chain and a destroyed IP set, leaving foreign rules alone', async () => {
    expect(await h.check(matrix(BLOCKED))).toEqual([]);
    const wantRules = owned(h.saveNode());
    const wantSets = ownedSets(h);
    const node = h.topo.nodeNs;
    const ipt = (...args: string[]) => h.topo.exec(node, [`iptables-${BACKEND}`, ...args]);
    const web = h.topo.pod('web').iface;
    const policyChain = 'cali-pi-np/shop/web-ingress';
    expect(wantRules).toContain(`:${policyChain} - `);
    const victimSet = wantSets.split('\n').find((l) => l.startsWith('create cali40s:'))!.split(' ')[1]!;

    ipt('-F', 'cali-FORWARD');
    ipt('-F', `cali-tw-${web}`); // drop the references so the chain and set can go
    ipt('-F', policyChain);
    ipt('-X', policyChain);
    h.topo.exec(node, ['ipset', 'destroy', victimSet]);
    ipt('-N', 'TSR-FOREIGN');
    ipt('-A', 'TSR-FOREIGN', '-s', '10.99.0.0/16', '-j', 'DROP');
    ipt('-I', 'FORWARD', '1', '-s', '10.98.0.0/16', '-j', 'TSR-FOREIGN');
    const damaged = owned(h.saveNode());
    expect(damaged).not.toEqual(wantRules);
    const repaired = (): boolean => {
      const rules = owned(h.saveNode());
      return rules.length === wantRules.length && rules.every((r, i) => r === wantRules[i]) && ownedSets(h) === wantSets;
    };

    // Nothing but the driver's own read-backs may repair: with its clock still, the damage stays.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(owned(h.saveNode())).toEqual(damaged);

    // One refresh interval later, and no further: every owned difference is repaired.
    await clock.advance(REFRESH_MS);
    await waitFor(repaired, 'the refresh after the tampering to repair it');

    const save = h.saveNode();
    expect(save).toContain('-A TSR-FOREIGN -s 10.99.0.0/16 -j DROP');
    expect(save).toContain('-A FORWARD -s 10.98.0.0/16 -j TSR-FOREIGN');
    // Our hook is back on top of FORWARD, above the foreign rule.
    const forward = save.split('\n').filter((l) => l.startsWith('-A FORWARD '));
    expect(forward[0]).toContain('-j cali-FORWARD');
    expect(await h.check(matrix(BLOCKED))).toEqual([]);
  });
});
