import type { V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { FakeClock, flushMicrotasks } from '../runtime/clock.ts';
import { connectionTarget, countReadyEndpoints, RebalancePoller, type RebalanceApi } from './rebalance.ts';

describe('connectionTarget (typha.md §4.2)', () => {
  it.each([
    // nodes, typhas, syncer types, target — the reference's worked examples
    [1000, 4, 4, 1604],
    [1000, 4, 1, 401],
    [100, 3, 1, 400],
  ])('%i nodes, %i Typhas, %i syncer types → %i', (numNodes, numTyphas, numSyncerTypes, target) => {
    expect(connectionTarget({ numNodes, numTyphas }, { numSyncerTypes })).toBe(target);
  });

  it('truncates each division left to right (Go integer arithmetic)', () => {
    // 1001·120 = 120120; / 6 = 20020; / 100 = 200 (not 200.2); 1 + 200 = 201 → raised to 400
    expect(connectionTarget({ numNodes: 1001, numTyphas: 7 }, { lower: 0 })).toBe(201);
    // 999·120 = 119880; / 2 = 59940; / 100 = 599; 1 + 599 = 600
    expect(connectionTarget({ numNodes: 999, numTyphas: 3 })).toBe(600);
    // 7·120 = 840; / 3 = 280; / 100 = 2 (not 2.8); 1 + 2 = 3
    expect(connectionTarget({ numNodes: 7, numTyphas: 4 }, { lower: 0 })).toBe(3);
  });

  it('caps at the upper limit and gives it to a lone Typha and to a failed count', () => {
    expect(connectionTarget({ numNodes: 100_000, numTyphas: 2 })).toBe(10_000);
    expect(connectionTarget({ numNodes: 5000, numTyphas: 1 })).toBe(10_000);
    expect(connectionTarget({ numNodes: 5000, numTyphas: 0 })).toBe(10_000);
    expect(connectionTarget({ numNodes: undefined, numTyphas: 4 })).toBe(10_000);
    expect(connectionTarget({ numNodes: 1000, numTyphas: undefined })).toBe(10_000);
    expect(connectionTarget({ numNodes: 1000, numTyphas: 4 }, { upper: 300, lower: 100 })).toBe(300);
  });
});

function endpoint(pod: string, address: string, conditions: V1Endpoint['conditions'] = { ready: true }): V1Endpoint {
  return { addresses: [address], conditions, targetRef: { kind: 'Pod', namespace: 'tessera-system', name: pod, uid: `uid-${pod}` } };
}

function slice(name: string, endpoints: V1Endpoint[], portName = 'tessera-typha', family: 'IPv4' | 'IPv6' = 'IPv4'): V1EndpointSlice {
  return { addressType: family, metadata: { name }, endpoints, ports: [{ name: portName, port: 5473, protocol: 'TCP' }] };
}

describe('countReadyEndpoints', () => {
  it('counts ready endpoints with the Typha port once each, across address families', () => {
    const slices = [
      slice('v4', [endpoint('a', '10.0.0.1'), endpoint('b', '10.0.0.2'), endpoint('c', '10.0.0.3', { ready: false }), endpoint('d', '10.0.0.4', { ready: true, terminating: true })]),
      slice('v6', [endpoint('a', 'fd00::1'), endpoint('b', 'fd00::2')], 'tessera-typha', 'IPv6'),
      slice('nil-ready', [{ addresses: ['10.0.0.9'] }]),
      slice('other-port', [endpoint('x', '10.0.0.5')], 'metrics'),
    ];
    // other-port has a single port, which is then taken as the Typha port (as service-endpoints.ts does)
    expect(countReadyEndpoints(slices, 'tessera-typha')).toBe(4);
    const twoPorts: V1EndpointSlice = { ...slice('p', [endpoint('y', '10.0.0.6')]), ports: [{ name: 'metrics', port: 9093 }, { name: 'health', port: 9098 }] };
    expect(countReadyEndpoints([twoPorts], 'tessera-typha')).toBe(0);
  });
});

/** A scripted API: answers from the current state; `fail` makes a call reject. */
class ScriptedApi implements RebalanceApi {
  slices: V1EndpointSlice[] = [];
  nodes = 0;
  fail: { slices?: boolean; nodes?: boolean } = {};
  readonly calls: string[] = [];

  async listNamespacedEndpointSlice(param: { namespace: string; labelSelector: string }): Promise<{ items: V1EndpointSlice[] }> {
    this.calls.push(`slices ${param.namespace} ${param.labelSelector}`);
    if (this.fail.slices) throw new Error('endpointslices: connection refused');
    return { items: this.slices };
  }

  async listNode(param: { limit?: number; _continue?: string }): Promise<{ items: never[]; metadata: { _continue?: string } }> {
    this.calls.push(`nodes limit=${param.limit} continue=${param._continue ?? ''}`);
    if (this.fail.nodes) throw new Error('nodes: 503');
    const from = Number(param._continue ?? 0);
    const to = Math.min(this.nodes, from + (param.limit ?? this.nodes));
    return { items: Array.from({ length: to - from }) as never[], metadata: to < this.nodes ? { _continue: String(to) } : {} };
  }
}

describe('RebalancePoller', () => {
  function setup(): { api: ScriptedApi; clock: FakeClock; targets: number[]; poller: RebalancePoller } {
    const api = new ScriptedApi();
    const clock = new FakeClock(0);
    const targets: number[] = [];
    const poller = new RebalancePoller({ api, namespace: 'tessera-system', service: 'tessera-typha', setMaxConns: (t) => targets.push(t), clock, nodePageSize: 300 });
    return { api, clock, targets, poller };
  }

  it('polls at once and every 30 s, paging nodes, and calls setMaxConns only when the target changes', async () => {
    const { api, clock, targets, poller } = setup();
    api.slices = [slice('s', ['a', 'b', 'c', 'd'].map((p, i) => endpoint(p, `10.0.0.${i}`)))];
    api.nodes = 1000;
    const stop = new AbortController();
    const running = poller.run(stop.signal);
    await flushMicrotasks();
    expect(targets).toEqual([401]);
    expect(api.calls).toEqual([
      'slices tessera-system kubernetes.io/service-name=tessera-typha',
      'nodes limit=300 continue=',
      'nodes limit=300 continue=300',
      'nodes limit=300 continue=600',
      'nodes limit=300 continue=900',
    ]);
    await clock.advance(30_000);
    expect(targets).toEqual([401]); // same counts: no call
    expect(api.calls.filter((c) => c.startsWith('slices'))).toHaveLength(2);
    api.nodes = 4000; // 4000·120/3/100 = 1600 → 1601
    await clock.advance(29_999);
    expect(targets).toEqual([401]);
    await clock.advance(1);
    expect(targets).toEqual([401, 1601]);
    expect(poller.target).toBe(1601);
    stop.abort();
    await running;
    expect(clock.pending).toBe(0);
  });

  it('uses the upper limit when a count fails or this is the only ready Typha, and recovers', async () => {
    const { api, targets, poller } = setup();
    api.slices = [slice('s', [endpoint('a', '10.0.0.1'), endpoint('b', '10.0.0.2'), endpoint('c', '10.0.0.3')])];
    api.nodes = 100;
    expect(await poller.pollOnce()).toBe(400);
    api.fail = { nodes: true };
    expect(await poller.pollOnce()).toBe(10_000);
    api.fail = { slices: true };
    expect(await poller.pollOnce()).toBe(10_000);
    api.fail = {};
    api.slices = [slice('s', [endpoint('a', '10.0.0.1'), endpoint('b', '10.0.0.2', { ready: false })])];
    expect(await poller.pollOnce()).toBe(10_000);
    api.slices = [slice('s', [endpoint('a', '10.0.0.1'), endpoint('b', '10.0.0.2')])];
    expect(await poller.pollOnce()).toBe(400);
    expect(targets).toEqual([400, 10_000, 400]);
  });

  it('refuses bad options', () => {
    const api = new ScriptedApi();
    const base = { api, namespace: 'n', service: 's', setMaxConns: () => undefined };
    expect(() => new RebalancePoller({ ...base, intervalMs: 0 })).toThrow(/intervalMs must be > 0/);
    expect(() => new RebalancePoller({ ...base, nodePageSize: 0 })).toThrow(/nodePageSize/);
  });
});
