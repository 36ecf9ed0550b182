import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import { silentLogger } from '../runtime/logger.ts';
import { StatusError, type ListerWatcher, type WatchEvent } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import { OptionalListerWatcher } from './optional-lister-watcher.ts';
import { servedVersionListerWatcher, ServedVersionListerWatcher } from './served-version-lister-watcher.ts';

const CNP = { group: 'policy.networking.k8s.io', version: 'v1beta1', plural: 'clusternetworkpolicies' };

/** A cluster serving `served` versions (mutable), each with one object named after its version. */
function cluster(served: Set<string>, failWith?: StatusError): { base: (r: typeof CNP) => ListerWatcher<KubeObject>; watched: string[] } {
  const watched: string[] = [];
  const base = (r: typeof CNP): ListerWatcher<KubeObject> => ({
    resource: `${r.group}/${r.version}/${r.plural}`,
    list: () => {
      if (failWith !== undefined && r.version === 'v1beta1') return Promise.reject(failWith);
      if (!served.has(r.version)) return Promise.reject(new StatusError(404, 'NotFound', 'the server could not find the requested resource'));
      return Promise.resolve({ items: [{ metadata: { name: `from-${r.version}`, resourceVersion: '7' } }], resourceVersion: '7' });
    },
    watch: (): AsyncIterable<WatchEvent<KubeObject>> => {
      watched.push(r.version);
      return { [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true as const, value: undefined }) }) };
    },
  });
  return { base, watched };
}

const WATCH = { resourceVersion: '7', allowWatchBookmarks: true, timeoutSeconds: 60, signal: new AbortController().signal };
const names = (r: { items: KubeObject[] }): string[] => r.items.map((o) => o.metadata?.name ?? '');

describe('ServedVersionListerWatcher (ClusterNetworkPolicy: v1beta1, else v1alpha2)', () => {
  it('reads v1beta1 where it is served, and watches it', async () => {
    const { base, watched } = cluster(new Set(['v1beta1', 'v1alpha2']));
    const lw = servedVersionListerWatcher(CNP, ['v1alpha2'], base, silentLogger);
    expect(names(await lw.list({}))).toEqual(['from-v1beta1']);
    for await (const _ of lw.watch(WATCH)) break;
    expect(watched).toEqual(['v1beta1']);
  });

  it('a v1alpha2-only cluster (Calico 3.32\'s v0.2.0 CRD): reads v1alpha2 — never an empty list — watches it, and logs the version', async () => {
    const out: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void out.push(l) });
    const { base, watched } = cluster(new Set(['v1alpha2']));
    const lw = servedVersionListerWatcher(CNP, ['v1alpha2'], base, logger) as ServedVersionListerWatcher<KubeObject>;
    expect(names(await lw.list({}))).toEqual(['from-v1alpha2']);
    expect(lw.version).toBe('v1alpha2');
    for await (const _ of lw.watch(WATCH)) break;
    expect(watched).toEqual(['v1alpha2']);
    const logs = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs).toEqual([
      expect.objectContaining({ level: 30, component: 'served-version-lister-watcher', resource: 'clusternetworkpolicies.policy.networking.k8s.io', version: 'v1alpha2', notServed: ['v1beta1'], msg: 'reading v1alpha2 (the API server does not serve v1beta1)' }),
    ]);
    // The same version again: logged once.
    await lw.list({});
    expect(out).toHaveLength(1);
  });

  it('moves to v1beta1 at the next list once the CRD is upgraded, and back after a downgrade', async () => {
    const served = new Set(['v1alpha2']);
    const { base } = cluster(served);
    const lw = servedVersionListerWatcher(CNP, ['v1alpha2'], base, silentLogger);
    expect(names(await lw.list({}))).toEqual(['from-v1alpha2']);
    served.add('v1beta1');
    expect(names(await lw.list({}))).toEqual(['from-v1beta1']);
    served.delete('v1beta1');
    expect(names(await lw.list({}))).toEqual(['from-v1alpha2']);
  });

  it('neither version served: the 404 passes through, so an optional kind is an empty list only then', async () => {
    const { base } = cluster(new Set());
    const lw = servedVersionListerWatcher(CNP, ['v1alpha2'], base, silentLogger);
    await expect(lw.list({})).rejects.toMatchObject({ code: 404 });
    expect(await new OptionalListerWatcher(lw, { logger: silentLogger }).list({})).toEqual({ items: [], resourceVersion: '' });
  });

  it('any other error of the preferred version (403, 500) is not a reason to read an older one', async () => {
    for (const err of [new StatusError(403, 'Forbidden', 'no'), new StatusError(500, 'InternalError', 'boom')]) {
      const { base } = cluster(new Set(['v1alpha2']), err);
      await expect(servedVersionListerWatcher(CNP, ['v1alpha2'], base, silentLogger).list({})).rejects.toBe(err);
    }
  });

  it('makes an older version\'s ListerWatcher only when the preferred one is not served', async () => {
    const made: string[] = [];
    const { base } = cluster(new Set(['v1beta1', 'v1alpha2']));
    const lw = servedVersionListerWatcher(CNP, ['v1alpha2'], (r) => (made.push(r.version), base(r)), silentLogger);
    await lw.list({});
    await lw.list({});
    expect(made).toEqual(['v1beta1']);
  });

  it('without fallback versions it is the plain ListerWatcher', () => {
    const { base } = cluster(new Set(['v1beta1']));
    expect(servedVersionListerWatcher(CNP, undefined, base, silentLogger)).not.toBeInstanceOf(ServedVersionListerWatcher);
    expect(servedVersionListerWatcher(CNP, [], base, silentLogger)).not.toBeInstanceOf(ServedVersionListerWatcher);
  });
});
