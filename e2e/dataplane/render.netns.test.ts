/**
 * `tessera render` output is real restore input: it loads with `ipset restore` and
 * `iptables-nft-restore` (--test, then for real; the filter and raw tables) in a fresh network
 * namespace. Lives in the
 * `dataplane` project because it needs root, iproute2, ipset and iptables-nft.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runRender } from '../../src/cli/render.ts';
import { capture } from '../../src/cli/testdata/capture.ts';

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

describe('tessera render output in a real kernel', () => {
  it.each(['node-1', 'node-2'])('loads with ipset restore and iptables-nft-restore in a fresh network namespace (%s)', async (node) => {
    const r = await capture(runRender, ['--node', node, '-f', EXAMPLES]);
    expect(r.code).toBe(0);
    const { ipset, iptables } = sections(r.stdout);
    const ns = `tsr-render-${randomBytes(4).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', ns]);
    try {
      execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'restore'], { input: ipset, stdio: ['pipe', 'pipe', 'pipe'] });
      execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-restore', '--test', '--noflush'], { input: iptables });
      execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-restore', '--noflush'], { input: iptables });
      const saved = execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-save', '-t', 'filter'], { encoding: 'utf8' });
      expect(saved).toMatch(/^-A FORWARD .*-j cali-FORWARD$/m);
      const raw = execFileSync('ip', ['netns', 'exec', ns, 'iptables-nft-save', '-t', 'raw'], { encoding: 'utf8' });
      expect(raw).toMatch(/^-A PREROUTING .*-j cali-PREROUTING$/m);
      expect(raw).toMatch(/^-A cali-PREROUTING .*-m rpfilter --validmark --invert -j DROP$/m);
      const sets = execFileSync('ip', ['netns', 'exec', ns, 'ipset', 'list', '-n'], { encoding: 'utf8' });
      expect(sets.split('\n').filter((l) => l.startsWith('cali40')).length).toBeGreaterThan(0);
    } finally {
      execFileSync('ip', ['netns', 'del', ns]);
    }
  });
});
