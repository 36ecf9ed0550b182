import { Writable } from 'node:stream';

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import type { DataplaneMessage, WorkloadEndpoint } from '../proto/index.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { UnenforcedFamilyReporter } from './unenforced-family-reporter.ts';

const endpoint = (over: Partial<WorkloadEndpoint>): WorkloadEndpoint => ({ interfaceName: '', state: 'active', mac: '', ipv4Nets: [], ipv6Nets: [], profileIds: [], tiers: [], ...over });
const update = (name: string, ipv4Nets: string[], ipv6Nets: string[]): DataplaneMessage => ({ type: 'WorkloadEndpointUpdate', id: { namespace: 'shop', name }, endpoint: endpoint({ ipv4Nets, ipv6Nets }) });
const remove = (name: string): DataplaneMessage => ({ type: 'WorkloadEndpointRemove', id: { namespace: 'shop', name } });

function capture(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

async function gauge(registry: ReturnType<typeof newRegistry>, v: 4 | 6): Promise<number | undefined> {
  const m = await registry.getSingleMetric('tessera_agent_unenforced_endpoints')?.get();
  return m?.values.find((x) => x.labels['ip_version'] === String(v))?.value;
}

/** Lets pino's stream write. */
const flush = () => new Promise((r) => setImmediate(r));

describe('UnenforcedFamilyReporter', () => {
  it('on an IPv4-only node, logs the first endpoint with IPv6 addresses once, and counts such endpoints while they last', async () => {
    const { logger, lines } = capture();
    const registry = newRegistry();
    const r = new UnenforcedFamilyReporter({ ipVersions: [4], registry, logger });
    r.observe([update('a', ['10.0.0.1/32'], ['fd00::1/128']), update('b', ['10.0.0.2/32'], ['fd00::2/128'])]);
    r.observe([update('a', ['10.0.0.1/32'], ['fd00::1/128'])]);
    await flush();
    const warnings = lines.filter((l) => l['level'] === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ ipVersion: 6, programmed: [4], namespace: 'shop', name: 'a', addresses: ['fd00::1/128'] });
    expect(String(warnings[0]?.['msg'])).toMatch(/IPv6 traffic is NOT filtered \(start the agent with --ip-versions 4,6; logged once\)/);
    expect(await gauge(registry, 6)).toBe(2);
    expect(await gauge(registry, 4)).toBe(0);

    r.observe([update('b', ['10.0.0.2/32'], []), remove('a')]);
    expect(await gauge(registry, 6)).toBe(0);
    r.observe([update('c', [], ['fd00::3/128'])]);
    await flush();
    expect(lines.filter((l) => l['level'] === 40)).toHaveLength(1);
    expect(await gauge(registry, 6)).toBe(1);
  });

  it('says nothing for families the node programs', async () => {
    const { logger, lines } = capture();
    const registry = newRegistry();
    const r = new UnenforcedFamilyReporter({ ipVersions: [4, 6], registry, logger });
    r.observe([update('a', ['10.0.0.1/32'], ['fd00::1/128'])]);
    await flush();
    expect(lines).toEqual([]);
    expect([await gauge(registry, 4), await gauge(registry, 6)]).toEqual([0, 0]);
  });

  it('on an IPv6-only node, reports IPv4 addresses the same way', async () => {
    const { logger, lines } = capture();
    const registry = newRegistry();
    new UnenforcedFamilyReporter({ ipVersions: [6], registry, logger }).observe([update('a', ['10.0.0.1/32'], ['fd00::1/128'])]);
    await flush();
    expect(lines.map((l) => l['ipVersion'])).toEqual([4]);
    expect(String(lines[0]?.['msg'])).toMatch(/--ip-versions 4,6/);
    expect(await gauge(registry, 4)).toBe(1);
  });
});
