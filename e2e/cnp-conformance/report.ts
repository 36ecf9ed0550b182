/**
 * `npx tsx e2e/cnp-conformance/report.ts <events.jsonl> <exit code>`: prints the per-test table
 * and the failing probes of one conformance run (conformance-report.ts) and exits 0 only when
 * every failure is an SCTP probe on a kernel without SCTP. run.sh calls it.
 */
import { readFileSync } from 'node:fs';
import { conformanceReport, formatReport, parseGoTestEvents } from './conformance-report.ts';

const [file, code] = process.argv.slice(2);
if (file === undefined || code === undefined) {
  process.stderr.write('usage: report.ts <test2json events file> <test binary exit code>\n');
  process.exit(2);
}
const report = conformanceReport(parseGoTestEvents(readFileSync(file, 'utf8')), Number(code));
process.stdout.write(`${formatReport(report)}\n`);
process.exit(report.verdict ? 0 : 1);
