/**
 * Randomized churn: random sequences of upserts and deletes of every kind, network sets
 * included (with intermediate flushes)
 * must leave the dataplane exactly where a fresh graph fed only the final state leaves it
 * (the no-hysteresis rule, calico-semantics §5.1). The mock dataplane checks the sequencer
 * contract on every flush along the way.
 */
import { describe, expect, it } from 'vitest';
import type { Rule, V3Resource } from '../api/index.ts';
import { CalcGraph } from './calc-graph.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { gnp, knp, netset, profile, REMOTE_NODE, tier, wep } from '../../test/calc/fixtures.ts';
import { resourceKey } from '../../test/calc/state.ts';
import { seededRandom } from '../runtime/seeded-random.ts';
import type { Update } from '../syncer/index.ts';

function generator(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const some = <T>(xs: readonly T[], max: number): T[] => {
    const n = Math.floor(rand() * (max + 1));
    return Array.from({ length: n }, () => pick(xs));
  };
  const labelVocab = { app: ['web', 'db', 'cache'], env: ['prod', 'dev'], tier: ['fe', 'be'] } as const;
  const labels = (): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [k, vs] of Object.entries(labelVocab)) if (rand() < 0.6) out[k] = pick(vs);
    return out;
  };
  const selectors = ["app == 'web'", "app == 'db'", 'has(env)', "env != 'prod'", "app in {'web', 'cache'}", 'all()', "!has(tier)", "shared == 'yes'", "pcns.team == 'a'"];
  const namespaces = ['ns-a', 'ns-b'];
  const profiles = ['prof-1', 'prof-2', 'kns.ns-a', 'kns.ns-b', 'prof-missing'];
  const rule = (): Rule => {
    const side = () => ({
      ...(rand() < 0.5 ? { selector: pick(selectors) } : {}),
      ...(rand() < 0.2 ? { notSelector: pick(selectors) } : {}),
      ...(rand() < 0.2 ? { namespaceSelector: pick(["team == 'a'", 'all()', 'global()']) } : {}),
      ...(rand() < 0.4 ? { ports: some(['http', 'dns', 80, '8000:8080'], 2) } : {}),
      ...(rand() < 0.15 ? { notPorts: some(['http', 443], 1) } : {}),
    });
    return {
      action: pick(['Allow', 'Deny', 'Pass', 'Log'] as const),
      ...(rand() < 0.6 ? { protocol: pick(['TCP', 'UDP'] as const) } : {}),
      source: side(),
      destination: side(),
    };
  };
  const resource = (): V3Resource => {
    const r = rand();
    if (r < 0.45) {
      const i = Math.floor(rand() * 10);
      const ns = pick(namespaces);
      return wep(`ep-${i}`, {
        namespace: ns,
        node: rand() < 0.5 ? LOCAL_NODE : REMOTE_NODE,
        labels: labels(),
        ips: [...new Set(some(['10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32', 'fd00::1/128', '10.0.0.4/32'], 2))],
        profiles: [...new Set([`kns.${ns}`, ...some(profiles, 2)])],
        ports: some(
          [
            { name: 'http', protocol: 'TCP' as const, port: 80 },
            { name: 'http', protocol: 'TCP' as const, port: 8080 },
            { name: 'dns', protocol: 'UDP' as const, port: 53 },
          ],
          2,
        ),
      });
    }
    if (r < 0.55) {
      // Network sets: namespaced or global, CIDRs overlapping each other and the endpoints'.
      const nets = [...new Set(some(['10.0.0.1/32', '10.1.0.0/16', '10.0.0.0/24', 'fd00::/64', '10.0.0.3', '192.168.0.0/24'], 3))];
      return netset(`set-${Math.floor(rand() * 4)}`, { ...(rand() < 0.5 ? { namespace: pick(namespaces) } : {}), labels: labels(), nets });
    }
    if (r < 0.65) {
      const name = pick(profiles.slice(0, 4));
      return profile(name, rand() < 0.7 ? { shared: pick(['yes', 'no']), ...(rand() < 0.5 ? { 'pcns.team': pick(['a', 'b']) } : {}) } : undefined, rand() < 0.5);
    }
    if (r < 0.72) return tier(pick(['t1', 't2']), rand() < 0.8 ? Math.floor(rand() * 3) : undefined);
    const spec = {
      ...(rand() < 0.8 ? { order: Math.floor(rand() * 3) } : {}),
      selector: pick(selectors),
      ingress: Array.from({ length: Math.floor(rand() * 3) }, rule),
      egress: Array.from({ length: Math.floor(rand() * 3) }, rule),
      types: pick([['Ingress'], ['Egress'], ['Ingress', 'Egress']] as const).slice(),
    };
    const i = Math.floor(rand() * 6);
    if (rand() < 0.5) return knp(pick(namespaces), `np-${i}`, spec);
    const t = pick(['default', 't1', 't2']);
    return gnp(`gp-${i}`, { ...spec, tier: t });
  };
  return { resource, pick };
}

function deleteOf(r: V3Resource): Update {
  return { op: 'delete', kind: r.kind, name: r.metadata.name, ...(r.metadata.namespace === undefined ? {} : { namespace: r.metadata.namespace }) };
}

function runChurn(seed: number, steps: number): void {
  const rand = seededRandom(seed);
  const gen = generator(rand);
  const graph = new CalcGraph({ nodeName: LOCAL_NODE });
  const dp = new MockDataplane();
  const state = new Map<string, V3Resource>();
  graph.onStatusUpdated('resync-in-progress');
  for (let i = 0; i < steps; i++) {
    if (i === Math.floor(steps / 4)) {
      graph.onStatusUpdated('in-sync');
      dp.graphInSync = true;
    }
    const keys = [...state.keys()];
    if (keys.length > 0 && rand() < 0.25) {
      const key = gen.pick(keys);
      const r = state.get(key)!;
      state.delete(key);
      graph.onUpdates([deleteOf(r)]);
    } else {
      const r = gen.resource();
      state.set(resourceKey(r), r);
      graph.onUpdates([{ op: 'upsert', resource: r }]);
    }
    if (rand() < 0.3) dp.apply(graph.flush());
  }
  dp.apply(graph.flush());

  const fresh = new CalcGraph({ nodeName: LOCAL_NODE });
  const freshDp = new MockDataplane();
  fresh.onUpdates([...state.values()].map((resource) => ({ op: 'upsert' as const, resource })));
  fresh.onStatusUpdated('in-sync');
  freshDp.graphInSync = true;
  freshDp.apply(fresh.flush());

  expect(dp.snapshot()).toEqual(freshDp.snapshot());
  // Policies and profiles must also carry the same rules.
  expect(Object.fromEntries(dp.policies)).toEqual(Object.fromEntries(freshDp.policies));
  expect(Object.fromEntries(dp.profiles)).toEqual(Object.fromEntries(freshDp.profiles));
  expect(Object.fromEntries(dp.endpoints)).toEqual(Object.fromEntries(freshDp.endpoints));
}

describe('calc graph randomized churn', () => {
  for (let seed = 1; seed <= 40; seed++) {
    it(`seed ${seed}: 400 random upserts/deletes end where the final state alone leads`, () => {
      runChurn(seed, 400);
    });
  }
});
