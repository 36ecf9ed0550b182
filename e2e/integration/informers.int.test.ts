/**
 * The informer stack against a real kube-apiserver + etcd: the cache must equal a fresh list
 * after concurrent churn, after the API server is down for 10 s mid-churn, and after etcd
 * compaction forces a 410 and a relist.
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ControlPlane } from '../controlplane/control-plane.ts';
import { locateBinaries } from '../controlplane/binaries.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { KubeListerWatcher, type KubeResource } from '../../src/informers/kube-lister-watcher.ts';
import type { ListerWatcher, WatchEvent, WatchOptions } from '../../src/informers/lister-watcher.ts';
import type { KubeObject } from '../../src/informers/object.ts';
import { SharedIndexInformer } from '../../src/informers/shared-index-informer.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { adminKubeConfig, sharedControlPlane } from './shared-control-plane.ts';

const GROUP = 'projectcalico.org';
const VERSION = 'v3';
const PLURAL = 'workloadendpoints';

function wep(namespace: string, i: number, generation = 0): KubeObject & { spec: unknown } {
  const pod = `pod-${i}`;
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'WorkloadEndpoint',
    metadata: {
      name: `node--1-k8s-${pod}-eth0`,
      namespace,
      labels: { app: `app-${i % 7}`, generation: String(generation), 'projectcalico.org/namespace': namespace, 'projectcalico.org/orchestrator': 'k8s' },
    },
    spec: {
      orchestrator: 'k8s',
      node: 'node-1',
      pod,
      endpoint: 'eth0',
      interfaceName: `cali${randomBytes(6).toString('hex').slice(0, 11)}`,
      ipNetworks: [`10.70.${i >> 8}.${i & 255}/32`],
      profiles: [`kns.${namespace}`],
    },
  };
}

/** Runs `tasks` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

/** Retries `fn` on any error until it succeeds or `timeoutMs` passes (writes during an outage). */
async function retrying<T>(fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      // 404 on delete means an earlier attempt that "failed" on the wire actually succeeded.
      if ((err as { code?: number }).code === 404) return undefined as T;
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

class Churn {
  constructor(
    private readonly api: CustomObjectsApi,
    private readonly namespace: string,
  ) {}

  create(i: number): Promise<unknown> {
    return retrying(() =>
      this.api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, body: wep(this.namespace, i) }).catch((err: { code?: number }) => {
        if (err.code === 409) return undefined; // created by an attempt whose response was lost
        throw err;
      }),
    );
  }

  update(i: number, generation: number): Promise<unknown> {
    return retrying(() =>
      this.api.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, name: `node--1-k8s-pod-${i}-eth0`, body: { metadata: { labels: { generation: String(generation) } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  delete(i: number): Promise<unknown> {
    return retrying(() =>
      this.api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, name: `node--1-k8s-pod-${i}-eth0` }),
    );
  }

  /** Creates `n`, then concurrently updates every one twice and deletes every third. */
  async run(n: number, onHalfway?: () => Promise<void>): Promise<void> {
    const ids = Array.from({ length: n }, (_, i) => i);
    await pool(ids, 16, (i) => this.create(i).then(() => undefined));
    const ops: Array<() => Promise<unknown>> = [];
    for (const i of ids) {
      ops.push(() => this.update(i, 1));
      ops.push(() => (i % 3 === 0 ? this.delete(i) : this.update(i, 2)));
    }
    const half = Math.floor(ops.length / 2);
    const halfway = onHalfway === undefined ? Promise.resolve() : pool(ops.slice(0, half), 16, async (op) => void (await op())).then(onHalfway);
    if (onHalfway === undefined) await pool(ops, 16, async (op) => void (await op()));
    else await Promise.all([halfway, pool(ops.slice(half), 4, async (op) => void (await op()))]);
  }
}

/** key → resourceVersion of a fresh, consistent list. */
async function freshList(kc: KubeConfig, resource: KubeResource): Promise<Map<string, string>> {
  const lw = new KubeListerWatcher<KubeObject>({ kubeConfig: kc, resource });
  const out = new Map<string, string>();
  let cont: string | undefined;
  do {
    const page = await lw.list(cont === undefined ? { resourceVersion: '', limit: 500 } : { continue: cont, limit: 500 });
    for (const o of page.items) out.set(`${o.metadata!.namespace}/${o.metadata!.name}`, o.metadata!.resourceVersion!);
    cont = page.continue;
  } while (cont !== undefined);
  return out;
}

function cacheState(informer: SharedIndexInformer<KubeObject>): Map<string, string> {
  return new Map(informer.indexer.list().map((o) => [`${o.metadata!.namespace}/${o.metadata!.name}`, o.metadata!.resourceVersion!]));
}

/** Waits until the informer's cache equals a fresh list: same keys, same resourceVersions. */
async function expectCacheMatchesList(kc: KubeConfig, resource: KubeResource, informer: SharedIndexInformer<KubeObject>): Promise<number> {
  let last = { missing: 0, extra: 0, stale: 0 };
  await pollUntil(
    async () => {
      const truth = await freshList(kc, resource);
      const cached = cacheState(informer);
      let missing = 0;
      let stale = 0;
      for (const [k, rv] of truth) {
        const c = cached.get(k);
        if (c === undefined) missing++;
        else if (c !== rv) stale++;
      }
      const extra = [...cached.keys()].filter((k) => !truth.has(k)).length;
      last = { missing, extra, stale };
      return missing + extra + stale === 0 ? true : undefined;
    },
    { description: 'informer cache to equal a fresh list', timeoutMs: 60_000, intervalMs: 250 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last difference: ${JSON.stringify(last)}`);
  });
  return cacheState(informer).size;
}

async function createNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

function startInformer(lw: ListerWatcher<KubeObject>, registry = new Registry()) {
  const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: lw, registry, watchInactivityTimeoutMs: 30_000 });
  const ctrl = new AbortController();
  const done = informer.run(ctrl.signal);
  return { informer, registry, stop: async () => (ctrl.abort(), await done) };
}

async function counter(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((a, v) => a + v.value, 0);
}

describe('informers on the shared control plane', () => {
  let kc: KubeConfig;
  beforeAll(async () => {
    sharedControlPlane();
    kc = adminKubeConfig();
    await installCalicoCrds(kc);
  });

  it('1,000 WorkloadEndpoints created, updated and deleted concurrently while an informer runs: the cache equals a fresh list', async () => {
    const namespace = await createNamespace(kc, 'informer-churn');
    const resource: KubeResource = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
    const { informer, stop } = startInformer(new KubeListerWatcher({ kubeConfig: kc, resource }));
    try {
      expect(await informer.waitForCacheSync(AbortSignal.timeout(30_000))).toBe(true);
      await new Churn(kc.makeApiClient(CustomObjectsApi), namespace).run(1000);
      const size = await expectCacheMatchesList(kc, resource, informer);
      expect(size).toBe(1000 - 334);
    } finally {
      await stop();
    }
  });
});

describe('informers across control-plane failures', () => {
  let cp: ControlPlane;
  let kc: KubeConfig;
  beforeAll(async () => {
    // Without the watch cache, watches are served by etcd itself, so a compaction past the
    // reflector's resourceVersion really does answer 410 (the cache would hide it).
    cp = new ControlPlane({ binaries: locateBinaries(), apiserverArgs: ['--watch-cache=false'] });
    kc = (await cp.start()).kubeConfig;
    await installCalicoCrds(kc);
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('the API server down for 10 s mid-churn: the cache converges to a fresh list', async () => {
    const namespace = await createNamespace(kc, 'informer-outage');
    const resource: KubeResource = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
    const { informer, registry, stop } = startInformer(new KubeListerWatcher({ kubeConfig: kc, resource }));
    try {
      expect(await informer.waitForCacheSync(AbortSignal.timeout(30_000))).toBe(true);
      await new Churn(kc.makeApiClient(CustomObjectsApi), namespace).run(400, () => cp.restartApiserver({ downtimeMs: 10_000 }));
      expect(await expectCacheMatchesList(kc, resource, informer)).toBe(400 - 134);
      expect(await counter(registry, 'tessera_informer_watches_total')).toBeGreaterThan(1);
    } finally {
      await stop();
    }
  });

  it('etcd compacted while the watch is behind: 410, relist, and the cache equals a fresh list', async () => {
    const namespace = await createNamespace(kc, 'informer-compact');
    const resource: KubeResource = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
    const gated = new GatedListerWatcher(new KubeListerWatcher<KubeObject>({ kubeConfig: kc, resource }));
    const { informer, registry, stop } = startInformer(gated);
    try {
      expect(await informer.waitForCacheSync(AbortSignal.timeout(30_000))).toBe(true);
      const churn = new Churn(kc.makeApiClient(CustomObjectsApi), namespace);
      await pool([0, 1, 2, 3, 4], 5, (i) => churn.create(i).then(() => undefined));
      await pollUntil(async () => (informer.indexer.size === 5 ? true : undefined), { description: 'first five cached', timeoutMs: 30_000 });
      // Fall behind: end the watch and hold the next one back while history moves on.
      gated.hold();
      await churn.run(300);
      await cp.compactEtcd();
      gated.release();
      expect(await expectCacheMatchesList(kc, resource, informer)).toBe(300 - 100);
      expect(await counter(registry, 'tessera_informer_relists_total')).toBeGreaterThanOrEqual(1);
    } finally {
      await stop();
    }
  });
});

/**
 * Delegates to a real ListerWatcher, but `hold()` ends the current watch and makes the next
 * one wait until `release()`: the reflector falls behind without knowing it.
 */
class GatedListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  private current: AbortController | undefined;

  constructor(private readonly inner: ListerWatcher<T>) {
    this.resource = inner.resource;
  }

  list: ListerWatcher<T>['list'] = (opts) => this.inner.list(opts);

  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
    this.current?.abort();
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async *watch(opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    if (this.gate !== undefined) await this.gate;
    const ctrl = new AbortController();
    this.current = ctrl;
    const signal = AbortSignal.any([opts.signal, ctrl.signal]);
    yield* this.inner.watch({ ...opts, signal });
  }
}
