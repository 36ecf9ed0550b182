/**
 * A WorkloadEndpoint without interfaceName gets its interface from the host route to its IP
 * (as a CNI plugin installs it). The calc graph's validation requires interfaceName, so this
 * drives the dataplane with hand-built proto messages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { allowAllProfile, endpoint, npId, policy, rule, tier } from '../../test/dataplane/fixtures.ts';
import { BACKEND } from './harness.ts';
import { Topology } from './netns.ts';
import { ProbeAgent, checkConnectivity } from './probes.ts';

describe('dataplane: interface resolution from routes', () => {
  let topo: Topology;
  const agents = new Map<string, ProbeAgent>();
  const stop = new AbortController();
  let running: Promise<void> | undefined;

  beforeAll(async () => {
    topo = Topology.create([
      { name: 'a', ip: '10.65.0.2' },
      { name: 'b', ip: '10.65.0.3' },
    ]);
    for (const p of topo.pods) agents.set(p.name, await ProbeAgent.start(p));
  });
  afterAll(async () => {
    stop.abort();
    await running;
    for (const a of agents.values()) a.stop();
    topo?.destroy();
  });

  it('programs the endpoint on the interface its /32 route points at', async () => {
    const driver = new DataplaneDriver({ runner: new NetnsCommandRunner(topo.nodeNs), backend: BACKEND });
    running = driver.run(stop.signal);
    const denyAll = npId('ns', 'deny-all');
    driver.send([
      allowAllProfile('kns.ns'),
      { type: 'ActivePolicyUpdate', id: denyAll, policy: policy([rule({ action: 'deny' })]) },
      // interfaceName left empty: resolved from `10.65.0.2 dev cali…0 scope link`.
      { type: 'WorkloadEndpointUpdate', id: { namespace: 'ns', name: 'a' }, endpoint: endpoint({ ipv4Nets: ['10.65.0.2/32'], profileIds: ['kns.ns'], tiers: [tier('default', [denyAll])] }) },
      { type: 'WorkloadEndpointUpdate', id: { namespace: 'ns', name: 'b' }, endpoint: endpoint({ interfaceName: topo.pod('b').iface, ipv4Nets: ['10.65.0.3/32'], profileIds: ['kns.ns'] }) },
      { type: 'InSync' },
    ]);
    await driver.flushed();
    expect(topo.exec(topo.nodeNs, [`iptables-${BACKEND}-save`])).toContain(`-A cali-from-wl-dispatch -i ${topo.pod('a').iface} `);
    expect(
      await checkConnectivity(agents, [
        { from: 'a', to: 'b', kind: 'tcp', allowed: true },
        { from: 'b', to: 'a', kind: 'tcp', allowed: false },
        { from: 'b', to: 'a', kind: 'udp', allowed: false },
      ]),
    ).toEqual([]);
  });
});
