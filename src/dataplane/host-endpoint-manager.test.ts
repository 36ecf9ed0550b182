import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { allowAllProfile, gnpId, hostEndpoint, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';
import type { DataplaneMessage, HostEndpoint } from '../proto/index.ts';
import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { RecordingCommandRunner, type CommandResult } from './command-runner.ts';
import { DataplaneDriver } from './dataplane-driver.ts';
import { failClosedRules } from './iptables/rejected-chains.ts';
import { FakeKernel } from './iptables/fake-kernel.ts';

type Links = Record<string, string[]>;
const ipJson = (links: Links): string => JSON.stringify(Object.entries(links).map(([ifname, addrs]) => ({ ifname, addr_info: addrs.map((local) => ({ family: local.includes(':') ? 'inet6' : 'inet', local })) })));

function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

function start(links: Links = { lo: ['127.0.0.1'], eth0: ['10.0.0.1', 'fd00::1'], eth1: ['10.0.1.1'], cali0a: [] }) {
  // One fake kernel per family (a FakeKernel models one table set); IP sets live in the IPv4 one.
  const kernel = new FakeKernel();
  const kernel6 = new FakeKernel();
  const state = { links, ipFails: false };
  const runner = new RecordingCommandRunner((call) => {
    if (call.cmd === 'ip' && call.args.join(' ') === '-j addr show') {
      return (state.ipFails ? { code: 1, stdout: '', stderr: 'Cannot open netlink socket' } : { code: 0, stdout: ipJson(state.links), stderr: '' }) satisfies CommandResult;
    }
    return call.cmd.startsWith('ip6tables') ? kernel6.handler(call) : kernel.handler(call);
  });
  const clock = new FakeClock();
  const registry = newRegistry();
  const { logger, lines } = capturingLogger();
  const driver = new DataplaneDriver({ runner, clock, registry, logger, ipVersions: [4, 6] });
  const stop = new AbortController();
  stops.push(stop);
  void driver.run(stop.signal);
  const send = async (msgs: DataplaneMessage[]): Promise<void> => {
    driver.send([...msgs, { type: 'InSync' }]);
    await driver.flushed();
  };
  const table = (name: string, family: 4 | 6 = 4): Map<string, string[]> => (family === 4 ? kernel : kernel6).tables.get(name)!;
  const ipCalls = (): number => runner.calls.filter((c) => c.cmd === 'ip').length;
  return { kernel, kernel6, runner, clock, registry, lines, driver, state, send, table, ipCalls };
}

const hep = (name: string, ep: Partial<HostEndpoint>): DataplaneMessage => ({ type: 'HostEndpointUpdate', id: { name }, endpoint: hostEndpoint(ep) });
const rulesOf = (t: Map<string, string[]>, chain: string): string[] | undefined => t.get(chain)?.map((r) => r.replace(/^-m comment --comment "cali:[^"]+" /, ''));

describe('HostEndpointManager', () => {
  it('a node without HostEndpoints lists no interfaces and gets only empty host dispatch chains', async () => {
    const { send, table, ipCalls } = start();
    await send([]);
    expect(ipCalls()).toBe(0);
    expect(rulesOf(table('filter'), 'cali-from-host-endpoint')).toEqual([]);
    expect(rulesOf(table('mangle'), 'cali-to-host-endpoint')).toEqual([]);
    expect(rulesOf(table('raw'), 'cali-from-host-endpoint')).toEqual([]);
  });

  it('a * HostEndpoint with no policy: default-deny chains under any-interface-at-all, reached by the dispatch default in filter and mangle, never raw', async () => {
    const { send, table, registry } = start();
    await send([hep('node-1-all', { name: '*' })]);
    expect(rulesOf(table('filter'), 'cali-from-host-endpoint')).toEqual(['-g cali-fh-any-interface-at-all']);
    expect(rulesOf(table('filter'), 'cali-to-hep-forward')).toEqual(['-g cali-thfw-_Nqh4HyA73udmyanQI']);
    expect(rulesOf(table('filter'), 'cali-fh-any-interface-at-all')!.at(-1)).toBe('-m comment --comment "Drop if no profiles matched" -j DROP');
    expect(rulesOf(table('mangle'), 'cali-to-host-endpoint')).toEqual([
      '-m comment --comment "Skip egress WHEP policy for traffic to local workload" -o cali+ -j RETURN',
      '-g cali-th-any-interface-at-all',
    ]);
    expect(rulesOf(table('mangle'), 'cali-from-host-endpoint')).toEqual([]);
    expect(table('mangle').has('cali-th-any-interface-at-all')).toBe(true);
    expect(rulesOf(table('raw'), 'cali-from-host-endpoint')).toEqual([]);
    expect(await registry.metrics()).toMatch(/^tessera_dataplane_host_endpoint_interfaces 1$/m);
  });

  it('with the allow-all profile the profile chains are programmed in filter (both ways) and mangle (egress, for DNATed host traffic)', async () => {
    const { send, table } = start();
    await send([allowAllProfile('projectcalico-default-allow'), hep('all', { name: '*', profileIds: ['projectcalico-default-allow'] })]);
    expect(table('filter').has('cali-pri-_TI1Jm4dJqQzYb0Rx3u')).toBe(true);
    expect(table('filter').has('cali-pro-_TI1Jm4dJqQzYb0Rx3u')).toBe(true);
    expect(table('mangle').has('cali-pro-_TI1Jm4dJqQzYb0Rx3u')).toBe(true);
    expect(table('mangle').has('cali-pri-_TI1Jm4dJqQzYb0Rx3u')).toBe(false);
  });

  it('a normal policy goes to filter (both directions its endpoint chains use) and, for egress, to mangle too (the DNATed host egress chain jumps to it); never to raw', async () => {
    const { send, table } = start();
    await send([{ type: 'ActivePolicyUpdate', id: gnpId('both'), policy: policy([rule()], [rule()]) }, hep('all', { name: '*', tiers: [tier('default', [gnpId('both')], [gnpId('both')])] })]);
    expect(table('filter').has('cali-pi-gnp/both')).toBe(true);
    expect(table('filter').has('cali-po-gnp/both')).toBe(true);
    expect(table('mangle').has('cali-po-gnp/both')).toBe(true);
    expect(table('mangle').has('cali-pi-gnp/both')).toBe(false);
    expect(table('raw').has('cali-po-gnp/both')).toBe(false);
  });

  it('an expectedIPs HostEndpoint follows its address to another interface within one poll interval', async () => {
    const { send, table, clock, state, ipCalls } = start();
    await send([hep('by-ip', { expectedIpv4Addrs: ['10.0.1.1'] })]);
    expect(rulesOf(table('filter'), 'cali-from-host-endpoint')).toEqual(['-i eth1 -g cali-fh-eth1']);
    // An interface is policed in both families, whichever family's address matched it.
    expect(rulesOf(table('filter', 6), 'cali-from-host-endpoint')).toEqual(['-i eth1 -g cali-fh-eth1']);
    const before = ipCalls();
    state.links = { lo: ['127.0.0.1'], eth0: ['10.0.0.1', '10.0.1.1'], eth1: [] };
    await clock.advance(1_000);
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    expect(ipCalls()).toBeGreaterThan(before);
    expect(rulesOf(table('filter'), 'cali-from-host-endpoint')).toEqual(['-i eth0 -g cali-fh-eth0']);
    expect(table('filter').has('cali-fh-eth1')).toBe(false);
    expect(table('filter', 6).has('cali-fh-eth1')).toBe(false);
  });

  it('named and * together: the named interface goes to its chain, every other to the default; the named one wins over an IP match with a larger name', async () => {
    const { send, table } = start();
    await send([hep('b-ip', { expectedIpv4Addrs: ['10.0.0.1'] }), hep('a-named', { name: 'eth0' }), hep('z-all', { name: '*' })]);
    expect(rulesOf(table('filter'), 'cali-to-host-endpoint')).toEqual(['-o eth0 -g cali-th-eth0', '-g cali-th-any-interface-at-all']);
    expect(table('filter').get('cali-th-eth0')).toBeDefined();
  });

  it('doNotTrack: raw chains and dispatch for a named interface, the untracked policy in raw; on * it is ignored with a warning', async () => {
    const { send, table, lines } = start();
    const untracked = { ...policy([rule({ protocol: 'tcp', dstPorts: [port(8080)] })]), untracked: true, applyOnForward: true };
    await send([
      { type: 'ActivePolicyUpdate', id: gnpId('notrack'), policy: untracked },
      hep('eth1-hep', { name: 'eth1', untrackedTiers: [tier('default', [gnpId('notrack')], [], 'Pass')] }),
      hep('all', { name: '*', untrackedTiers: [tier('default', [gnpId('notrack')], [], 'Pass')] }),
    ]);
    expect(rulesOf(table('raw'), 'cali-from-host-endpoint')).toEqual(['-i eth1 -g cali-fh-eth1']);
    expect(rulesOf(table('raw'), 'cali-fh-eth1')).toContain('-m mark --mark 0x10000/0x10000 -j NOTRACK');
    expect(table('raw').has('cali-pi-gnp/notrack')).toBe(true);
    expect(table('filter').has('cali-pi-gnp/notrack')).toBe(false);
    expect(table('raw').has('cali-fh-any-interface-at-all')).toBe(false);
    expect(lines().filter((l) => l['msg'] === 'doNotTrack policy is not supported for a HEP with interfaceName *; ignoring it')).toHaveLength(1);
  });

  it('preDNAT: the mangle fh chain and from-host-endpoint dispatch, the policy chain in mangle only', async () => {
    const { send, table } = start();
    const preDnat = { ...policy([rule({ action: 'deny', protocol: 'tcp', dstPorts: [port(30080)] })]), preDnat: true, applyOnForward: true };
    await send([{ type: 'ActivePolicyUpdate', id: gnpId('pre'), policy: preDnat }, hep('h', { name: 'eth0', preDnatTiers: [tier('default', [gnpId('pre')], [], 'Pass')] })]);
    expect(rulesOf(table('mangle'), 'cali-from-host-endpoint')).toEqual(['-i eth0 -g cali-fh-eth0']);
    expect(rulesOf(table('mangle'), 'cali-pi-gnp/pre')).toEqual(['-p tcp -m multiport --destination-ports 30080 -j DROP']);
    expect(table('filter').has('cali-pi-gnp/pre')).toBe(false);
  });

  it('removing the last HostEndpoint removes its chains, empties the dispatch chains and stops polling', async () => {
    const { send, table, clock, ipCalls } = start();
    await send([hep('h', { name: 'eth0' })]);
    expect(table('filter').has('cali-fh-eth0')).toBe(true);
    expect(table('filter', 6).has('cali-fh-eth0')).toBe(true);
    await send([{ type: 'HostEndpointRemove', id: { name: 'h' } }]);
    for (const family of [4, 6] as const) {
      expect(table('filter', family).has('cali-fh-eth0')).toBe(false);
      expect(table('mangle', family).has('cali-th-eth0')).toBe(false);
      expect(rulesOf(table('filter', family), 'cali-from-host-endpoint')).toEqual([]);
    }
    const n = ipCalls();
    await clock.advance(5_000);
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    expect(ipCalls()).toBe(n);
  });

  it('a failing interface listing keeps the last one in force, warns once and counts', async () => {
    const { send, table, clock, state, lines, registry } = start();
    await send([hep('h', { expectedIpv4Addrs: ['10.0.0.1'] })]);
    state.ipFails = true;
    for (let s = 0; s < 3; s++) {
      await clock.advance(1_000);
      for (let i = 0; i < 10; i++) await flushMicrotasks();
    }
    expect(rulesOf(table('filter'), 'cali-from-host-endpoint')).toEqual(['-i eth0 -g cali-fh-eth0']);
    expect(lines().filter((l) => l['msg'] === 'cannot list host interfaces; keeping the last listing')).toHaveLength(1);
    expect(await registry.metrics()).toMatch(/^tessera_dataplane_host_interface_list_errors [1-9]\d*$/m);
  });

  it('a rejected host endpoint chain stands in as its failsafe jump and a DROP: the node stays reachable on the failsafe ports', () => {
    expect(failClosedRules('cali-fh-eth0')!.map((r) => r.action)).toEqual([{ type: 'jump', target: 'cali-failsafe-in' }, { type: 'drop' }]);
    expect(failClosedRules('cali-th-any-interface-at-all')!.map((r) => r.action)).toEqual([{ type: 'jump', target: 'cali-failsafe-out' }, { type: 'drop' }]);
    expect(failClosedRules('cali-fhfw-eth0')!.map((r) => r.action)).toEqual([{ type: 'drop' }]);
  });
});
