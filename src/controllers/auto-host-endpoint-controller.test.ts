import { describe, expect, it } from 'vitest';

import type { K8sNode } from '../api/kubernetes.ts';
import { nodeToAutoHostEndpoint } from '../convert/auto-host-endpoint-builder.ts';
import { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeResource } from '../informers/kube-lister-watcher.ts';
import type { KubeObject } from '../informers/object.ts';
import { scriptedListerWatchers, type ScriptedWatch } from '../../test/informers/scripted-lister-watcher.ts';
import { captureLogger } from '../../test/typha/wire-harness.ts';
import { newAutoHostEndpointController } from './auto-host-endpoint-controller.ts';
import type { DeletePreconditions, Writer, WrittenObject } from './object-writer.ts';

type Node = K8sNode & KubeObject;

function node(name: string, labels: Record<string, string>, ip: string, rv = '1'): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: rv, labels },
    status: { addresses: [{ type: 'InternalIP', address: ip }] },
  };
}

/** The host endpoint the controller keeps for `n`, as stored (with a uid and resourceVersion). */
function stored(n: Node, rv = '7'): KubeObject {
  const hep = nodeToAutoHostEndpoint(n)!;
  const name = n.metadata?.name ?? '';
  return {
    ...hep,
    metadata: {
      ...hep.metadata,
      uid: `hep-uid-${name}`,
      resourceVersion: rv,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: `uid-${name}`, controller: true }],
    },
  } as KubeObject;
}

/** A writer that records every call, and whose createIfAbsent answers `created`. */
class RecordingWriter implements Writer {
  readonly calls: string[] = [];
  readonly written: WrittenObject[] = [];
  created = true;
  private waiters: Array<() => void> = [];

  async apply(obj: WrittenObject): Promise<unknown> {
    this.written.push(obj);
    this.record(`apply ${obj.metadata.name} rv=${obj.metadata.resourceVersion ?? '-'}`);
    return obj;
  }
  async createIfAbsent(obj: WrittenObject): Promise<boolean> {
    this.written.push(obj);
    this.record(`create ${obj.metadata.name}${this.created ? '' : ' (exists)'}`);
    return this.created;
  }
  async delete(obj: { metadata: { name: string } }, pre?: DeletePreconditions): Promise<boolean> {
    this.record(`delete ${obj.metadata.name} uid=${pre?.uid ?? '-'} rv=${pre?.resourceVersion ?? '-'}`);
    return true;
  }
  async warningEvent(): Promise<void> {}
  async idle(): Promise<void> {}

  private record(call: string): void {
    this.calls.push(call);
    for (const w of this.waiters.splice(0)) w();
  }

  async waitFor(n: number): Promise<string[]> {
    while (this.calls.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.calls;
  }
}

const NODES: KubeResource = { group: '', version: 'v1', plural: 'nodes' };
const HEPS: KubeResource = { group: 'projectcalico.org', version: 'v3', plural: 'hostendpoints' };

/** The fake writes nothing back to the caches, so each sweep repeats a write: tests compare the distinct calls. */
const distinct = (calls: readonly string[]): string[] => [...new Set(calls)].sort();

async function setup(enabled: boolean, nodes: KubeObject[], heps: KubeObject[], { writer = new RecordingWriter(), sweepIntervalMs = 60_000 } = {}) {
  const lwFor = scriptedListerWatchers();
  const factory = new InformerFactory({ listerWatcherFor: lwFor });
  const { logger, records } = captureLogger();
  const controller = newAutoHostEndpointController(factory, writer, { logger, sweepIntervalMs }, { enabled });
  lwFor(NODES).queueList({ items: nodes, resourceVersion: '1' });
  lwFor(HEPS).queueList({ items: heps, resourceVersion: '1' });
  factory.start();
  await factory.waitForCacheSync();
  const abort = new AbortController();
  const run = controller.run(abort.signal);
  const nodeWatch: ScriptedWatch<KubeObject> = await lwFor(NODES).nextWatch();
  const hepWatch: ScriptedWatch<KubeObject> = await lwFor(HEPS).nextWatch();
  return {
    writer,
    records,
    nodeWatch,
    hepWatch,
    stop: async () => {
      abort.abort();
      await run;
      await factory.stop();
    },
  };
}

describe('automatic host endpoints, switched on', () => {
  it('creates a missing one (only if absent), leaves a converged one, updates a drifted one at its resourceVersion, deletes a managed one whose node is gone (with preconditions)', async () => {
    const a = node('a', { zone: 'x' }, '10.0.0.1');
    const b = node('b', { zone: 'y' }, '10.0.0.2');
    const c = node('c', { zone: 'z' }, '10.0.0.3');
    const drifted = stored(c);
    (drifted.metadata as { labels: Record<string, string> }).labels = { zone: 'old', 'projectcalico.org/created-by': 'calico-kube-controllers' };
    const orphan = stored(node('gone', {}, '10.0.0.9'));
    const { writer, stop } = await setup(true, [a, b, c], [stored(b), drifted, orphan]);
    const calls = await writer.waitFor(3);
    await stop();
    expect(distinct(calls)).toEqual(['apply c-auto-hep rv=7', 'create a-auto-hep', 'delete gone-auto-hep uid=hep-uid-gone rv=7']);
    const created = writer.written.find((w) => w.metadata.name === 'a-auto-hep');
    expect(created).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'HostEndpoint',
      metadata: {
        name: 'a-auto-hep',
        labels: { zone: 'x', 'projectcalico.org/created-by': 'calico-kube-controllers' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'a', uid: 'uid-a', controller: true }],
      },
      spec: { node: 'a', interfaceName: '*', expectedIPs: ['10.0.0.1'], profiles: ['projectcalico-default-allow'] },
    });
  });

  it('follows a node relabelled, readdressed and deleted', async () => {
    const a = node('a', { zone: 'x' }, '10.0.0.1');
    const { writer, nodeWatch, stop } = await setup(true, [a], [stored(a)]);
    nodeWatch.send({ type: 'MODIFIED', object: node('a', { zone: 'w' }, '10.0.0.1', '2') });
    await writer.waitFor(1);
    nodeWatch.send({ type: 'MODIFIED', object: node('a', { zone: 'w' }, '10.0.0.5', '3') });
    await writer.waitFor(2);
    nodeWatch.send({ type: 'DELETED', object: node('a', { zone: 'w' }, '10.0.0.5', '4') });
    const calls = await writer.waitFor(3);
    await stop();
    expect(calls).toEqual(['apply a-auto-hep rv=7', 'apply a-auto-hep rv=7', 'delete a-auto-hep uid=hep-uid-a rv=7']);
    expect(writer.written[0]?.metadata.labels).toEqual({ zone: 'w', 'projectcalico.org/created-by': 'calico-kube-controllers' });
    expect((writer.written[1]?.spec as { expectedIPs: string[] }).expectedIPs).toEqual(['10.0.0.5']);
  });

  it("never touches a host endpoint without the created-by label, even under the node's own name, and logs it once", async () => {
    const a = node('a', {}, '10.0.0.1');
    const b = node('b', {}, '10.0.0.2');
    const usersOwn = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'a-auto-hep', uid: 'u', resourceVersion: '3', labels: { mine: 'yes' } }, spec: { node: 'a', interfaceName: 'eth0' } };
    const unrelated = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'gone-auto-hep', resourceVersion: '3' }, spec: { node: 'gone', interfaceName: '*' } };
    // A short sweep, so node a is reconciled again and again without a new event: logged once all the same.
    const { writer, records, stop } = await setup(true, [a, b], [usersOwn, unrelated], { sweepIntervalMs: 5 });
    await writer.waitFor(1);
    // Let a few sweeps re-run the reconcile of node a.
    await new Promise((r) => setTimeout(r, 50));
    await stop();
    expect(distinct(writer.calls)).toEqual(['create b-auto-hep']);
    expect(records.filter((r) => r['name'] === 'a-auto-hep' && r['level'] === 40)).toHaveLength(1);
  });

  it('a create that finds the name taken (not cached yet) is retried, never applied over it', async () => {
    const a = node('a', {}, '10.0.0.1');
    const taken = new RecordingWriter();
    taken.created = false;
    const { writer, stop } = await setup(true, [a], [], { writer: taken });
    const calls = await writer.waitFor(2);
    await stop();
    expect(distinct(calls)).toEqual(['create a-auto-hep (exists)']);
  });
});

describe('automatic host endpoints, switched off (the default)', () => {
  it('at start deletes every managed host endpoint, and writes nothing for nodes; foreign ones stay', async () => {
    const a = node('a', {}, '10.0.0.1');
    const foreign = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'b-auto-hep', uid: 'u', resourceVersion: '3' }, spec: { node: 'b', interfaceName: '*' } };
    const { writer, stop } = await setup(false, [a, node('b', {}, '10.0.0.2')], [stored(a), stored(node('gone', {}, '10.0.0.9')), foreign]);
    const calls = await writer.waitFor(2);
    await new Promise((r) => setTimeout(r, 30));
    await stop();
    expect(distinct(calls)).toEqual(['delete a-auto-hep uid=hep-uid-a rv=7', 'delete gone-auto-hep uid=hep-uid-gone rv=7']);
  });

  it('deletes a managed host endpoint that appears later (another writer)', async () => {
    const a = node('a', {}, '10.0.0.1');
    const { writer, hepWatch, stop } = await setup(false, [a], []);
    hepWatch.send({ type: 'ADDED', object: stored(a, '9') });
    const calls = await writer.waitFor(1);
    await stop();
    expect(distinct(calls)).toEqual(['delete a-auto-hep uid=hep-uid-a rv=9']);
  });
});
