import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { unreadKind } from '../api/unenforced-kinds.ts';
import type { KubeResource } from '../informers/kube-lister-watcher.ts';
import { StatusError, type ListerWatcher, type WatchEvent } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { UnenforcedObjectsReporter } from './unenforced-objects-reporter.ts';

/** A cluster with one HostEndpoint and no ClusterNetworkPolicy CRD (404); watches stay open until aborted. */
function cluster(): (r: KubeResource) => ListerWatcher<KubeObject> {
  return (r) => ({
    resource: `${r.group}/${r.version}/${r.plural}`,
    list: () => {
      if (r.plural !== 'hostendpoints') return Promise.reject(new StatusError(404, 'NotFound', 'the server could not find the requested resource'));
      return Promise.resolve({ items: [{ metadata: { name: 'node-1-eth0', resourceVersion: '5' }, spec: { node: 'node-1', interfaceName: 'eth0' } } as KubeObject], resourceVersion: '5' });
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
  it('logs each HostEndpoint at warn as NOT ENFORCED and counts it by kind; an unserved kind counts 0', async () => {
    const out: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void out.push(l) });
    const registry = newRegistry();
    const reporter = new UnenforcedObjectsReporter({ listerWatcherFor: cluster(), registry, logger, recheckMs: 60_000 });
    const stop = new AbortController();
    const running = reporter.run(stop.signal);
    const warned = () => out.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.msg).startsWith('NOT ENFORCED'));
    await until(() => warned().length === 1, 'the warning');
    const hep = unreadKind('projectcalico.org/v3', 'HostEndpoint');
    expect(warned()[0]).toMatchObject({
      level: 40,
      component: 'unenforced-objects',
      kind: 'HostEndpoint',
      name: 'node-1-eth0',
      msg: `NOT ENFORCED: projectcalico.org/v3 HostEndpoint node-1-eth0: ${hep.status === 'not-enforced' ? hep.reason : ''}`,
    });
    await until(async () => (await registry.metrics()).includes('tessera_unenforced_objects{kind="HostEndpoint"} 1'), 'the gauge');
    expect(await registry.metrics()).toContain('tessera_unenforced_objects{kind="ClusterNetworkPolicy"} 0');
    stop.abort();
    await running;
  });
});
