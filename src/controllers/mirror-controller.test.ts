import { describe, expect, it } from 'vitest';

import { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { scriptedListerWatchers } from '../../test/informers/scripted-lister-watcher.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './ownership.ts';
import { convertNetworkPolicy } from '../convert/policy-converter.ts';
import { newPolicyConverterController } from './policy-converter-controller.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';

function np(name: string, app: string, rv = '1'): K8sNetworkPolicy & KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv },
    spec: { podSelector: { matchLabels: { app } }, policyTypes: ['Ingress'] },
  };
}

function converged(source: K8sNetworkPolicy): KubeObject {
  const p = convertNetworkPolicy(source).policy;
  return {
    ...p,
    metadata: {
      ...p.metadata,
      resourceVersion: '1',
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      ownerReferences: [{ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', name: source.metadata?.name ?? '', uid: source.metadata?.uid ?? '', controller: true }],
    },
  } as KubeObject;
}

class RecordingWriter implements Writer {
  readonly calls: string[] = [];
  readonly events: string[] = [];
  private waiters: Array<() => void> = [];

  async apply(obj: WrittenObject): Promise<unknown> {
    this.record(`apply ${obj.metadata.namespace}/${obj.metadata.name} ${String((obj.spec as { selector?: string }).selector)}`);
    return obj;
  }
  async createIfAbsent(): Promise<boolean> {
    return true;
  }
  async delete(obj: { metadata: { name: string; namespace?: string } }): Promise<boolean> {
    this.record(`delete ${obj.metadata.namespace}/${obj.metadata.name}`);
    return true;
  }
  async warningEvent(_s: unknown, reason: string, message: string): Promise<void> {
    this.events.push(`${reason}: ${message}`);
  }
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

async function setup(sources: KubeObject[], targets: KubeObject[]) {
  const lwFor = scriptedListerWatchers();
  const factory = new InformerFactory({ listerWatcherFor: lwFor });
  const writer = new RecordingWriter();
  const controller = newPolicyConverterController(factory, writer);
  lwFor({ group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' }).queueList({ items: sources, resourceVersion: '1' });
  lwFor({ group: 'projectcalico.org', version: 'v3', plural: 'networkpolicies' }).queueList({ items: targets, resourceVersion: '1' });
  factory.start();
  await factory.waitForCacheSync();
  const abort = new AbortController();
  const run = controller.run(abort.signal);
  const sourceWatch = await lwFor({ group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' }).nextWatch();
  return {
    writer,
    sourceWatch,
    stop: async () => {
      abort.abort();
      await run;
      await factory.stop();
    },
  };
}

describe('MirrorController (policy converter, fake API)', () => {
  it('at start: leaves converged policies alone, writes missing or drifted ones, deletes orphans', async () => {
    const a = np('a', 'web');
    const b = np('b', 'db');
    const drifted = { ...converged(b), spec: { ...(converged(b) as { spec: object }).spec, order: 5 } } as KubeObject;
    const orphan = converged(np('gone', 'x'));
    const foreign = { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'mine', namespace: 'ns', resourceVersion: '1' }, spec: {} };
    const c = np('c', 'cache');
    const { writer, stop } = await setup([a, b, c], [converged(a), drifted, orphan, foreign]);
    const calls = await writer.waitFor(3);
    await stop();
    expect([...calls].sort()).toEqual([
      "apply ns/knp.default.b projectcalico.org/orchestrator == 'k8s' && app == 'db'",
      "apply ns/knp.default.c projectcalico.org/orchestrator == 'k8s' && app == 'cache'",
      'delete ns/knp.default.gone',
    ]);
  });

  it('follows source updates and deletions', async () => {
    const a = np('a', 'web');
    const { writer, sourceWatch, stop } = await setup([a], [converged(a)]);
    sourceWatch.send({ type: 'MODIFIED', object: np('a', 'api', '2') });
    await writer.waitFor(1);
    sourceWatch.send({ type: 'DELETED', object: np('a', 'api', '3') });
    const calls = await writer.waitFor(2);
    await stop();
    expect(calls).toEqual(["apply ns/knp.default.a projectcalico.org/orchestrator == 'k8s' && app == 'api'", 'delete ns/knp.default.a']);
  });
});
