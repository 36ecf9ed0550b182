import { describe, expect, it } from 'vitest';

import { FakeKernel } from '../dataplane/iptables/fake-kernel.ts';
import { RecordingCommandRunner } from '../dataplane/index.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { StatusError, type KubeObject } from '../informers/index.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { startAgent } from './agent.ts';
import { AGENT_RESOURCES, type SyncerFactory } from '../syncer/index.ts';
import type { V3Resource } from '../api/index.ts';
import { untilAborted } from '../runtime/until-aborted.ts';

/** Items as a list response returns them: no kind/apiVersion per item. */
const LISTS: Record<string, KubeObject[]> = {
  tiers: [{ metadata: { name: 'default', resourceVersion: '1' }, spec: { order: 1_000_000, defaultAction: 'Deny' } } as KubeObject],
  profiles: [{ metadata: { name: 'kns.shop', resourceVersion: '1' }, spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] } } as KubeObject],
  globalnetworkpolicies: [],
  networkpolicies: [
    {
      metadata: { name: 'deny-db', namespace: 'shop', resourceVersion: '1' },
      spec: { tier: 'default', selector: "app == 'db'", ingress: [{ action: 'Deny' }] },
    } as KubeObject,
  ],
  workloadendpoints: [
    {
      metadata: { name: 'node--1-k8s-db-eth0', namespace: 'shop', resourceVersion: '1', labels: { app: 'db', 'projectcalico.org/namespace': 'shop', 'projectcalico.org/orchestrator': 'k8s' } },
      spec: { node: 'node-1', orchestrator: 'k8s', endpoint: 'eth0', pod: 'db', interfaceName: 'calidb', ipNetworks: ['10.65.0.2/32'], profiles: ['kns.shop'] },
    } as KubeObject,
  ],
};

function scripted(lists: Record<string, KubeObject[]>, hold: Set<string> = new Set()): {
  lws: Map<string, ScriptedListerWatcher<KubeObject>>;
  release: (plural: string) => void;
} {
  const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
  for (const { plural } of AGENT_RESOURCES) {
    const lw = new ScriptedListerWatcher<KubeObject>(plural);
    if (!hold.has(plural)) lw.queueList({ items: lists[plural] ?? [], resourceVersion: '1' });
    lws.set(plural, lw);
  }
  return { lws, release: (plural) => lws.get(plural)?.queueList({ items: lists[plural] ?? [], resourceVersion: '1' }) };
}

async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('startAgent', () => {
  it('programs nothing until every informer has listed, then applies once and becomes ready', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const { lws, release } = scripted(LISTS, new Set(['workloadendpoints']));
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', listerWatcherFor: (r) => lws.get(r.plural)!, runner }, abort.signal);
    await new Promise((r) => setTimeout(r, 100));
    expect(agent.ready()).toBe(false);
    expect(runner.calls.filter((c) => c.cmd.includes('restore'))).toEqual([]);
    release('workloadendpoints');
    await until(() => agent.ready(), 'the first in-sync apply');
    const g = agent.generations();
    expect(g.applied).toBe(g.sent);
    // The endpoint's policy chain exists: the kind-less list items were keyed correctly.
    expect([...kernel.chains.keys()].some((c) => c.startsWith('cali-pi-'))).toBe(true);
    abort.abort();
    expect(await agent.done).toBe('stopped');
  });

  it('syncs and programs when the staged-policy CRDs are not installed (404: optional kinds)', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    // Every optional kind of the kind table (the staged ones and ClusterNetworkPolicy, today) not
    // served, at any of its versions (ClusterNetworkPolicy: v1beta1, then v1alpha2, each a 404).
    const optional = AGENT_RESOURCES.filter((r) => r.optional === true);
    const staged = new Set(optional.map((r) => r.plural));
    expect(staged.size).toBeGreaterThan(0);
    const { lws } = scripted(LISTS, staged);
    for (const r of optional) {
      for (let v = 0; v <= (r.fallbackVersions?.length ?? 0); v++) lws.get(r.plural)!.queueList(new StatusError(404, 'NotFound', 'the server could not find the requested resource') as never);
    }
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', listerWatcherFor: (r) => lws.get(r.plural)!, runner }, abort.signal);
    await until(() => agent.ready(), 'ready without the staged kinds');
    expect([...kernel.chains.keys()].some((c) => c.startsWith('cali-pi-'))).toBe(true);
    abort.abort();
    expect(await agent.done).toBe('stopped');
  });

  it('leaves the kernel untouched on shutdown (no flush, no delete)', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const { lws } = scripted(LISTS);
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', listerWatcherFor: (r) => lws.get(r.plural)!, runner }, abort.signal);
    await until(() => agent.ready(), 'ready');
    const chains = new Map([...kernel.chains].map(([k, v]) => [k, [...v]]));
    const before = runner.calls.length;
    abort.abort();
    await agent.done;
    expect(runner.calls.slice(before).filter((c) => c.cmd.includes('restore') || c.args.includes('destroy'))).toEqual([]);
    expect(kernel.chains).toEqual(chains);
  });

  it('a watch delete removes the policy from the dataplane and bumps the applied generation', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const { lws } = scripted(LISTS);
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', listerWatcherFor: (r) => lws.get(r.plural)!, runner }, abort.signal);
    await until(() => agent.ready(), 'ready');
    const gen = agent.generations().applied;
    const watch = await lws.get('networkpolicies')!.nextWatch();
    watch.send({ type: 'DELETED', object: { ...LISTS['networkpolicies']![0]!, metadata: { name: 'deny-db', namespace: 'shop', resourceVersion: '2' } } });
    await until(() => agent.generations().applied > gen && ![...kernel.chains.keys()].some((c) => c.startsWith('cali-pi-')), 'the policy chain to go');
    abort.abort();
    await agent.done;
  });

  it('exports informer, calc-graph, dataplane and agent metrics on one registry', async () => {
    const registry = newRegistry();
    const { lws } = scripted(LISTS);
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', listerWatcherFor: (r) => lws.get(r.plural)!, runner: new RecordingCommandRunner(new FakeKernel().handler), registry }, abort.signal);
    await until(() => agent.ready(), 'ready');
    const text = await registry.metrics();
    for (const name of ['tessera_informer_items', 'felix_calc_graph_updates_processed', 'felix_iptables_restore_calls', 'tessera_agent_applied_generation', 'tessera_agent_ready 1']) {
      expect(text).toContain(name);
    }
    abort.abort();
    await agent.done;
  });

  it("runs the feed its caller gives (a SyncerFactory, e.g. Typha's client): what it delivers is programmed, its probes are on live(), it stops with the agent", async () => {
    const kernel = new FakeKernel();
    const kinds: Record<string, string> = { tiers: 'Tier', profiles: 'Profile', networkpolicies: 'NetworkPolicy', workloadendpoints: 'WorkloadEndpoint' };
    const resources = Object.entries(kinds).flatMap(([plural, kind]) => (LISTS[plural] ?? []).map((o) => ({ ...o, apiVersion: 'projectcalico.org/v3', kind }) as unknown as V3Resource));
    let feedStopped = false;
    const syncer: SyncerFactory = (callbacks) => ({
      livenessProbes: [{ name: 'test feed', probe: { timeoutMs: 1000, pendingSince: () => undefined } }],
      run: async (signal) => {
        callbacks.onStatusUpdated('resync-in-progress');
        callbacks.onUpdates(resources.map((resource) => ({ op: 'upsert', resource })));
        callbacks.onStatusUpdated('in-sync');
        await untilAborted(signal);
        feedStopped = true;
      },
    });
    const abort = new AbortController();
    const agent = startAgent({ nodeName: 'node-1', syncer, runner: new RecordingCommandRunner(kernel.handler) }, abort.signal);
    await until(() => agent.ready(), 'the first in-sync apply');
    expect([...kernel.chains.keys()].some((c) => c.startsWith('cali-pi-'))).toBe(true);
    expect(agent.live().components.map((c) => c.name)).toContain('test feed');
    abort.abort();
    expect(await agent.done).toBe('stopped');
    expect(feedStopped).toBe(true);
  });

  it('rejects an empty node name', () => {
    expect(() => startAgent({ nodeName: '', listerWatcherFor: () => new ScriptedListerWatcher(), runner: new RecordingCommandRunner() }, new AbortController().signal)).toThrow(TypeError);
  });
});
