// Reads vitest's JSON report and prints the one closing line CI is judged by:
// `N passed, N failed` (plus `, N skipped` when any were skipped). A test file that failed
// to load counts as one failure, so a broken import can never read as green. Exits 1 when
// anything failed, when no test ran, or when the report is missing (vitest crashed first).
import { readFileSync } from 'node:fs';

const file = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`tests: no vitest report at ${file} (${err.message})`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failedTests = report.numFailedTests ?? 0;
// Suites that failed without a failing test: load errors, hook failures.
const brokenSuites = (report.testResults ?? []).filter(
  (s) => s.status === 'failed' && (s.assertionResults ?? []).every((a) => a.status !== 'failed'),
).length;
const failed = failedTests + brokenSuites;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 || report.success === false ? 1 : 0);
