import { describe, expect, it } from 'vitest';
import type { DataplaneMessage } from '../../proto/index.ts';
import { FakeClock } from '../../runtime/clock.ts';
import { readCaliState, type CaliState, type CaliTableState } from './cali-state.ts';
import { CleanupError, formatPlan, planCleanup, runCleanup } from './cleanup.ts';
import { RecordingCommandRunner, type CommandHandler } from '../command-runner.ts';
import { DataplaneDriver } from '../dataplane-driver.ts';
import { FakeKernel } from './fake-kernel.ts';
import { OWNER_MARKER_CHAIN } from './ownership.ts';

const HOOK = '-A FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD';
const REF = '-A INPUT -m comment --comment "operator" -j cali-INPUT';

function table(over: Partial<CaliTableState>): CaliTableState {
  return { backend: 'nft', ipVersion: 4, table: 'filter', chains: [], hookRules: [], foreignReferences: [], ...over };
}

const ours = (over: Partial<CaliTableState> = {}): CaliTableState => table({ chains: ['cali-FORWARD', OWNER_MARKER_CHAIN], hookRules: [HOOK], ...over });

describe('planCleanup', () => {
  it('per table one transaction: hooks deleted by their exact text, chains flushed then deleted; then IP sets; the marker last', () => {
    const plan = planCleanup({ tables: [ours(), ours({ ipVersion: 6 })], ipsets: ['cali40s:a', 'cali60s:a'], unreadable: [] });
    expect(plan.steps.map((s) => `${s.phase} ${s.cmd}`)).toEqual([
      'iptables iptables-nft-restore',
      'iptables ip6tables-nft-restore',
      'ipsets ipset',
      'marker iptables-nft-restore',
      'marker ip6tables-nft-restore',
    ]);
    expect(plan.steps[0]!.stdin).toBe('*filter\n-D FORWARD -m comment --comment "cali:7pTy6zL-g-qtvVY1" -j cali-FORWARD\n:cali-FORWARD - [0:0]\n-X cali-FORWARD\nCOMMIT\n');
    expect(plan.steps[0]!.args).toEqual(['--noflush', '--wait', '10', '--wait-interval', '50000']);
    expect(plan.steps[2]!.stdin).toBe('destroy cali40s:a\ndestroy cali60s:a\n');
    expect(plan.steps[3]!.stdin).toBe('*filter\n:cali-tessera-owner - [0:0]\n-X cali-tessera-owner\nCOMMIT\n');
    expect(plan.steps[0]!.summary).toBe('iptables-nft filter: 1 hook rule(s), 1 chain(s)');
  });

  it('nothing to remove: no steps', () => {
    expect(planCleanup({ tables: [], ipsets: [], unreadable: [] }).steps).toEqual([]);
  });

  it('foreign rules jumping into cali- chains are reported, and deleted only when asked', () => {
    const s: CaliState = { tables: [ours({ table: 'filter', foreignReferences: [REF] })], ipsets: [], unreadable: [] };
    const plain = planCleanup(s);
    expect(plain.foreignReferences).toEqual([REF]);
    expect(plain.steps[0]!.stdin).not.toContain('operator');
    const forced = planCleanup(s, { removeForeignReferences: true });
    expect(forced.steps[0]!.stdin).toContain('-D INPUT -m comment --comment "operator" -j cali-INPUT\n');
  });

  it('one backend of two: IP sets and markers stay while the other still holds cali- state', () => {
    const s: CaliState = { tables: [ours(), ours({ backend: 'legacy' })], ipsets: ['cali40s:a'], unreadable: [] };
    const plan = planCleanup(s, { backends: ['nft'] });
    expect(plan.steps.map((x) => `${x.phase} ${x.cmd}`)).toEqual(['iptables iptables-nft-restore']);
    expect(plan.keptIpSets).toMatch(/^iptables-legacy filter \(not cleaned: --iptables-backend\) still hold cali- state/);
  });

  it('one backend of two, the other holding only its marker: everything goes but that marker', () => {
    const s: CaliState = { tables: [ours(), table({ backend: 'legacy', chains: [OWNER_MARKER_CHAIN] })], ipsets: ['cali40s:a'], unreadable: [] };
    const plan = planCleanup(s, { backends: ['nft'] });
    expect(plan.steps.map((x) => `${x.phase} ${x.cmd}`)).toEqual(['iptables iptables-nft-restore', 'ipsets ipset', 'marker iptables-nft-restore']);
  });

  it('formatPlan prints each command line and its input', () => {
    const text = formatPlan(planCleanup({ tables: [ours()], ipsets: [], unreadable: [] }));
    expect(text).toMatch(/^# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n\*filter\n/);
    expect(text).toContain('# iptables-nft-restore --noflush --wait 10 --wait-interval 50000\n*filter\n:cali-tessera-owner - [0:0]\n-X cali-tessera-owner\nCOMMIT\n');
  });
});

/** FakeKernel plus `ipset list -n` (names only). */
function kernelHandler(kernel: FakeKernel): CommandHandler {
  return (call) => {
    if (call.cmd === 'ipset' && call.args.join(' ') === 'list -n') return { code: 0, stdout: [...kernel.sets.keys()].map((n) => `${n}\n`).join(''), stderr: '' };
    return kernel.handler(call);
  };
}

describe('runCleanup', () => {
  it("removes what a real DataplaneDriver programmed and leaves the kernel as it was, foreign rules and sets included", async () => {
    const kernel = new FakeKernel();
    kernel.chains.get('FORWARD')!.push('-j FOREIGN');
    kernel.chains.set('FOREIGN', ['-j ACCEPT']);
    kernel.sets.set('foreign4', { header: 'hash:ip family inet', members: new Set(['10.0.0.1']) });
    kernel.raw.get('PREROUTING')!.push('-s 10.99.0.0/16 -j NOTRACK');
    const before = { save: kernel.save(), raw: kernel.save('raw'), mangle: kernel.save('mangle'), sets: kernel.ipsetSave() };
    const runner = new RecordingCommandRunner(kernelHandler(kernel));
    const driver = new DataplaneDriver({ runner });
    const stop = new AbortController();
    const running = driver.run(stop.signal);
    const messages: DataplaneMessage[] = [
      { type: 'IPSetUpdate', id: 's:abc', ipsetType: 'hash:net', members: ['10.65.0.2/32'] },
      { type: 'InSync' },
    ];
    driver.send(messages);
    await driver.flushed();
    stop.abort();
    await running;
    // The marker comes with the first chains, in the same (atomic) transaction.
    // Then the raw table (anti-spoofing) and the mangle table, after the marker is in.
    const restores = runner.callsTo('iptables-nft-restore');
    expect(restores.map((r) => r.stdin!.split('\n')[0])).toEqual(['*filter', '*raw', '*mangle']);
    expect(restores[0]!.stdin).toContain(`:${OWNER_MARKER_CHAIN} - [0:0]\n`);
    expect(restores[0]!.stdin).toContain(':cali-FORWARD - [0:0]\n');
    expect(kernel.chains.has(OWNER_MARKER_CHAIN)).toBe(true);
    expect([...kernel.raw.keys()]).toEqual(['PREROUTING', 'OUTPUT', 'cali-OUTPUT', 'cali-PREROUTING', 'cali-failsafe-in', 'cali-failsafe-out', 'cali-from-host-endpoint', 'cali-rpf-skip', 'cali-to-host-endpoint']);
    expect(kernel.sets.size).toBe(2);

    const plan = planCleanup(await readCaliState(runner, { backends: ['nft'], ipVersions: [4] }));
    expect(plan.steps.map((x) => x.summary)).toEqual([
      'iptables-nft filter: 5 hook rule(s), 12 chain(s)',
      'iptables-nft raw: 2 hook rule(s), 7 chain(s)',
      'iptables-nft mangle: 2 hook rule(s), 6 chain(s)',
      '1 IP set(s)',
      'iptables-nft filter: the marker chain cali-tessera-owner',
    ]);
    await runCleanup(runner, plan);
    expect({ save: kernel.save(), raw: kernel.save('raw'), mangle: kernel.save('mangle'), sets: kernel.ipsetSave() }).toEqual(before);
  });

  it('retries IP sets the kernel still holds, re-listing them first, with backoff on the injected clock', async () => {
    const clock = new FakeClock();
    let busy = 2;
    const sets = new Set(['cali40s:a', 'cali40s:b']);
    const runner = new RecordingCommandRunner(({ cmd, args, stdin }) => {
      if (cmd === 'ipset' && args[0] === 'list') return { code: 0, stdout: [...sets].join('\n'), stderr: '' };
      if (cmd === 'ipset' && args[0] === 'restore') {
        const names = (stdin ?? '').split('\n').filter((l) => l !== '').map((l) => l.split(' ')[1]!);
        sets.delete(names[0]!);
        if (busy-- > 0) return { code: 1, stdout: '', stderr: `ipset v7.17: Error in line 2: Set cannot be destroyed: it is in use by a kernel component` };
        for (const n of names) sets.delete(n);
      }
      return undefined;
    });
    const plan = planCleanup({ tables: [], ipsets: [...sets], unreadable: [] });
    const done = runCleanup(runner, plan, { clock, ipsetRetryMs: 100 });
    for (let i = 0; i < 10 && sets.size > 0; i++) await clock.advance(1_000);
    await done;
    expect(sets.size).toBe(0);
    const restores = runner.calls.filter((c) => c.args[0] === 'restore').map((c) => c.stdin);
    expect(restores).toEqual(['destroy cali40s:a\ndestroy cali40s:b\n', 'destroy cali40s:b\n']);
  });

  it('names the failing step', async () => {
    const runner = new RecordingCommandRunner(() => ({ code: 1, stdout: '', stderr: 'iptables-restore: line 3 failed\n' }));
    const plan = planCleanup({ tables: [ours()], ipsets: [], unreadable: [] });
    await expect(runCleanup(runner, plan)).rejects.toThrow(CleanupError);
    await expect(runCleanup(runner, plan)).rejects.toThrow(/^iptables-nft filter: 1 hook rule\(s\), 1 chain\(s\): iptables-nft-restore failed \(exit 1\): iptables-restore: line 3 failed$/);
  });
});
