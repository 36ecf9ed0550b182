import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataplaneMessage } from '../proto/index.ts';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneDriver, type DataplaneDriverOptions } from './dataplane-driver.ts';
import { FakeKernel } from './iptables/fake-kernel.ts';
import { allowAllProfile, endpoint, npId, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';

const web = npId('shop', 'web');
const state: DataplaneMessage[] = [
  { type: 'IPSetUpdate', id: 's:clients', ipsetType: 'hash:net', members: ['10.65.1.2/32'] },
  { type: 'ActivePolicyUpdate', id: web, policy: policy([rule({ protocol: 'tcp', srcIpSetIds: ['s:clients'], dstPorts: [port(80)] })]) },
  allowAllProfile('kns.shop'),
  {
    type: 'WorkloadEndpointUpdate',
    id: { namespace: 'shop', name: 'web-0' },
    endpoint: endpoint({ interfaceName: 'cali0a', ipv4Nets: ['10.65.1.3/32'], profileIds: ['kns.shop'], tiers: [tier('default', [web])] }),
  },
];

/** A pino logger whose JSON lines the test reads back. */
function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** The value of an unlabelled metric, or of the first series of a labelled one. */
async function metric(registry: Registry, name: string): Promise<number> {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm').exec(await registry.metrics())?.[1] ?? NaN);
}

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

function start(kernel = new FakeKernel(), clock = new FakeClock(), opts: Partial<DataplaneDriverOptions> = {}) {
  const runner = new RecordingCommandRunner(kernel.handler);
  const registry = newRegistry();
  const driver = new DataplaneDriver({ runner, clock, registry, ...opts });
  const stop = new AbortController();
  stops.push(stop);
  const running = driver.run(stop.signal);
  return { kernel, runner, clock, driver, running, stop, registry };
}

describe('DataplaneDriver', () => {
  it('writes nothing before InSync, then programs everything in one apply', async () => {
    const { runner, driver, kernel } = start();
    driver.send(state);
    await flushMicrotasks();
    expect(runner.calls).toEqual([]);
    driver.send({ type: 'InSync' });
    await driver.flushed();
    // The reads start first (they overlap with rendering), then the writes in order: the IP
    // sets, the filter table, the raw table (anti-spoofing, untracked host policy), the mangle
    // table (preDNAT host policy). No HostEndpoint: no interface listing.
    expect(runner.calls.map((c) => [c.cmd, ...c.args.slice(0, 2)].join(' '))).toEqual([
      'iptables-nft-save -t filter',
      'iptables-nft-save -t raw',
      'iptables-nft-save -t mangle',
      'ipset list -o',
      'ipset restore',
      'iptables-nft-restore --noflush --wait',
      'iptables-nft-restore --noflush --wait',
      'iptables-nft-restore --noflush --wait',
    ]);
    expect(runner.callsTo('iptables-nft-restore').map((c) => c.stdin!.split('\n')[0])).toEqual(['*filter', '*raw', '*mangle']);
    expect(kernel.raw.get('PREROUTING')).toEqual([expect.stringMatching(/^-m comment --comment "cali:\S+" -j cali-PREROUTING$/)]);
    expect(kernel.raw.get('cali-PREROUTING')!.some((r) => r.endsWith('-m mark --mark 0x40000/0x40000 -m rpfilter --invert --validmark -j DROP'))).toBe(true);
    expect(kernel.chains.get('cali-tw-cali0a')!.some((r) => r.includes('-j cali-pi-np/shop/web'))).toBe(true);
    expect(kernel.chains.get('cali-to-wl-dispatch')![0]).toContain('-o cali0a');
    expect(kernel.sets.get('cali40s:clients')!.members.has('10.65.1.2')).toBe(true);
  });

  it('creates and removes child dispatch chains as interfaces come and go', async () => {
    const { driver, kernel } = start();
    const ep = (name: string, iface: string): DataplaneMessage => ({
      type: 'WorkloadEndpointUpdate',
      id: { namespace: 'shop', name },
      endpoint: endpoint({ interfaceName: iface, ipv4Nets: ['10.65.1.3/32'], profileIds: ['kns.shop'] }),
    });
    driver.send([allowAllProfile('kns.shop'), ep('a', 'cali1a'), ep('b', 'cali1b'), ep('c', 'cali2c'), { type: 'InSync' }]);
    await driver.flushed();
    expect(kernel.chains.get('cali-from-wl-dispatch-1')).toHaveLength(3);
    expect(kernel.chains.get('cali-from-wl-dispatch')![0]).toMatch(/-i cali1\+ -g cali-from-wl-dispatch-1$/);
    driver.send({ type: 'WorkloadEndpointRemove', id: { namespace: 'shop', name: 'b' } });
    await driver.flushed();
    expect(kernel.chains.has('cali-from-wl-dispatch-1')).toBe(false);
    expect(kernel.chains.has('cali-to-wl-dispatch-1')).toBe(false);
    expect(kernel.chains.get('cali-from-wl-dispatch')![0]).toMatch(/-i cali1a -g cali-fw-cali1a$/);
  });

  it('applies IP set updates before iptables and IP set deletions after it', async () => {
    const { runner, driver, kernel } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    runner.clear();
    driver.send([
      { type: 'IPSetUpdate', id: 's:new', ipsetType: 'hash:net', members: ['10.65.1.9/32'] },
      { type: 'ActivePolicyUpdate', id: web, policy: policy([rule({ protocol: 'tcp', srcIpSetIds: ['s:new'] })]) },
      { type: 'IPSetRemove', id: 's:clients' },
    ]);
    await driver.flushed();
    const order = runner.calls.map((c) => (c.cmd === 'ipset' ? `ipset ${c.stdin?.split(' ')[0]}` : c.cmd));
    expect(order).toEqual(['ipset create', 'iptables-nft-restore', 'ipset destroy']);
    expect(kernel.sets.has('cali40s:clients')).toBe(false);
  });

  it('batches every queued message into one apply', async () => {
    const { runner, driver } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    runner.clear();
    for (let i = 0; i < 5; i++) driver.send({ type: 'IPSetDeltaUpdate', id: 's:clients', added: [`10.65.2.${i}`], removed: [] });
    await driver.flushed();
    expect(runner.callsTo('ipset')).toHaveLength(1);
    expect(runner.callsTo('ipset')[0]!.stdin!.split('\n').filter((l) => l.startsWith('add'))).toHaveLength(5);
  });

  it('throttles applies with a leaky bucket of 10 tokens refilled every 100 ms', async () => {
    const { runner, driver, clock } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    for (let i = 0; i < 9; i++) {
      driver.send({ type: 'IPSetDeltaUpdate', id: 's:clients', added: [`10.65.3.${i}`], removed: [] });
      await driver.flushed();
    }
    const before = runner.callsTo('ipset').length;
    driver.send({ type: 'IPSetDeltaUpdate', id: 's:clients', added: ['10.65.4.1'], removed: [] });
    const done = driver.flushed();
    await flushMicrotasks();
    expect(runner.callsTo('ipset')).toHaveLength(before);
    await clock.advance(100);
    await done;
    expect(runner.callsTo('ipset')).toHaveLength(before + 1);
  });

  it('resolves an empty interfaceName from the route to the endpoint IP', async () => {
    const kernel = new FakeKernel();
    kernel.routes.set('10.65.1.7/32', 'calirouted');
    const { driver } = start(kernel);
    driver.send([
      allowAllProfile('kns.shop'),
      { type: 'WorkloadEndpointUpdate', id: { namespace: 'shop', name: 'r' }, endpoint: endpoint({ ipv4Nets: ['10.65.1.7/32'], profileIds: ['kns.shop'] }) },
      { type: 'InSync' },
    ]);
    await driver.flushed();
    expect(kernel.chains.has('cali-tw-calirouted')).toBe(true);
  });

  it('on restart adopts the previous rules: nothing is rewritten when the state is unchanged', async () => {
    const first = start();
    first.driver.send([...state, { type: 'InSync' }]);
    await first.driver.flushed();
    first.stop.abort();
    await first.running;
    const before = first.kernel.save();

    const second = start(first.kernel);
    second.driver.send(state);
    await flushMicrotasks();
    expect(second.runner.calls).toEqual([]);
    second.driver.send({ type: 'InSync' });
    await second.driver.flushed();
    expect(second.runner.callsTo('iptables-nft-restore')).toEqual([]);
    expect(second.runner.calls.filter((c) => c.args[0] === 'restore')).toEqual([]);
    expect(first.kernel.save()).toBe(before);
  });

  it('a read-back that finds iptables tampered with re-reads the IP sets first, so a destroyed set is back before rules name it', async () => {
    const { driver, kernel, clock, runner } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    const policyChain = 'cali-pi-np/shop/web';
    kernel.chains.set(policyChain, []);
    kernel.sets.delete('cali40s:clients');
    runner.clear();
    // The post-write check (5 s) is due long before the IP sets' own refresh (90 s).
    await clock.advance(5_000);
    for (let i = 0; i < 5; i++) await flushMicrotasks();
    // Every table is read back; only the filter table, tampered with, is rewritten.
    expect(runner.calls.map((c) => [c.cmd, ...c.args.slice(0, 2)].join(' '))).toEqual([
      'iptables-nft-save -t filter',
      'iptables-nft-save -t raw',
      'iptables-nft-save -t mangle',
      'ipset list -o',
      'ipset restore',
      'iptables-nft-restore --noflush --wait',
    ]);
    expect(runner.callsTo('iptables-nft-restore')[0]!.stdin!.split('\n')[0]).toBe('*filter');
    expect(kernel.sets.get('cali40s:clients')!.members.has('10.65.1.2')).toBe(true);
    expect(kernel.chains.get(policyChain)!.length).toBeGreaterThan(0);
    expect(await driver.metrics.restoreErrors.get()).toMatchObject({ values: [] });
  });

  it('the raw table is read back and repaired like the filter table: a flushed cali-PREROUTING and a deleted hook come back, foreign raw rules stay', async () => {
    const { driver, kernel, clock, runner } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    const programmed = { hook: [...kernel.raw.get('PREROUTING')!], chain: [...kernel.raw.get('cali-PREROUTING')!] };
    kernel.raw.set('cali-PREROUTING', []);
    kernel.raw.set('PREROUTING', ['-s 10.99.0.0/16 -j NOTRACK']);
    runner.clear();
    await clock.advance(5_000);
    for (let i = 0; i < 5; i++) await flushMicrotasks();
    const restores = runner.callsTo('iptables-nft-restore');
    expect(restores.map((c) => c.stdin!.split('\n')[0])).toEqual(['*raw']);
    expect(kernel.raw.get('cali-PREROUTING')).toEqual(programmed.chain);
    expect(kernel.raw.get('PREROUTING')).toEqual([...programmed.hook, '-s 10.99.0.0/16 -j NOTRACK']);
  });

  it("a kernel refusing the anti-spoofing rule (no rpfilter match) holds back no family's policy: both filter tables are written, the apply fails and is reported", async () => {
    const kernel = new FakeKernel();
    kernel.rejectRules = /-m rpfilter/;
    const { driver, runner } = start(kernel, new FakeClock(), { ipVersions: [4, 6], maxAttempts: 1 });
    driver.send([...state, { type: 'InSync' }]);
    for (let i = 0; i < 20 && driver.health().consecutiveFailures === 0; i++) await flushMicrotasks();
    expect(driver.health()).toMatchObject({ consecutiveFailures: 1, lastError: expect.stringContaining('(table raw)') });
    // Every family's filter table went in before any raw table was tried.
    const tables = runner.calls.filter((c) => c.cmd.endsWith('-restore') && c.cmd !== 'ipset').map((c) => `${c.cmd} ${c.stdin!.split('\n')[0]}`);
    expect(tables.slice(0, 2)).toEqual(['iptables-nft-restore *filter', 'ip6tables-nft-restore *filter']);
    expect(kernel.chains.get('cali-tw-cali0a')!.some((r) => r.includes('-j cali-pi-np/shop/web'))).toBe(true);
    expect(kernel.raw.has('cali-PREROUTING')).toBe(false);
  });

  it('an outage never stops run(): applies are retried with capped exponential backoff on the clock, and the first that works writes everything sent meanwhile', async () => {
    const log = capturingLogger();
    const { driver, kernel, clock, runner, registry } = start(new FakeKernel(), new FakeClock(), { logger: log.logger });
    kernel.restoreOutage = true;
    driver.send([...state, { type: 'InSync' }]);
    let flushed = false;
    void driver.flushed().then(() => (flushed = true));
    // Each failed apply: Felix's 10 quick attempts (511 ms of sleeps) and an empty probe, then
    // the driver's backoff: 1 s doubling, capped at 30 s. The 7th failure is at 64.6 s, the 8th
    // attempt at 94.6 s.
    await clock.advance(90_000);
    const failures = log.lines().filter((l) => String(l['msg']).startsWith('dataplane apply failed'));
    expect(failures.map((l) => l['retryInMs'])).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(failures[0]).toMatchObject({ level: 50, failures: 1, err: expect.stringContaining('an empty transaction too') });
    expect(flushed).toBe(false);
    const health = driver.health();
    expect(health).toMatchObject({ consecutiveFailures: 7, lastSuccessAt: undefined, busySince: undefined, lastError: expect.stringContaining('iptables-nft-restore') });
    expect(health.retryAt).toBeGreaterThan(clock.now());
    expect(await metric(registry, 'felix_int_dataplane_failures')).toBe(7);
    expect(await metric(registry, 'tessera_dataplane_consecutive_apply_failures')).toBe(7);

    // A Deny arrives during the outage; nothing is attempted before the backoff is over.
    driver.send({ type: 'ActivePolicyUpdate', id: web, policy: policy([rule({ action: 'deny', protocol: 'tcp', dstPorts: [port(80)] })]) });
    const attempts = runner.callsTo('iptables-nft-restore').length;
    await clock.advance(health.retryAt! - clock.now() - 1);
    expect(runner.callsTo('iptables-nft-restore')).toHaveLength(attempts);
    kernel.restoreOutage = false;
    await clock.advance(1);
    await driver.flushed();
    expect(flushed).toBe(true);
    expect(kernel.chains.get('cali-pi-np/shop/web')!.some((r) => r.includes('--destination-ports 80 -j DROP'))).toBe(true);
    expect(driver.health()).toMatchObject({ consecutiveFailures: 0, lastSuccessAt: clock.now(), retryAt: undefined, lastError: undefined });
    expect(await metric(registry, 'tessera_dataplane_consecutive_apply_failures')).toBe(0);
    expect(log.lines().at(-1)).toMatchObject({ msg: 'dataplane apply succeeded again: the kernel holds the desired state', failures: 7 });
  });

  it('an ipset restore outage is retried the same way, and the sets and rules are written when it ends', async () => {
    const { driver, kernel, clock } = start();
    kernel.ipsetOutage = true;
    driver.send([...state, { type: 'InSync' }]);
    await clock.advance(5_000);
    expect(driver.health().consecutiveFailures).toBeGreaterThanOrEqual(2);
    expect(driver.health().lastError).toMatch(/ipset restore failed/);
    expect(kernel.chains.has('cali-FORWARD')).toBe(false); // nothing names a set before it exists
    kernel.ipsetOutage = false;
    const done = driver.flushed();
    await clock.advance(30_000);
    await done;
    expect(kernel.sets.get('cali40s:clients')!.members.has('10.65.1.2')).toBe(true);
    expect(kernel.chains.has('cali-tw-cali0a')).toBe(true);
  });

  it('a policy the kernel rejects: the apply succeeds, endpoints using it drop at that policy, everything else is programmed', async () => {
    const { driver, kernel, registry } = start();
    kernel.rejectRules = /-p sctp/;
    const bad = npId('shop', 'bad');
    driver.send([
      ...state,
      { type: 'ActivePolicyUpdate', id: bad, policy: policy([rule({ protocol: 'sctp', dstPorts: [port(80)] })]) },
      {
        type: 'WorkloadEndpointUpdate',
        id: { namespace: 'shop', name: 'db-0' },
        endpoint: endpoint({ interfaceName: 'cali0b', ipv4Nets: ['10.65.1.4/32'], profileIds: ['kns.shop'], tiers: [tier('default', [bad])] }),
      },
      { type: 'InSync' },
    ]);
    await driver.flushed();
    expect(kernel.chains.get('cali-pi-np/shop/bad')).toEqual([expect.stringMatching(/"Tessera: iptables-restore rejected rule 1 of this chain, fail closed" -j DROP$/)]);
    expect(kernel.chains.get('cali-tw-cali0b')!.some((r) => r.includes('-j cali-pi-np/shop/bad'))).toBe(true);
    expect(kernel.chains.get('cali-pi-np/shop/web')!.some((r) => r.includes('--match-set cali40s:clients src'))).toBe(true);
    expect(kernel.chains.get('cali-to-wl-dispatch')!.some((r) => r.includes('-o cali0a'))).toBe(true);
    expect(driver.health()).toMatchObject({ consecutiveFailures: 0, rejectedChains: 1 });
    expect(await metric(registry, 'tessera_dataplane_rejected_chains')).toBe(1);
    expect(driver.tables[0]!.rejectedChains()).toEqual([expect.objectContaining({ chain: 'cali-pi-np/shop/bad', rule: 1 })]);
  });

  it('health().busySince is the clock time the apply in progress started, undefined while idle', async () => {
    const kernel = new FakeKernel();
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const runner = new RecordingCommandRunner(async (call) => {
      if (call.cmd === 'iptables-nft-restore') await gate;
      return kernel.handler(call);
    });
    const clock = new FakeClock(1_000);
    const driver = new DataplaneDriver({ runner, clock });
    const stop = new AbortController();
    stops.push(stop);
    void driver.run(stop.signal);
    expect(driver.health().busySince).toBeUndefined();
    driver.send([...state, { type: 'InSync' }]);
    await flushMicrotasks();
    expect(driver.health().busySince).toBe(1_000);
    await clock.advance(60_000);
    expect(driver.health().busySince).toBe(1_000);
    release();
    await driver.flushed();
    expect(driver.health()).toMatchObject({ busySince: undefined, lastSuccessAt: 61_000 });
  });

  it('an unexpected error (a bug, not a kernel answer) still rejects run() and flushed()', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner((call) => {
      if (call.cmd === 'ip') throw new TypeError('boom');
      return kernel.handler(call);
    });
    const driver = new DataplaneDriver({ runner, clock: new FakeClock() });
    const running = driver.run(new AbortController().signal);
    driver.send([{ type: 'WorkloadEndpointUpdate', id: { namespace: 'shop', name: 'r' }, endpoint: endpoint({ ipv4Nets: ['10.65.1.7/32'] }) }, { type: 'InSync' }]);
    await expect(driver.flushed()).rejects.toThrow('boom');
    await expect(running).rejects.toThrow(TypeError);
  });

  it('programs both IP families when asked, splitting set members by family', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const driver = new DataplaneDriver({ runner, clock: new FakeClock(), ipVersions: [4, 6] });
    const stop = new AbortController();
    stops.push(stop);
    void driver.run(stop.signal);
    driver.send([{ type: 'IPSetUpdate', id: 's:dual', ipsetType: 'hash:net', members: ['10.65.0.1/32', 'fd00::1/128'] }, ...state.slice(1), { type: 'InSync' }]);
    await driver.flushed();
    // Per family: the filter table, then the raw table, then the mangle table.
    for (const cmd of ['iptables-nft-restore', 'ip6tables-nft-restore']) expect(runner.callsTo(cmd).map((c) => c.stdin!.split('\n')[0])).toEqual(['*filter', '*raw', '*mangle']);
    expect([...kernel.sets.get('cali40s:dual')!.members]).toEqual(['10.65.0.1']);
    expect([...kernel.sets.get('cali60s:dual')!.members]).toEqual(['fd00::1']);
  });

  it('records the apply time histogram', async () => {
    const { driver } = start();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    expect((await driver.metrics.applyTime.get()).values.find((v) => v.metricName === 'felix_int_dataplane_apply_time_seconds_count')?.value).toBe(1);
    expect(driver.lastApply!.chainsWritten).toBeGreaterThan(5);
  });
});
