import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StatusError, type ListerWatcher } from '../informers/lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { InputError, type InputProblem } from '../runtime/input-error.ts';
import { classifyObjects, translateCluster } from './cluster-objects.ts';
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
        if (failing.has(k.kind)) return Promise.reject(new StatusError(404, 'NotFound', 'the server could not find the requested resource'));
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

  it('from a cluster: all pages of every kind, typed, and a kind the server does not serve (404) is a note; the verdicts equal the files\'', async () => {
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
    expect(partialNotes).toEqual(['projectcalico.org/v3 Tier: not served by the API server (is its CRD installed?); none listed']);
  });

  it('from a cluster: a HostEndpoint is listed and read as a Calico object, not reported; an AdminNetworkPolicy CRD not served (404: a kind reported NOT ENFORCED) is no note', async () => {
    const hep = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'node-1-eth0' }, spec: { node: 'node-1', interfaceName: 'eth0' } };
    const notes: string[] = [];
    const objs = await loadFromListers(fakeCluster([hep], new Set(['AdminNetworkPolicy', 'BaselineAdminNetworkPolicy'])), notes);
    expect(notes).toEqual([]);
    expect(objs.unenforced ?? []).toEqual([]);
    expect(objs.calico.map((o) => `${o.kind} ${o.metadata.name}`)).toContain('HostEndpoint node-1-eth0');
  });

  it('every kind listed is one the simulator reads: none comes out as a "not a kind the simulator reads" note', () => {
    const notes: string[] = [];
    const objs = classifyObjects(
      SIMULATED_KINDS.map((k) => ({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name: 'x', namespace: 'shop' }, spec: {} })),
      notes,
    );
    expect(notes).toEqual([]);
    const read = objs.namespaces.length + objs.serviceAccounts.length + objs.pods.length + objs.networkPolicies.length + objs.calico.length + (objs.staged?.length ?? 0) + (objs.services?.length ?? 0) + (objs.endpointSlices?.length ?? 0) + (objs.clusterNetworkPolicies?.length ?? 0) + (objs.nodes?.length ?? 0);
    expect(read).toBe(SIMULATED_KINDS.length);
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

/** The problems of the InputError `run` rejects with. */
async function problemsOf(run: Promise<unknown>): Promise<readonly InputProblem[]> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof InputError)) throw new Error(`expected an InputError, got ${String(err)}`);
  return err.problems;
}

describe('loading from a cluster never answers from a partial list', () => {
  /** One scripted ListerWatcher per kind: an empty list, or the error given for that `apiVersion Kind`. */
  function scripted(errors: Readonly<Record<string, Error>>): { listerFor: (k: KindSource) => ListerWatcher<KubeObject>; listed: string[] } {
    const listed: string[] = [];
    return {
      listed,
      listerFor: (k) => {
        const lw = new ScriptedListerWatcher<KubeObject>(`${k.resource.group || 'core'}/${k.resource.version}/${k.resource.plural}`);
        lw.queueList(errors[`${k.apiVersion} ${k.kind}`] ?? { items: [], resourceVersion: '1' });
        listed.push(k.kind);
        return lw;
      },
    };
  }

  it('a kind the server does not serve (404: CRD not installed) is only a note', async () => {
    const { listerFor } = scripted({ 'projectcalico.org/v3 Tier': new StatusError(404, 'NotFound', 'list projectcalico.org/v3/tiers: the server could not find the requested resource') });
    const notes: string[] = [];
    await loadFromListers(listerFor, notes);
    expect(notes).toEqual(['projectcalico.org/v3 Tier: not served by the API server (is its CRD installed?); none listed']);
  });

  it('a forbidden list (403) fails the load, naming every forbidden kind with the server\'s reason', async () => {
    const forbid = (plural: string, group: string): StatusError =>
      new StatusError(403, 'Forbidden', `list ${group}/v1/${plural}: ${plural} is forbidden: User "system:serviceaccount:x:y" cannot list resource "${plural}"`);
    const { listerFor, listed } = scripted({ 'v1 Pod': forbid('pods', 'core'), 'networking.k8s.io/v1 NetworkPolicy': forbid('networkpolicies', 'networking.k8s.io') });
    const problems = await problemsOf(loadFromListers(listerFor, [], 'https://127.0.0.1:6443'));
    expect(problems).toEqual([
      { type: 'cluster', resource: 'v1 Pod', status: 403, server: 'https://127.0.0.1:6443', reason: 'pods is forbidden: User "system:serviceaccount:x:y" cannot list resource "pods"' },
      { type: 'cluster', resource: 'networking.k8s.io/v1 NetworkPolicy', status: 403, server: 'https://127.0.0.1:6443', reason: 'networkpolicies is forbidden: User "system:serviceaccount:x:y" cannot list resource "networkpolicies"' },
    ]);
    expect(listed).toHaveLength(SIMULATED_KINDS.length);
  });

  it('401 and a server that does not answer fail at once (every later list would fail alike)', async () => {
    const unauthorised = scripted({ 'v1 Namespace': new StatusError(401, 'Unauthorized', 'list core/v1/namespaces: Unauthorized') });
    expect(await problemsOf(loadFromListers(unauthorised.listerFor, []))).toEqual([{ type: 'cluster', resource: 'v1 Namespace', status: 401, reason: 'Unauthorized' }]);
    expect(unauthorised.listed).toEqual(['Namespace']);

    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED', syscall: 'connect' });
    const down = scripted({ 'v1 Namespace': refused });
    const [p] = await problemsOf(loadFromListers(down.listerFor, [], 'https://127.0.0.1:9'));
    expect(p).toEqual({ type: 'cluster', resource: 'v1 Namespace', server: 'https://127.0.0.1:9', reason: 'API server unreachable: connect ECONNREFUSED 127.0.0.1:9' });
    expect(down.listed).toEqual(['Namespace']);
  });
});

describe('loading from files never answers from partial input', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tessera-load-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a missing path, an unreadable file and a YAML syntax error (with line and column) are one InputError, each problem once', async () => {
    writeFileSync(path.join(dir, 'ok.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n');
    writeFileSync(path.join(dir, 'broken.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: [x\n');
    // A file no one can read, root included: a symbolic link to itself.
    symlinkSync('loop.yaml', path.join(dir, 'loop.yaml'));
    const missing = path.join(dir, 'missing');
    const problems = await problemsOf(loadFromFiles([dir, missing], []));
    expect(problems).toEqual([
      { type: 'file', file: path.join(dir, 'broken.yaml'), document: 1, line: 4, column: 1, reason: expect.stringMatching(/^invalid YAML: /) as unknown },
      { type: 'file', file: path.join(dir, 'loop.yaml'), reason: 'too many symbolic links encountered (ELOOP)' },
      { type: 'file', file: missing, reason: 'no such file or directory (ENOENT)' },
    ]);
  });

  it('an object without a name is an error, or with skipInvalid a note', async () => {
    writeFileSync(path.join(dir, 'pods.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: shop}\n');
    const problems = await problemsOf(loadFromFiles([dir], []));
    expect(problems).toEqual([{ type: 'object', object: 'Pod shop/<unnamed>', source: `${path.join(dir, 'pods.yaml')} (document 2)`, path: 'metadata.name', reason: 'must be a non-empty string' }]);
    const notes: string[] = [];
    const objs = await loadFromFiles([dir], notes, { skipInvalid: true });
    expect(notes).toEqual([`${path.join(dir, 'pods.yaml')} (document 2): Pod shop/<unnamed>: metadata.name: must be a non-empty string; skipped`]);
    expect(objs.namespaces).toHaveLength(1);
    expect(objs.pods).toEqual([]);
  });
});
