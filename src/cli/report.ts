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
 *
 * With staged policies (`ReportStaged`) the page also shows, never in place of the enforced
 * verdicts: the `describeStagedDiff` summary line, a `would-deny`/`would-allow` mark on each
 * cell the staged policies would change (the enforced colour stays) with a legend, the staged
 * verdict (and, up to `FULL_TRACE_MAX_PODS` pods, its walk) in the detail panel, and the
 * staged objects under their own "not enforced" heading. Without them the page is exactly
 * what it was before staged policies existed: every staged addition is conditional.
 */
import { comparePolicies } from '../calc/index.ts';
import { convertClusterNetworkPolicy } from '../convert/cluster-network-policy-converter.ts';
import type { PolicyId } from '../proto/index.ts';
import {
  describeDecision,
  describeStagedDiff,
  describeVerdict,
  IpSetNames,
  stagedDiff,
  type ProbeProtocol,
  type SimEndpoint,
  type SimResource,
  type Simulation,
  type StagedDiff,
  type StagedPolicy,
} from '../simulate/index.ts';

/** Up to this many pods, each cell carries its full explanation. */
export const FULL_TRACE_MAX_PODS = 60;

/**
 * The staged policies' side of the report. `sim` is the cluster with every staged policy
 * committed (`commitStaged`, translated like the enforced one): its verdicts are shown beside
 * the enforced ones, never instead of them. It must hold the same pods as the enforced
 * simulation, in the same order (staged policies change policies only, never endpoints).
 */
export interface ReportStaged {
  /** The staged objects, in document order. */
  readonly policies: readonly StagedPolicy[];
  readonly sim: Simulation;
  /** The committed cluster's resources (`sim` was built from them), to name its IP sets in the walk. */
  readonly resources: ReadonlyMap<string, SimResource>;
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface PolicyRow {
  tier: string;
  order: number | undefined;
  kind: string;
  name: string;
  selector: string;
  types: string;
}

function policyRows(resources: ReadonlyMap<string, SimResource>): { tiers: Array<{ name: string; order: number | undefined; defaultAction: string }>; policies: PolicyRow[] } {
  const tiers: Array<{ name: string; order: number | undefined; defaultAction: string }> = [];
  const policies: Array<{ row: PolicyRow; order: number | undefined; id: PolicyId }> = [];
  const nodes = [...resources.values()].flatMap((r) =>
    r.kind === 'Node' ? [{ name: r.metadata.name, labels: r.metadata.labels ?? {}, addresses: (r.status?.addresses ?? []).flatMap((a) => (typeof a?.address === 'string' ? [a.address] : [])) }] : [],
  );
  for (const r of resources.values()) {
    if (r.kind === 'ClusterNetworkPolicy') {
      // Shown in its tier (kube-admin / kube-baseline) as the agents hold it: converted.
      const gnp = convertClusterNetworkPolicy(r, nodes).policy;
      if (gnp === null) continue;
      const tier = gnp.spec.tier ?? 'default';
      policies.push({
        row: { tier, order: gnp.spec.order, kind: 'ClusterNetworkPolicy', name: r.metadata.name, selector: `${gnp.spec.selector ?? ''} (namespaces: ${gnp.spec.namespaceSelector ?? ''})`, types: (gnp.spec.types ?? []).join(', ') },
        order: gnp.spec.order,
        id: { tier, name: r.metadata.name, kind: 'KubernetesClusterNetworkPolicy' },
      });
      continue;
    }
    if (r.kind === 'Tier') tiers.push({ name: r.metadata.name, order: r.spec.order, defaultAction: r.spec.defaultAction ?? 'Deny' });
    else if (r.kind === 'NetworkPolicy' || r.kind === 'GlobalNetworkPolicy') {
      const spec = r.spec;
      const tier = spec.tier ?? 'default';
      const namespace = r.kind === 'NetworkPolicy' ? (r.metadata.namespace ?? 'default') : undefined;
      policies.push({
        row: {
          tier,
          order: spec.order,
          kind: r.kind,
          name: r.kind === 'NetworkPolicy' ? `${r.metadata.namespace ?? ''}/${r.metadata.name}` : r.metadata.name,
          selector: spec.selector ?? 'all()',
          types: (spec.types ?? []).join(', '),
        },
        order: spec.order,
        id: { tier, name: r.metadata.name, kind: r.kind, ...(namespace === undefined ? {} : { namespace }) },
      });
    }
  }
  const ord = (o: number | undefined): number => o ?? Number.POSITIVE_INFINITY;
  tiers.sort((a, b) => (ord(a.order) === ord(b.order) ? (a.name < b.name ? -1 : 1) : ord(a.order) < ord(b.order) ? -1 : 1));
  // Within a tier, the agents' order: the calc graph's comparison (Felix's tie-break on name, namespace, kind).
  policies.sort((a, b) => comparePolicies(a, b));
  return { tiers, policies: policies.map((p) => p.row) };
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

// Only on pages with staged policies. A changed cell keeps its enforced colour and gets a
// diagonal band, edged in white, in the colour it would turn: green with a red band would
// become denied, red with a green band would become allowed. (`td.…` so that it outranks the
// `background` shorthand of `td.allow`/`td.deny`, which resets background-image.)
const STAGED_CSS = `
td.would-deny,span.would-deny{background-image:linear-gradient(135deg,transparent 28%,#fff 28%,#fff 34%,#d9453b 34%,#d9453b 66%,#fff 66%,#fff 72%,transparent 72%)}
td.would-allow,span.would-allow{background-image:linear-gradient(135deg,transparent 28%,#fff 28%,#fff 34%,#3a9d4a 34%,#3a9d4a 66%,#fff 66%,#fff 72%,transparent 72%)}
#staged-summary{margin:-.5em 0 .5em}
#legend{margin:0 0 1em;font-size:12px}
#legend span.swatch{display:inline-block;width:14px;height:14px;vertical-align:middle;margin:0 .3em 0 1em;border:1px solid #999}
span.swatch.allow{background-color:#3a9d4a}span.swatch.deny{background-color:#d9453b}
p.staged{border-top:1px dashed #999;padding-top:.5em}
`;

// With staged policies: the staged verdict (and walk) under the enforced one in #detail.
const STAGED_DETAIL_JS = `
  const s = data.staged.allowed[i][j] === '1';
  const word = s ? 'ALLOWED' : 'DENIED';
  html += '<p class="staged">with the staged policies committed (not enforced): <span class="verdict-' + (s ? 'allow' : 'deny') + '">' + word + '</span> — ' + (s === allowed ? 'unchanged' : 'would become ' + word) + '</p>';
  if (data.staged.walk) html += '<pre class="staged-walk">' + esc(data.texts[data.staged.walk[i][j]]) + '</pre>';`;

// The page's only script: fills #detail from the embedded JSON on hover or click.
// `STAGED_DETAIL_JS` goes in only when there are staged policies, so pages without them stay as they were.
const js = (staged: boolean): string => `
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
  if (data.walk) html += '<pre class="walk">' + esc(data.texts[data.walk[i][j]]) + '</pre>';${staged ? STAGED_DETAIL_JS : ''}
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

/** The staged simulation's pods in the enforced order. @throws RangeError when the two do not hold the same pods */
function alignedEndpoints(eps: readonly SimEndpoint[], stagedSim: Simulation): SimEndpoint[] {
  const aligned = eps.map((e) => stagedSim.endpointFor(e.id));
  const missing = eps.filter((_, i) => aligned[i] === undefined).map((e) => e.id);
  if (missing.length > 0 || stagedSim.endpoints.length !== eps.length) {
    throw new RangeError(`renderReport: staged.sim must hold the same pods as sim (staged policies change policies only); missing: ${missing.join(', ') || 'none'}, ${stagedSim.endpoints.length} vs ${eps.length} pods`);
  }
  return aligned as SimEndpoint[];
}

/** The summary line the text output prints (`describeStagedDiff`) and the legend of the cell marks. */
function stagedSummaryHtml(diff: StagedDiff): string {
  const swatch = (cls: string, label: string): string => `<span class="swatch ${cls}"></span>${label}`;
  return `
<div id="staged-summary">${esc(describeStagedDiff(diff, 0)[0] ?? '')} (not enforced; marked cells would change).</div>
<div id="legend">${[swatch('allow', 'allowed'), swatch('deny', 'denied'), swatch('allow would-deny', 'allowed, would become denied with the staged policies committed'), swatch('deny would-allow', 'denied, would become allowed')].join('')}</div>`;
}

/** The staged objects in document order (the order they are committed in), under their own heading. */
function stagedPoliciesHtml(policies: readonly StagedPolicy[]): string {
  const rows = policies.map((p) => `<tr class="staged-policy"><td>${esc(p.kind)}</td><td>${esc(p.namespace === undefined ? p.name : `${p.namespace}/${p.name}`)}</td><td>${esc(p.action)}</td></tr>`);
  return `
<h2>Staged policies (not enforced)</h2>
<table class="policies" id="staged-policies"><tr><th>kind</th><th>name</th><th>stagedAction</th></tr>
${rows.join('\n')}</table>`;
}

/**
 * The page for `protocol/port` over every pair of `sim`'s pods. With `staged`, each cell's
 * staged verdict is decided on `staged.sim` beside the enforced one; without it the output
 * holds nothing about staged policies (byte for byte the page of a cluster without them).
 */
export function renderReport(sim: Simulation, resources: ReadonlyMap<string, SimResource>, protocol: ProbeProtocol, port: number, staged?: ReportStaged): string {
  const eps = sim.endpoints;
  const full = eps.length <= FULL_TRACE_MAX_PODS;
  const names = full ? new IpSetNames(resources.values()) : undefined;
  const stagedEps = staged === undefined ? undefined : alignedEndpoints(eps, staged.sim);
  // The committed cluster's own IP set names: a staged policy may bring selectors the enforced ones lack.
  const stagedNames = staged !== undefined && full ? new IpSetNames(staged.resources.values()) : undefined;
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
  // The staged side in the same encoding; its walk omits the header line the enforced walk has.
  const stagedAllowed: string[] = [];
  const stagedWalk: number[][] | null = full ? [] : null;
  eps.forEach((from, i) => {
    let row = '';
    let stagedRow = '';
    const eg: number[] = [];
    const ing: number[] = [];
    const wk: number[] = [];
    const swk: number[] = [];
    eps.forEach((to, j) => {
      if (i === j) {
        row += '-';
        stagedRow += '-';
        eg.push(-1);
        ing.push(-1);
        wk.push(-1);
        swk.push(-1);
        return;
      }
      const v = sim.verdict(from, to, protocol, port, full);
      if (v.allowed) allowedCount++;
      row += v.allowed ? '1' : '0';
      eg.push(intern(describeDecision(v.egress.decision, 'egress', names)));
      ing.push(intern(describeDecision(v.ingress.decision, 'ingress', names)));
      if (full) wk.push(intern(describeVerdict(from, to, protocol, port, v, names).join('\n')));
      if (staged === undefined || stagedEps === undefined) return;
      const sFrom = stagedEps[i] as SimEndpoint;
      const sTo = stagedEps[j] as SimEndpoint;
      const sv = staged.sim.verdict(sFrom, sTo, protocol, port, full);
      stagedRow += sv.allowed ? '1' : '0';
      if (full) swk.push(intern(describeVerdict(sFrom, sTo, protocol, port, sv, stagedNames).slice(1).join('\n')));
    });
    allowed.push(row);
    egress.push(eg);
    ingress.push(ing);
    walk?.push(wk);
    if (staged === undefined) return;
    stagedAllowed.push(stagedRow);
    stagedWalk?.push(swk);
  });
  const pairs = eps.length * (eps.length - 1);
  const pods = eps.map((e) => e.id);
  const asBooleans = (rows: readonly string[]): boolean[][] => rows.map((r) => Array.from(r, (c) => c === '1'));
  const diff = staged === undefined ? undefined : stagedDiff(pods, asBooleans(allowed), asBooleans(stagedAllowed), staged.policies.length);
  // `staged` only when there are staged policies: the data of other pages stays as it was.
  const data = { protocol, port, pods, allowed, egress, ingress, walk, texts, ...(staged === undefined ? {} : { staged: { allowed: stagedAllowed, walk: stagedWalk } }) };

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
        // A mark only where committing the staged policies would flip the verdict.
        const then = stagedAllowed[i]?.[j];
        const flip = then === undefined || (then === '1') === ok ? '' : ok ? 'denied' : 'allowed';
        const mark = flip === '' ? '' : ` would-${flip === 'denied' ? 'deny' : 'allow'}`;
        // Per-cell attributes only where the page stays small; the script needs none.
        const title = `${esc(from.id)} → ${esc(to.id)}: ${ok ? 'allowed' : 'denied'}${flip === '' ? '' : `; would become ${flip} with the staged policies committed`}`;
        const attrs = full ? ` data-i="${i}" data-j="${j}" title="${title}"` : '';
        return `<td class="cell ${ok ? 'allow' : 'deny'}${mark}${gap}"${attrs}></td>`;
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
<style>${CSS}${staged === undefined ? '' : STAGED_CSS}</style></head>
<body>
<h1>Connectivity ${esc(protocol)}/${port}</h1>
<div id="summary">${eps.length} pods on ${new Set(eps.map((e) => e.node)).size} nodes: <span id="allowed-count">${allowedCount}</span> of ${pairs} pairs allowed, <span id="denied-count">${pairs - allowedCount}</span> denied. Rows: from; columns: to. Hover or click a cell for why.</div>${diff === undefined ? '' : stagedSummaryHtml(diff)}
<div id="layout">
<table class="grid" id="grid">${rows.join('\n')}</table>
<div id="detail">Hover or click a cell.</div>
</div>
<h2>Policies (evaluation order)</h2>
<table class="policies" id="policies"><tr><th>kind</th><th>name</th><th>order</th><th>selector</th><th>types</th></tr>
${policyHtml.join('\n')}</table>${staged === undefined ? '' : stagedPoliciesHtml(staged.policies)}
<script type="application/json" id="data">${json}</script>
<script>${js(staged !== undefined)}</script>
</body></html>
`;
}
