import { describe, expect, it } from 'vitest';
import { RecordingCommandRunner } from '../dataplane/command-runner.ts';
import { parseCleanupArgs, runCleanupCommand } from './cleanup.ts';

const OURS = `*filter
:FORWARD ACCEPT [0:0]
:cali-FORWARD - [0:0]
:cali-tessera-owner - [0:0]
-A FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD
COMMIT
`;
const FELIX = `*filter
:FORWARD ACCEPT [0:0]
:cali-FORWARD - [0:0]
-A FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD
COMMIT
`;

/** A node whose iptables-nft (IPv4) prints `save` and whose IP sets are `sets`. */
function node(save: string, sets: readonly string[] = [], ipset: 'ok' | 'denied' = 'ok'): RecordingCommandRunner {
  return new RecordingCommandRunner(({ cmd, args }) => {
    if (cmd === 'iptables-nft-save') return { code: 0, stdout: save, stderr: '' };
    if (cmd === 'ipset' && args[0] === 'list') return ipset === 'ok' ? { code: 0, stdout: sets.join('\n'), stderr: '' } : { code: 1, stdout: '', stderr: 'ipset v7.17: Kernel error received: Operation not permitted\n' };
    return undefined;
  });
}

async function run(argv: string[], runner: RecordingCommandRunner): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCleanupCommand(argv, { runner, out: { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) } });
  return { code, stdout, stderr };
}

const writes = (r: RecordingCommandRunner) => r.calls.filter((c) => c.cmd.endsWith('-restore') || c.args[0] === 'restore');

describe('tessera cleanup', () => {
  it("removes Tessera's state and reports each step", async () => {
    const runner = node(OURS, ['cali40s:a']);
    const r = await run([], runner);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('removed iptables-nft filter: 1 hook rule(s), 1 chain(s)\nremoved 1 IP set(s)\nremoved iptables-nft filter: the marker chain cali-tessera-owner\n');
    expect(writes(runner)).toHaveLength(3);
  });

  it('--dry-run prints the restore input and writes nothing', async () => {
    const runner = node(OURS, ['cali40s:a']);
    const r = await run(['--dry-run'], runner);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n*filter\n-D FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD\n');
    expect(r.stdout).toContain('# ipset restore\ndestroy cali40s:a\n');
    expect(writes(runner)).toEqual([]);
  });

  it("refuses Felix's chains with exit 4, names them, and writes nothing", async () => {
    const runner = node(FELIX, ['cali40s:a']);
    const r = await run([], runner);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("refusing: this node's cali- state was not written by Tessera");
    expect(r.stderr).toContain("iptables-nft filter holds cali- chains (cali-FORWARD) without Tessera's marker chain cali-tessera-owner");
    expect(r.stderr).toContain('--force');
    expect(writes(runner)).toEqual([]);
  });

  it("--force removes Felix's chains and sets too", async () => {
    const runner = node(FELIX, ['cali40s:a']);
    const r = await run(['--force'], runner);
    expect(r.code).toBe(0);
    expect(writes(runner).map((c) => c.cmd)).toEqual(['iptables-nft-restore', 'ipset']);
  });

  it('refuses (exit 4) when a foreign rule jumps into a cali- chain, unless --force', async () => {
    const withRef = OURS.replace('COMMIT', '-A FORWARD -j cali-FORWARD\nCOMMIT');
    const r = await run([], node(withRef));
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('  - -A FORWARD -j cali-FORWARD\n');
    const runner = node(withRef);
    expect((await run(['--force'], runner)).code).toBe(0);
    expect(writes(runner)[0]!.stdin).toContain('-D FORWARD -j cali-FORWARD\n');
  });

  it('nothing to remove: exit 0 and says so', async () => {
    const r = await run([], node('*filter\n:FORWARD ACCEPT [0:0]\nCOMMIT\n'));
    expect(r).toEqual({ code: 0, stdout: 'nothing to remove: no cali- chains, hook rules or IP sets of Tessera on this node\n', stderr: '' });
  });

  it('exit 3 when the IP sets cannot be read', async () => {
    const r = await run([], node(OURS, [], 'denied'));
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot read the node's state: ipset list -n failed \(exit 1\): .*Operation not permitted/);
  });

  it('exit 1 naming the step when a removal fails', async () => {
    const runner = new RecordingCommandRunner(({ cmd }) => {
      if (cmd === 'iptables-nft-save') return { code: 0, stdout: OURS, stderr: '' };
      if (cmd === 'iptables-nft-restore') return { code: 2, stdout: '', stderr: 'iptables-restore: line 2 failed\n' };
      return undefined;
    });
    const r = await run([], runner);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('tessera cleanup: iptables-nft filter: 1 hook rule(s), 1 chain(s): iptables-nft-restore failed (exit 2): iptables-restore: line 2 failed\n');
  });

  it('usage errors exit 2', async () => {
    expect((await run(['--iptables-backend', 'iptables'], node(''))).code).toBe(2);
    let stderr = '';
    expect(await runCleanupCommand(['--netns', '../x'], { out: { stdout: () => undefined, stderr: (t) => (stderr += t) } })).toBe(2);
    expect(stderr).toContain("netns '../x' is not a valid namespace name");
    expect((await run(['--bogus'], node(''))).code).toBe(2);
  });
});

describe('parseCleanupArgs', () => {
  it('defaults and flags', () => {
    expect(parseCleanupArgs([])).toEqual({ backend: 'auto', netns: undefined, dryRun: false, force: false });
    expect(parseCleanupArgs(['--iptables-backend=legacy', '--netns', 'bk-x', '--dry-run', '--force'])).toEqual({ backend: 'legacy', netns: 'bk-x', dryRun: true, force: true });
    expect(parseCleanupArgs(['-h'])).toBe('help');
  });
});
