/**
 * Restart: stop the driver and start a new one. Until the new one is in sync nothing is
 * written; once in sync, an unchanged state rewrites nothing; and probes running throughout
 * never change verdict.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import { CalcGraph } from '../../src/calc/index.ts';
import { Harness, NODE, matrix, networkPolicy } from './harness.ts';
import { checkConnectivity } from './probes.ts';
import type { Update } from '../../src/syncer/index.ts';

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));
const webIngress = networkPolicy('web-ingress', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } }],
});
const EXPECTED = matrix(['client->web/udp', 'other->web/tcp', 'other->web/udp']);
const strip = (save: string) => save.replace(/\[\d+:\d+\]/g, '');

describe('dataplane: restart keeps the last good policy', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await Harness.create();
    await h.update(upsert(...h.baseResources(), webIngress));
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('removes no rule before in sync, rewrites nothing after, and no probe changes verdict', async () => {
    expect(await h.check(EXPECTED)).toEqual([]);
    const mismatches: string[] = [];
    let probing = true;
    const prober = (async () => {
      // No retries here: a transient block during the restart must show up.
      while (probing) mismatches.push(...(await checkConnectivity(h.agents, EXPECTED, 1_000, { retrySlow: false })));
    })();

    try {
      await h.stopDriver();
      const before = strip(h.saveNode());

      // A fresh agent: new calc graph, new driver, same resources.
      const graph = new CalcGraph({ nodeName: NODE });
      const driver = h.startDriver();
      graph.onUpdates(upsert(...h.baseResources(), webIngress));
      graph.onStatusUpdated('in-sync');
      const all = graph.flush();
      expect(all[all.length - 1]).toEqual({ type: 'InSync' });
      driver.send(all.slice(0, -1));
      await new Promise((r) => setTimeout(r, 1_000));
      expect(strip(h.saveNode())).toBe(before);
      expect(await driver.metrics.restoreCalls.get()).toMatchObject({ values: [] });

      driver.send(all.slice(-1));
      await driver.flushed();
      expect(strip(h.saveNode())).toBe(before);
      // Identical hashes: the first apply after a restart wrote no iptables rule at all.
      expect((await driver.metrics.restoreCalls.get()).values).toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      probing = false;
      await prober;
    }
    expect(mismatches).toEqual([]);
  });
});
