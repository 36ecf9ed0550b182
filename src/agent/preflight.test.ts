import { describe, expect, it } from 'vitest';

import { RecordingCommandRunner } from '../dataplane/index.ts';
import { preflight } from './preflight.ts';

describe('preflight', () => {
  it('passes when iptables-nft and ipset run', async () => {
    expect(await preflight(new RecordingCommandRunner())).toBeUndefined();
  });

  it('names the missing tool (spawn ENOENT is exit 127)', async () => {
    const runner = new RecordingCommandRunner((c) => (c.cmd === 'ipset' ? { code: 127, stdout: '', stderr: 'Error: spawn ipset ENOENT' } : undefined));
    expect(await preflight(runner)).toMatch(/ipset is not installed/);
  });

  it('says NET_ADMIN when the tools exist but may not touch the kernel', async () => {
    const runner = new RecordingCommandRunner((c) =>
      c.cmd === 'iptables-nft-save' ? { code: 4, stdout: '', stderr: 'iptables-nft-save v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)' } : undefined,
    );
    expect(await preflight(runner)).toMatch(/CAP_NET_ADMIN/);
  });

  it('checks the backend it is given', async () => {
    const runner = new RecordingCommandRunner();
    await preflight(runner, 'legacy');
    expect(runner.calls.map((c) => c.cmd)).toEqual(['iptables-legacy-restore', 'iptables-legacy-save', 'ipset']);
  });
});
