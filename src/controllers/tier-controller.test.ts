/**
 * The tier controller on scripted informers and a recording API (the real API server runs it
 * in e2e/integration/tier-protection.int.test.ts).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

import { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeResource } from '../informers/kube-lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { ScriptedListerWatcher, type ScriptedWatch } from '../../test/informers/scripted-lister-watcher.ts';
import { createRootLogger } from '../runtime/logger.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import type { PolicyRef, TierApi } from './tier-api.ts';
import { TierController } from './tier-controller.ts';
import { TIER_FINALIZER } from './tier-reconciler.ts';

const F = TIER_FINALIZER;

function tier(name: string, opts: { finalizers?: string[]; deleting?: boolean; rv?: string } = {}): KubeObject {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Tier',
    metadata: {
      name,
      resourceVersion: opts.rv ?? '1',
      ...(opts.finalizers === undefined ? {} : { finalizers: opts.finalizers }),
      ...(opts.deleting === true ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { order: 100, defaultAction: 'Deny' },
  } as KubeObject;
}

const defaults = ['kube-admin', 'default', 'kube-baseline'].map((n) => tier(n, { finalizers: [F] }));

function policy(name: string, tierName: string): KubeObject {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name, namespace: 'shop', resourceVersion: '1' }, spec: { tier: tierName, selector: 'all()' } } as KubeObject;
}

/** Records every write, in order, and lets a test wait for the n-th. */
class Recorder implements Writer, TierApi {
  readonly calls: string[] = [];
  live: PolicyRef[] = [];
  private waiters: Array<() => void> = [];

  async apply(): Promise<unknown> {
    throw new Error('the tier controller never applies');
  }
  async createIfAbsent(obj: WrittenObject): Promise<boolean> {
    const finalizers = (obj.metadata as { finalizers?: string[] }).finalizers ?? [];
    this.record(`create ${obj.metadata.name} [${finalizers.join(',')}]`);
    return true;
  }
  async delete(): Promise<boolean> {
    throw new Error('the tier controller never deletes');
  }
  async warningEvent(): Promise<void> {}
  async idle(): Promise<void> {}
  async setFinalizers(name: string, resourceVersion: string, finalizers: readonly string[]): Promise<void> {
    this.record(`finalizers ${name}@${resourceVersion} [${finalizers.join(',')}]`);
  }
  async listPoliciesInTier(name: string): Promise<PolicyRef[]> {
    this.record(`live list ${name}`);
    return this.live;
  }

  private record(call: string): void {
    this.calls.push(call);
    for (const w of this.waiters.splice(0)) w();
  }

  async waitFor(n: number): Promise<string[]> {
    while (this.calls.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.calls;
  }
}

interface LogLine {
  level: string;
  msg: string;
  name?: string;
  count?: number;
  policies?: string[];
}

async function setup(tiers: KubeObject[], policies: KubeObject[] = []) {
  const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
  const lwFor = (r: KubeResource): ScriptedListerWatcher<KubeObject> => {
    let lw = lws.get(r.plural);
    if (lw === undefined) lws.set(r.plural, (lw = new ScriptedListerWatcher<KubeObject>(r.plural)));
    return lw;
  };
  const factory = new InformerFactory({ listerWatcherFor: lwFor });
  const rec = new Recorder();
  const registry = new Registry();
  const lines: LogLine[] = [];
  const logger = createRootLogger({ level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l) as LogLine) } });
  const controller = new TierController({ factory, writer: rec, api: rec, registry, logger });
  lwFor({ group: 'projectcalico.org', version: 'v3', plural: 'tiers' }).queueList({ items: tiers, resourceVersion: '1' });
  lwFor({ group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies' }).queueList({ items: policies, resourceVersion: '1' });
  lwFor({ group: 'projectcalico.org', version: 'v3', plural: 'globalnetworkpolicies' }).queueList({ items: [], resourceVersion: '1' });
  factory.start();
  await factory.waitForCacheSync();
  const abort = new AbortController();
  const run = controller.run(abort.signal);
  const watch = async (plural: string): Promise<ScriptedWatch<KubeObject>> => (lws.get(plural) as ScriptedListerWatcher<KubeObject>).nextWatch();
  const held = async (name: string): Promise<number | undefined> =>
    (await registry.getSingleMetric('tessera_controllers_tier_deletion_held_policies')?.get())?.values.find((v) => v.labels['tier'] === name)?.value;
  return {
    rec,
    lines,
    registry,
    held,
    tierWatch: await watch('tiers'),
    policyWatch: await watch('networkpolicies'),
    stop: async () => {
      abort.abort();
      await run;
      await factory.stop();
    },
  };
}

describe('TierController', () => {
  it('at start: creates a missing default tier with the finalizer, and puts the finalizer on a tier without it', async () => {
    const present = defaults.filter((t) => t.metadata?.name !== 'kube-baseline');
    const { rec, stop } = await setup([...present, tier('security', { finalizers: ['example.com/other'], rv: '7' })]);
    const calls = await rec.waitFor(2);
    await stop();
    expect([...calls].sort()).toEqual([`create kube-baseline [${F}]`, `finalizers security@7 [example.com/other,${F}]`]);
  });

  it('holds a tier being deleted while a policy names it — logged with the policy, counted — and releases it when the policy is deleted', async () => {
    const p = policy('deny-db', 'security');
    const { rec, lines, held, policyWatch, stop } = await setup([...defaults, tier('security', { finalizers: [F], deleting: true, rv: '9' })], [p]);
    await expect.poll(() => held('security')).toBe(1);
    expect(rec.calls).toEqual([]);
    const warning = lines.find((l) => l.msg.startsWith('deletion of the tier is held'));
    expect(warning).toMatchObject({ level: 'warn', name: 'security', count: 1, policies: ['NetworkPolicy shop/deny-db'] });

    policyWatch.send({ type: 'DELETED', object: p });
    const calls = await rec.waitFor(2);
    await stop();
    expect(calls).toEqual(['live list security', 'finalizers security@9 []']);
    expect(await held('security')).toBeUndefined();
    expect(lines.filter((l) => l.msg.startsWith('deletion of the tier is held'))).toHaveLength(1);
  });

  it('confirms with a live list before releasing: a policy the cache has not seen yet still holds the tier', async () => {
    const { rec, held, tierWatch, policyWatch, stop } = await setup([...defaults]);
    rec.live = [{ kind: 'NetworkPolicy', namespace: 'shop', name: 'deny-db' }];
    tierWatch.send({ type: 'ADDED', object: tier('security', { finalizers: [F], deleting: true, rv: '3' }) });
    await expect.poll(() => held('security')).toBe(1);
    expect(rec.calls).toEqual(['live list security']);

    // The cache catches up, then the policy goes: now the tier is released.
    const p = policy('deny-db', 'security');
    policyWatch.send({ type: 'ADDED', object: p });
    rec.live = [];
    policyWatch.send({ type: 'DELETED', object: p });
    const calls = await rec.waitFor(3);
    await stop();
    expect(calls).toEqual(['live list security', 'live list security', 'finalizers security@3 []']);
  });

  it('creates a default tier again when it is deleted', async () => {
    const { rec, registry, tierWatch, stop } = await setup([...defaults]);
    tierWatch.send({ type: 'DELETED', object: defaults[1] as KubeObject });
    const calls = await rec.waitFor(1);
    await stop();
    expect(calls).toEqual([`create default [${F}]`]);
    const recreated = (await registry.getSingleMetric('tessera_controllers_default_tiers_recreated_total')?.get())?.values;
    expect(recreated).toEqual([{ value: 1, labels: { tier: 'default' } }]);
  });
});
