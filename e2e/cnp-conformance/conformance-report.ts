/**
 * Reads the upstream ClusterNetworkPolicy conformance suite's `go test` events (test2json, one
 * JSON object a line) and says per conformance test (TestConformance/<ShortName>) whether it
 * passed, how long it took, and for a failing one which probes failed and why.
 *
 * How the suite fails (conformance/utils/kubernetes/helper.go, v0.3.0): a probe is
 * `/agnhost connect --protocol=P host:port` run in a client pod; every unexpected outcome logs
 * `FAILED Command was [<command>]` and one line saying what happened, then the probe is retried
 * (testify Eventually) and confirmed once more. A failing probe ends in an `Error Trace:` block
 * ("Condition never satisfied" or "Should be true") right after its last FAILED lines, so each
 * error block belongs to the probe logged last before it in the same (sub)test. An error block
 * with no probe before it (a manifest that fails to apply, pods not Ready) is a set-up failure.
 *
 * The variant binary build.sh makes (`conformance-nosctp.test`, run.sh with
 * `CNP_CONFORMANCE_SCTP=skip`) runs no SCTP probe: its PokeServer logs {@link SCTP_NOT_RUN} and
 * returns, so the TCP/UDP probes after an SCTP one in the same subtest run at all (the
 * unmodified suite ends a subtest at its first failing probe). Each result counts those lines
 * (`sctpNotRun`): a test that passes there passed its TCP/UDP probes only, and the table says so.
 *
 * Classes: `sctp` = an SCTP probe whose client said `protocol not supported` (no SCTP in the
 * kernel; counted apart, never as a pass); `tcp-udp` = a TCP or UDP probe; `other` = anything
 * else (an SCTP probe failing for another reason, a set-up failure). Only `sctp` failures are
 * tolerated: `verdict` is false when any failure is of another class, when a test or the binary
 * failed with no failure found (a crash or timeout), or when no conformance test ran at all.
 */

/** One test2json event (the fields used here). */
export interface GoTestEvent {
  Action: string;
  Test?: string;
  Elapsed?: number;
  Output?: string;
}

export type FailureClass = 'sctp' | 'tcp-udp' | 'other';

export interface ProbeFailure {
  /** The (sub)test the failure was reported in, as test2json names it. */
  test: string;
  /** tcp, udp, sctp; '' for a failure that is not a probe. */
  protocol: string;
  /** host:port probed; '' for a failure that is not a probe. */
  target: string;
  /** What the suite logged: the probe's outcome line, or the error message. */
  reason: string;
  class: FailureClass;
}

export interface ConformanceTestResult {
  /** The ShortName, e.g. CNPAdminTierIngressTCP. */
  name: string;
  status: 'PASS' | 'FAIL' | 'SKIP' | 'UNFINISHED';
  seconds: number;
  failures: ProbeFailure[];
  /** SCTP probes the variant binary did not run (0 with the unmodified suite). */
  sctpNotRun: number;
}

/** What the variant's PokeServer logs for an SCTP probe it does not run (build.sh's patch). */
export const SCTP_NOT_RUN = 'TESSERA-SCTP-PROBE-NOT-RUN';

export interface ConformanceReport {
  tests: ConformanceTestResult[];
  /** Failures reported on TestConformance itself (suite set-up). */
  suiteFailures: ProbeFailure[];
  /** True when every failure is an SCTP `protocol not supported` probe (see the header). */
  verdict: boolean;
  /** Why the verdict is false ('' when true). */
  why: string;
}

const SUITE = 'TestConformance';
const FAILED_COMMAND = /FAILED Command was \[([^\]]*)\]/;
const FAILED_EXEC = /FAILED to execute command \[([^\]]*)\]/;
const PROTOCOL = /--protocol=(\w+)/;
const TARGET = /\s(\S+:\d+)$/;
const ERROR_MESSAGE = /^\s*Error:\s*(.*)$/;
const ERROR_CONTINUATION = /^\s*\t\s+\t(.*)$/;

interface PendingProbe {
  protocol: string;
  target: string;
  reason: string;
}

/**
 * testify's `Error:` field after an `Error Trace:` line at `from`, with its continuation lines
 * (tab, blank label, tab) joined: "Received unexpected error: <the error>".
 */
function errorMessage(lines: string[], from: number): string {
  for (let j = from; j < Math.min(lines.length, from + 12); j++) {
    const first = ERROR_MESSAGE.exec(lines[j] ?? '')?.[1];
    if (first === undefined) continue;
    const parts = [first.trim()];
    for (let k = j + 1; k < lines.length; k++) {
      const more = ERROR_CONTINUATION.exec(lines[k] ?? '')?.[1];
      if (more === undefined) break;
      parts.push(more.trim());
    }
    return parts.filter((p) => p.length > 0).join(' ');
  }
  return 'error';
}

/** Parses test2json lines; lines that are not JSON events (build noise) are ignored. */
export function parseGoTestEvents(text: string): GoTestEvent[] {
  const events: GoTestEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const event = JSON.parse(line) as GoTestEvent;
      if (typeof event.Action === 'string') events.push(event);
    } catch {
      // A truncated last line (killed run): the events before it still count.
    }
  }
  return events;
}

/** The class of one failure from its probe's protocol and the outcome the suite logged. */
export function classify(protocol: string, reason: string): FailureClass {
  if (protocol === 'sctp') return reason.includes('protocol not supported') ? 'sctp' : 'other';
  if (protocol === 'tcp' || protocol === 'udp') return 'tcp-udp';
  return 'other';
}

/** The ShortName a test2json test name belongs to (TestConformance/<ShortName>/...), if any. */
function shortNameOf(test: string): string | undefined {
  const parts = test.split('/');
  return parts[0] === SUITE && parts.length >= 2 ? parts[1] : undefined;
}

/**
 * Failures in one (sub)test's own output lines: each error block is attributed to the probe
 * logged last before it, then that probe is forgotten (a later block needs its own probe).
 */
function failuresIn(test: string, lines: string[]): ProbeFailure[] {
  const failures: ProbeFailure[] = [];
  let probe: PendingProbe | undefined;
  let awaitingReason = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const command = FAILED_COMMAND.exec(line) ?? FAILED_EXEC.exec(line);
    if (command) {
      const cmd = command[1] ?? '';
      probe = { protocol: PROTOCOL.exec(cmd)?.[1] ?? '', target: TARGET.exec(cmd)?.[1] ?? '', reason: line.trim() };
      awaitingReason = FAILED_COMMAND.test(line);
      continue;
    }
    if (awaitingReason && probe && /Expected connection/.test(line)) {
      probe.reason = line.trim().replace(/^\S+\.go:\d+:\s*/, '');
      awaitingReason = false;
      continue;
    }
    if (!/Error Trace:/.test(line)) continue;
    const message = errorMessage(lines, i + 1);
    const probeError = probe !== undefined && /Condition never satisfied|Should be true/.test(message);
    if (probe && probeError) {
      failures.push({ test, protocol: probe.protocol, target: probe.target, reason: probe.reason, class: classify(probe.protocol, probe.reason) });
    } else {
      failures.push({ test, protocol: '', target: '', reason: message.trim(), class: 'other' });
    }
    probe = undefined;
    awaitingReason = false;
  }
  return failures;
}

/**
 * The report of one run. `exitCode` is the test binary's: a failing binary with no failing
 * test found (panic, -test.timeout) is never a pass.
 */
export function conformanceReport(events: GoTestEvent[], exitCode: number): ConformanceReport {
  const output = new Map<string, string[]>();
  const ended = new Map<string, GoTestEvent>();
  const started: string[] = [];
  for (const event of events) {
    const test = event.Test;
    if (test === undefined) continue;
    if (event.Action === 'run' && shortNameOf(test) !== undefined && test.split('/').length === 2) started.push(test);
    if (event.Action === 'output') {
      const lines = output.get(test) ?? [];
      lines.push(...(event.Output ?? '').split('\n').filter((l) => l.length > 0));
      output.set(test, lines);
    }
    if (event.Action === 'pass' || event.Action === 'fail' || event.Action === 'skip') ended.set(test, event);
  }

  const tests: ConformanceTestResult[] = started.map((test) => {
    const end = ended.get(test);
    const failures = [...output.entries()]
      .filter(([name]) => name === test || name.startsWith(`${test}/`))
      .filter(([name]) => ended.get(name)?.Action !== 'pass')
      .flatMap(([name, lines]) => failuresIn(name, lines));
    const status = end === undefined ? 'UNFINISHED' : end.Action === 'pass' ? 'PASS' : end.Action === 'skip' ? 'SKIP' : 'FAIL';
    const sctpNotRun = [...output.entries()]
      .filter(([name]) => name === test || name.startsWith(`${test}/`))
      .reduce((sum, [, lines]) => sum + lines.filter((l) => l.includes(SCTP_NOT_RUN)).length, 0);
    return { name: shortNameOf(test) ?? test, status, seconds: end?.Elapsed ?? 0, failures, sctpNotRun };
  });
  const suiteFailures = failuresIn(SUITE, output.get(SUITE) ?? []);

  const all = [...suiteFailures, ...tests.flatMap((t) => t.failures)];
  const bad = all.filter((f) => f.class !== 'sctp');
  const unexplained = tests.filter((t) => (t.status === 'FAIL' || t.status === 'UNFINISHED') && t.failures.length === 0);
  let why = '';
  if (bad.length > 0) why = `${bad.length} failure(s) not explained by missing SCTP`;
  else if (tests.length === 0) why = 'no conformance test ran';
  else if (unexplained.length > 0) why = `${unexplained.map((t) => t.name).join(', ')} failed with no failing probe found`;
  else if (exitCode !== 0 && all.length === 0) why = `the test binary exited with ${exitCode} and no failure was found`;
  return { tests, suiteFailures, verdict: why === '', why };
}

/** The per-test table and, per failing test, its failures; one line per row. */
export function formatReport(report: ConformanceReport): string {
  const width = Math.max(4, ...report.tests.map((t) => t.name.length));
  const variant = report.tests.some((t) => t.sctpNotRun > 0);
  const out = [`${'test'.padEnd(width)}  result      seconds  failing probes (SCTP / TCP-UDP / other)${variant ? '  SCTP probes not run' : ''}`];
  for (const t of report.tests) {
    const n = (c: FailureClass): number => t.failures.filter((f) => f.class === c).length;
    const counts = (t.failures.length > 0 ? `${n('sctp')} / ${n('tcp-udp')} / ${n('other')}` : '').padEnd(variant ? 39 : 0);
    const notRun = t.sctpNotRun > 0 ? `  ${t.sctpNotRun}` : '';
    out.push(`${t.name.padEnd(width)}  ${t.status.padEnd(10)}  ${t.seconds.toFixed(1).padStart(7)}  ${counts}${notRun}`.trimEnd());
  }
  const passed = report.tests.filter((t) => t.status === 'PASS').length;
  const total = report.tests.reduce((s, t) => s + t.seconds, 0);
  out.push(`${passed}/${report.tests.length} passed, ${total.toFixed(0)} s in tests`);
  if (variant) {
    const notRun = report.tests.reduce((sum, t) => sum + t.sctpNotRun, 0);
    out.push(`SCTP probes not run: ${notRun} (the SCTP-less variant of the suite: a PASS above covers its TCP/UDP probes only)`);
  }
  const failing = [...(report.suiteFailures.length > 0 ? [{ name: SUITE, failures: report.suiteFailures }] : []), ...report.tests.filter((t) => t.failures.length > 0)];
  for (const t of failing) {
    out.push('', `${t.name}:`);
    for (const f of t.failures) {
      const label = f.class === 'sctp' ? 'SCTP' : f.class === 'tcp-udp' ? f.protocol.toUpperCase() : 'OTHER';
      const probe = f.protocol !== '' ? `${f.protocol} ${f.target}` : 'not a probe';
      out.push(`  [${label}] ${f.test.split('/').slice(2).join('/') || '(set-up)'}: ${probe}: ${f.reason}`);
    }
  }
  const sctpOnly = failing.length > 0 ? ' (every failure is an SCTP probe on a kernel without SCTP)' : '';
  out.push('', report.verdict ? `verdict: PASS${sctpOnly}` : `verdict: FAIL (${report.why})`);
  return out.join('\n');
}
