import type { ProbeResult } from './run-scenario.ts';

/** The mismatch table: from, to, port/proto, expected, got. */
export function mismatchTable(rows: readonly ProbeResult[]): string {
  const header = ['step', 'from', 'to', 'port/proto', 'expected', 'got'];
  const cells = rows.map((r) => [String(r.step), r.probe.from, r.probe.to, `${r.probe.port}/${r.probe.protocol ?? 'TCP'}`, r.probe.expected ? 'allow' : 'deny', r.got === true ? 'allow' : 'deny']);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: readonly string[]): string => `    ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}
