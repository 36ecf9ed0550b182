import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../runtime/clock.ts';
import { silentLogger, type Logger } from '../../runtime/logger.ts';
import { newRegistry } from '../../runtime/metrics.ts';
import { ACCEPT, DROP, setMark } from '../action.ts';
import type { Chain } from '../chain.ts';
import { ANY, type Match } from '../match.ts';
import { MatchBuilder } from '../match-builder.ts';
import { actionFromText } from '../../../test/dataplane/actions.ts';
import { RecordingCommandRunner } from '../command-runner.ts';
import { DataplaneMetrics } from '../dataplane-metrics.ts';
import { FakeKernel } from './fake-kernel.ts';
import { IptablesApplyError, IptablesTable } from './iptables-table.ts';
import { RuleRenderer } from '../rule-renderer.ts';

function setup(opts: { refreshIntervalMs?: number; maxAttempts?: number; beforeRetry?: () => Promise<void>; logger?: Logger } = {}) {
  const kernel = new FakeKernel();
  const runner = new RecordingCommandRunner(kernel.handler);
  const clock = new FakeClock();
  const registry = newRegistry();
  const table = new IptablesTable({ ipVersion: 4, runner, clock, logger: silentLogger, metrics: new DataplaneMetrics(registry), postWriteCheckMs: 5_000, ...opts });
  const metric = async (name: string): Promise<number> => Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'm').exec(await registry.metrics())?.[1] ?? NaN);
  const renderer = new RuleRenderer({ ipVersion: 4 });
  table.setKernelHooks(renderer.kernelHooks());
  table.updateChains(renderer.staticChains());
  table.updateChains(renderer.dispatchChains([]));
  const restores = () => runner.calls.filter((c) => c.cmd === 'iptables-nft-restore');
  return { kernel, runner, clock, table, restores, registry, metric };
}

const chain = (name: string, ...actions: string[]): Chain => ({ name, rules: actions.map((action) => ({ match: ANY, action: actionFromText(action) })) });

/** A pino logger whose JSON lines the test reads back. */
function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A policy chain whose second rule iptables-restore rejects (see `FakeKernel.rejectRules`). */
const REJECTED = /--match-set reject-me /;
/** A valid match that the fake kernel's `rejectRules` then rejects. */
const REJECT_ME: Match = new MatchBuilder().ipSet('src', 'reject-me', false).build();
const badPolicy = (name: string): Chain => ({
  name,
  rules: [
    { match: ANY, action: setMark(0x40000) },
    { match: REJECT_ME, action: setMark(0x10000), comments: ['rule r:bad'] },
  ],
});
const STAND_IN = (rule?: number) => `-m comment --comment "Tessera: iptables-restore rejected ${rule === undefined ? 'this chain' : `rule ${rule} of this chain`}, fail closed" -j DROP`;
const withoutHash = (rules: readonly string[] | undefined) => rules?.map((r) => r.replace(/^-m comment --comment "cali:\S+" /, ''));

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
    // cali-FORWARD/INPUT/OUTPUT, cali-wl-to-host, the 2 failsafe, 4 host and 2 workload dispatch chains.
    expect(text).toContain('felix_iptables_chains{ip_version="4",table="filter"} 12');
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

  describe('a restore iptables-restore rejects', () => {
    it('a staged policy\'s chain stands in empty, never as a DROP: it only counts, and enforces nothing', async () => {
      const { kernel, table } = setup();
      kernel.rejectRules = REJECTED;
      table.updateChain(chain('cali-tw-a', '-j cali-pi-snp/shop/trial', '-j cali-pi-good', '-j DROP'), { owner: { kind: 'WorkloadEndpoint', namespace: 'shop', name: 'a' } });
      table.updateChain(chain('cali-pi-good', '-j ACCEPT'), { onDemand: true });
      table.updateChain(badPolicy('cali-pi-snp/shop/trial'), { onDemand: true, owner: { kind: 'StagedNetworkPolicy', namespace: 'shop', name: 'trial', tier: 'default' } });
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-snp/shop/trial'))).toEqual([]);
      expect(withoutHash(kernel.chains.get('cali-tw-a'))).toEqual(['-j cali-pi-snp/shop/trial', '-j cali-pi-good', '-j DROP']);
      expect(table.rejectedChains()).toEqual([expect.objectContaining({ chain: 'cali-pi-snp/shop/trial', kind: 'rules', attempts: 1 })]);
    });

    it('the same rules sent again are the same version: no new rejection, the backoff goes on', async () => {
      const { kernel, table, clock } = setup();
      kernel.rejectRules = REJECTED;
      table.updateChain(chain('cali-tw-a', '-j cali-pi-bad', '-j DROP'));
      table.updateChain(badPolicy('cali-pi-bad'), { onDemand: true, owner: { kind: 'NetworkPolicy', namespace: 'shop', name: 'bad', tier: 'default' } });
      await table.apply();
      for (let i = 0; i < 3; i++) {
        table.updateChain(badPolicy('cali-pi-bad'), { onDemand: true, owner: { kind: 'NetworkPolicy', namespace: 'shop', name: 'bad', tier: 'default' } });
        await clock.advance(table.rejectedChains()[0]!.retryAt - clock.now());
        await table.apply();
      }
      expect(table.rejectedChains()).toEqual([expect.objectContaining({ chain: 'cali-pi-bad', attempts: 4 })]);
    });

    it('is narrowed to the chain it names: that chain drops (fail closed), everything else is written, and the owner, rule and message are logged once', async () => {
      const log = capturingLogger();
      const { kernel, table, metric, restores } = setup({ logger: log.logger });
      kernel.rejectRules = REJECTED;
      table.updateChain(chain('cali-tw-a', '-j cali-pi-good', '-j cali-pi-bad', '-j DROP'), { owner: { kind: 'WorkloadEndpoint', namespace: 'shop', name: 'a' } });
      table.updateChain(chain('cali-pi-good', '-j ACCEPT'), { onDemand: true });
      table.updateChain(badPolicy('cali-pi-bad'), { onDemand: true, owner: { kind: 'NetworkPolicy', namespace: 'shop', name: 'bad', tier: 'default', ruleOf: (i) => `ingress[${i}]` } });
      const r = await table.apply();
      expect(r.wrote).toBe(true);
      expect(withoutHash(kernel.chains.get('cali-pi-good'))).toEqual(['-j ACCEPT']);
      expect(withoutHash(kernel.chains.get('cali-tw-a'))).toEqual(['-j cali-pi-good', '-j cali-pi-bad', '-j DROP']);
      expect(withoutHash(kernel.chains.get('cali-pi-bad'))).toEqual([STAND_IN(2)]);
      expect(kernel.chains.get('FORWARD')![0]).toMatch(/-j cali-FORWARD$/);
      // Blamed once, re-read, blamed again: rejected; then everything else in one more restore.
      expect(restores()).toHaveLength(3);
      expect(table.rejectedChains()).toEqual([expect.objectContaining({ chain: 'cali-pi-bad', kind: 'rules', rule: 2, attempts: 1, retryAt: 1_000 })]);
      expect(await metric('tessera_dataplane_rejected_chains')).toBe(1);
      expect(await metric('tessera_dataplane_chain_rejections')).toBe(1);
      expect(await metric('felix_iptables_restore_errors')).toBe(2);
      const errors = log.lines().filter((l) => l['level'] === 50);
      expect(errors).toEqual([
        expect.objectContaining({
          chain: 'cali-pi-bad',
          kind: 'NetworkPolicy',
          namespace: 'shop',
          name: 'bad',
          tier: 'default',
          rule: 2,
          ownerRule: 'ingress[1]',
          err: expect.stringContaining('Parser cannot handle more arguments Error occurred at line: '),
        }),
      ]);
      // Nothing more to write: the next apply is quiet.
      expect((await table.apply()).wrote).toBe(false);
      expect(restores()).toHaveLength(3);
    });

    it('does not blame a chain for a stale index: the table is re-read and the write retried', async () => {
      const { kernel, table } = setup();
      table.updateChain(chain('cali-pi-a', '-j MARK --set-xmark 0x1/0x1', '-j DROP', '-j RETURN'));
      await table.apply();
      // Rules deleted behind our back: the next diff's -R 2 names an index that no longer exists.
      kernel.chains.set('cali-pi-a', kernel.chains.get('cali-pi-a')!.slice(0, 1));
      table.updateChain(chain('cali-pi-a', '-j MARK --set-xmark 0x1/0x1', '-j ACCEPT'));
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-a'))).toEqual(['-j MARK --set-xmark 0x1/0x1', '-j ACCEPT']);
      expect(table.rejectedChains()).toEqual([]);
    });

    it('bisects the dirty chains when no line is named (legacy refusing the table at COMMIT), after the quick retries', async () => {
      const { kernel, table, clock, restores } = setup();
      kernel.rejectRules = REJECTED;
      kernel.rejectStyle = 'commit';
      const names = Array.from({ length: 12 }, (_, i) => `cali-pi-${String(i).padStart(2, '0')}`);
      for (const name of names) table.updateChain(name === 'cali-pi-07' ? badPolicy(name) : chain(name, '-j ACCEPT'));
      const p = table.apply();
      await clock.advance(1_000); // Felix's quick retries: 10 attempts from 1 ms
      expect((await p).wrote).toBe(true);
      for (const name of names) expect(withoutHash(kernel.chains.get(name))).toEqual(name === 'cali-pi-07' ? [STAND_IN()] : ['-j ACCEPT']);
      expect(table.rejectedChains().map((r) => r.chain)).toEqual(['cali-pi-07']);
      // 10 attempts, the empty probe, log2(15 suspects) + 1 trials, and the final write.
      expect(kernel.restores[10]).toBe('*filter\nCOMMIT\n');
      expect(restores().length).toBeLessThanOrEqual(10 + 1 + 5 + 1);
    });

    it('retries a rejected chain with exponential backoff on the clock, and programs it once accepted', async () => {
      const log = capturingLogger();
      const { kernel, table, clock, restores, metric } = setup({ logger: log.logger });
      kernel.rejectRules = REJECTED;
      table.updateChain(badPolicy('cali-pi-bad'), { owner: { kind: 'GlobalNetworkPolicy', name: 'bad' } });
      await table.apply();
      const retriesAt: number[] = [];
      let n = restores().length;
      for (let t = 0; t < 16_000; t += 500) {
        await clock.advance(500);
        await table.apply();
        const writes = restores().slice(n).filter((x) => x.stdin!.includes('cali-pi-bad'));
        n = restores().length;
        if (writes.length > 0) retriesAt.push(clock.now());
      }
      expect(retriesAt).toEqual([1_000, 3_000, 7_000, 15_000]);
      expect(table.nextCheckAt()).toBe(31_000);
      expect(log.lines().filter((l) => l['level'] === 50)).toHaveLength(1); // logged once per version
      kernel.rejectRules = undefined;
      await clock.advance(31_000 - clock.now());
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-bad'))).toEqual(['-j MARK --set-xmark 0x40000/0x40000', '-m comment --comment "rule r:bad" -m set --match-set reject-me src -j MARK --set-xmark 0x10000/0x10000']);
      expect(table.rejectedChains()).toEqual([]);
      expect(await metric('tessera_dataplane_rejected_chains')).toBe(0);
      expect(log.lines().at(-1)).toMatchObject({ chain: 'cali-pi-bad', kind: 'GlobalNetworkPolicy', name: 'bad', msg: 'iptables-restore accepted a chain it rejected before' });
    });

    it('tries a new desired version of a rejected chain at once', async () => {
      const log = capturingLogger();
      const { kernel, table } = setup({ logger: log.logger });
      kernel.rejectRules = REJECTED;
      table.updateChain(badPolicy('cali-pi-x'));
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-x'))).toEqual([STAND_IN(2)]);
      // Still rejected: news again (a new version), logged again.
      table.updateChain({ ...badPolicy('cali-pi-x'), rules: [...badPolicy('cali-pi-x').rules, { match: ANY, action: DROP }] });
      await table.apply();
      expect(table.rejectedChains()).toEqual([expect.objectContaining({ attempts: 1 })]);
      expect(log.lines().filter((l) => l['level'] === 50)).toHaveLength(2);
      // A version the kernel takes replaces the stand-in in the same apply.
      table.updateChain(chain('cali-pi-x', '-j ACCEPT'));
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-x'))).toEqual(['-j ACCEPT']);
      expect(table.rejectedChains()).toEqual([]);
    });

    it('forgets a rejection when the chain is no longer wanted, and deletes the stand-in', async () => {
      const { kernel, table, metric } = setup();
      kernel.rejectRules = REJECTED;
      table.updateChain(chain('cali-tw-a', '-j cali-pi-bad'));
      table.updateChain(badPolicy('cali-pi-bad'), { onDemand: true });
      await table.apply();
      expect(await metric('tessera_dataplane_rejected_chains')).toBe(1);
      table.updateChain(chain('cali-tw-a', '-j DROP'));
      await table.apply();
      expect(kernel.chains.has('cali-pi-bad')).toBe(false);
      expect(table.rejectedChains()).toEqual([]);
      expect(await metric('tessera_dataplane_rejected_chains')).toBe(0);
    });

    it('keeps a chain whose deletion is rejected (a foreign rule still jumps to it), writes the rest, and deletes it once it can', async () => {
      const { kernel, table, clock } = setup();
      table.updateChain(chain('cali-pi-x', '-j DROP'));
      await table.apply();
      kernel.chains.get('INPUT')!.push('-s 10.9.9.9/32 -j cali-pi-x');
      table.removeChain('cali-pi-x');
      table.updateChain(chain('cali-pi-y', '-j ACCEPT'));
      await table.apply();
      expect(withoutHash(kernel.chains.get('cali-pi-x'))).toEqual(['-j DROP']);
      expect(withoutHash(kernel.chains.get('cali-pi-y'))).toEqual(['-j ACCEPT']);
      expect(table.rejectedChains()).toEqual([expect.objectContaining({ chain: 'cali-pi-x', kind: 'delete' })]);
      kernel.chains.set('INPUT', kernel.chains.get('INPUT')!.filter((r) => !r.includes('cali-pi-x')));
      await clock.advance(1_000);
      await table.apply();
      expect(kernel.chains.has('cali-pi-x')).toBe(false);
      expect(table.rejectedChains()).toEqual([]);
    });

    it('never replaces a top-level chain with a DROP: a failure blamed on it is an outage, and nothing is written', async () => {
      const { kernel, table } = setup({ maxAttempts: 1 });
      await table.apply();
      const before = kernel.save();
      kernel.rejectRules = REJECTED;
      table.updateChain({ name: 'cali-FORWARD', rules: [{ match: REJECT_ME, action: ACCEPT }] });
      table.updateChain(chain('cali-pi-z', '-j ACCEPT'));
      await expect(table.apply()).rejects.toThrow(/no chain of ours is to blame/);
      expect(kernel.save()).toBe(before);
      expect(table.rejectedChains()).toEqual([]);
      expect(kernel.restores.filter((t) => t.includes('cali-FORWARD -m comment --comment "Tessera'))).toEqual([]);
    });

    it('an outage (every restore fails, an empty one too) rejects apply() with IptablesApplyError after the quick retries, blaming no chain', async () => {
      const { kernel, table, clock, restores, registry } = setup({ maxAttempts: 3 });
      kernel.restoreOutage = true;
      table.updateChain(chain('cali-pi-x', '-j DROP'));
      const p = table.apply();
      const assertion = expect(p).rejects.toThrow(/failed 3 times, an empty transaction too/);
      await clock.advance(10);
      await assertion;
      // The gauges follow the desired state even though nothing could be written.
      expect(await registry.metrics()).toMatch(/felix_iptables_chains\{[^}]*\} [1-9]/);
      expect(restores()).toHaveLength(4);
      expect(table.rejectedChains()).toEqual([]);
      kernel.restoreOutage = false;
      expect((await table.apply()).wrote).toBe(true);
      expect(kernel.chains.has('cali-pi-x')).toBe(true);
    });
  });
});


describe('IptablesTable: the raw table', () => {
  it('programs raw through `*raw` transactions and `iptables-save -t raw`, and reads no counters from it (no tagged rule there)', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const renderer = new RuleRenderer({ ipVersion: 4 });
    const raw = new IptablesTable({ table: 'raw', ipVersion: 4, runner, clock: new FakeClock(), logger: silentLogger, metrics: new DataplaneMetrics(newRegistry()) });
    raw.updateChains(renderer.rawChains());
    raw.setKernelHooks(renderer.rawKernelHooks());
    await raw.apply();
    expect(runner.calls.map((c) => [c.cmd, ...c.args.slice(0, 2)].join(' '))).toEqual(['iptables-nft-save -t raw', 'iptables-nft-restore --noflush --wait']);
    expect(runner.calls[1]!.stdin!.split('\n')[0]).toBe('*raw');
    expect(kernel.raw.get('PREROUTING')).toHaveLength(1);
    expect(kernel.chains.has('cali-PREROUTING')).toBe(false);
    runner.clear();
    expect(await raw.readRuleCounts()).toEqual([]);
    expect(runner.calls).toEqual([]);
  });
});
