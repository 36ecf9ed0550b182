import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runExplain } from './explain.ts';
import { runSimulate } from './simulate.ts';
import { capture, expectGolden } from './testdata/capture.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SHARED_EXAMPLES = path.resolve(ROOT, '../shared/scenarios/examples.json');

const examples = path.join(ROOT, 'examples');

describe('tessera simulate', () => {
  it('prints the shop matrix for one port (golden)', async () => {
    const r = await capture(runSimulate, ['-f', examples, '--port', '8080']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expectGolden('simulate-examples-8080.txt', r.stdout);
  });

  it('prints the matrix as JSON (golden)', async () => {
    const r = await capture(runSimulate, ['-f', examples, '--port', '9090', '--output', 'json']);
    expect(r.code).toBe(0);
    expectGolden('simulate-examples-9090.json', r.stdout);
  });

  it('--output html without staged objects: nothing of them on the page (golden)', async () => {
    const r = await capture(runSimulate, ['-f', examples, '--port', '5432', '--output', 'html']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toMatch(/staged|would-(deny|allow)/i);
    expectGolden('simulate-examples-5432.html', r.stdout);
  });

  it('passes ../shared/scenarios/examples.json with 0 mismatches; the last line is the JSON summary', async () => {
    const r = await capture(runSimulate, ['--scenarios', SHARED_EXAMPLES]);
    const last = r.stdout.trimEnd().split('\n').at(-1) ?? '';
    expect(JSON.parse(last)).toEqual({ scenarios: 2, probes: 72, passed: 72, failed: 0 });
    expect(r.code).toBe(0);
    expectGolden('simulate-shared-examples.txt', r.stdout);
  });

  it("passes the project's own e2e/scenarios files with 0 mismatches", async () => {
    const dir = path.join(ROOT, 'e2e/scenarios');
    const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const r = await capture(runSimulate, ['--scenarios', path.join(dir, f)]);
      const summary = JSON.parse(r.stdout.trimEnd().split('\n').at(-1) ?? '{}') as { failed?: number };
      expect({ file: f, failed: summary.failed, mismatches: r.stdout.split('\n').filter((l) => l.startsWith('MISMATCH')) }).toEqual({ file: f, failed: 0, mismatches: [] });
      expect(r.code).toBe(0);
    }
  });

  it('reports a mismatch with its explanation and exits 1', async () => {
    const text = readFileSync(SHARED_EXAMPLES, 'utf8');
    const doc = JSON.parse(text) as { scenarios: Array<{ probes: Array<{ expected: boolean }> }> };
    const probe = doc.scenarios[0]?.probes[0];
    if (probe === undefined) throw new Error('examples.json has no probe');
    probe.expected = !probe.expected;
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-simulate-'));
    const file = path.join(dir, 'flipped.json');
    writeFileSync(file, JSON.stringify(doc));
    const r = await capture(runSimulate, ['--scenarios', file]);
    rmSync(dir, { recursive: true, force: true });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^MISMATCH k8s-named-port-from-namespace: expected/m);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('{"scenarios":2,"probes":72,"passed":71,"failed":1}');
  });

  it('scenario files that cannot be read or are not scenario files exit 3, naming the file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tessera-simulate-'));
    const missing = path.join(dir, 'missing.json');
    const notScenarios = path.join(dir, 'other.json');
    writeFileSync(notScenarios, '{"schema": "something/v1"}');
    const r = await capture(runSimulate, ['--scenarios', missing, '--scenarios', notScenarios]);
    const r2 = await capture(runSimulate, ['--scenarios', notScenarios]);
    rmSync(dir, { recursive: true, force: true });
    expect(r).toEqual({ code: 3, stdout: '', stderr: `tessera simulate: ${missing}: no such file or directory (ENOENT)\n` });
    expect(r2).toEqual({ code: 3, stdout: '', stderr: `tessera simulate: ${notScenarios}: schema must be one of netpol-truth-tables/v1, calico-truth-tables/v1\n` });
  });

  it('usage errors exit 2', async () => {
    expect((await capture(runSimulate, [])).code).toBe(2);
    expect((await capture(runSimulate, ['-f', examples, '--protocol', 'ICMP'])).code).toBe(2);
    expect((await capture(runSimulate, ['--scenarios', SHARED_EXAMPLES, '--output', 'html'])).code).toBe(2);
  });
});

describe('tessera explain', () => {
  it('explains a denied flow: end of tier default on the destination (golden)', async () => {
    const r = await capture(runExplain, ['-f', examples, '--from', 'shop/frontend', '--to', 'data/db', '--port', '5432']);
    expect(r.code).toBe(0);
    expectGolden('explain-frontend-db-5432.txt', r.stdout);
    expect(r.stdout).toContain('end of tier default: defaultAction Deny → DROP');
  });

  it('explains an allowed flow decided in the security tier (golden)', async () => {
    const r = await capture(runExplain, ['-f', examples, '--from', 'monitoring/prometheus', '--to', 'shop/api', '--port', '9090']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('allowed by GlobalNetworkPolicy security.allow-monitoring ingress[0] (Allow) in tier security');
    expectGolden('explain-prometheus-api-9090.txt', r.stdout);
  });

  it('--output json carries the structured trace: decisions, tiers, policies and rule mismatches', async () => {
    const r = await capture(runExplain, ['-f', examples, '--from', 'shop/frontend', '--to', 'data/db', '--port', '5432', '--output', 'json']);
    expect(r.code).toBe(0);
    const v = JSON.parse(r.stdout) as {
      allowed: boolean;
      egress: { decision: { kind: string; profile?: string } };
      ingress: { decision: { kind: string; tier?: string }; tiers: Array<{ tier: string; outcome: string; policies: Array<{ rules: Array<{ mismatch?: string }> }> }> };
    };
    expect(v.allowed).toBe(false);
    expect(v.egress.decision).toEqual({ kind: 'profile', action: 'allow', profile: 'kns.shop', ruleIndex: 0 });
    expect(v.ingress.decision).toEqual({ kind: 'end-of-tier', action: 'deny', tier: 'default' });
    expect(v.ingress.tiers.map((t) => [t.tier, t.outcome])).toEqual([['security', 'end-of-tier'], ['default', 'end-of-tier']]);
    expect(v.ingress.tiers[1]?.policies[0]?.rules[0]?.mismatch).toMatch(/^source selector: 10\.65\.1\.10 is not in IP set s:/);
  });

  it('an address outside the cluster: only the pod is policed, and the network sets holding the address are named', async () => {
    const allowed = await capture(runExplain, ['-f', examples, '--from', 'shop/api', '--to', '203.0.113.77', '--port', '8443']);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout.split('\n').slice(0, 2)).toEqual([
      'shop/api → 203.0.113.77 TCP/8443: ALLOWED',
      'egress of shop/api (10.65.1.11 on node-1): allowed by NetworkPolicy shop/api-payments egress[1] (Allow) in tier default',
    ]);
    expect(allowed.stdout).toContain('ingress of 203.0.113.77 (outside the cluster): not policed');
    expect(allowed.stdout).toContain('203.0.113.77 is in GlobalNetworkSet card-networks (203.0.113.77/32) {role: payment-provider}');
    // The namespaced set holds the address, but port 22 is not allowed to it.
    const denied = await capture(runExplain, ['-f', examples, '--from', 'shop/api', '--to', '198.51.100.9', '--port', '22', '--output', 'json']);
    const v = JSON.parse(denied.stdout) as { allowed: boolean; ingress: { decision: { kind: string } }; networkSets: Record<string, Array<{ kind: string; namespace?: string; name: string; net: string }>> };
    expect(v.allowed).toBe(false);
    expect(v.ingress.decision.kind).toBe('outside-cluster');
    expect(v.networkSets['198.51.100.9']).toEqual([{ kind: 'NetworkSet', namespace: 'shop', name: 'payment-providers', net: '198.51.100.0/24', labels: { role: 'payment-provider' } }]);
    const inbound = await capture(runExplain, ['-f', examples, '--from', '192.0.2.1', '--to', 'shop/api', '--port', '8081']);
    expect(inbound.stdout).toContain('192.0.2.1 is in no NetworkSet or GlobalNetworkSet');
    const twoAddresses = await capture(runExplain, ['-f', examples, '--from', '192.0.2.1', '--to', '192.0.2.2', '--port', '80']);
    expect(twoAddresses.code).toBe(1);
    expect(twoAddresses.stderr).toContain('one side must be a pod');
  });

  it('an unknown pod exits 1 and lists the known ones', async () => {
    const r = await capture(runExplain, ['-f', examples, '--from', 'shop/nope', '--to', 'data/db', '--port', '5432']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no workload endpoint for shop/nope');
  });
});
