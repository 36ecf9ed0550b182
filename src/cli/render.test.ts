import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runRender } from './render.ts';
import { capture, expectGolden } from './testdata/capture.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

// The netns load test of this output is e2e/dataplane/render.netns.test.ts (needs root).

describe('tessera render', () => {
  it('prints the ipset and iptables-restore input the agent applies on node-1 of examples/ (golden)', async () => {
    const r = await capture(runRender, ['--node', 'node-1', '-f', path.relative(process.cwd(), EXAMPLES)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# ipset restore\ncreate cali40/);
    expect(r.stdout).toContain('\n# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n*filter\n');
    // The raw table follows: anti-spoofing for packets from workload interfaces.
    expect(r.stdout).toContain('\n# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n*raw\n');
    expect(r.stdout).toMatch(/^-A cali-PREROUTING .*-m mark --mark 0x40000\/0x40000 -m rpfilter --invert --validmark -j DROP$/m);
    expect(r.stdout.trimEnd().endsWith('COMMIT')).toBe(true);
    expectGolden('render-examples-node-1.txt', r.stdout);
  });

  it('a node without endpoints prints the base chains and exits 1; no --node exits 2', async () => {
    const r = await capture(runRender, ['--node', 'node-9', '-f', EXAMPLES]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('node node-9 has no workload endpoints');
    expect((await capture(runRender, ['-f', EXAMPLES])).code).toBe(2);
  });
});
