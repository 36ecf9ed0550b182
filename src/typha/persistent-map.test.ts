import { describe, expect, it } from 'vitest';

import { seededRandom } from '../runtime/seeded-random.ts';
import { EditorClosedError, PersistentMap } from './persistent-map.ts';

const key = (i: number): string => `WorkloadEndpoint/ns-${i % 7}/wep-${i}`;

describe('PersistentMap', () => {
  it('iterates in ascending key order whatever the insertion order', () => {
    const random = seededRandom(1);
    const ids = Array.from({ length: 2000 }, (_, i) => i).sort(() => random() - 0.5);
    const m = PersistentMap.of(ids.map((i) => [key(i), i] as const));
    m.checkInvariants();
    expect(m.size).toBe(2000);
    const keys = [...m.keys()];
    expect(keys).toEqual(ids.map(key).sort());
    expect([...m.values()]).toEqual(keys.map((k) => m.get(k)));
    const seen: string[] = [];
    m.forEach((_v, k) => seen.push(k));
    expect(seen).toEqual(keys);
  });

  it('never changes: an old version reads the same after later sets and deletes', () => {
    let m = PersistentMap.empty<number>();
    for (let i = 0; i < 500; i++) m = m.set(key(i), i);
    const old = m;
    const before = [...old.entries()];
    for (let i = 0; i < 500; i += 2) m = m.delete(key(i));
    for (let i = 500; i < 1000; i++) m = m.set(key(i), i);
    m = m.withMutations((e) => {
      for (let i = 1; i < 500; i += 2) e.set(key(i), -i);
    });
    expect([...old.entries()]).toEqual(before);
    expect(old.size).toBe(500);
    old.checkInvariants();
    m.checkInvariants();
    expect(m.size).toBe(750);
    expect(m.get(key(3))).toBe(-3);
    expect(m.has(key(2))).toBe(false);
  });

  it('returns itself for a set of the same value and a delete of an absent key', () => {
    const m = PersistentMap.empty<string>().set('a', 'x');
    expect(m.set('a', 'x')).toBe(m);
    expect(m.delete('b')).toBe(m);
    expect(m.withMutations((e) => e.delete('b'))).toBe(m);
    expect(PersistentMap.empty<string>().delete('a').size).toBe(0);
  });

  it('agrees with a Map over 50,000 random sets and deletes, single and batched, keeping its shape', () => {
    const random = seededRandom(42);
    const ref = new Map<string, number>();
    let m = PersistentMap.empty<number>();
    const versions: Array<[PersistentMap<number>, Array<[string, number]>]> = [];
    for (let round = 0; round < 500; round++) {
      const batched = random() < 0.5;
      const ops = Array.from({ length: 100 }, () => ({ k: key(Math.floor(random() * 3000)), del: random() < 0.45, v: Math.floor(random() * 10) }));
      for (const op of ops) {
        if (op.del) ref.delete(op.k);
        else ref.set(op.k, op.v);
      }
      if (batched) {
        m = m.withMutations((e) => {
          for (const op of ops) {
            const had = e.get(op.k) !== undefined;
            if (op.del) expect(e.delete(op.k)).toBe(had);
            else e.set(op.k, op.v);
          }
        });
      } else {
        for (const op of ops) m = op.del ? m.delete(op.k) : m.set(op.k, op.v);
      }
      if (round % 50 === 0) versions.push([m, [...ref.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
    }
    m.checkInvariants();
    expect(m.size).toBe(ref.size);
    for (const [k, v] of ref) expect(m.get(k)).toBe(v);
    for (const [version, expected] of versions) {
      version.checkInvariants();
      expect([...version.entries()]).toEqual(expected);
    }
  });

  it('shrinks back to a single leaf when emptied', () => {
    let m = PersistentMap.of(Array.from({ length: 5000 }, (_, i) => [key(i), i] as const));
    m = m.withMutations((e) => {
      for (let i = 0; i < 4990; i++) e.delete(key(i));
    });
    m.checkInvariants();
    expect(m.size).toBe(10);
    for (let i = 4990; i < 5000; i++) m = m.delete(key(i));
    m.checkInvariants();
    expect(m.size).toBe(0);
    expect([...m.keys()]).toEqual([]);
  });

  it('refuses an editor used after withMutations returned', () => {
    let leaked: { set(k: string, v: number): void } | undefined;
    PersistentMap.empty<number>().withMutations((e) => {
      leaked = e;
    });
    expect(() => leaked?.set('a', 1)).toThrow(EditorClosedError);
  });
});
