import { describe, expect, it } from 'vitest';
import { FakeClock } from '../runtime/clock.ts';
import { silentLogger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import type { Chain } from './chain.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneMetrics } from './dataplane-metrics.ts';
import { FakeKernel } from './fake-kernel.ts';
import { IptablesApplyError, IptablesTable } from './iptables-table.ts';
import { RuleRenderer } from './rule-renderer.ts';

function setup(opts: { refreshIntervalMs?: number; maxAttempts?: number; beforeRetry?: () => Promise<void> } = {}) {
  const kernel = new FakeKernel();
  const runner = new RecordingCommandRunner(kernel.handler);
  const clock = new FakeClock();
  const registry = newRegistry();
  const table = new IptablesTable({ ipVersion: 4, runner, clock, logger: silentLogger, metrics: new DataplaneMetrics(registry), postWriteCheckMs: 5_000, ...opts });
  const renderer = new RuleRenderer({ ipVersion: 4 });
  table.setKernelHooks(renderer.kernelHooks());
  table.updateChains(renderer.staticChains());
  table.updateChains(renderer.dispatchChains([]));
  const restores = () => runner.calls.filter((c) => c.cmd === 'iptables-nft-restore');
  return { kernel, runner, clock, table, restores, registry };
}

const chain = (name: string, ...actions: string[]): Chain => ({ name, rules: actions.map((action) => ({ match: '', action })) });

describe('IptablesTable', () => {
  it('creates chains and hooks in one --noflush restore honouring the xtables lock', async () => {
    const { kernel, table, restores } = setup();
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    const r = await table.apply();
    expect(r.wrote).toBe(true);
    expect(restores()).toHaveLength(1);
    expect(restores()[0]!.args).toEqual(['--noflush', '--wait', '10', '--wait-interval', '50000']);
    expect(kernel.chains.get('cali-pi-x')).toEqual([expect.stringMatching(/^-m comment --comment "cali:[A-Za-z0-9_-]{16}" -j DROP$/)]);
    expect(kernel.chains.get('FORWARD')![0]).toMatch(/-j cali-FORWARD$/);
    expect(kernel.chains.get('FORWARD')![1]).toMatch(/-j ACCEPT$/);
  });

  it('writes nothing when nothing changed', async () => {
    const { table, restores } = setup();
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    await table.apply();
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    expect((await table.apply()).wrote).toBe(false);
    expect(restores()).toHaveLength(1);
  });

  it('writes only the changed chain, replacing, appending and deleting by index from the hash diff', async () => {
    const { kernel, table, restores } = setup();
    table.updateChain(chain('cali-pi-a', '-j MARK --set-xmark 0x1/0x1', '-j DROP', '-j RETURN'));
    table.updateChain(chain('cali-pi-b', '-j DROP'));
    await table.apply();
    table.updateChain(chain('cali-pi-a', '-j MARK --set-xmark 0x1/0x1', '-j ACCEPT'));
    await table.apply();
    const input = restores()[1]!.stdin!.split('\n');
    expect(input[0]).toBe('*filter');
    expect(input.slice(1, -2)).toEqual([
      expect.stringMatching(/^-R cali-pi-a 2 -m comment --comment "cali:\S+" -j ACCEPT$/),
      '-D cali-pi-a 3',
    ]);
    expect(input.slice(-2)).toEqual(['COMMIT', '']);
    expect(kernel.chains.get('cali-pi-a')).toHaveLength(2);
    table.updateChain(chain('cali-pi-a', '-j MARK --set-xmark 0x1/0x1', '-j ACCEPT', '-j DROP'));
    await table.apply();
    expect(restores()[2]!.stdin).toMatch(/^\*filter\n-A cali-pi-a -m comment --comment "cali:\S+" -j DROP\nCOMMIT\n$/);
  });

  it('deletes a removed chain with -X last, after the rules that jumped to it are rewritten', async () => {
    const { kernel, table, restores } = setup();
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    table.updateChain(chain('cali-tw-a', '-j cali-pi-x'));
    await table.apply();
    table.removeChain('cali-pi-x');
    table.updateChain(chain('cali-tw-a', '-j DROP'));
    await table.apply();
    const lines = restores()[1]!.stdin!.split('\n');
    expect(lines).toContain(':cali-pi-x - [0:0]');
    expect(lines.indexOf('-X cali-pi-x')).toBe(lines.length - 3);
    expect(kernel.chains.has('cali-pi-x')).toBe(false);
  });

  it('repairs tampering at the refresh interval and leaves foreign rules and chains alone', async () => {
    const { kernel, table, clock, restores } = setup({ refreshIntervalMs: 1_000 });
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    await table.apply();
    // Tamper: flush cali-FORWARD, delete a policy chain, add a foreign rule and chain, drop our hook.
    kernel.chains.set('cali-FORWARD', []);
    kernel.chains.delete('cali-pi-x');
    kernel.chains.get('FORWARD')!.splice(0, 0, '-s 10.9.9.9/32 -j DROP');
    kernel.chains.get('FORWARD')!.splice(1, 1);
    kernel.chains.set('KUBE-FOREIGN', ['-j RETURN']);
    kernel.chains.set('cali-stale', ['-j DROP']);
    expect((await table.apply()).wrote).toBe(false); // not due yet
    await clock.advance(1_000);
    expect((await table.apply()).wrote).toBe(true);
    expect(kernel.chains.get('cali-pi-x')).toHaveLength(1);
    expect(kernel.chains.get('cali-FORWARD')!.length).toBeGreaterThan(0);
    expect(kernel.chains.has('cali-stale')).toBe(false);
    expect(kernel.chains.get('KUBE-FOREIGN')).toEqual(['-j RETURN']);
    const forward = kernel.chains.get('FORWARD')!;
    expect(forward[0]).toMatch(/-j cali-FORWARD$/);
    expect(forward).toContain('-s 10.9.9.9/32 -j DROP');
    expect(restores()[1]!.stdin).not.toContain('KUBE-FOREIGN');
  });

  it('reads back after a write at the post-write check interval', async () => {
    const { table, clock, runner } = setup();
    await table.apply();
    const saves = () => runner.callsTo('iptables-nft-save').length;
    expect(saves()).toBe(1);
    await clock.advance(5_000);
    expect(table.nextCheckAt()).toBe(5_000);
    await table.apply();
    expect(saves()).toBe(2);
    expect(table.nextCheckAt()).toBe(15_000); // doubled
  });

  it('adopts identical rules left by a previous run without rewriting them', async () => {
    const first = setup();
    first.table.updateChain(chain('cali-pi-x', '-j DROP'));
    await first.table.apply();
    const second = setup();
    second.kernel.chains = first.kernel.chains;
    second.table.updateChain(chain('cali-pi-x', '-j DROP'));
    expect((await second.table.apply()).wrote).toBe(false);
  });

  it('retries a failed restore after re-reading, then fails closed with IptablesApplyError', async () => {
    const { kernel, table, clock, runner } = setup({ maxAttempts: 3 });
    kernel.failRestores = 1;
    const first = table.apply();
    await clock.advance(10);
    await first;
    expect(runner.callsTo('iptables-nft-restore')).toHaveLength(2);
    expect(runner.callsTo('iptables-nft-save')).toHaveLength(2);

    kernel.failRestores = 5;
    table.updateChain(chain('cali-pi-y', '-j DROP'));
    const p = table.apply();
    const assertion = expect(p).rejects.toBeInstanceOf(IptablesApplyError);
    await clock.advance(100);
    await assertion;
    expect(kernel.chains.has('cali-pi-y')).toBe(false);
  });

  it('counts restores, saves, errors, chains and rules with Felix metric names', async () => {
    const { table, kernel, registry, clock } = setup();
    kernel.failRestores = 1;
    const p = table.apply();
    await clock.advance(10);
    await p;
    const text = await registry.metrics();
    expect(text).toContain('felix_iptables_restore_calls{ip_version="4",table="filter"} 2');
    expect(text).toContain('felix_iptables_restore_errors{ip_version="4",table="filter"} 1');
    expect(text).toContain('felix_iptables_save_calls{ip_version="4",table="filter"} 2');
    expect(text).toContain('felix_iptables_chains{ip_version="4",table="filter"} 6');
    expect(text).toMatch(/felix_iptables_rules\{ip_version="4",table="filter"\} \d+/);
  });

  it('runs beforeRetry after a failed restore and before the next attempt', async () => {
    const events: string[] = [];
    const { kernel, table, clock, restores } = setup({ beforeRetry: async () => void events.push(`beforeRetry after ${restores().length} restores`) });
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    kernel.failRestores = 1;
    const p = table.apply();
    await clock.advance(10);
    expect((await p).wrote).toBe(true);
    expect(events).toEqual(['beforeRetry after 1 restores']);
    expect(restores()).toHaveLength(2);
  });

  it('readBackIfDue tells tampering apart from its own pending updates', async () => {
    const { kernel, table, clock } = setup({ refreshIntervalMs: 10_000 });
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    expect(await table.readBackIfDue()).toBe(false); // the first read: the starting state
    await table.apply();
    expect(await table.readBackIfDue()).toBe(false); // not due yet
    table.updateChain(chain('cali-pi-x', '-j ACCEPT'));
    await clock.advance(10_000);
    expect(await table.readBackIfDue()).toBe(false); // only our own pending change differs
    await table.apply();
    kernel.chains.set('cali-pi-x', []);
    await clock.advance(10_000);
    expect(await table.readBackIfDue()).toBe(true);
  });

  it('programs an on-demand chain only while an always-on chain jumps to it', async () => {
    const { kernel, table, registry } = setup();
    const gauge = async (name: string) => Number(new RegExp(`${name}\\{[^}]*\\} (\\d+)`).exec(await registry.metrics())![1]);
    await table.apply();
    const chainsBefore = await gauge('felix_iptables_chains');
    table.updateChain(chain('cali-pi-p', '-j DROP'), { onDemand: true });
    table.updateChain(chain('cali-po-p'), { onDemand: true });
    await table.apply();
    expect(kernel.chains.has('cali-pi-p')).toBe(false);
    expect(await gauge('felix_iptables_chains')).toBe(chainsBefore);

    table.updateChain(chain('cali-tw-a', '-j cali-pi-p', '-j DROP'));
    await table.apply();
    expect(kernel.chains.get('cali-pi-p')).toHaveLength(1);
    expect(kernel.chains.has('cali-po-p')).toBe(false);
    expect(await gauge('felix_iptables_chains')).toBe(chainsBefore + 2);

    // A second referrer, then the first goes: still referenced.
    table.updateChain(chain('cali-tw-b', '-j cali-pi-p'));
    table.removeChain('cali-tw-a');
    await table.apply();
    expect(kernel.chains.has('cali-pi-p')).toBe(true);

    table.updateChain(chain('cali-tw-b', '-j DROP'));
    await table.apply();
    expect(kernel.chains.has('cali-pi-p')).toBe(false);
    expect(table.hasChain('cali-pi-p')).toBe(true);
    expect(await gauge('felix_iptables_chains')).toBe(chainsBefore + 1);
  });

  it('deletes an unreferenced on-demand chain a previous run left in the kernel', async () => {
    const first = setup();
    first.table.updateChain(chain('cali-tw-a', '-j cali-pi-p'));
    first.table.updateChain(chain('cali-pi-p', '-j DROP'), { onDemand: true });
    await first.table.apply();
    expect(first.kernel.chains.has('cali-pi-p')).toBe(true);

    const second = setup();
    second.kernel.chains = first.kernel.chains;
    second.table.updateChain(chain('cali-tw-a', '-j DROP'));
    second.table.updateChain(chain('cali-pi-p', '-j DROP'), { onDemand: true });
    await second.table.apply();
    expect(second.kernel.chains.has('cali-pi-p')).toBe(false);
  });

  it('an update undone before the next apply (A → B → A) writes nothing', async () => {
    const { table, restores } = setup();
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    await table.apply();
    table.updateChain(chain('cali-pi-x', '-j ACCEPT'));
    table.updateChain(chain('cali-pi-x', '-j DROP'));
    expect((await table.apply()).wrote).toBe(false);
    expect(restores()).toHaveLength(1);
  });

  it('refuses to own a chain without the cali- prefix', () => {
    const { table } = setup();
    expect(() => table.updateChain(chain('KUBE-X', '-j DROP'))).toThrow(RangeError);
  });
});
