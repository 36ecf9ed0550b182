import { describe, expect, it } from 'vitest';
import { hashRuleTails } from './rule-hash.ts';
import { emptyPhases } from '../apply-phases.ts';
import type { CommandRunner } from '../command-runner.ts';
import { RestoreTransaction, restoreErrorLine, restoreErrorMessage, streamRestore, type ChainWrite } from './restore-transaction.ts';

const want = (name: string, tails: string[]): ChainWrite['want'] => ({ tails, hashes: () => hashRuleTails(name, tails) });

/** iptables-restore's messages as this host's iptables 1.8.9 prints them (captured in a network namespace). */
const MESSAGES = {
  parse: "iptables-nft-restore v1.8.9 (nf_tables): Parser cannot handle more arguments\nError occurred at line: 4\nTry `iptables-nft-restore -h' or 'iptables-nft-restore --help' for more information.\n",
  nftCommit: 'iptables-nft-restore v1.8.9 (nf_tables): \nline 3: CHAIN_DEL failed (Device or resource busy): chain cali-ref\n',
  legacyCommit: 'iptables-restore: line 4 failed\n',
  lock: 'Another app is currently holding the xtables lock. Stopped waiting after 10s.\n',
};

describe('restore error messages', () => {
  it('finds the line iptables-restore names in each of its message forms', () => {
    expect(restoreErrorLine(MESSAGES.parse)).toBe(4);
    expect(restoreErrorLine(MESSAGES.nftCommit)).toBe(3);
    expect(restoreErrorLine(MESSAGES.legacyCommit)).toBe(4);
    expect(restoreErrorLine(MESSAGES.lock)).toBeUndefined();
  });

  it('keeps the message on one line without the usage hint', () => {
    expect(restoreErrorMessage(MESSAGES.parse)).toBe('iptables-nft-restore v1.8.9 (nf_tables): Parser cannot handle more arguments Error occurred at line: 4');
  });
});

describe('RestoreTransaction', () => {
  const have = hashRuleTails('cali-pi-a', ['-j DROP', '-j ACCEPT', '-j RETURN']);
  const tx = (): RestoreTransaction =>
    new RestoreTransaction(
      'filter',
      [
        { name: 'cali-pi-a', want: want('cali-pi-a', ['-j DROP', '-j LOG', '-j RETURN', '-j MARK', '-j ACCEPT']), have },
        { name: 'cali-pi-new', want: want('cali-pi-new', ['-j DROP']), have: undefined },
        { name: 'cali-pi-old', want: undefined, have: ['x'] },
        { name: 'cali-pi-gone', want: undefined, have: undefined },
        { name: 'cali-pi-short', want: want('cali-pi-short', ['-j DROP']), have: hashRuleTails('cali-pi-short', ['-j DROP', '-j ACCEPT']) },
      ],
      () => ['-I FORWARD 1 -j cali-FORWARD'],
    );

  it('declares created and deleted chains first, rewrites by index, hooks, deletes last', () => {
    const t = tx();
    const lines = [...t.input()].join('').split('\n');
    expect(lines).toEqual([
      '*filter',
      ':cali-pi-new - [0:0]',
      ':cali-pi-old - [0:0]',
      expect.stringMatching(/^-R cali-pi-a 2 -m comment --comment "cali:\S+" -j LOG$/),
      // Hashes are chained: every rule below a changed one is rewritten too.
      expect.stringMatching(/^-R cali-pi-a 3 -m comment --comment "cali:\S+" -j RETURN$/),
      expect.stringMatching(/^-A cali-pi-a -m comment --comment "cali:\S+" -j MARK$/),
      expect.stringMatching(/^-A cali-pi-a -m comment --comment "cali:\S+" -j ACCEPT$/),
      expect.stringMatching(/^-A cali-pi-new .* -j DROP$/),
      '-D cali-pi-short 2',
      '-I FORWARD 1 -j cali-FORWARD',
      '-X cali-pi-old',
      'COMMIT',
      '',
    ]);
    expect(t.chains.map((c) => c.name)).toEqual(['cali-pi-a', 'cali-pi-new', 'cali-pi-old', 'cali-pi-short']);
    expect(t.bytes).toBe(Buffer.byteLength(lines.join('\n')));
  });

  it('hands the input over in chunks of whole lines, the bytes counted', () => {
    const tails = Array.from({ length: 1_500 }, (_, i) => `-p tcp --source 10.0.${i >> 8}.${i & 255}/32 -j DROP`);
    let written = 0;
    const t = new RestoreTransaction('filter', [{ name: 'cali-pi-big', want: { ...want('cali-pi-big', tails)!, written: () => written++ }, have: undefined }], () => []);
    const chunks = [...t.input()];
    expect(written).toBe(1);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) expect(c[c.length - 1]).toBe(0x0a);
    const text = Buffer.concat(chunks).toString('utf8');
    expect(text.split('\n').filter((l) => l.startsWith('-A cali-pi-big '))).toHaveLength(1_500);
    expect(text.startsWith('*filter\n:cali-pi-big - [0:0]\n')).toBe(true);
    expect(text.endsWith('COMMIT\n')).toBe(true);
    expect(t.bytes).toBe(Buffer.byteLength(text));
  });

  it('maps each input line back to its chain and desired rule (1-based)', () => {
    const t = tx();
    for (const _ of t.input());
    expect(t.blame(1)).toBeUndefined();
    expect(t.blame(2)).toEqual({ chain: 'cali-pi-new', op: 'declare', rule: undefined });
    // cali-pi-a's hash diff: rules 2 and 3 are rewritten, then rules 4 and 5 appended.
    expect([4, 5, 6, 7].map((line) => t.blame(line))).toEqual([2, 3, 4, 5].map((rule) => ({ chain: 'cali-pi-a', op: 'rules', rule })));
    expect(t.blame(8)).toEqual({ chain: 'cali-pi-new', op: 'rules', rule: 1 });
    expect(t.blame(9)).toEqual({ chain: 'cali-pi-short', op: 'rules', rule: undefined });
    expect(t.blame(10)).toBeUndefined(); // a hook line
    expect(t.blame(11)).toEqual({ chain: 'cali-pi-old', op: 'delete', rule: undefined });
    expect(t.blame(12)).toBeUndefined(); // COMMIT
  });
});

describe('streamRestore', () => {
  it('rethrows an error thrown while the input is generated, not the restore failure the cut-off input causes', async () => {
    // Like RealCommandRunner: a failing input ends stdin early, and iptables-restore complains.
    const runner: CommandRunner = {
      run: async (_cmd, _args, opts) => {
        try {
          for (const _ of opts!.stdin as Iterable<string>) void _;
        } catch {
          return { code: 1, stdout: '', stderr: 'iptables-restore: COMMIT expected at line 2' };
        }
        return { code: 0, stdout: '', stderr: '' };
      },
    };
    const broken: ChainWrite = {
      name: 'cali-pi-bug',
      want: {
        get tails(): string[] {
          throw new Error('renderer bug');
        },
        hashes: () => [],
      },
      have: undefined,
    };
    const phases = emptyPhases();
    await expect(streamRestore(runner, 'iptables-nft-restore', [], new RestoreTransaction('filter', [broken], () => []), phases)).rejects.toThrow('renderer bug');
    const ok = await streamRestore(runner, 'iptables-nft-restore', [], new RestoreTransaction('filter', [{ name: 'cali-pi-a', want: want('cali-pi-a', ['-j DROP']), have: undefined }], () => []), phases);
    expect(ok.code).toBe(0);
    expect(phases.restoreMs).toBeGreaterThan(0);
  });
});
