import { describe, expect, it } from 'vitest';
import { classify, conformanceReport, formatReport, parseGoTestEvents, SCTP_NOT_RUN, type GoTestEvent } from './conformance-report.ts';

const SUITE = 'TestConformance';
const TEST = `${SUITE}/CNPAdminTierIngressSCTP`;
const LEAF = `${TEST}/Should_support_an_'allow-ingress'_policy_for_SCTP_protocol`;

/** The lines helper.go logs for one failed attempt of a probe, as the suite prints them. */
function attempt(protocol: string, target: string, outcome: string): string[] {
  return [`    helper.go:71: FAILED Command was [/agnhost connect --timeout=3s --protocol=${protocol} ${target}]`, `    helper.go:71: ${outcome}`];
}

/** testify's error block for a failed require.Eventually / assert.True. */
function errorBlock(test: string, message: string): string[] {
  return ['    helper.go:70: ', '        \tError Trace:\tsigs.k8s.io/network-policy-api@v0.3.0/conformance/utils/kubernetes/helper.go:70', `        \tError:      \t${message}`, `        \tTest:       \t${test}`];
}

function output(test: string, lines: string[]): GoTestEvent[] {
  return lines.map((l) => ({ Action: 'output', Test: test, Output: `${l}\n` }));
}

/** A run of one conformance test with one leaf whose output is `leafLines`. */
function run(leafLines: string[], leafAction: 'pass' | 'fail'): GoTestEvent[] {
  return [
    { Action: 'run', Test: SUITE },
    { Action: 'run', Test: TEST },
    { Action: 'run', Test: LEAF },
    ...output(LEAF, leafLines),
    { Action: leafAction, Test: LEAF, Elapsed: 10.1 },
    { Action: leafAction, Test: TEST, Elapsed: 12.5 },
    { Action: leafAction, Test: SUITE, Elapsed: 20 },
  ];
}

const SCTP_REFUSED = 'Expected connection to succeed from ns/a to 10.0.0.1, but instead it miserably failed. stderr: OTHER: protocol not supported\n';

describe('conformance report', () => {
  it('counts the SCTP probes the SCTP-less variant did not run, and says a PASS there covers TCP/UDP only', () => {
    const lines = [`    helper.go:70: ${SCTP_NOT_RUN} sctp ns/a -> 10.0.0.1:9003 (shouldConnect=true)`, `    helper.go:70: ${SCTP_NOT_RUN} sctp ns/a -> 10.0.0.1:9005 (shouldConnect=false)`];
    const report = conformanceReport(run(lines, 'pass'), 0);
    expect(report.tests.map((t) => [t.name, t.status, t.sctpNotRun])).toEqual([['CNPAdminTierIngressSCTP', 'PASS', 2]]);
    expect(report.verdict).toBe(true);
    expect(formatReport(report)).toContain('SCTP probes not run: 2 (the SCTP-less variant of the suite: a PASS above covers its TCP/UDP probes only)');
  });

  it('counts an SCTP probe the kernel refuses apart and passes the verdict', () => {
    const lines = [...attempt('sctp', '10.0.0.1:9003', SCTP_REFUSED), ...attempt('sctp', '10.0.0.1:9003', SCTP_REFUSED), ...errorBlock(LEAF, 'Condition never satisfied')];
    const report = conformanceReport(run(lines, 'fail'), 1);
    expect(report.tests).toEqual([
      {
        name: 'CNPAdminTierIngressSCTP',
        status: 'FAIL',
        seconds: 12.5,
        failures: [{ test: LEAF, protocol: 'sctp', target: '10.0.0.1:9003', reason: SCTP_REFUSED.trim(), class: 'sctp' }],
        sctpNotRun: 0,
      },
    ]);
    expect(report.verdict).toBe(true);
    expect(formatReport(report)).toContain('[SCTP]');
  });

  it('fails the verdict on a TCP deny probe answered REFUSED (a reject, not a drop)', () => {
    const refused = 'Expected connection to be dropped from ns/a to 10.0.0.1, but instead it returned a different status: REFUSED: dial tcp 10.0.0.1:80: connect: connection refused';
    const report = conformanceReport(run([...attempt('tcp', '10.0.0.1:80', refused), ...errorBlock(LEAF, 'Condition never satisfied')], 'fail'), 1);
    expect(report.tests[0]?.failures.map((f) => [f.class, f.protocol, f.target])).toEqual([['tcp-udp', 'tcp', '10.0.0.1:80']]);
    expect(report.verdict).toBe(false);
    expect(formatReport(report)).toContain('[TCP]');
  });

  it('attributes a failed confirmation probe (Should be true) to the probe logged before it', () => {
    const connected = 'Expected connection to fail from ns/a to 10.0.0.1, but instead it successfully connected.';
    const report = conformanceReport(run([...attempt('udp', '10.0.0.1:53', connected), ...errorBlock(LEAF, 'Should be true')], 'fail'), 1);
    expect(report.tests[0]?.failures.map((f) => [f.class, f.protocol])).toEqual([['tcp-udp', 'udp']]);
    expect(report.verdict).toBe(false);
  });

  it('does not excuse an SCTP probe that fails for another reason than a missing SCTP', () => {
    const connected = 'Expected connection to fail from ns/a to 10.0.0.1, but instead it successfully connected.';
    expect(classify('sctp', connected)).toBe('other');
    const report = conformanceReport(run([...attempt('sctp', '10.0.0.1:9003', connected), ...errorBlock(LEAF, 'Condition never satisfied')], 'fail'), 1);
    expect(report.verdict).toBe(false);
  });

  it('counts an error with no probe before it (set-up) as other, and does not reuse an attributed probe', () => {
    const lines = [...attempt('sctp', '10.0.0.1:9003', SCTP_REFUSED), ...errorBlock(LEAF, 'Condition never satisfied'), ...errorBlock(LEAF, 'Received unexpected error: the server could not find the requested resource')];
    const report = conformanceReport(run(lines, 'fail'), 1);
    expect(report.tests[0]?.failures.map((f) => f.class)).toEqual(['sctp', 'other']);
    expect(report.tests[0]?.failures[1]?.reason).toContain('could not find the requested resource');
    expect(report.verdict).toBe(false);
  });

  it('reports a set-up failure on TestConformance with testify\'s whole error (namespaces still terminating)', () => {
    const lines = [
      '    apply.go:148: ',
      '        \tError Trace:\tsigs.k8s.io/network-policy-api@v0.3.0/conformance/utils/kubernetes/apply.go:148',
      '        \t            \t\t\t\tsigs.k8s.io/network-policy-api@v0.3.0/conformance/utils/suite/suite.go:158',
      '        \tError:      \tReceived unexpected error:',
      '        \t            \tstatefulsets.apps "harry-potter" is forbidden: unable to create new content in namespace network-policy-conformance-gryffindor because it is being terminated',
      '        \tTest:       \tTestConformance',
      '        \tMessages:   \terror creating resource',
    ];
    const report = conformanceReport([{ Action: 'run', Test: SUITE }, ...output(SUITE, lines), { Action: 'fail', Test: SUITE, Elapsed: 0.07 }], 1);
    expect(report.suiteFailures).toEqual([
      {
        test: SUITE,
        protocol: '',
        target: '',
        reason: 'Received unexpected error: statefulsets.apps "harry-potter" is forbidden: unable to create new content in namespace network-policy-conformance-gryffindor because it is being terminated',
        class: 'other',
      },
    ]);
    expect(report.why).toBe('1 failure(s) not explained by missing SCTP');
  });

  it('ignores failed attempts of a probe that eventually succeeded (its subtest passed)', () => {
    const connected = 'Expected connection to fail from ns/a to 10.0.0.1, but instead it successfully connected.';
    const report = conformanceReport(run(attempt('tcp', '10.0.0.1:80', connected), 'pass'), 0);
    expect(report.tests[0]?.status).toBe('PASS');
    expect(report.tests[0]?.failures).toEqual([]);
    expect(report.verdict).toBe(true);
  });

  it('never passes a run whose test did not finish (-test.timeout panic) or that ran no test', () => {
    const unfinished: GoTestEvent[] = [{ Action: 'run', Test: SUITE }, { Action: 'run', Test: TEST }, ...output(TEST, ['panic: test timed out after 45m0s']), { Action: 'fail', Elapsed: 2700 }];
    const report = conformanceReport(unfinished, 2);
    expect(report.tests[0]?.status).toBe('UNFINISHED');
    expect(report.verdict).toBe(false);
    expect(conformanceReport([{ Action: 'run', Test: SUITE }, { Action: 'pass', Test: SUITE }], 0).why).toBe('no conformance test ran');
  });

  it('reads test2json lines and skips non-JSON noise and a truncated last line', () => {
    const text = ['build noise', JSON.stringify({ Action: 'run', Test: TEST }), '{"Action":"outp'].join('\n');
    expect(parseGoTestEvents(text)).toEqual([{ Action: 'run', Test: TEST }]);
  });
});
