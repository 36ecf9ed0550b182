// Reads vitest's JSON reports and prints the one closing line CI is judged by:
// `N passed, N failed` (plus `, N skipped` when any were skipped). A test file that failed
// to load counts as one failure, so a broken import can never read as green. Exits 1 when
// anything failed, when no test ran, or when the report is missing (vitest crashed first).
import { readFileSync } from 'node:fs';

// Several reports (npm test's, the kind project's) add up.
let passed = 0;
let failed = 0;
let skipped = 0;
let ok = true;
for (const file of process.argv.slice(2)) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    console.log(`tests: no vitest report at ${file} (${err.message})`);
    failed += 1;
    continue;
  }
  passed += report.numPassedTests ?? 0;
  // Suites that failed without a failing test: load errors, hook failures.
  const brokenSuites = (report.testResults ?? []).filter(
    (s) => s.status === 'failed' && (s.assertionResults ?? []).every((a) => a.status !== 'failed'),
  ).length;
  failed += (report.numFailedTests ?? 0) + brokenSuites;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  if (report.success === false) ok = false;
}
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 || !ok ? 1 : 0);
