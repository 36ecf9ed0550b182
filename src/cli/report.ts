/**
 * `tessera simulate … --output html`: one self-contained page (inline CSS and JS, no
 * network fetches) with
 * - the pod × pod matrix for one port as a colour grid, rows (from) and columns (to)
 *   grouped by namespace; every cell is a `<td class="cell allow|deny|self">`;
 * - a detail panel, filled on hover or click, with the verdict and the deciding
 *   tier/policy/rule of both directions (and, for clusters up to `FULL_TRACE_MAX_PODS` pods,
 *   the whole walk as `tessera explain` prints it);
 * - the policy list: tiers in evaluation order with their policies, orders and selectors.
 * Cell data is embedded as compact row-major JSON (a '1'/'0' string per row, decision
 * texts by id, de-duplicated); cells carry no per-cell attributes beyond their class on
 * large clusters, and one delegated listener serves the whole grid.
 */
import type { V3Resource } from '../api/index.ts';
import { describeDecision, describeVerdict, IpSetNames, type ProbeProtocol, type Simulation } from '../simulate/index.ts';

/** Up to this many pods, each cell carries its full explanation. */
export const FULL_TRACE_MAX_PODS = 60;

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface PolicyRow {
  tier: string;
  order: number | undefined;
  kind: string;
  name: string;
  selector: string;
  types: string;
}

function policyRows(resources: ReadonlyMap<string, V3Resource>): { tiers: Array<{ name: string; order: number | undefined; defaultAction: string }>; policies: PolicyRow[] } {
  const tiers: Array<{ name: string; order: number | undefined; defaultAction: string }> = [];
  const policies: PolicyRow[] = [];
  for (const r of resources.values()) {
    if (r.kind === 'Tier') tiers.push({ name: r.metadata.name, order: r.spec.order, defaultAction: r.spec.defaultAction ?? 'Deny' });
    else if (r.kind === 'NetworkPolicy' || r.kind === 'GlobalNetworkPolicy') {
      const spec = r.spec;
      policies.push({
        tier: spec.tier ?? 'default',
        order: spec.order,
        kind: r.kind,
        name: r.kind === 'NetworkPolicy' ? `${r.metadata.namespace ?? ''}/${r.metadata.name}` : r.metadata.name,
        selector: spec.selector ?? 'all()',
        types: (spec.types ?? []).join(', '),
      });
    }
  }
  const ord = (o: number | undefined): number => o ?? Number.POSITIVE_INFINITY;
  tiers.sort((a, b) => ord(a.order) - ord(b.order) || (a.name < b.name ? -1 : 1));
  policies.sort((a, b) => ord(a.order) - ord(b.order) || (a.name < b.name ? -1 : 1));
  return { tiers, policies };
}

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
#summary{margin:.5em 0 1em}
table.grid{border-collapse:collapse}
table.grid th{font-weight:normal;font-size:12px;padding:2px 4px;white-space:nowrap}
table.grid th.ns{background:#eef;font-weight:bold}
table.grid th.col{writing-mode:vertical-rl;transform:rotate(180deg);height:9em;text-align:left}
td.cell{width:16px;height:16px;border:1px solid #fff;cursor:pointer;padding:0}
td.allow{background:#3a9d4a}td.deny{background:#d9453b}td.self{background:#ccc;cursor:default}
td.cell:hover,td.selected{outline:2px solid #000}
td.nsgap,th.nsgap{border-left:3px solid #889}
#layout{display:flex;gap:2em;align-items:flex-start}
#detail{position:sticky;top:1em;min-width:28em;max-width:60em;border:1px solid #ccc;padding:.8em;background:#fafafa}
#detail pre{white-space:pre-wrap;font-size:12px}
.verdict-allow{color:#2a7d38;font-weight:bold}.verdict-deny{color:#b3261e;font-weight:bold}
table.policies{border-collapse:collapse;font-size:13px}
table.policies td,table.policies th{border:1px solid #ddd;padding:3px 6px;text-align:left}
tr.tier td{background:#eef;font-weight:bold}
`;

// The page's only script: fills #detail from the embedded JSON on hover or click.
const JS = `
const data = JSON.parse(document.getElementById('data').textContent);
const detail = document.getElementById('detail');
let selected = null;
function where(td) {
  const tr = td.parentElement;
  const i = +tr.dataset.i;
  const j = td.cellIndex - tr.querySelectorAll('th').length;
  return [i, j];
}
function show(td, pin) {
  const [i, j] = where(td);
  const a = data.allowed[i][j];
  if (a !== '1' && a !== '0') return;
  const from = data.pods[i], to = data.pods[j];
  const allowed = a === '1';
  let html = '<div class="verdict-' + (allowed ? 'allow' : 'deny') + '">' + esc(from) + ' → ' + esc(to) + ' ' + data.protocol + '/' + data.port + ': ' + (allowed ? 'ALLOWED' : 'DENIED') + '</div>';
  html += '<p><b>egress</b> of ' + esc(from) + ': <span class="egress">' + esc(data.texts[data.egress[i][j]]) + '</span></p>';
  html += '<p><b>ingress</b> of ' + esc(to) + ': <span class="ingress">' + esc(data.texts[data.ingress[i][j]]) + '</span></p>';
  if (data.walk) html += '<pre class="walk">' + esc(data.texts[data.walk[i][j]]) + '</pre>';
  detail.innerHTML = html;
  if (pin) {
    if (selected) selected.classList.remove('selected');
    selected = td;
    td.classList.add('selected');
  }
}
function esc(s) { return s.replace(/[&<>"']/g, (ch) => '&#' + ch.charCodeAt(0) + ';'); }
// One listener for the whole grid (a 1,000-pod grid has a million cells).
const grid = document.getElementById('grid');
grid.addEventListener('click', (e) => {
  const td = e.target.closest('td.cell');
  if (td && !td.classList.contains('self')) show(td, true);
});
grid.addEventListener('mouseover', (e) => {
  const td = e.target.closest('td.cell');
  if (td && !selected && !td.classList.contains('self')) show(td, false);
});
`;

export function renderReport(sim: Simulation, resources: ReadonlyMap<string, V3Resource>, protocol: ProbeProtocol, port: number): string {
  const eps = sim.endpoints;
  const full = eps.length <= FULL_TRACE_MAX_PODS;
  const names = full ? new IpSetNames(resources.values()) : undefined;
  const texts: string[] = [];
  const textIds = new Map<string, number>();
  const intern = (t: string): number => {
    let id = textIds.get(t);
    if (id === undefined) {
      id = texts.length;
      texts.push(t);
      textIds.set(t, id);
    }
    return id;
  };
  let allowedCount = 0;
  // Compact, row-major: allowed as one '1'/'0'/'-' string per row; decision texts by id.
  const allowed: string[] = [];
  const egress: number[][] = [];
  const ingress: number[][] = [];
  const walk: number[][] | null = full ? [] : null;
  eps.forEach((from, i) => {
    let row = '';
    const eg: number[] = [];
    const ing: number[] = [];
    const wk: number[] = [];
    eps.forEach((to, j) => {
      if (i === j) {
        row += '-';
        eg.push(-1);
        ing.push(-1);
        wk.push(-1);
        return;
      }
      const v = sim.verdict(from, to, protocol, port, full);
      if (v.allowed) allowedCount++;
      row += v.allowed ? '1' : '0';
      eg.push(intern(describeDecision(v.egress.decision, 'egress')));
      ing.push(intern(describeDecision(v.ingress.decision, 'ingress')));
      if (full) wk.push(intern(describeVerdict(from, to, protocol, port, v, names).join('\n')));
    });
    allowed.push(row);
    egress.push(eg);
    ingress.push(ing);
    walk?.push(wk);
  });
  const pairs = eps.length * (eps.length - 1);
  const data = { protocol, port, pods: eps.map((e) => e.id), allowed, egress, ingress, walk, texts };

  // Namespace groups for the header rows.
  const groups: Array<{ ns: string; count: number }> = [];
  for (const e of eps) {
    const last = groups.at(-1);
    if (last !== undefined && last.ns === e.namespace) last.count++;
    else groups.push({ ns: e.namespace, count: 1 });
  }
  const firstOfNs = new Set<number>();
  eps.forEach((e, i) => {
    if (i === 0 || eps[i - 1]?.namespace !== e.namespace) firstOfNs.add(i);
  });

  const rows: string[] = [];
  rows.push(`<tr><th></th><th></th>${groups.map((g) => `<th class="ns nsgap" colspan="${g.count}">${esc(g.ns)}</th>`).join('')}</tr>`);
  rows.push(`<tr><th></th><th></th>${eps.map((e, j) => `<th class="col${firstOfNs.has(j) ? ' nsgap' : ''}" title="${esc(e.id)}">${esc(e.pod)}</th>`).join('')}</tr>`);
  eps.forEach((from, i) => {
    const nsCell = firstOfNs.has(i) ? `<th class="ns" rowspan="${groups.find((g) => g.ns === from.namespace)?.count ?? 1}">${esc(from.namespace)}</th>` : '';
    const tds = eps
      .map((to, j) => {
        const gap = firstOfNs.has(j) ? ' nsgap' : '';
        if (i === j) return `<td class="cell self${gap}"></td>`;
        const ok = allowed[i]?.[j] === '1';
        // Per-cell attributes only where the page stays small; the script needs none.
        const attrs = full ? ` data-i="${i}" data-j="${j}" title="${esc(from.id)} → ${esc(to.id)}: ${ok ? 'allowed' : 'denied'}"` : '';
        return `<td class="cell ${ok ? 'allow' : 'deny'}${gap}"${attrs}></td>`;
      })
      .join('');
    rows.push(`<tr data-i="${i}">${nsCell}<th class="row" title="${esc(from.id)}">${esc(from.pod)}</th>${tds}</tr>`);
  });

  const { tiers, policies } = policyRows(resources);
  const policyHtml: string[] = [];
  for (const t of tiers) {
    policyHtml.push(`<tr class="tier"><td colspan="5">tier ${esc(t.name)} (order ${t.order ?? '∞'}, defaultAction ${esc(t.defaultAction)})</td></tr>`);
    for (const p of policies.filter((x) => x.tier === t.name)) {
      policyHtml.push(`<tr class="policy"><td>${esc(p.kind)}</td><td>${esc(p.name)}</td><td>${p.order ?? '∞'}</td><td><code>${esc(p.selector)}</code></td><td>${esc(p.types)}</td></tr>`);
    }
  }

  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>Tessera connectivity: ${esc(protocol)}/${port}</title>
<style>${CSS}</style></head>
<body>
<h1>Connectivity ${esc(protocol)}/${port}</h1>
<div id="summary">${eps.length} pods on ${new Set(eps.map((e) => e.node)).size} nodes: <span id="allowed-count">${allowedCount}</span> of ${pairs} pairs allowed, <span id="denied-count">${pairs - allowedCount}</span> denied. Rows: from; columns: to. Hover or click a cell for why.</div>
<div id="layout">
<table class="grid" id="grid">${rows.join('\n')}</table>
<div id="detail">Hover or click a cell.</div>
</div>
<h2>Policies (evaluation order)</h2>
<table class="policies" id="policies"><tr><th>kind</th><th>name</th><th>order</th><th>selector</th><th>types</th></tr>
${policyHtml.join('\n')}</table>
<script type="application/json" id="data">${json}</script>
<script>${JS}</script>
</body></html>
`;
}
