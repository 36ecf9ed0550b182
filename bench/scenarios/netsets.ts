/**
 * Large network sets (`npm run bench -- netsets [cidrs=10000] [updates=200]`): one node's calc
 * graph and the real dataplane driver (against the recording fake kernel, as `tessera render`)
 * with a GlobalNetworkSet of `cidrs` CIDRs that an egress Deny rule selects; then `updates`
 * edits of that set, each replacing one CIDR (the whole object re-sent, as a watch delivers it).
 *
 * Figures: initialMs (graph + first program of the set), per edit the calc graph's time
 * (onUpdates + flush; p50/p99/max), the dataplane messages and IP-set members changed per edit
 * (1 added + 1 removed is a delta, 10,000 would be a rebuild), and the bytes of `ipset
 * restore` input the driver wrote per edit.
 */
import type { GlobalNetworkPolicy, GlobalNetworkSet, V3Resource, WorkloadEndpoint } from '../../src/api/index.ts';
import { CalcGraph } from '../../src/calc/index.ts';
import { DataplaneDriver, RecordingCommandRunner } from '../../src/dataplane/index.ts';
import { FakeKernel } from '../../src/dataplane/iptables/fake-kernel.ts';
import { report, type BenchScenario } from '../scenario.ts';

const NODE = 'node-1';

function netset(nets: string[]): GlobalNetworkSet {
  return { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata: { name: 'blocklist', labels: { list: 'blocked' } }, spec: { nets } };
}

const policy: GlobalNetworkPolicy = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'deny-blocked' },
  spec: { tier: 'default', order: 10, selector: 'all()', types: ['Egress'], egress: [{ action: 'Deny', destination: { selector: "list == 'blocked'" } }, { action: 'Allow' }] },
};

const endpoint: WorkloadEndpoint = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'WorkloadEndpoint',
  metadata: { name: 'node--1-k8s-a-eth0', namespace: 'x', labels: { app: 'a' } },
  spec: { node: NODE, orchestrator: 'k8s', endpoint: 'eth0', interfaceName: 'cali0123456789a', ipNetworks: ['10.65.0.1/32'], profiles: [] },
};

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function run(cidrs: number, updates: number): Promise<void> {
  const nets = Array.from({ length: cidrs }, (_, i) => `10.${128 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`);
  const graph = new CalcGraph({ nodeName: NODE });
  const runner = new RecordingCommandRunner(new FakeKernel().handler);
  const driver = new DataplaneDriver({ runner, iptablesPostWriteCheckMs: 3_600_000, iptablesRefreshIntervalMs: 3_600_000, ipsetsRefreshIntervalMs: 3_600_000 });
  const stop = new AbortController();
  const running = driver.run(stop.signal);
  // The runtime clock's timers are unref'd (they never hold a process up): while the driver
  // waits on one, this bench has nothing else keeping the event loop alive.
  const keepAlive = setInterval(() => undefined, 1000);
  const ipsetBytes = (): number => runner.calls.filter((c) => c.cmd === 'ipset').reduce((n, c) => n + (c.stdin ?? '').length, 0);
  try {
    const t0 = performance.now();
    const resources: V3Resource[] = [endpoint, policy, netset(nets)];
    graph.onUpdates(resources.map((resource) => ({ op: 'upsert', resource })));
    graph.onStatusUpdated('in-sync');
    driver.send(graph.flush());
    await driver.flushed();
    const initialMs = performance.now() - t0;
    const initialIpsetBytes = ipsetBytes();

    const calcMs: number[] = [];
    let messages = 0;
    let membersChanged = 0;
    let bytesBefore = ipsetBytes();
    const ipsetBytesPerEdit: number[] = [];
    for (let u = 0; u < updates; u++) {
      // Replace one CIDR: the one at u, by an address outside the original range.
      nets[u % cidrs] = `172.16.${(u >> 8) & 255}.${u & 255}/32`;
      const t = performance.now();
      graph.onUpdates([{ op: 'upsert', resource: netset([...nets]) }]);
      const out = graph.flush();
      calcMs.push(performance.now() - t);
      messages += out.length;
      for (const m of out) if (m.type === 'IPSetDeltaUpdate') membersChanged += m.added.length + m.removed.length;
      driver.send(out);
      await driver.flushed();
      const now = ipsetBytes();
      ipsetBytesPerEdit.push(now - bytesBefore);
      bytesBefore = now;
    }
    calcMs.sort((a, b) => a - b);
    ipsetBytesPerEdit.sort((a, b) => a - b);
    report('netsets', 'edit-one-cidr', {
      cidrs,
      updates,
      initialMs: Number(initialMs.toFixed(1)),
      initialIpsetRestoreBytes: initialIpsetBytes,
      calcP50Ms: Number(percentile(calcMs, 50).toFixed(3)),
      calcP99Ms: Number(percentile(calcMs, 99).toFixed(3)),
      calcMaxMs: Number((calcMs.at(-1) as number).toFixed(3)),
      messagesPerEdit: Number((messages / updates).toFixed(2)),
      membersChangedPerEdit: Number((membersChanged / updates).toFixed(2)),
      ipsetRestoreBytesPerEditP50: percentile(ipsetBytesPerEdit, 50),
      ipsetRestoreBytesPerEditMax: ipsetBytesPerEdit.at(-1) as number,
    });
  } finally {
    clearInterval(keepAlive);
    stop.abort();
    await running;
  }
}

const scenario: BenchScenario = {
  description: 'A 10,000-CIDR GlobalNetworkSet edited one CIDR at a time: calc graph time, messages, IP-set members and ipset restore bytes per edit',
  async run(args) {
    await run(Number(args[0] ?? 10_000), Number(args[1] ?? 200));
  },
};

export default scenario;
