/**
 * `LabelInheritIndex` against a brute-force oracle: after any sequence of item, parent and
 * selector changes, the match pairs reported by start/stop callbacks equal "evaluate every
 * selector against every item's effective labels", and every pair starts and stops exactly
 * once.
 */
import { describe, expect, it } from 'vitest';
import { parseSelector, type Selector } from '../selector/index.ts';
import { LabelInheritIndex, type Labels } from './label-inherit-index.ts';
import { seededRandom } from '../runtime/seeded-random.ts';

const SELECTORS = [
  "a == 'x'",
  "a in {'x', 'y'}",
  'has(b)',
  '!has(b)',
  "a != 'x'",
  'all()',
  "a == 'x' && b == 'y'",
  "a == 'x' || b == 'x'",
  "c starts with 'p'",
  "a == 'x' && a == 'y'",
  "(a == 'x' || a == 'y') && has(c)",
];

describe('LabelInheritIndex', () => {
  it('own labels win over parents, earlier parents over later ones', () => {
    const started: string[] = [];
    const idx = new LabelInheritIndex({ onMatchStarted: (s, i) => started.push(`${s}:${i}`), onMatchStopped: () => {} });
    idx.updateParent('p1', { a: 'p1', b: 'p1' });
    idx.updateParent('p2', { a: 'p2', b: 'p2', c: 'p2' });
    idx.updateItem('i', { a: 'own' }, ['p1', 'p2']);
    idx.updateSelector('own', parseSelector("a == 'own' && b == 'p1' && c == 'p2'"));
    expect(started).toEqual(['own:i']);
  });

  it('finds the candidates of items whether few or many labels have selectors filed under them', () => {
    for (const keys of [2, 20]) {
      const pairs = new Set<string>();
      const idx = new LabelInheritIndex({ onMatchStarted: (s, i) => pairs.add(`${s}|${i}`), onMatchStopped: (s, i) => pairs.delete(`${s}|${i}`) });
      const selectors = new Map<string, Selector>();
      for (let k = 0; k < keys; k++) {
        selectors.set(`v${k}`, parseSelector(`l${k} == 'x'`));
        selectors.set(`h${k}`, parseSelector(`has(l${k}) && m == 'y'`));
      }
      for (const [id, sel] of selectors) idx.updateSelector(id, sel);
      idx.updateParent('p', { m: 'y' });
      const items = new Map<string, Labels>();
      for (let i = 0; i < 3 * keys; i++) {
        const labels = { [`l${i % keys}`]: i % 2 === 0 ? 'x' : 'z', [`l${(i + 1) % keys}`]: 'x' };
        items.set(`i${i}`, labels);
        idx.updateItem(`i${i}`, labels, ['p']);
      }
      const expected = new Set<string>();
      for (const [iid, own] of items) for (const [sid, sel] of selectors) if (sel.evaluate({ m: 'y', ...own })) expected.add(`${sid}|${iid}`);
      expect([...pairs].sort()).toEqual([...expected].sort());
    }
  });

  for (let seed = 1; seed <= 20; seed++) {
    it(`matches a brute-force oracle under random churn (seed ${seed})`, () => {
      const rand = seededRandom(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
      const pairs = new Set<string>();
      const idx = new LabelInheritIndex({
        onMatchStarted: (s, i) => {
          const k = `${s}|${i}`;
          if (pairs.has(k)) throw new Error(`double start ${k}`);
          pairs.add(k);
        },
        onMatchStopped: (s, i) => {
          const k = `${s}|${i}`;
          if (!pairs.delete(k)) throw new Error(`stop without start ${k}`);
        },
      });
      const items = new Map<string, { labels: Labels; parents: string[] }>();
      const parents = new Map<string, Labels>();
      const selectors = new Map<string, Selector>();
      const labels = (): Record<string, string> => {
        const out: Record<string, string> = {};
        for (const k of ['a', 'b', 'c']) if (rand() < 0.5) out[k] = pick(['x', 'y', 'pq']);
        return out;
      };
      for (let step = 0; step < 300; step++) {
        const r = rand();
        if (r < 0.4) {
          const id = `i${Math.floor(rand() * 8)}`;
          if (rand() < 0.2) {
            items.delete(id);
            idx.deleteItem(id);
          } else {
            const v = { labels: labels(), parents: ['p0', 'p1', 'p2'].filter(() => rand() < 0.5) };
            items.set(id, v);
            idx.updateItem(id, v.labels, v.parents);
          }
        } else if (r < 0.6) {
          const name = pick(['p0', 'p1', 'p2']);
          const l = rand() < 0.3 ? undefined : labels();
          if (l === undefined) parents.delete(name);
          else parents.set(name, l);
          idx.updateParent(name, l);
        } else {
          const id = `s${Math.floor(rand() * 6)}`;
          if (rand() < 0.2) {
            selectors.delete(id);
            idx.deleteSelector(id);
          } else {
            const s = parseSelector(pick(SELECTORS));
            selectors.set(id, s);
            idx.updateSelector(id, s);
          }
        }
        const expected = new Set<string>();
        for (const [iid, it] of items) {
          const eff: Record<string, string> = {};
          for (const p of [...it.parents].reverse()) Object.assign(eff, parents.get(p) ?? {});
          Object.assign(eff, it.labels);
          for (const [sid, s] of selectors) if (s.evaluate(eff)) expected.add(`${sid}|${iid}`);
        }
        expect([...pairs].sort()).toEqual([...expected].sort());
      }
    });
  }
});

describe('LabelInheritIndex: an item matching many selectors', () => {
  it('reports every match across the array/Set switch (16 ids) both ways, and the item’s matches follow', () => {
    const pairs = new Set<string>();
    const idx = new LabelInheritIndex({
      onMatchStarted: (s, i) => {
        expect(pairs.has(`${s}|${i}`)).toBe(false);
        pairs.add(`${s}|${i}`);
      },
      onMatchStopped: (s, i) => {
        expect(pairs.delete(`${s}|${i}`)).toBe(true);
      },
    });
    idx.updateItem('i', { a: 'x', n: '1' }, []);
    idx.updateItem('j', { a: 'y', n: '1' }, []);
    for (let s = 0; s < 20; s++) idx.updateSelector(`s${s}`, parseSelector(s % 2 === 0 ? `n == '1'` : `a == 'x' && n == '1'`));
    const of = (item: string): string[] => [...idx.matchesOfItem(item)].sort();
    expect(of('i')).toHaveLength(20);
    expect(of('j')).toHaveLength(10);
    // A relabel drops i to 10 matches (a Set becomes an array), then back to 20.
    idx.updateItem('i', { a: 'z', n: '1' }, []);
    expect(of('i')).toEqual(of('j'));
    idx.updateItem('i', { a: 'x', n: '1' }, []);
    expect(of('i')).toHaveLength(20);
    for (let s = 0; s < 20; s += 3) idx.deleteSelector(`s${s}`);
    expect(of('i')).toHaveLength(13);
    expect([...pairs].filter((p) => p.endsWith('|i'))).toHaveLength(13);
    idx.deleteItem('i');
    expect([...pairs].filter((p) => p.endsWith('|i'))).toEqual([]);
    expect(of('j')).toHaveLength(6);
  });
});
