import { describe, expect, it } from 'vitest';
import { FakeClock } from '../runtime/clock.ts';
import { InformerFactory } from './informer-factory.ts';
import type { KubeResource } from './kube-lister-watcher.ts';
import { resourcePath } from './kube-lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';

const tiers: KubeResource = { group: 'projectcalico.org', version: 'v3', plural: 'tiers' };
const pods: KubeResource = { group: '', version: 'v1', plural: 'pods' };

describe('resourcePath', () => {
  it('builds core, group and namespaced paths', () => {
    expect(resourcePath(pods)).toBe('/api/v1/pods');
    expect(resourcePath(tiers)).toBe('/apis/projectcalico.org/v3/tiers');
    expect(resourcePath({ ...pods, namespace: 'shop' })).toBe('/api/v1/namespaces/shop/pods');
  });
});

describe('InformerFactory', () => {
  it('shares one informer per resource and starts late informers', async () => {
    const sources = new Map<string, ScriptedListerWatcher<KubeObject>>();
    const factory = new InformerFactory({
      clock: new FakeClock(),
      listerWatcherFor: (r) => {
        const lw = new ScriptedListerWatcher<KubeObject>(r.plural);
        sources.set(r.plural, lw);
        return lw;
      },
    });
    const a = factory.informerFor(tiers);
    const b = factory.informerFor(tiers, { byName: (o) => [o.metadata?.name ?? ''] });
    expect(a).toBe(b);
    expect(a.indexer.indexerNames()).toEqual(['byName']);
    factory.start();
    const late = factory.informerFor(pods);
    sources.get('tiers')!.queueList({ items: [{ metadata: { name: 't', resourceVersion: '1' } }], resourceVersion: '1' });
    sources.get('pods')!.queueList({ items: [], resourceVersion: '1' });
    expect(await factory.waitForCacheSync()).toBe(true);
    expect(late.hasSynced()).toBe(true);
    expect(a.indexer.byIndex('byName', 't')).toHaveLength(1);
    await factory.stop();
  });

  it('requires a kubeConfig or a listerWatcherFor', () => {
    expect(() => new InformerFactory({})).toThrow(TypeError);
  });
});
