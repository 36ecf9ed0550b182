import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../runtime/clock.ts';
import { silentLogger } from '../../runtime/logger.ts';
import { newRegistry } from '../../runtime/metrics.ts';
import { RecordingCommandRunner } from '../command-runner.ts';
import { DataplaneMetrics } from '../dataplane-metrics.ts';
import { FakeKernel } from './fake-kernel.ts';
import { canonicalMember } from './ip-members.ts';
import { IpSets, IpSetsApplyError } from './ipsets.ts';

function setup(opts: { maxElem?: number; refreshIntervalMs?: number } = {}) {
  const kernel = new FakeKernel();
  const runner = new RecordingCommandRunner(kernel.handler);
  const clock = new FakeClock();
  const registry = newRegistry();
  const sets = new IpSets({ ipVersion: 4, runner, clock, logger: silentLogger, metrics: new DataplaneMetrics(registry), maxAttempts: 3, ...opts });
  const restores = () => runner.calls.filter((c) => c.cmd === 'ipset' && c.args[0] === 'restore').map((c) => c.stdin);
  return { kernel, runner, clock, sets, restores, registry };
}

describe('IpSets', () => {
  it('creates a set and adds its members in one ipset restore ending with COMMIT', async () => {
    const { kernel, sets, restores } = setup();
    sets.replaceMembers('s:abc', 'hash:net', ['10.65.0.1/32', '10.65.1.0/24', 'fd00::1/128']);
    await sets.applyUpdates();
    expect(restores()).toEqual([
      'create cali40s:abc hash:net family inet maxelem 1048576\nadd cali40s:abc 10.65.0.1 --exist\nadd cali40s:abc 10.65.1.0/24 --exist\nCOMMIT\n',
    ]);
    expect([...kernel.sets.get('cali40s:abc')!.members]).toEqual(['10.65.0.1', '10.65.1.0/24']);
  });

  it('writes member deltas into the live set, never flushing it', async () => {
    const { sets, restores } = setup();
    sets.replaceMembers('s:abc', 'hash:net', ['10.65.0.1', '10.65.0.2']);
    await sets.applyUpdates();
    sets.addMembers('s:abc', ['10.65.0.3/32']);
    sets.removeMembers('s:abc', ['10.65.0.1/32']);
    await sets.applyUpdates();
    expect(restores()[1]).toBe('del cali40s:abc 10.65.0.1 --exist\nadd cali40s:abc 10.65.0.3 --exist\nCOMMIT\n');
    sets.replaceMembers('s:abc', 'hash:net', ['10.65.0.3', '10.65.0.4']);
    await sets.applyUpdates();
    expect(restores()[2]).toBe('del cali40s:abc 10.65.0.2 --exist\nadd cali40s:abc 10.65.0.4 --exist\nCOMMIT\n');
  });

  it('cancels an add and a remove of the same member within one batch', async () => {
    const { sets, restores } = setup();
    sets.replaceMembers('s:abc', 'hash:net', ['10.65.0.1']);
    await sets.applyUpdates();
    sets.addMembers('s:abc', ['10.65.0.9']);
    sets.removeMembers('s:abc', ['10.65.0.9']);
    expect(sets.isDirty).toBe(false);
    expect((await sets.applyUpdates()).wrote).toBe(false);
    expect(restores()).toHaveLength(1);
  });

  it('swaps through a temp set only when the metadata (maxelem) differs', async () => {
    const { kernel, sets, restores } = setup({ maxElem: 2048 });
    kernel.sets.set('cali40s:abc', { header: 'hash:net family inet maxelem 65536', members: new Set(['10.65.0.1']) });
    sets.replaceMembers('s:abc', 'hash:net', ['10.65.0.1', '10.65.0.2']);
    await sets.applyUpdates();
    expect(restores()[0]).toBe(
      'create cali4t0 hash:net family inet maxelem 2048\nadd cali4t0 10.65.0.1 --exist\nadd cali4t0 10.65.0.2 --exist\nswap cali4t0 cali40s:abc\ndestroy cali4t0\nCOMMIT\n',
    );
    expect(kernel.sets.get('cali40s:abc')!.header).toContain('maxelem 2048');
  });

  it('defers deletions to applyDeletions, one set per call, and never touches foreign sets', async () => {
    const { kernel, sets } = setup();
    kernel.sets.set('KUBE-FOREIGN', { header: 'hash:ip family inet maxelem 65536', members: new Set(['1.2.3.4']) });
    kernel.sets.set('cali40s:stale', { header: 'hash:net family inet maxelem 1048576', members: new Set() });
    sets.replaceMembers('s:a', 'hash:net', []);
    sets.replaceMembers('s:b', 'hash:net', []);
    await sets.applyUpdates();
    sets.removeSet('s:a');
    await sets.applyUpdates();
    expect(kernel.sets.has('cali40s:a')).toBe(true);
    expect(await sets.applyDeletions()).toBe(true);
    expect(await sets.applyDeletions()).toBe(false);
    expect(kernel.sets.has('cali40s:a')).toBe(false);
    expect(kernel.sets.has('cali40s:stale')).toBe(false);
    expect(kernel.sets.has('cali40s:b')).toBe(true);
    expect(kernel.sets.has('KUBE-FOREIGN')).toBe(true);
  });

  it('backs off 10 s after a failed destroy (a foreign rule still uses the set) instead of retrying every apply', async () => {
    const { kernel, sets, clock, runner } = setup();
    sets.replaceMembers('s:a', 'hash:net', []);
    await sets.applyUpdates();
    sets.removeSet('s:a');
    kernel.chains.set('FOREIGN', ['-m set --match-set cali40s:a src -j DROP']);
    expect(await sets.applyDeletions()).toBe(false);
    expect(sets.hasPendingDeletions).toBe(false);
    const destroys = () => runner.calls.filter((c) => c.stdin?.startsWith('destroy')).length;
    expect(destroys()).toBe(1);
    expect(sets.nextCheckAt()).toBe(10_000);
    kernel.chains.delete('FOREIGN');
    await clock.advance(10_000);
    await sets.applyUpdates();
    expect(await sets.applyDeletions()).toBe(false);
    expect(destroys()).toBe(2);
    expect(kernel.sets.has('cali40s:a')).toBe(false);
  });

  it('repairs a destroyed or changed set at the next resync', async () => {
    const { kernel, sets, clock } = setup({ refreshIntervalMs: 1_000 });
    sets.replaceMembers('s:a', 'hash:net', ['10.65.0.1']);
    sets.replaceMembers('s:b', 'hash:net', ['10.65.0.2']);
    await sets.applyUpdates();
    kernel.sets.delete('cali40s:a');
    kernel.sets.get('cali40s:b')!.members.add('10.9.9.9');
    await clock.advance(1_000);
    await sets.applyUpdates();
    expect([...kernel.sets.get('cali40s:a')!.members]).toEqual(['10.65.0.1']);
    expect([...kernel.sets.get('cali40s:b')!.members]).toEqual(['10.65.0.2']);
  });

  it('resyncs and retries after a failed restore, then rejects with IpSetsApplyError', async () => {
    const { kernel, sets, clock, registry } = setup();
    sets.replaceMembers('s:a', 'hash:net', ['10.65.0.1']);
    await sets.applyUpdates();
    // Destroyed behind our back between reads: the delta write fails, a resync heals it.
    kernel.sets.delete('cali40s:a');
    sets.addMembers('s:a', ['10.65.0.2']);
    const p = sets.applyUpdates();
    await clock.advance(10);
    await p;
    expect([...kernel.sets.get('cali40s:a')!.members].sort()).toEqual(['10.65.0.1', '10.65.0.2']);
    expect(await registry.metrics()).toMatch(/felix_ipset_calls \d+/);

    const bad = setup();
    bad.runner.handler = (c) => (c.args[0] === 'restore' ? { code: 1, stdout: '', stderr: 'boom' } : bad.kernel.handler(c));
    bad.sets.replaceMembers('s:a', 'hash:net', ['10.65.0.1']);
    const q = bad.sets.applyUpdates();
    const assertion = expect(q).rejects.toBeInstanceOf(IpSetsApplyError);
    await bad.clock.advance(100);
    await assertion;
    expect(await bad.registry.metrics()).toContain('felix_ipset_errors 3');
  });

  it('after an outage (every restore failing, some lines applied before the failure) the next call resyncs and writes exactly the difference', async () => {
    const { kernel, sets, clock, runner, restores } = setup();
    sets.replaceMembers('s:a', 'hash:net', ['10.65.0.1']);
    await sets.applyUpdates();
    // ipset restore is not atomic: the outage lets the first line through, then fails.
    runner.handler = (c) => {
      if (c.args[0] !== 'restore') return kernel.handler(c);
      kernel.handler({ ...c, stdin: c.stdin!.split('\n')[0]! + '\nCOMMIT\n' });
      return { code: 1, stdout: '', stderr: 'ipset v7.17: Kernel error received: Operation not permitted' };
    };
    sets.addMembers('s:a', ['10.65.0.2', '10.65.0.3']);
    sets.replaceMembers('s:b', 'hash:net', ['10.65.1.1']);
    const p = sets.applyUpdates();
    const assertion = expect(p).rejects.toBeInstanceOf(IpSetsApplyError);
    await clock.advance(100);
    await assertion;
    expect(sets.members('s:a')).toEqual(new Set(['10.65.0.1', '10.65.0.2', '10.65.0.3'])); // desired state intact
    runner.handler = kernel.handler;
    const before = restores().length;
    await sets.applyUpdates();
    expect([...kernel.sets.get('cali40s:a')!.members].sort()).toEqual(['10.65.0.1', '10.65.0.2', '10.65.0.3']);
    expect([...kernel.sets.get('cali40s:b')!.members]).toEqual(['10.65.1.1']);
    // One restore, of what the kernel still lacks: the create that got through is not repeated.
    expect(restores().slice(before)).toEqual([expect.not.stringContaining('create cali40s:b')]);
  });

  it('rejects members that could inject ipset commands', async () => {
    const { sets, restores } = setup();
    sets.replaceMembers('s:a', 'hash:net', ['10.65.0.1\ndestroy KUBE', '10.65.0.2']);
    await sets.applyUpdates();
    expect(restores()[0]).not.toContain('KUBE');
  });

  it('splits dual-stack named-port members by family without warning about the other family', async () => {
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const family = (ipVersion: 4 | 6) => new IpSets({ ipVersion, runner, clock: new FakeClock(), logger, metrics: new DataplaneMetrics(newRegistry()) });
    const [v4, v6] = [family(4), family(6)];
    const members = ['10.65.0.3,udp:5353', 'fd00:65::3,udp:5353', '::ffff:10.65.0.4,tcp:80'];
    for (const f of [v4, v6]) {
      f.replaceMembers('n:dns', 'hash:ip,port', members);
      await f.applyUpdates();
    }
    // An IPv4-mapped address is IPv4, as Go (and Felix's ip.FromString) reads it: api/cidr.ts.
    expect([...kernel.sets.get('cali40n:dns')!.members]).toEqual(['10.65.0.3,udp:5353', '10.65.0.4,tcp:80']);
    expect([...kernel.sets.get('cali60n:dns')!.members]).toEqual(['fd00:65::3,udp:5353']);
    expect(kernel.sets.get('cali60n:dns')!.header).toContain('family inet6');
    expect(warnings).toEqual([]);
  });
});

describe('canonicalMember', () => {
  it('spells members as `ipset list` prints them', () => {
    expect(canonicalMember('10.0.0.1/32', 'hash:net', 4)).toBe('10.0.0.1');
    expect(canonicalMember('10.0.0.7/24', 'hash:net', 4)).toBe('10.0.0.0/24');
    expect(canonicalMember('fd00:0:0::1/128', 'hash:net', 6)).toBe('fd00::1');
    expect(canonicalMember('fd00::1:2/64', 'hash:net', 6)).toBe('fd00::/64');
    expect(canonicalMember('10.0.0.1,TCP:0080', 'hash:ip,port', 4)).toBe('10.0.0.1,tcp:80');
    expect(canonicalMember('10.0.0.1,tcp:99999', 'hash:ip,port', 4)).toBeUndefined();
    expect(canonicalMember('10.0.0.1/33', 'hash:net', 4)).toBeUndefined();
  });
});
