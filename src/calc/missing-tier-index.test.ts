/**
 * Tiers that are missing or being deleted, through the public `CalcGraph`: a policy in a tier
 * without a Tier object is logged once per change and counted; a Tier with a
 * deletionTimestamp (held by the controllers' finalizer) keeps its place in the order.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

import type { Tier, V3Resource } from '../api/index.ts';
import { createRootLogger } from '../runtime/logger.ts';
import { CalcGraph } from './calc-graph.ts';
import { MissingTierIndex, policiesInMissingTiers } from './missing-tier-index.ts';
import { LOCAL_NODE } from '../../test/calc/harness.ts';
import { MockDataplane } from '../../test/calc/mock-dataplane.ts';
import { gnp, localWlEp1, tier } from '../../test/calc/fixtures.ts';

interface LogLine {
  level: string;
  msg: string;
  kind?: string;
  name?: string;
  namespace?: string;
  tier?: string;
  reason?: string;
}

function recordingGraph(): { graph: CalcGraph; lines: LogLine[]; registry: Registry; dp: MockDataplane; flush(): void } {
  const lines: LogLine[] = [];
  const logger = createRootLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } });
  const registry = new Registry();
  const graph = new CalcGraph({ nodeName: LOCAL_NODE, registry, logger });
  const dp = new MockDataplane();
  return {
    graph,
    lines,
    registry,
    dp,
    flush: () => {
      dp.graphInSync = true;
      dp.apply(graph.flush());
    },
  };
}

const upsert = (...resources: V3Resource[]) => resources.map((resource) => ({ op: 'upsert', resource }) as const);

async function gauge(registry: Registry): Promise<number | undefined> {
  const m = await registry.getSingleMetric('tessera_calc_policies_missing_tier')?.get();
  return m?.values[0]?.value;
}

const tierReports = (lines: LogLine[]): string[] =>
  lines.filter((l) => l.tier !== undefined).map((l) => `${l.level} ${l.msg}: ${l.kind} ${l.namespace ?? ''}/${l.name} in ${l.tier}`);

/** A Tier being deleted, as the API server serves it while the controllers' finalizer holds it. */
function terminating(t: Tier): Tier {
  return { ...t, metadata: { ...t.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['projectcalico.org/tier-controller'] } } as Tier;
}

describe('CalcGraph: policies in a tier that does not exist', () => {
  const denyFirst = gnp('deny', { order: 100, tier: 'tp-security', selector: 'all()', ingress: [{ action: 'Deny' }] });

  it('warns once per change, naming the policy and the tier, and counts it in tessera_calc_policies_missing_tier', async () => {
    const { graph, lines, registry, flush } = recordingGraph();
    graph.onUpdates(upsert(tier('default', 1_000_000), denyFirst, localWlEp1));
    graph.onStatusUpdated('in-sync');
    flush();
    expect(tierReports(lines)).toEqual(['warn policy names a tier that does not exist: GlobalNetworkPolicy /tp-security.deny in tp-security']);
    expect(lines.find((l) => l.tier !== undefined)?.reason).toMatch(/^tier "tp-security" does not exist: the policy is enforced in a tier ordered after every existing tier/);
    expect(await gauge(registry)).toBe(1);

    // Unrelated changes, and a change to the policy that keeps it in the same missing tier: no repeat.
    graph.onUpdates(upsert(gnp('other', { order: 1, selector: 'all()' }), { ...denyFirst, spec: { ...denyFirst.spec, order: 101 } }));
    flush();
    expect(tierReports(lines)).toHaveLength(1);

    graph.onUpdates(upsert(tier('tp-security', 100)));
    flush();
    expect(tierReports(lines).at(-1)).toBe('info policy names an existing tier again: GlobalNetworkPolicy /tp-security.deny in tp-security');
    expect(await gauge(registry)).toBe(0);

    graph.onUpdates([{ op: 'delete', kind: 'Tier', name: 'tp-security' }]);
    flush();
    expect(tierReports(lines).at(-1)).toBe('warn policy names a tier that does not exist: GlobalNetworkPolicy /tp-security.deny in tp-security');
    expect(await gauge(registry)).toBe(1);

    graph.onUpdates([{ op: 'delete', kind: 'GlobalNetworkPolicy', name: 'tp-security.deny' }]);
    flush();
    expect(tierReports(lines)).toHaveLength(3);
    expect(await gauge(registry)).toBe(0);
  });

  it('says nothing while the datastore syncs: a policy listed before its tier is not reported', async () => {
    const { graph, lines, registry, flush } = recordingGraph();
    graph.onUpdates(upsert(denyFirst));
    flush();
    graph.onStatusUpdated('resync-in-progress');
    flush();
    graph.onUpdates(upsert(tier('tp-security', 100)));
    graph.onStatusUpdated('in-sync');
    flush();
    expect(tierReports(lines)).toEqual([]);
    expect(await gauge(registry)).toBe(0);
  });

  it('a Tier with a deletionTimestamp keeps its order; once it is gone its Deny is ordered after the default tier', () => {
    const { graph, dp, flush } = recordingGraph();
    const allow = gnp('allow', { order: 1000, selector: 'all()', ingress: [{ action: 'Allow' }] });
    const security = tier('tp-security', 100);
    graph.onUpdates(upsert(tier('default', 1_000_000), security, denyFirst, allow, localWlEp1));
    graph.onStatusUpdated('in-sync');
    flush();
    const order = (): string[] => (dp.endpoints.get('default/ep1')?.tiers ?? []).map((t) => t.name);
    expect(order()).toEqual(['tp-security', 'default']);

    graph.onUpdates(upsert(terminating(security)));
    flush();
    expect(order()).toEqual(['tp-security', 'default']);

    graph.onUpdates([{ op: 'delete', kind: 'Tier', name: 'tp-security' }]);
    flush();
    expect(order()).toEqual(['default', 'tp-security']);
  });
});

describe('MissingTierIndex', () => {
  it('reports a move from one missing tier to another, and forgets a deleted policy silently', () => {
    const idx = new MissingTierIndex();
    const policy = (t: string) => ({
      id: { tier: t, name: 'p', namespace: 'ns', kind: 'NetworkPolicy' as const },
      key: `k`,
      order: 1,
      selector: 'all()',
      inboundRules: [],
      outboundRules: [],
      governsIngress: true,
      governsEgress: false,
      untracked: false,
      preDnat: false,
      applyOnForward: false,
    });
    idx.onPolicyUpdate('k', policy('a'));
    expect(idx.flush().map((c) => `${c.type} ${c.policy.tier}`)).toEqual(['missing a']);
    idx.onPolicyUpdate('k', policy('b'));
    expect(idx.flush().map((c) => `${c.type} ${c.policy.tier}`)).toEqual(['missing b']);
    idx.onPolicyUpdate('k', null);
    expect(idx.flush()).toEqual([]);
    expect(idx.missingCount).toBe(0);
  });

  it('policiesInMissingTiers: defaulted tier names, namespaces, and tiers given as existing', () => {
    const found = policiesInMissingTiers(
      [
        { kind: 'Tier', metadata: { name: 'platform' } },
        { kind: 'NetworkPolicy', metadata: { name: 'a', namespace: 'shop' }, spec: { tier: 'security' } },
        { kind: 'NetworkPolicy', metadata: { name: 'b', namespace: 'shop' }, spec: { tier: 'platform' } },
        { kind: 'GlobalNetworkPolicy', metadata: { name: 'c' }, spec: {} },
        { kind: 'GlobalNetworkPolicy', metadata: { name: 'd' }, spec: { tier: 'kube-admin' } },
      ],
      ['kube-admin'],
    );
    expect(found).toEqual([
      { kind: 'NetworkPolicy', namespace: 'shop', name: 'a', tier: 'security' },
      { kind: 'GlobalNetworkPolicy', name: 'c', tier: 'default' },
    ]);
  });
});
