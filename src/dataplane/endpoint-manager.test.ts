import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataplaneMessage, WorkloadEndpoint } from '../proto/index.ts';
import { FakeClock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { newRegistry, type Registry } from '../runtime/metrics.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { DataplaneDriver } from './dataplane-driver.ts';
import { FakeKernel } from './iptables/fake-kernel.ts';
import { allowAllProfile, endpoint, npId, policy, rule, tier } from '../../test/dataplane/fixtures.ts';

/** Pod b's own policy denies everything inbound; the attacker's endpoint has an allow-all profile. */
const denyB = npId('shop', 'deny-b');
const base: DataplaneMessage[] = [
  { type: 'ActivePolicyUpdate', id: denyB, policy: policy([rule({ action: 'deny' })]) },
  allowAllProfile('kns.shop'),
  allowAllProfile('kns.evil'),
];
const wep = (namespace: string, name: string, over: Partial<WorkloadEndpoint>): DataplaneMessage => ({
  type: 'WorkloadEndpointUpdate',
  id: { namespace, name },
  endpoint: endpoint(over),
});
const podB = wep('shop', 'b', { interfaceName: 'calib', ipv4Nets: ['10.65.0.2/32'], profileIds: ['kns.shop'], tiers: [tier('default', [denyB])] });
const removeWep = (namespace: string, name: string): DataplaneMessage => ({ type: 'WorkloadEndpointRemove', id: { namespace, name } });

function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function gauge(registry: Registry, series: string): Promise<number> {
  const escaped = series.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)$`, 'm').exec(await registry.metrics())?.[1] ?? NaN);
}

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

function start(interfacePrefixes?: string[]) {
  const kernel = new FakeKernel();
  const registry = newRegistry();
  const { logger, lines } = capturingLogger();
  const driver = new DataplaneDriver({ runner: new RecordingCommandRunner(kernel.handler), clock: new FakeClock(), registry, logger, ...(interfacePrefixes && { interfacePrefixes }) });
  const stop = new AbortController();
  stops.push(stop);
  void driver.run(stop.signal);
  const apply = async (...msgs: DataplaneMessage[]) => {
    driver.send(msgs);
    await driver.flushed();
  };
  return { kernel, registry, lines, apply };
}

/** What decides traffic on `iface`: its dispatch target and its chains' actions. */
function decision(kernel: FakeKernel, iface: string) {
  const dispatch = (kernel.chains.get('cali-to-wl-dispatch') ?? []).find((r) => r.includes(`-o ${iface} `));
  return {
    dispatched: dispatch !== undefined,
    ingress: (kernel.chains.get(`cali-tw-${iface}`) ?? []).map((r) => r.replace(/^-m comment --comment "cali:[^"]+" /, '')),
  };
}
const ownChains = (kernel: FakeKernel, iface: string) => (kernel.chains.get(`cali-tw-${iface}`) ?? []).some((r) => r.includes('-j cali-pi-np/shop/deny-b'));
const conflictLogs = (lines: () => Array<Record<string, unknown>>) => lines().filter((l) => String(l.msg).includes('claimed by more than one WorkloadEndpoint'));

describe('EndpointManager: conflicting claims fail closed', () => {
  // Both orders of keys: before, the endpoint whose namespace/name sorted first won the interface.
  for (const attacker of [
    ['aaa', 'first-by-key'],
    ['zzz', 'last-by-key'],
  ] as const) {
    it(`an endpoint claiming pod b's interface (${attacker[1]}) makes it drop, and b's own policy is back once it is gone`, async () => {
      const { kernel, registry, lines, apply } = start();
      await apply(...base, podB, { type: 'InSync' });
      expect(ownChains(kernel, 'calib')).toBe(true);

      await apply(wep(attacker[0], 'attacker', { interfaceName: 'calib', ipv4Nets: ['10.65.0.66/32'], profileIds: ['kns.evil'] }));
      expect(decision(kernel, 'calib')).toEqual({ dispatched: true, ingress: ['-m comment --comment "Interface or address claimed by more than one endpoint" -j DROP'] });
      expect(kernel.chains.get('cali-fw-calib')!.map((r) => r.endsWith('-j DROP'))).toEqual([true]);
      expect(await gauge(registry, 'tessera_dataplane_conflicting_endpoints{kind="interface"}')).toBe(2);
      const logged = conflictLogs(lines);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 50, conflict: 'interface', interface: 'calib' });
      expect(logged[0]!.endpoints).toEqual(
        expect.arrayContaining([
          { kind: 'WorkloadEndpoint', namespace: attacker[0], name: 'attacker' },
          { kind: 'WorkloadEndpoint', namespace: 'shop', name: 'b' },
        ]),
      );

      // Unrelated churn re-renders without logging the unchanged conflict again.
      await apply(wep('shop', 'c', { interfaceName: 'calic', ipv4Nets: ['10.65.0.3/32'], profileIds: ['kns.shop'] }));
      expect(conflictLogs(lines)).toHaveLength(1);

      await apply(removeWep(attacker[0], 'attacker'));
      expect(ownChains(kernel, 'calib')).toBe(true);
      expect(await gauge(registry, 'tessera_dataplane_conflicting_endpoints{kind="interface"}')).toBe(0);
      expect(lines().some((l) => l.msg === 'interface conflict resolved')).toBe(true);
    });
  }

  it("an endpoint claiming pod b's address on another interface withholds both, until it is deleted", async () => {
    const { kernel, registry, apply } = start();
    await apply(...base, podB, { type: 'InSync' });
    await apply(wep('evil', 'x', { interfaceName: 'calix', ipv4Nets: ['10.65.0.2/32'], profileIds: ['kns.evil'] }));
    expect(decision(kernel, 'calib').ingress).toEqual(['-m comment --comment "Interface or address claimed by more than one endpoint" -j DROP']);
    expect(decision(kernel, 'calix').ingress).toHaveLength(1);
    expect(await gauge(registry, 'tessera_dataplane_conflicting_endpoints{kind="address"}')).toBe(2);
    await apply(removeWep('evil', 'x'));
    expect(ownChains(kernel, 'calib')).toBe(true);
    expect(decision(kernel, 'calix')).toEqual({ dispatched: false, ingress: [] });
    expect(await gauge(registry, 'tessera_dataplane_conflicting_endpoints{kind="address"}')).toBe(0);
  });

  it('two endpoints whose interfaces are resolved from one route collide too', async () => {
    const { kernel, apply } = start();
    kernel.routes.set('10.65.0.2/32', 'calib');
    await apply(...base, wep('shop', 'b', { ipv4Nets: ['10.65.0.2/32'], profileIds: ['kns.shop'], tiers: [tier('default', [denyB])] }), { type: 'InSync' });
    expect(ownChains(kernel, 'calib')).toBe(true);
    await apply(wep('aaa', 'x', { ipv4Nets: ['10.65.0.2/32'], profileIds: ['kns.evil'] }));
    expect(decision(kernel, 'calib').ingress).toEqual(['-m comment --comment "Interface or address claimed by more than one endpoint" -j DROP']);
  });
});

describe('EndpointManager: foreign interfaces', () => {
  it('an endpoint whose interface no prefix covers is not programmed, says so once, and is counted', async () => {
    const { kernel, registry, lines, apply } = start(['cali']);
    await apply(...base, podB, wep('shop', 'f', { interfaceName: 'veth12', ipv4Nets: ['10.65.0.5/32'], profileIds: ['kns.shop'] }), { type: 'InSync' });
    expect(decision(kernel, 'veth12')).toEqual({ dispatched: false, ingress: [] });
    expect(kernel.chains.has('cali-fw-veth12')).toBe(false);
    expect(await gauge(registry, 'tessera_dataplane_foreign_interface_endpoints')).toBe(1);
    const said = () => lines().filter((l) => String(l.msg).startsWith('interface matches no configured interface prefix'));
    expect(said()).toHaveLength(1);
    expect(said()[0]).toMatchObject({ level: 50, namespace: 'shop', name: 'f', iface: 'veth12' });
    expect(lines().some((l) => String(l.msg).includes('bypasses policy'))).toBe(false);
    await apply(podB);
    expect(said()).toHaveLength(1);
    await apply(removeWep('shop', 'f'));
    expect(await gauge(registry, 'tessera_dataplane_foreign_interface_endpoints')).toBe(0);
    expect(ownChains(kernel, 'calib')).toBe(true);
  });
});

describe('EndpointManager: QoS controls', () => {
  it('programs the connection limit, warns once per endpoint about bandwidth (not enforced) and counts it by field', async () => {
    const { kernel, registry, lines, apply } = start();
    const qos = { ingressBandwidth: 1_000_000, ingressBurst: 4294967296, ingressMaxConnections: 1 };
    await apply(...base, wep('shop', 'q', { interfaceName: 'caliq', ipv4Nets: ['10.65.0.7/32'], profileIds: ['kns.shop'], qosControls: qos }), { type: 'InSync' });
    expect(decision(kernel, 'caliq').ingress).toContain(
      '-m comment --comment "Reject connections over ingress connection limit" -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connlimit --connlimit-above 1 --connlimit-mask 0 -j REJECT --reject-with tcp-reset',
    );
    const said = () => lines().filter((l) => String(l.msg).startsWith('qosControls NOT ENFORCED'));
    expect(said()).toHaveLength(1);
    expect(said()[0]).toMatchObject({ level: 40, namespace: 'shop', name: 'q', fields: ['ingressBandwidth', 'ingressBurst'] });
    expect(await gauge(registry, 'tessera_dataplane_qos_unenforced_endpoints{field="ingressBandwidth"}')).toBe(1);
    expect(await gauge(registry, 'tessera_dataplane_qos_unenforced_endpoints{field="egressBandwidth"}')).toBe(0);

    // The same limits again: no second warning.
    await apply(wep('shop', 'q', { interfaceName: 'caliq', ipv4Nets: ['10.65.0.7/32'], profileIds: ['kns.shop'], qosControls: qos }));
    expect(said()).toHaveLength(1);
    await apply(removeWep('shop', 'q'));
    expect(await gauge(registry, 'tessera_dataplane_qos_unenforced_endpoints{field="ingressBandwidth"}')).toBe(0);
  });
});
