import { describe, expect, it } from 'vitest';
import { FakeClock } from '../runtime/clock.ts';
import { silentLogger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { ruleBody } from './iptables/rule-text.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneMetrics } from './dataplane-metrics.ts';
import { EndpointManager } from './endpoint-manager.ts';
import { IptablesTable } from './iptables/iptables-table.ts';
import { PolicyManager } from './policy-manager.ts';
import { RuleRenderer } from './rule-renderer.ts';
import { endpoint, npId, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';

function setup() {
  const runner = new RecordingCommandRunner();
  const filter = new IptablesTable({ ipVersion: 4, runner, clock: new FakeClock(), logger: silentLogger, metrics: new DataplaneMetrics(newRegistry()) });
  let renders = 0;
  const renderer = new (class extends RuleRenderer {
    override policyChains(...args: Parameters<RuleRenderer['policyChains']>) {
      renders++;
      return super.policyChains(...args);
    }
  })({ ipVersion: 4 });
  const families = [{ renderer, filter }];
  return { filter, runner, renders: () => renders, policies: new PolicyManager(families, silentLogger), endpoints: new EndpointManager(families, new RecordingCommandRunner(), silentLogger) };
}
const rulesOf = (t: IptablesTable, name: string) => t.desiredRules(name)?.map((r) => ruleBody(r, '').trim());

describe('PolicyManager', () => {
  it('programs cali-pi-/cali-po- chains for a policy and removes them with it', () => {
    const { filter, policies } = setup();
    policies.onMessage({ type: 'ActivePolicyUpdate', id: npId('shop', 'web'), policy: policy([rule({ action: 'deny' })]) });
    expect(rulesOf(filter, 'cali-pi-np/shop/web')).toEqual(['-j DROP']);
    expect(rulesOf(filter, 'cali-po-np/shop/web')).toEqual([]);
    policies.onMessage({ type: 'ActivePolicyRemove', id: npId('shop', 'web') });
    expect(filter.hasChain('cali-pi-np/shop/web')).toBe(false);
  });

  it('fails closed when a rule cannot be rendered: the policy chains drop everything', () => {
    const { filter, policies } = setup();
    policies.onMessage({ type: 'ActivePolicyUpdate', id: npId('shop', 'bad'), policy: policy([rule({ dstPorts: [port(80)] })]) });
    expect(rulesOf(filter, 'cali-pi-np/shop/bad')).toEqual(['-m comment --comment "Tessera: rules could not be rendered" -j DROP']);
  });

  it('an untracked policy is offered to every table, on demand: no filter chain jumps to it, so the filter table does not program it', () => {
    const { filter, policies } = setup();
    policies.onMessage({ type: 'ActivePolicyUpdate', id: npId('shop', 'raw'), policy: { ...policy([rule()]), untracked: true } });
    expect(filter.desiredChainNames).not.toContain('cali-pi-np/shop/raw');
  });

  it('renders a policy while the restore writing its chains streams, not when the message arrives, and both chains at once', async () => {
    const { filter, policies, endpoints, runner, renders } = setup();
    policies.onMessage({ type: 'ActivePolicyUpdate', id: npId('shop', 'web'), policy: policy([rule({ action: 'deny' })], [rule()]) });
    endpoints.onMessage({ type: 'WorkloadEndpointUpdate', id: { namespace: 'shop', name: 'w' }, endpoint: endpoint({ interfaceName: 'caliw', tiers: [tier('default', [npId('shop', 'web')])] }) });
    endpoints.render();
    expect(renders()).toBe(0);
    await filter.apply();
    expect(renders()).toBe(1);
    const input = runner.callsTo('iptables-nft-restore')[0]!.stdin!;
    expect(input).toMatch(/-A cali-pi-np\/shop\/web -m comment --comment "cali:[\w-]{16}" -j DROP/);
    expect(rulesOf(filter, 'cali-po-np/shop/web')).toEqual(['-j MARK --set-xmark 0x10000/0x10000']);
    expect(renders()).toBe(1);
  });

  it('programs profile chains', () => {
    const { filter, policies } = setup();
    policies.onMessage({ type: 'ActiveProfileUpdate', id: { name: 'kns.shop' }, profile: { inboundRules: [rule()], outboundRules: [] } });
    expect(rulesOf(filter, 'cali-pri-kns.shop')).toEqual(['-j MARK --set-xmark 0x10000/0x10000']);
    policies.onMessage({ type: 'ActiveProfileRemove', id: { name: 'kns.shop' } });
    expect(filter.hasChain('cali-pri-kns.shop')).toBe(false);
  });
});

describe('EndpointManager', () => {
  it('adds endpoint chains and dispatch entries, and removes both with the endpoint', () => {
    const { filter, endpoints } = setup();
    endpoints.onMessage({ type: 'WorkloadEndpointUpdate', id: { namespace: 'a', name: 'x' }, endpoint: endpoint({ interfaceName: 'calix' }) });
    endpoints.render();
    expect(filter.hasChain('cali-tw-calix')).toBe(true);
    expect(rulesOf(filter, 'cali-to-wl-dispatch')![0]).toBe('-o calix -g cali-tw-calix');
    endpoints.onMessage({ type: 'WorkloadEndpointRemove', id: { namespace: 'a', name: 'x' } });
    endpoints.render();
    expect(filter.hasChain('cali-tw-calix')).toBe(false);
    expect(rulesOf(filter, 'cali-to-wl-dispatch')).toEqual(['-m comment --comment "Unknown interface" -j DROP']);
  });

  it('never programs an endpoint whose interface name could inject restore syntax', () => {
    const { filter, endpoints } = setup();
    endpoints.onMessage({ type: 'WorkloadEndpointUpdate', id: { namespace: 'a', name: 'x' }, endpoint: endpoint({ interfaceName: 'cali1\n-A INPUT -j ACCEPT' }) });
    endpoints.render();
    expect([...filter.desiredChainNames].some((n) => n.includes('\n'))).toBe(false);
    expect(rulesOf(filter, 'cali-to-wl-dispatch')).toEqual(['-m comment --comment "Unknown interface" -j DROP']);
  });

  it('programs neither endpoint when two claim one interface: it drops (see endpoint-manager.test.ts)', () => {
    const { filter, endpoints } = setup();
    endpoints.onMessage({ type: 'WorkloadEndpointUpdate', id: { namespace: 'b', name: 'y' }, endpoint: endpoint({ interfaceName: 'calix', profileIds: ['pb'] }) });
    endpoints.onMessage({ type: 'WorkloadEndpointUpdate', id: { namespace: 'a', name: 'x' }, endpoint: endpoint({ interfaceName: 'calix', profileIds: ['pa'] }) });
    endpoints.render();
    expect(rulesOf(filter, 'cali-tw-calix')).toEqual(['-m comment --comment "Interface or address claimed by more than one endpoint" -j DROP']);
  });
});
