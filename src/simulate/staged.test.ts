import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';

import { describe, expect, it } from 'vitest';

import { capture } from '../cli/testdata/capture.ts';
import { runExplain } from '../cli/explain.ts';
import { runSimulate } from '../cli/simulate.ts';

import { InputError } from '../runtime/input-error.ts';
import { classifyObjects } from './cluster-objects.ts';
import { readStaged } from '../api/staged.ts';
import { commitStaged, describeStagedDiff, stagedDiff } from './staged.ts';

const calicoNp = (name: string, ns: string, order: number): unknown => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec: { order, selector: 'all()', ingress: [{ action: 'Allow' }] },
});

describe('staged policies', () => {
  it('are kept apart from what the calc graph reads, each with its counterpart (stagedAction Set when absent)', () => {
    const notes: string[] = [];
    const objs = classifyObjects(
      [
        calicoNp('a', 'x', 1),
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 2, selector: 'all()' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedGlobalNetworkPolicy', metadata: { name: 'g' }, spec: { stagedAction: 'Delete' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedKubernetesNetworkPolicy', metadata: { name: 'k' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } },
      ],
      notes,
    );
    expect(objs.calico.map((r) => r.kind)).toEqual(['NetworkPolicy']);
    expect(objs.staged?.map((s) => [s.kind, s.namespace ?? '', s.name, s.action])).toEqual([
      ['StagedNetworkPolicy', 'x', 'a', 'Set'],
      ['StagedGlobalNetworkPolicy', '', 'g', 'Delete'],
      ['StagedKubernetesNetworkPolicy', 'default', 'k', 'Set'],
    ]);
    expect(objs.staged?.[0]?.counterpart).toEqual({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 2, selector: 'all()' } });
    expect(objs.staged?.[2]?.counterpart).toMatchObject({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'default' } });
    expect(notes).toEqual([]);
  });

  it('a bad stagedAction is an input error naming the object and field', () => {
    const bad = { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { stagedAction: 'Learn' } };
    expect(() => readStaged(bad)).toThrow(InputError);
    expect(() => readStaged(bad)).toThrow('StagedNetworkPolicy x/a: spec.stagedAction: must be Set or Delete, not "Learn"');
  });

  it('committing: Set replaces or creates the counterpart, Delete removes it, later staged objects win; the input is untouched', () => {
    const objs = classifyObjects(
      [
        calicoNp('a', 'x', 1),
        calicoNp('b', 'x', 1),
        { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'x' }, spec: { podSelector: {} } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 5 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'b', namespace: 'x' }, spec: { stagedAction: 'Delete' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'c', namespace: 'x' }, spec: { order: 7 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'c', namespace: 'x' }, spec: { order: 8 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedKubernetesNetworkPolicy', metadata: { name: 'k', namespace: 'x' }, spec: { stagedAction: 'Delete' } },
      ],
      [],
    );
    const committed = commitStaged(objs, objs.staged ?? []);
    expect(committed.calico.map((r) => `${r.metadata.name}:${(r.spec as { order?: number }).order}`)).toEqual(['a:5', 'c:8']);
    expect(committed.networkPolicies).toEqual([]);
    expect(objs.calico).toHaveLength(2);
    expect(objs.networkPolicies).toHaveLength(1);
  });

  it('a staged Delete removes a NetworkPolicy written without a namespace (both are in default)', () => {
    const objs = classifyObjects(
      [
        { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'a' }, spec: { selector: 'all()' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a' }, spec: { stagedAction: 'Delete' } },
      ],
      [],
    );
    expect(commitStaged(objs, objs.staged ?? []).calico.filter((r) => r.kind === 'NetworkPolicy')).toEqual([]);
  });

  it('the diff counts pairs that would change, each way', () => {
    const d = stagedDiff(['x/a', 'x/b', 'y/c'], [[false, true, true], [true, false, false], [false, false, false]], [[false, false, true], [true, false, true], [false, false, false]], 2);
    expect(d).toEqual({ policies: 2, pairs: 6, becomeDenied: 1, becomeAllowed: 1, changes: [{ from: 'x/a', to: 'x/b', staged: 'denied' }, { from: 'x/b', to: 'y/c', staged: 'allowed' }] });
    expect(describeStagedDiff(d)).toEqual([
      'staged: 2 policies; 2 of 6 pairs would change — 1 would become denied, 1 allowed',
      '  x/a → x/b: would be denied',
      '  x/b → y/c: would be allowed',
    ]);
  });
});

interface ReportData {
  pods: string[];
  allowed: string[];
  texts: string[];
  staged?: { allowed: string[]; walk: number[][] | null };
}

/** The JSON a report page embeds for its script. */
function reportData(html: string): ReportData {
  const json = /<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)?.[1];
  if (json === undefined) throw new Error('the page embeds no data');
  return JSON.parse(json) as ReportData;
}

/** Runs the page's own script against a stand-in DOM, clicks cell (i, j) and returns what it put in #detail. */
function clickCell(html: string, i: number, j: number): string {
  const data = /<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)?.[1];
  const script = /<script>(.*?)<\/script>/s.exec(html)?.[1];
  if (data === undefined || script === undefined) throw new Error('the page embeds no data or no script');
  const listeners = new Map<string, (e: unknown) => void>();
  const detail = { innerHTML: '' };
  const grid = { addEventListener: (type: string, f: (e: unknown) => void) => listeners.set(type, f) };
  const byId: Record<string, unknown> = { data: { textContent: data }, detail, grid };
  runInNewContext(script, { document: { getElementById: (id: string) => byId[id] } });
  // One <th> (the pod's name) before the cells, as in every row but a namespace's first.
  const row = { dataset: { i: String(i) }, querySelectorAll: () => ({ length: 1 }) };
  const td = { parentElement: row, cellIndex: j + 1, classList: { contains: () => false, add: () => undefined, remove: () => undefined }, closest: () => td };
  listeners.get('click')?.({ target: td });
  return detail.innerHTML;
}

describe('staged policies in the tools', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-staged-'));
  cpSync(fileURLToPath(new URL('../../examples/', import.meta.url)), dir, { recursive: true });
  writeFileSync(
    join(dir, '70-staged.yaml'),
    [
      'apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\nmetadata: {name: api, namespace: shop}\nspec: {stagedAction: Delete}',
      'apiVersion: projectcalico.org/v3\nkind: StagedKubernetesNetworkPolicy\nmetadata: {name: deny-all, namespace: shop}\nspec: {podSelector: {}, policyTypes: [Ingress]}',
    ].join('\n---\n'),
  );
  const files = ['-f', dir, '-f', join(dir, 'k8s')];

  it('simulate prints the enforced matrix, then the pairs the staged policies would change', async () => {
    const r = await capture(runSimulate, [...files, '--port', '8081']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('3 of 20 pairs allowed, 17 denied.');
    expect(r.stdout.trimEnd().split('\n').slice(-2)).toEqual(['staged: 2 policies; 1 of 20 pairs would change — 1 would become denied, 0 allowed', '  shop/frontend → shop/api: would be denied']);
  });

  it('simulate --output html marks the cells that would change, keeps their enforced colour, and shows the staged verdict and walk', async () => {
    const r = await capture(runSimulate, [...files, '--port', '8081', '--output', 'html']);
    expect(r.code).toBe(0);
    const html = r.stdout;
    expect(html).toContain('<div id="staged-summary">staged: 2 policies; 1 of 20 pairs would change — 1 would become denied, 0 allowed (not enforced; marked cells would change).</div>');
    const data = reportData(html);
    const i = data.pods.indexOf('shop/frontend');
    const j = data.pods.indexOf('shop/api');
    // The one changed cell: enforced allow, marked would-deny; no other cell is marked.
    const cells = html.match(/<td class="cell [^"]*would-[^>]*>/g) ?? [];
    expect(cells).toHaveLength(1);
    expect(cells[0]).toMatch(new RegExp(`^<td class="cell allow would-deny( nsgap)?" data-i="${i}" data-j="${j}" title="shop/frontend → shop/api: allowed; would become denied with the staged policies committed">$`));
    expect(html).toMatch(/<div id="legend">.*would-deny.*would-allow/);
    // The data: enforced and staged verdicts side by side; the staged walk names the staged deny-all.
    expect(data.allowed[i]?.[j]).toBe('1');
    expect(data.staged?.allowed[i]?.[j]).toBe('0');
    expect(data.staged?.allowed.join('').replace(/-/g, '')).toHaveLength(20);
    const walkId = data.staged?.walk?.[i]?.[j] ?? -1;
    expect(data.texts[walkId]).toContain('NetworkPolicy shop/knp.default.deny-all');
    // The detail panel, as the page's script fills it on a click.
    const detail = clickCell(html, i, j);
    expect(detail).toContain('shop/frontend → shop/api TCP/8081: ALLOWED');
    expect(detail).toContain('with the staged policies committed (not enforced): <span class="verdict-deny">DENIED</span> — would become DENIED');
    expect(detail).toMatch(/<pre class="staged-walk">egress of shop\/frontend .*NetworkPolicy shop\/knp\.default\.deny-all/s);
    const unchanged = clickCell(html, j, i);
    expect(unchanged).toContain('with the staged policies committed (not enforced): <span class="verdict-deny">DENIED</span> — unchanged');
    // The staged objects are listed apart from the enforced policies.
    expect(html).toContain('<h2>Staged policies (not enforced)</h2>');
    expect(html).toContain('<tr class="staged-policy"><td>StagedNetworkPolicy</td><td>shop/api</td><td>Delete</td></tr>');
    expect(html).toContain('<tr class="staged-policy"><td>StagedKubernetesNetworkPolicy</td><td>shop/deny-all</td><td>Set</td></tr>');
    // …and never among them: the enforced list has no committed counterpart (the deny-all) in it.
    expect(html).not.toContain('<td>shop/knp.default.deny-all</td>');
  });

  it('explain gives the enforced verdict, then the staged one with its walk', async () => {
    const r = await capture(runExplain, [...files, '--from', 'shop/frontend', '--to', 'shop/api', '--port', '8081']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('shop/frontend → shop/api TCP/8081: ALLOWED');
    expect(r.stdout).toContain('with the staged policies committed (not enforced): DENIED — would become DENIED');
    expect(r.stdout).toContain('NetworkPolicy shop/knp.default.deny-all');
  });
});
