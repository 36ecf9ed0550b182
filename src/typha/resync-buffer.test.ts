import { describe, expect, it } from 'vitest';

import { silentLogger } from '../runtime/logger.ts';
import { ResyncBuffer } from './resync-buffer.ts';
import { serializeUpdate, type SerializedUpdate } from './serialized-update.ts';
import type { SyncStatus, Update } from '../syncer/index.ts';

const tier = (name: string, order: number, rv = '1'): SerializedUpdate =>
  serializeUpdate({ op: 'upsert', resource: { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name, resourceVersion: rv }, spec: { order } } });
const gone = (name: string): SerializedUpdate => ({ key: `Tier//${name}`, value: null, resourceVersion: '', updateType: 'deleted' });

/** Runs `steps` (a KV batch, a status, or 'reconnect') and returns what the consumer saw, compactly. */
function run(steps: ReadonlyArray<readonly SerializedUpdate[] | SyncStatus | 'reconnect'>): string[] {
  const seen: string[] = [];
  const show = (u: Update): string => (u.op === 'delete' ? `-${u.name}` : `+${u.resource.metadata.name}:${(u.resource.spec as { order: number }).order}`);
  const buffer = new ResyncBuffer({ onUpdates: (us) => void seen.push(us.map(show).join(' ')), onStatusUpdated: (s) => void seen.push(s) }, silentLogger);
  buffer.startSession();
  for (const step of steps) {
    if (step === 'reconnect') buffer.startSession();
    else if (typeof step === 'string') buffer.onStatus(step);
    else buffer.onKVs(step);
  }
  return seen;
}

describe('ResyncBuffer', () => {
  const table: Array<{ name: string; steps: Parameters<typeof run>[0]; seen: string[] }> = [
    {
      name: 'a first connection passes everything through, statuses included',
      steps: ['resync-in-progress', [tier('a', 1), tier('b', 2)], 'in-sync', [tier('a', 3)]],
      seen: ['resync-in-progress', '+a:1 +b:2', 'in-sync', '+a:3'],
    },
    {
      name: 'a value equal to what was passed on (even with another resourceVersion) and a delete of an unknown key are not passed on',
      steps: [[tier('a', 1)], 'in-sync', [tier('a', 1, '99'), gone('zz')]],
      seen: ['+a:1', 'in-sync'],
    },
    {
      name: 'after a reconnect: differences only, then deletes for keys not re-sent, and no repeated in-sync',
      steps: [[tier('a', 1), tier('b', 2), tier('c', 3)], 'in-sync', 'reconnect', [tier('a', 1), tier('b', 20), tier('d', 4)], 'in-sync'],
      seen: ['+a:1 +b:2 +c:3', 'in-sync', '+b:20 +d:4', '-c'],
    },
    {
      name: 'a new Typha still resyncing: its statuses are withheld and nothing is deleted until its in-sync',
      steps: [[tier('a', 1), tier('b', 2)], 'in-sync', 'reconnect', 'wait-for-datastore', 'resync-in-progress', [tier('a', 1)], 'resync-in-progress', [tier('b', 2)], 'in-sync'],
      seen: ['+a:1 +b:2', 'in-sync'],
    },
    {
      name: 'a key deleted during the resync is passed on as a delete and not deleted twice',
      steps: [[tier('a', 1), tier('b', 2)], 'in-sync', 'reconnect', [tier('a', 1), tier('b', 2)], [gone('b')], 'in-sync'],
      seen: ['+a:1 +b:2', 'in-sync', '-b'],
    },
    {
      name: 'a reconnect before the first in-sync passes the new statuses and deletes at the in-sync, before announcing it',
      steps: ['resync-in-progress', [tier('a', 1), tier('b', 2)], 'reconnect', 'resync-in-progress', [tier('b', 2)], 'in-sync'],
      seen: ['resync-in-progress', '+a:1 +b:2', '-a', 'in-sync'],
    },
    {
      name: 'a second reconnect in a row is a fresh resync',
      steps: [[tier('a', 1), tier('b', 2)], 'in-sync', 'reconnect', [tier('a', 1)], 'reconnect', [tier('b', 2)], 'in-sync'],
      seen: ['+a:1 +b:2', 'in-sync', '-a'],
    },
  ];
  for (const row of table) it(row.name, () => expect(run(row.steps)).toEqual(row.seen));

  it('an unparseable value is dropped, the consumer keeps the last value it understood, and no delete is synthesised for it', () => {
    const broken: SerializedUpdate = { key: 'Tier//a', value: '{', resourceVersion: '2', updateType: 'updated' };
    expect(run([[tier('a', 1)], 'in-sync', 'reconnect', [broken], 'in-sync'])).toEqual(['+a:1', 'in-sync']);
  });

  it('new/updated is recomputed from what the consumer has, not taken from the server', () => {
    const buffer = new ResyncBuffer({ onUpdates: () => undefined, onStatusUpdated: () => undefined }, silentLogger);
    const a = { ...tier('a', 1), updateType: 'updated' as const };
    expect(buffer.updateTypeFor(a)).toBe('new');
    buffer.onKVs([a]);
    expect(buffer.updateTypeFor({ ...tier('a', 2), updateType: 'new' })).toBe('updated');
    expect(buffer.updateTypeFor(gone('a'))).toBe('deleted');
  });
});

describe('ResyncBuffer: deletes synthesised at a resync keep the kind’s group', () => {
  it('an EndpointSlice not re-sent by the new Typha is deleted as discovery.k8s.io/v1, a Tier as v3', () => {
    const slice = serializeUpdate({
      op: 'upsert',
      resource: { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-abc', namespace: 'x' }, addressType: 'IPv4', endpoints: [] },
    } as unknown as Update);
    const seen: Update[] = [];
    const buffer = new ResyncBuffer({ onUpdates: (us) => void seen.push(...us), onStatusUpdated: () => undefined }, silentLogger);
    buffer.startSession();
    buffer.onKVs([slice, tier('a', 1)]);
    buffer.onStatus('in-sync');
    buffer.startSession();
    buffer.onStatus('in-sync');
    expect(seen.filter((u) => u.op === 'delete')).toEqual([
      { op: 'delete', apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: 'x', name: 'web-abc' },
      { op: 'delete', kind: 'Tier', name: 'a' },
    ]);
  });
});

describe('ResyncBuffer: digest slots', () => {
  it('a deleted key frees its slot for the next key, and each key still compares against its own last value', () => {
    const seen = run([
      [tier('a', 1), tier('b', 2)],
      'in-sync',
      [gone('a')],
      [tier('c', 3)], // takes a's freed slot
      [tier('b', 2), tier('c', 3)], // no-ops: both equal what was passed on
      [tier('a', 3)], // a is new again: passed on although c holds the same value
      [tier('c', 4), tier('a', 3)],
      'reconnect',
      [tier('a', 3)],
      'in-sync', // b and c were not re-sent: deleted, their slots freed
      [tier('b', 2), tier('d', 5)],
    ]);
    expect(seen).toEqual(['+a:1 +b:2', 'in-sync', '-a', '+c:3', '+a:3', '+c:4', '-b -c', '+b:2 +d:5']);
  });
});
