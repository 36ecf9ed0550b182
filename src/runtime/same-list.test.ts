import { describe, expect, it } from 'vitest';
import { sameList } from './same-list.ts';

describe('sameList', () => {
  it('is true for equal elements in the same order, empty lists included', () => {
    expect(sameList(['a', 'b'], ['a', 'b'])).toBe(true);
    expect(sameList([], [])).toBe(true);
  });

  it('is false for another order, another length or another element', () => {
    expect(sameList(['a', 'b'], ['b', 'a'])).toBe(false);
    expect(sameList(['a'], ['a', 'a'])).toBe(false);
    expect(sameList(['a', 'b'], ['a', 'c'])).toBe(false);
  });

  it('compares with === by default: no coercion between 1 and "1"', () => {
    expect(sameList<unknown>([1], ['1'])).toBe(false);
  });

  it('compares with eq when given, element i against element i', () => {
    const calls: [number, number][] = [];
    const eq = (x: { n: number }, y: { n: number }): boolean => {
      calls.push([x.n, y.n]);
      return x.n === y.n;
    };
    expect(sameList([{ n: 1 }, { n: 2 }], [{ n: 1 }, { n: 2 }], eq)).toBe(true);
    expect(calls).toEqual([[1, 1], [2, 2]]);
    expect(sameList([{ n: 1 }, { n: 2 }], [{ n: 1 }, { n: 3 }], eq)).toBe(false);
  });

  it('is true for the same array without looking at its elements', () => {
    const list = [{ n: 1 }];
    expect(sameList(list, list, () => false)).toBe(true);
  });
});
