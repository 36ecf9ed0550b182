import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeManifestSource, isManifestProblem, parseManifests, readManifests } from './manifest-files.ts';

const tier = (name: string): string => `apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata:\n  name: ${name}\n`;

describe('parseManifests', () => {
  it('expands multi-document YAML, List kinds and JSON arrays, skipping empty documents', () => {
    const text = `${tier('a')}---\n---\nkind: List\napiVersion: v1\nitems:\n- ${JSON.stringify({ kind: 'Tier', metadata: { name: 'b' } })}\n`;
    const entries = parseManifests(text, 'f.yaml');
    expect(entries.map((e) => (isManifestProblem(e) ? e.reason : (e.value as { metadata: { name: string } }).metadata.name))).toEqual(['a', 'b']);
    expect(entries[1]!.source).toEqual({ file: 'f.yaml', document: 3, item: 1 });
    expect(parseManifests('[{"kind":"Tier"},{"kind":"Tier"}]', 'x.json')).toHaveLength(2);
  });

  it('reports a syntax error with its file and document, and keeps the other documents', () => {
    const entries = parseManifests(`${tier('a')}---\nkey: [unclosed\n---\n${tier('c')}`, 'bad.yaml');
    expect(entries.map((e) => isManifestProblem(e))).toEqual([false, true, false]);
    expect(describeManifestSource(entries[1]!.source)).toBe('bad.yaml (document 2)');
  });
});

describe('readManifests', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tessera-manifests-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads directories recursively in name order, skipping hidden entries and other extensions', async () => {
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'b.yaml'), tier('b'));
    await writeFile(path.join(dir, 'a.yml'), tier('a'));
    await writeFile(path.join(dir, 'sub', 'c.json'), JSON.stringify({ kind: 'Tier', metadata: { name: 'c' } }));
    await writeFile(path.join(dir, '.hidden.yaml'), tier('hidden'));
    await writeFile(path.join(dir, 'notes.txt'), 'not yaml');
    const entries = await readManifests([dir]);
    expect(entries.map((e) => path.relative(dir, e.source.file))).toEqual(['a.yml', 'b.yaml', path.join('sub', 'c.json')]);
  });

  it('reports a missing path as a problem instead of throwing', async () => {
    const entries = await readManifests([path.join(dir, 'nope')]);
    expect(entries).toHaveLength(1);
    expect(isManifestProblem(entries[0]!)).toBe(true);
  });

  it('gives a syntax error its line and column in the file as fields, not in the reason', () => {
    const [, problem] = parseManifests('a: 1\n---\nkind: Pod\nmetadata: {name: x\n', 'f.yaml');
    expect(problem !== undefined && isManifestProblem(problem)).toBe(true);
    const p = problem as { line?: number; column?: number; reason: string; source: { document?: number } };
    expect(p.source.document).toBe(2);
    expect(p.line).toBeGreaterThanOrEqual(4);
    expect(p.column).toBeGreaterThanOrEqual(1);
    expect(p.reason).not.toMatch(/line \d+/);
  });
});
