import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ListerWatcher } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { translateCluster } from './cluster-objects.ts';
import { loadFromFiles, loadFromListers, SIMULATED_KINDS, type KindSource } from './load-objects.ts';
import { Simulation } from './simulation.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

/** A cluster's lists: items without apiVersion/kind (as list responses carry them), paged by 2. */
function fakeCluster(objects: readonly unknown[], failing: ReadonlySet<string>): (k: KindSource) => ListerWatcher<KubeObject> {
  return (k) => {
    const items = objects
      .filter((o) => (o as { apiVersion?: string }).apiVersion === k.apiVersion && (o as { kind?: string }).kind === k.kind)
      .map((o) => {
        const { apiVersion: _a, kind: _k, ...rest } = o as Record<string, unknown>;
        return rest as unknown as KubeObject;
      });
    return {
      resource: k.kind,
      list: (opts) => {
        if (failing.has(k.kind)) return Promise.reject(new Error('the server could not find the requested resource'));
        const start = Number(opts.continue ?? '0');
        const next = start + 2;
        return Promise.resolve({ items: items.slice(start, next), resourceVersion: '1', ...(next < items.length ? { continue: String(next) } : {}) });
      },
      watch: () => {
        throw new Error('not used');
      },
    };
  };
}

describe('loading a simulation', () => {
  it('from files: every simulated kind of examples/, one FileListerWatcher per kind', async () => {
    const notes: string[] = [];
    const objs = await loadFromFiles([EXAMPLES], notes);
    expect(notes).toEqual([]);
    expect(objs.pods.map((p) => p.metadata?.name).sort()).toEqual(['api', 'coredns', 'db', 'frontend', 'prometheus']);
    expect(objs.networkPolicies).toHaveLength(2);
    expect(objs.calico.map((r) => r.kind).sort()).toContain('WorkloadEndpoint');
  });

  it('from a cluster: all pages of every kind, typed, and a kind that cannot be listed is a note; the verdicts equal the files\'', async () => {
    const fileNotes: string[] = [];
    const fromFiles = await loadFromFiles([EXAMPLES], fileNotes);
    const all = [...fromFiles.namespaces.map((o) => ({ apiVersion: 'v1', kind: 'Namespace', ...o })), ...fromFiles.serviceAccounts.map((o) => ({ apiVersion: 'v1', kind: 'ServiceAccount', ...o })), ...fromFiles.pods.map((o) => ({ apiVersion: 'v1', kind: 'Pod', ...o })), ...fromFiles.networkPolicies.map((o) => ({ ...o, apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' })), ...fromFiles.calico];
    const notes: string[] = [];
    const objs = await loadFromListers(fakeCluster(all, new Set()), notes);
    expect(notes).toEqual([]);
    const a = new Simulation(translateCluster(fromFiles).resources);
    const b = new Simulation(translateCluster(objs).resources);
    expect(b.endpoints.map((e) => e.id)).toEqual(a.endpoints.map((e) => e.id));
    for (const port of [8080, 8081, 5432, 9090]) expect(b.matrix('TCP', port)).toEqual(a.matrix('TCP', port));

    const partialNotes: string[] = [];
    await loadFromListers(fakeCluster(all, new Set(['Tier'])), partialNotes);
    expect(partialNotes).toEqual(['projectcalico.org/v3 Tier: not listed: the server could not find the requested resource']);
    expect(SIMULATED_KINDS).toHaveLength(9);
  });

  it('a pod without an IP is skipped with a note', () => {
    const t = translateCluster({
      namespaces: [{ metadata: { name: 'x' } }],
      serviceAccounts: [],
      pods: [{ metadata: { name: 'pending', namespace: 'x' }, spec: { nodeName: 'node-1' }, status: { phase: 'Pending' } }],
      networkPolicies: [],
      calico: [],
    });
    expect(t.notes).toEqual(['Pod x/pending: no workload endpoint (no node, no IP, host network or finished); skipped']);
    expect(new Simulation(t.resources).endpoints).toEqual([]);
  });
});
