import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { unreadKind } from '../api/unenforced-kinds.ts';
import type { KubeResource } from '../informers/kube-lister-watcher.ts';
import { StatusError, type ListerWatcher, type WatchEvent } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { UnenforcedObjectsReporter } from './unenforced-objects-reporter.ts';

/**
 * A cluster with one AdminNetworkPolicy (v1alpha1, a kind Tessera does not enforce) and no
 * BaselineAdminNetworkPolicy CRD, or (`served` false) without either CRD (404); watches stay
 * open until aborted.
 */
function cluster(served = true): (r: KubeResource) => ListerWatcher<KubeObject> {
  return (r) => ({
    resource: `${r.group}/${r.version}/${r.plural}`,
    list: () => {
      if (r.plural !== 'adminnetworkpolicies' || !served) return Promise.reject(new StatusError(404, 'NotFound', 'the server could not find the requested resource'));
      return Promise.resolve({ items: [{ metadata: { name: 'admin-deny', resourceVersion: '5' }, spec: { priority: 10, subject: { namespaces: {} } } } as KubeObject], resourceVersion: '5' });
    },
    watch: (opts): AsyncIterable<WatchEvent<KubeObject>> => ({
      [Symbol.asyncIterator]: () => ({
        // No event ever: the watch ends when it is aborted.
        next: () => new Promise<IteratorResult<WatchEvent<KubeObject>>>((resolve) => opts.signal?.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true })),
      }),
    }),
  });
}

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('UnenforcedObjectsReporter (the agent)', () => {
  it('logs each AdminNetworkPolicy at warn as NOT ENFORCED and counts it by kind', async () => {
    const out: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void out.push(l) });
    const registry = newRegistry();
    const reporter = new UnenforcedObjectsReporter({ listerWatcherFor: cluster(), registry, logger, recheckMs: 60_000 });
    const stop = new AbortController();
    const running = reporter.run(stop.signal);
    const warned = () => out.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.msg).startsWith('NOT ENFORCED'));
    await until(() => warned().length === 1, 'the warning');
    const anp = unreadKind('policy.networking.k8s.io/v1alpha1', 'AdminNetworkPolicy');
    expect(warned()[0]).toMatchObject({
      level: 40,
      component: 'unenforced-objects',
      kind: 'AdminNetworkPolicy',
      name: 'admin-deny',
      msg: `NOT ENFORCED: policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy admin-deny: ${anp.status === 'not-enforced' ? anp.reason : ''}`,
    });
    expect(anp.status).toBe('not-enforced');
    await until(async () => (await registry.metrics()).includes('tessera_unenforced_objects{kind="AdminNetworkPolicy"} 1'), 'the gauge');
    expect(await registry.metrics()).toContain('tessera_unenforced_objects{kind="BaselineAdminNetworkPolicy"} 0');
    stop.abort();
    await running;
  });

  it('an unserved kind (no CRD: 404) counts 0 and logs nothing', async () => {
    const out: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void out.push(l) });
    const registry = newRegistry();
    const reporter = new UnenforcedObjectsReporter({ listerWatcherFor: cluster(false), registry, logger, recheckMs: 60_000 });
    const stop = new AbortController();
    const running = reporter.run(stop.signal);
    await until(async () => (await registry.metrics()).includes('tessera_unenforced_objects{kind="AdminNetworkPolicy"} 0'), 'the gauge at 0');
    expect(out.filter((l) => l.includes('NOT ENFORCED'))).toEqual([]);
    stop.abort();
    await running;
  });
});
