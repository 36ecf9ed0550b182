import { describe, expect, it } from 'vitest';
import { SetMap } from './set-map.ts';

function contents<K, V>(m: SetMap<K, V>): [K, V[]][] {
  return [...m].map(([k, vs]) => [k, [...vs]]);
}

describe('SetMap', () => {
  it('files values under their key, each once, in insertion order', () => {
    const m = new SetMap<string, string>();
    m.add('tier-a', 'p1');
    m.add('tier-b', 'p2');
    m.add('tier-a', 'p3');
    m.add('tier-a', 'p1');
    expect(contents(m)).toEqual([['tier-a', ['p1', 'p3']], ['tier-b', ['p2']]]);
    expect(m.size).toBe(2);
    expect([...m.keys()]).toEqual(['tier-a', 'tier-b']);
    expect([...m.values()].map((s) => [...s])).toEqual([['p1', 'p3'], ['p2']]);
  });

  it('drops a key with its last value: no empty set is ever held or returned', () => {
    const m = new SetMap<string, number>();
    m.add('k', 1);
    m.add('k', 2);
    expect(m.delete('k', 1)).toBe(true);
    expect([...(m.get('k') ?? [])]).toEqual([2]);
    expect(m.delete('k', 2)).toBe(true);
    expect(m.get('k')).toBeUndefined();
    expect(m.has('k')).toBe(false);
    expect(m.size).toBe(0);
    expect(contents(m)).toEqual([]);
  });

  it('delete of a value or key that is not there is false and changes nothing', () => {
    const m = new SetMap<string, number>();
    m.add('k', 1);
    expect(m.delete('k', 2)).toBe(false);
    expect(m.delete('absent', 1)).toBe(false);
    expect(contents(m)).toEqual([['k', [1]]]);
  });

  it('get returns the live set: a later add under the key shows in it', () => {
    const m = new SetMap<string, number>();
    m.add('k', 1);
    const live = m.get('k');
    m.add('k', 2);
    expect([...(live ?? [])]).toEqual([1, 2]);
  });
});
