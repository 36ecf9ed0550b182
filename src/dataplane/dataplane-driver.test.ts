import { afterEach, describe, expect, it } from 'vitest';
import type { DataplaneMessage } from '../proto/index.ts';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneDriver } from './dataplane-driver.ts';
import { FakeKernel } from './fake-kernel.ts';
import { allowAllProfile, endpoint, npId, policy, port, rule, tier } from './test-fixtures.ts';

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

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

function start(kernel = new FakeKernel(), clock = new FakeClock()) {
  const runner = new RecordingCommandRunner(kernel.handler);
  const driver = new DataplaneDriver({ runner, clock });
  const stop = new AbortController();
  stops.push(stop);
  const running = driver.run(stop.signal);
  return { kernel, runner, clock, driver, running, stop };
}

describe('DataplaneDriver', () => {
  it('writes nothing before InSync, then programs everything in one apply', async () => {
    const { runner, driver, kernel } = start();
    driver.send(state);
    await flushMicrotasks();
    expect(runner.calls).toEqual([]);
    driver.send({ type: 'InSync' });
    await driver.flushed();
    // Both reads start first (they overlap with rendering), then the writes in order.
    expect(runner.calls.map((c) => `${c.cmd} ${c.args[0]}`)).toEqual(['iptables-nft-save -t', 'ipset list', 'ipset restore', 'iptables-nft-restore --noflush']);
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
    expect(runner.calls.map((c) => `${c.cmd} ${c.args[0]}`)).toEqual(['iptables-nft-save -t', 'ipset list', 'ipset restore', 'iptables-nft-restore --noflush']);
    expect(kernel.sets.get('cali40s:clients')!.members.has('10.65.1.2')).toBe(true);
    expect(kernel.chains.get(policyChain)!.length).toBeGreaterThan(0);
    expect(await driver.metrics.restoreErrors.get()).toMatchObject({ values: [] });
  });

  it('fails closed: run() and flushed() reject when a table write fails every retry', async () => {
    const { driver, kernel, clock, running } = start();
    kernel.failRestores = 100;
    driver.send([...state, { type: 'InSync' }]);
    const flushed = driver.flushed();
    const a = expect(flushed).rejects.toThrow(/failed 10 times/);
    const b = expect(running).rejects.toThrow(/failed 10 times/);
    await clock.advance(2_000);
    await a;
    await b;
    expect(kernel.chains.has('cali-FORWARD')).toBe(false);
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
    expect(runner.callsTo('iptables-nft-restore')).toHaveLength(1);
    expect(runner.callsTo('ip6tables-nft-restore')).toHaveLength(1);
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
