import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runRender } from './render.ts';
import { capture, expectGolden } from './testdata/capture.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

/** The restore inputs of `tessera render` output, split at its `# <command>` headers. */
function sections(out: string): { ipset: string; iptables: string } {
  const ipset: string[] = [];
  const iptables: string[] = [];
  let into: string[] | undefined;
  for (const line of out.split('\n')) {
    if (line.startsWith('# ipset restore')) into = ipset;
    else if (/^# ip6?tables-(nft|legacy)-restore/.test(line)) into = iptables;
    else into?.push(line);
  }
  return { ipset: `${ipset.join('\n')}\n`, iptables: `${iptables.join('\n')}\n` };
}

describe('tessera render', () => {
  it('prints the ipset and iptables-restore input the agent applies on node-1 of examples/ (golden)', async () => {
    const r = await capture(runRender, ['--node', 'node-1', '-f', path.relative(process.cwd(), EXAMPLES)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# ipset restore\ncreate cali40/);
    expect(r.stdout).toContain('\n# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n*filter\n');
    expect(r.stdout.trimEnd().endsWith('COMMIT')).toBe(true);
    expectGolden('render-examples-node-1.txt', r.stdout);
  });

  it('a node without endpoints prints the base chains and exits 1; no --node exits 2', async () => {
    const r = await capture(runRender, ['--node', 'node-9', '-f', EXAMPLES]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('node node-9 has no workload endpoints');
    expect((await capture(runRender, ['-f', EXAMPLES])).code).toBe(2);
  });

  // Needs root, iproute2, ipset and iptables-nft (the CI image has them; the dataplane
  // project's tests need the same).
  it.skipIf(process.getuid?.() !== 0)('its output loads with ipset restore and iptables-nft-restore --test in a fresh network namespace', async () => {
    for (const node of ['node-1', 'node-2']) {
      const r = await capture(runRender, ['--node', node, '-f', EXAMPLES]);
      const { ipset, iptables } = sections(r.stdout);
      const ns = `tsr-render-${randomBytes(4).toString('hex')}`;
      execFileSync('ip', ['netns', 'add', ns]);
      try {
        execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'restore'], { input: ipset, stdio: ['pipe', 'pipe', 'pipe'] });
        execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-restore', '--test', '--noflush'], { input: iptables });
        // And for real: the kernel accepts it and holds our chains.
        execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-restore', '--noflush'], { input: iptables });
        const saved = execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-save', '-t', 'filter'], { encoding: 'utf8' });
        expect(saved).toMatch(/^-A FORWARD .*-j cali-FORWARD$/m);
        const sets = execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'list', '-n'], { encoding: 'utf8' });
        expect(sets.split('\n').filter((l) => l.startsWith('cali40')).length).toBeGreaterThan(0);
      } finally {
        execFileSync('ip', ['netns', 'del', ns]);
      }
    }
  });
});
