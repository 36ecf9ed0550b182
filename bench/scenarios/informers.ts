/**
 * Informer throughput and memory.
 *
 * - `events`: watch events/s through Reflector → DeltaFIFO → Indexer → one handler, from a
 *   scripted source (no network), for ADDED/MODIFIED/DELETED mixes of WorkloadEndpoints.
 * - `memory`: heap bytes per cached WorkloadEndpoint at 100,000 objects, objects parsed from
 *   JSON (as the transport delivers them) with `managedFields` present on the wire and
 *   stripped by the Reflector's default transform. Needs `--expose-gc` for a stable figure
 *   (`npm run bench` passes it).
 *
 * Args: `events [count]`, `memory [count]`, or nothing for both.
 */
import { report, type BenchScenario } from '../scenario.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { SharedIndexInformer } from '../../src/informers/shared-index-informer.ts';
import { NAMESPACE_INDEX, namespaceIndexFunc } from '../../src/informers/indexer.ts';
import type { KubeObject } from '../../src/informers/object.ts';
import type { WatchEvent } from '../../src/informers/lister-watcher.ts';

/** A WorkloadEndpoint as the API server returns it, managedFields included. */
function wepJson(i: number, rv: number): string {
  const ns = `ns-${i % 100}`;
  const node = `node-${i % 50}`;
  const pod = `pod-${i}`;
  return JSON.stringify({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: {
      name: `${node}-k8s-${pod}-eth0`,
      namespace: ns,
      uid: `7c0b6d1e-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(rv),
      creationTimestamp: '2026-11-21T00:00:00Z',
      labels: {
        app: `app-${i % 20}`,
        tier: i % 3 === 0 ? 'frontend' : 'backend',
        'projectcalico.org/namespace': ns,
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'default',
      },
      managedFields: [
        {
          manager: 'tessera-controllers',
          operation: 'Apply',
          apiVersion: 'projectcalico.org/v3',
          time: '2026-11-21T00:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { 'f:app': {}, 'f:tier': {} } }, 'f:spec': { 'f:ipNetworks': {}, 'f:node': {}, 'f:pod': {} } },
        },
      ],
    },
    spec: {
      orchestrator: 'k8s',
      workload: '',
      node,
      pod,
      endpoint: 'eth0',
      serviceAccountName: 'default',
      interfaceName: `cali${(i * 2654435761 >>> 0).toString(16).padStart(11, '0').slice(0, 11)}`,
      ipNetworks: [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`],
      profiles: [`kns.${ns}`, `ksa.${ns}.default`],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    },
  });
}

async function runEvents(count: number): Promise<void> {
  const lw = new ScriptedListerWatcher<KubeObject>('workloadendpoints');
  const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: lw, indexers: { [NAMESPACE_INDEX]: namespaceIndexFunc } });
  let handled = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  informer.addEventHandler({
    onAdd: () => void (++handled === count && done()),
    onUpdate: () => void (++handled === count && done()),
    onDelete: () => void (++handled === count && done()),
  });
  const ctrl = new AbortController();
  const run = informer.run(ctrl.signal);
  lw.queueList({ items: [], resourceVersion: '1' });
  await informer.waitForCacheSync();
  const watch = await lw.nextWatch();
  // Pre-parse outside the timed region: the transport's JSON.parse is not the informer's cost.
  const distinct = Math.max(1, Math.floor(count / 4));
  const events: WatchEvent<KubeObject>[] = [];
  for (let i = 0; i < count; i++) {
    const obj = JSON.parse(wepJson(i % distinct, i + 2)) as KubeObject;
    const phase = Math.floor(i / distinct);
    events.push({ type: phase === 0 ? 'ADDED' : phase === 3 ? 'DELETED' : 'MODIFIED', object: obj });
  }
  const start = performance.now();
  for (let i = 0; i < events.length; i += 1000) watch.send(...events.slice(i, i + 1000));
  await finished;
  const seconds = (performance.now() - start) / 1000;
  report('informers', 'events', { events: count, seconds: Number(seconds.toFixed(3)), eventsPerSecond: Math.round(count / seconds) });
  ctrl.abort();
  await run;
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g !== undefined) {
    g();
    g();
  }
}

async function runMemory(count: number): Promise<void> {
  const lw = new ScriptedListerWatcher<KubeObject>('workloadendpoints');
  const informer = new SharedIndexInformer<KubeObject>({ listerWatcher: lw, indexers: { [NAMESPACE_INDEX]: namespaceIndexFunc } });
  informer.addEventHandler({ onAdd: () => undefined });
  gc();
  const before = process.memoryUsage().heapUsed;
  const ctrl = new AbortController();
  const run = informer.run(ctrl.signal);
  // Pages of 500 parsed from JSON, as the API server would send them.
  const pageSize = 500;
  for (let start = 0; start < count; start += pageSize) {
    const items: KubeObject[] = [];
    for (let i = start; i < Math.min(count, start + pageSize); i++) items.push(JSON.parse(wepJson(i, i + 1)) as KubeObject);
    lw.queueList({ items, resourceVersion: String(count), ...(start + pageSize < count ? { continue: `c${start}` } : {}) });
  }
  await informer.waitForCacheSync();
  await informer.whenHandlersIdle();
  gc();
  const after = process.memoryUsage().heapUsed;
  const cached = informer.indexer.size;
  report('informers', 'memory', {
    objects: cached,
    heapBytesPerObject: Math.round((after - before) / cached),
    heapMB: Number(((after - before) / 1048576).toFixed(1)),
    managedFieldsStripped: informer.indexer.list().every((o) => o.metadata?.managedFields === undefined),
    gcExposed: (globalThis as { gc?: unknown }).gc !== undefined,
  });
  ctrl.abort();
  await run;
}

const scenario: BenchScenario = {
  description: 'informer events/s through reflector → FIFO → indexer → handler, and heap bytes per cached WorkloadEndpoint',
  async run(args) {
    const [which, n] = args;
    if (which === undefined || which === 'events') await runEvents(Number(n ?? 200_000));
    if (which === undefined || which === 'memory') await runMemory(Number(n ?? 100_000));
  },
};
export default scenario;
