/**
 * The restore input, byte for byte: a fixed ruleset programmed from scratch, then changed and
 * partly removed, in both families and with the drop log on, must write exactly what it wrote
 * when this test was pinned (its SHA-256 below). The rule hashes of a running node, and so
 * whether an upgrade rewrites its chains, depend on this text; a change to how the input is
 * generated (buffers, fused rendering, caching) must not change a byte of it.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneDriver } from './dataplane-driver.ts';
import { FakeKernel } from './iptables/fake-kernel.ts';
import { FakeClock } from '../runtime/clock.ts';
import type { DataplaneMessage, PolicyId, Rule } from '../proto/index.ts';
import { allowAllProfile, endpoint, npId, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

/** Rule `r` of policy `i`: every action, CIDR blocks, negations, split port lists, named ports, ICMP. */
function variedRule(i: number, r: number, v6: boolean): Rule {
  const net = (k: number) => (v6 ? `fd00:${i.toString(16)}::${k.toString(16)}/128` : `10.${(i >> 8) & 255}.${i & 255}.${k & 255}/32`);
  const actions = ['allow', 'deny', 'next-tier', 'log'] as const;
  const base = { action: actions[r % 4]!, ruleId: r % 3 === 0 ? `r${i}-${r}` : '' };
  switch (r % 7) {
    case 0:
      return rule({ ...base, protocol: 'tcp', srcNets: [net(r)], dstPorts: [port(1000 + r)] });
    case 1:
      return rule({ ...base, protocol: 'udp', srcNets: [net(r), net(r + 1)], notDstNets: [net(r + 2)], dstPorts: [port(53), port(5000, 5010)] });
    case 2:
      return rule({ ...base, protocol: 'tcp', dstPorts: Array.from({ length: 20 }, (_, k) => port(2000 + k)), srcIpSetIds: [`s:set${i % 5}`] });
    case 3:
      return rule({ ...base, protocol: 'tcp', dstNamedPortIpSetIds: [`n:np${r}`], notSrcIpSetIds: [`s:deny${r % 2}`] });
    case 4:
      return rule({ ...base, protocol: v6 ? 'icmpv6' : 'icmp', icmp: { type: 8, code: 0 } });
    case 5:
      return rule({ ...base, notProtocol: 'udp', notSrcNets: [net(r)], srcPorts: [] });
    default:
      return rule({ ...base, protocol: 'sctp', notDstPorts: [port(9, 10)], dstNets: [net(r)] });
  }
}

function policyMsg(i: number, variant = 0): DataplaneMessage {
  const rules = (v6: boolean) => Array.from({ length: 14 }, (_, r) => variedRule(i, r + variant, v6));
  return { type: 'ActivePolicyUpdate', id: npId('ns', `p${i}`), policy: policy([...rules(false), ...rules(true)], rules(false).slice(0, 5)) };
}

function state(): DataplaneMessage[] {
  const ids: PolicyId[] = Array.from({ length: 12 }, (_, i) => npId('ns', `p${i}`));
  const msgs: DataplaneMessage[] = [allowAllProfile('kns.ns')];
  for (let i = 0; i < ids.length; i++) msgs.push(policyMsg(i));
  for (let e = 0; e < 4; e++) {
    msgs.push({
      type: 'WorkloadEndpointUpdate',
      id: { namespace: 'ns', name: `ep${e}` },
      endpoint: endpoint({ interfaceName: `cali${e}`, ipv4Nets: [`10.66.0.${e + 1}/32`], ipv6Nets: [`fd00:66::${e + 1}/128`], profileIds: ['kns.ns'], tiers: [tier('default', ids.slice(e * 3, e * 3 + 4), ids.slice(e, e + 2))] }),
    });
  }
  return msgs;
}

describe('restore input identity', () => {
  it('writes byte for byte the input it wrote when pinned: from scratch, a changed policy, a removed one', async () => {
    const kernel = new FakeKernel();
    const runner = new RecordingCommandRunner(kernel.handler);
    const driver = new DataplaneDriver({ runner, clock: new FakeClock(), ipVersions: [4, 6], dropLog: {} });
    const stop = new AbortController();
    stops.push(stop);
    void driver.run(stop.signal);
    driver.send([...state(), { type: 'InSync' }]);
    await driver.flushed();
    driver.send(policyMsg(4, 3));
    await driver.flushed();
    driver.send({ type: 'ActivePolicyRemove', id: npId('ns', 'p11') });
    await driver.flushed();
    const restores = runner.calls.filter((c) => c.cmd.endsWith('-restore') && c.cmd.includes('tables'));
    const text = restores.map((c) => `# ${c.cmd} ${c.args.join(' ')}\n${c.stdin ?? ''}`).join('');
    expect(restores.length).toBeGreaterThanOrEqual(8);
    expect(text).toContain('-R cali-pi-');
    expect(text.length).toBeGreaterThan(100_000);
    if (process.env.TESSERA_DUMP_RESTORE !== undefined) (await import('node:fs')).writeFileSync(process.env.TESSERA_DUMP_RESTORE, text);
    expect(createHash('sha256').update(text).digest('hex')).toBe('983f096e10d8b34557a0203f65aba3f8a8eff975f505b062468da3d37b894f8e');
  });
});
