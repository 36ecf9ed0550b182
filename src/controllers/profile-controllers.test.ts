/**
 * The ServiceAccount → `ksa.` profile controller on a ServiceAccount name Kubernetes accepts but
 * no label value can hold (issue 27 item 15): the profile is written with the name label, as
 * Calico's ServiceAccountToProfile makes it, and the agent's update processor takes it.
 */
import { describe, expect, it } from 'vitest';

import { InformerFactory } from '../informers/informer-factory.ts';
import type { KubeObject } from '../informers/object.ts';
import { scriptedListerWatchers } from '../../test/informers/scripted-lister-watcher.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { newServiceAccountProfileController } from './profile-controllers.ts';
import { UpdateProcessor, type InvalidResource } from '../calc/update-processor.ts';

class RecordingWriter implements Writer {
  readonly applied: WrittenObject[] = [];
  private waiters: Array<() => void> = [];
  async apply(obj: WrittenObject): Promise<unknown> {
    this.applied.push(obj);
    for (const w of this.waiters.splice(0)) w();
    return obj;
  }
  async createIfAbsent(): Promise<boolean> {
    return true;
  }
  async delete(): Promise<boolean> {
    return true;
  }
  async warningEvent(): Promise<void> {}
  async idle(): Promise<void> {}
  async waitFor(n: number): Promise<WrittenObject[]> {
    while (this.applied.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.applied;
  }
}

describe('ServiceAccount profile controller', () => {
  it('a 70-character ServiceAccount name: writes ksa.<ns>.<sa> with pcsa.projectcalico.org/name, and the agent accepts it', async () => {
    const name = `sa-${'l'.repeat(67)}`;
    const lwFor = scriptedListerWatchers();
    const factory = new InformerFactory({ listerWatcherFor: lwFor });
    const writer = new RecordingWriter();
    const controller = newServiceAccountProfileController(factory, writer);
    const sa: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'shop', uid: 'u1', resourceVersion: '1' } };
    lwFor({ group: '', version: 'v1', plural: 'serviceaccounts' }).queueList({ items: [sa], resourceVersion: '1' });
    lwFor({ group: 'projectcalico.org', version: 'v3', plural: 'profiles' }).queueList({ items: [], resourceVersion: '1' });
    factory.start();
    await factory.waitForCacheSync();
    const abort = new AbortController();
    const run = controller.run(abort.signal);
    const [written] = await writer.waitFor(1);
    abort.abort();
    await run;
    await factory.stop();

    expect(written?.metadata.name).toBe(`ksa.shop.${name}`);
    expect((written?.spec as { labelsToApply?: unknown }).labelsToApply).toEqual({ 'pcsa.projectcalico.org/name': name });
    const invalid: InvalidResource[] = [];
    const out = new UpdateProcessor({ onInvalid: (i) => invalid.push(i) }).process({ op: 'upsert', resource: written as never });
    expect(invalid).toEqual([]);
    expect(out).toEqual([expect.objectContaining({ kind: 'profile', key: `ksa.shop.${name}`, value: expect.objectContaining({ labels: { 'pcsa.projectcalico.org/name': name } }) })]);
  });
});
