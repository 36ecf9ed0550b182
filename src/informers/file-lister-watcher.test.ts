import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileListerWatcher } from './file-lister-watcher.ts';
import type { WatchEvent } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';
import type { InputProblem } from '../runtime/input-error.ts';

const isTier = (o: KubeObject): o is KubeObject => o.apiVersion === 'projectcalico.org/v3' && o.kind === 'Tier';

function tier(name: string, order: number): string {
  return `apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: ${name}\nspec:\n  order: ${order}\n`;
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tessera-flw-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Reads events from a watch until `n` arrived. */
async function take(it: AsyncIterator<WatchEvent<KubeObject>>, n: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    const o = r.value.object as KubeObject;
    out.push(`${r.value.type} ${o.metadata?.name}@${o.metadata?.resourceVersion}`);
  }
  return out;
}

describe('FileListerWatcher', () => {
  it('lists selected objects with synthetic resourceVersions', async () => {
    await writeFile(path.join(dir, 'tiers.yaml'), `${tier('a', 1)}---\n${tier('b', 2)}---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n`);
    const lw = new FileListerWatcher({ paths: [dir], select: isTier, resource: 'tiers' });
    const list = await lw.list({});
    expect(list.items.map((o) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`)).toEqual(['a@1', 'b@2']);
    expect(list.resourceVersion).toBe('2');
  });

  it('emits ADDED, MODIFIED and DELETED as files change, and keeps objects of a file that stops parsing', async () => {
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 1));
    const errors: string[] = [];
    const lw = new FileListerWatcher({ paths: [dir], select: isTier, resource: 'tiers', debounceMs: 20, onError: (e) => void errors.push(...e.problems.map((p) => (p.type === 'file' ? path.basename(p.file) : p.type))) });
    const list = await lw.list({});
    const ctrl = new AbortController();
    const it = lw.watch({ resourceVersion: list.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300, signal: ctrl.signal })[Symbol.asyncIterator]();
    const first = it.next();
    await writeFile(path.join(dir, 'b.yaml'), tier('b', 2));
    const r = await first;
    expect(`${r.value.type} ${(r.value.object as KubeObject).metadata?.name}`).toBe('ADDED b');
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 5));
    expect(await take(it, 1)).toEqual(['MODIFIED a@3']);
    await writeFile(path.join(dir, 'b.yaml'), 'spec: [broken\n');
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 6));
    expect(await take(it, 1)).toEqual(['MODIFIED a@4']);
    expect(errors).toContain('b.yaml');
    await unlink(path.join(dir, 'b.yaml'));
    expect(await take(it, 1)).toEqual(['DELETED b@5']);
    ctrl.abort();
    expect((await it.next()).done).toBe(true);
  });

  it('reports a missing path, a syntax error (file, line, column) and an unnamed object as typed InputErrors, and lists the rest', async () => {
    await writeFile(path.join(dir, 'a.yaml'), `${tier('a', 1)}---\napiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {}\n`);
    await writeFile(path.join(dir, 'b.yaml'), 'kind: Tier\nmetadata:\n  name: b\n   order: 2\n');
    const problems: InputProblem[] = [];
    const missing = path.join(dir, 'nope');
    const lw = new FileListerWatcher({ paths: [dir, missing], select: isTier, resource: 'tiers', onError: (e) => void problems.push(...e.problems) });
    const list = await lw.list({});
    expect(list.items.map((o) => o.metadata?.name)).toEqual(['a']);
    // Problems in reading order; objects are keyed after every file was read.
    expect(problems).toEqual([
      { type: 'file', file: path.join(dir, 'b.yaml'), document: 1, line: 3, column: 9, reason: 'invalid YAML: Nested mappings are not allowed in compact mappings' },
      { type: 'file', file: missing, reason: 'no such file or directory (ENOENT)' },
      { type: 'object', object: 'Tier <unnamed>', source: `${path.join(dir, 'a.yaml')} (document 2)`, path: 'metadata.name', reason: 'must be a non-empty string' },
    ]);
  });

  it('answers a watch from a resourceVersion older than its history with 410', async () => {
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 1));
    const lw = new FileListerWatcher({ paths: [dir], select: isTier, resource: 'tiers', historyLimit: 1 });
    await lw.list({});
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 2));
    await lw.rescan();
    await writeFile(path.join(dir, 'a.yaml'), tier('a', 3));
    await lw.rescan();
    const it = lw.watch({ resourceVersion: '1', allowWatchBookmarks: true, timeoutSeconds: 300, signal: new AbortController().signal })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ code: 410 });
  });
});
