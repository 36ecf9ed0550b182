/**
 * Staged policies in the tools (simulate's table and HTML report, explain): the enforced answer
 * first, then what committing the staged policies would change. What the simulator does with
 * staged policies is specified in src/simulate/staged.test.ts.
 */
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';

import { describe, expect, it } from 'vitest';

import { runExplain } from './explain.ts';
import { runSimulate } from './simulate.ts';
import { capture } from './testdata/capture.ts';

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
