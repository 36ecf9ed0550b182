import { describe, expect, it } from 'vitest';
import { parseSelector } from './parser.ts';

/**
 * calico-semantics §1.4: every row of the evaluation table, with the label present (with a
 * matching and a non-matching value) and absent.
 */
const EVALUATION_TABLE: ReadonlyArray<{
  readonly sel: string;
  readonly matches: ReadonlyArray<Record<string, string>>;
  readonly nonMatches: ReadonlyArray<Record<string, string>>;
}> = [
  { sel: 'k == "x"', matches: [{ k: 'x' }, { k: 'x', o: 'y' }], nonMatches: [{ k: 'y' }, { k: '' }, {}, { o: 'x' }] },
  { sel: 'k != "x"', matches: [{ k: 'y' }, { k: '' }, {}, { o: 'x' }], nonMatches: [{ k: 'x' }] },
  { sel: 'k in {"x", "y"}', matches: [{ k: 'x' }, { k: 'y' }], nonMatches: [{ k: 'z' }, {}, { o: 'x' }] },
  { sel: 'k in {}', matches: [], nonMatches: [{ k: 'x' }, { k: '' }, {}] },
  { sel: 'k in {"x"}', matches: [{ k: 'x' }], nonMatches: [{ k: 'y' }, {}] },
  { sel: 'k not in {"x", "y"}', matches: [{ k: 'z' }, { k: '' }, {}, { o: 'x' }], nonMatches: [{ k: 'x' }, { k: 'y' }] },
  { sel: 'k not in {}', matches: [{ k: 'x' }, { k: '' }, {}], nonMatches: [] },
  { sel: 'k contains "x"', matches: [{ k: 'x' }, { k: 'axb' }], nonMatches: [{ k: 'y' }, { k: '' }, {}, { o: 'x' }] },
  { sel: 'k contains ""', matches: [{ k: 'x' }, { k: '' }], nonMatches: [{}, { o: 'x' }] },
  { sel: 'k starts with "x"', matches: [{ k: 'x' }, { k: 'xyz' }], nonMatches: [{ k: 'yx' }, { k: '' }, {}] },
  { sel: 'k starts with ""', matches: [{ k: 'x' }, { k: '' }], nonMatches: [{}] },
  { sel: 'k ends with "x"', matches: [{ k: 'x' }, { k: 'zyx' }], nonMatches: [{ k: 'xy' }, { k: '' }, {}] },
  { sel: 'k ends with ""', matches: [{ k: 'x' }, { k: '' }], nonMatches: [{}] },
  { sel: 'has(k)', matches: [{ k: 'x' }, { k: '' }], nonMatches: [{}, { o: 'x' }] },
  { sel: '!has(k)', matches: [{}, { o: 'x' }], nonMatches: [{ k: '' }, { k: 'x' }] },
  { sel: 'all()', matches: [{}, { k: 'x' }], nonMatches: [] },
  { sel: 'global()', matches: [{}, { k: 'x' }], nonMatches: [] },
  { sel: '!all()', matches: [], nonMatches: [{}, { k: 'x' }] },
  { sel: '', matches: [{}, { k: 'x' }], nonMatches: [] },
  // Negation, boolean operators (from Calico's parser_test.go).
  { sel: '!a in {"a"}', matches: [{ a: 'b' }, {}], nonMatches: [{ a: 'a' }] },
  { sel: `a in {"'", '"', "c"}`, matches: [{ a: 'c' }, { a: '"' }, { a: "'" }], nonMatches: [{}, { a: 'e' }] },
  { sel: 'a == "b" && c == "d"', matches: [{ a: 'b', c: 'd' }], nonMatches: [{}, { a: 'b', c: 'e' }, { a: 'c', c: 'd' }, { a: 'b' }] },
  { sel: 'a == "b" || c == "d"', matches: [{ a: 'b', c: 'd' }, { a: 'b' }, { c: 'd' }], nonMatches: [{}, { a: 'e', c: 'e' }] },
  { sel: `a != 'a1' && !b == 'b1'`, matches: [{}], nonMatches: [{ a: 'a1', b: 'b1' }] },
  { sel: `! a == 'a1' || ! b == 'b1'`, matches: [{ a: 'a1' }], nonMatches: [{ a: 'a1', b: 'b1' }] },
  { sel: '!(!has(a) || has(b))', matches: [{ a: 'a' }], nonMatches: [{ a: 'a', b: 'b' }, {}] },
  { sel: '!(has(b) || !has(a))', matches: [{ a: 'a' }], nonMatches: [{ b: 'b' }] },
  { sel: 'has(a) && has(b) && has(c) && has(d) && has(e)', matches: [{ a: '', b: '', c: '', d: '', e: '' }], nonMatches: [{ a: '', b: '', c: '', d: '' }] },
  { sel: 'has(a) || has(b) || has(c) || has(d) || has(e)', matches: [{ e: '' }], nonMatches: [{ f: '' }] },
  { sel: 'has(a) && has(b) && has(c)', matches: [{ a: '', b: '', c: '' }], nonMatches: [{ a: '', b: '' }] },
  { sel: 'has(a) || has(b) || has(c) || has(d)', matches: [{ d: '' }], nonMatches: [{}] },
];

describe('evaluate (§1.4 evaluation table)', () => {
  for (const { sel, matches, nonMatches } of EVALUATION_TABLE) {
    it.each(matches.map((m) => [JSON.stringify(m), m] as const))(`${JSON.stringify(sel)} matches %s`, (_, labels) => {
      expect(parseSelector(sel).evaluate(labels)).toBe(true);
      expect(parseSelector(parseSelector(sel).toString()).evaluate(labels)).toBe(true);
    });
    it.each(nonMatches.map((m) => [JSON.stringify(m), m] as const))(`${JSON.stringify(sel)} does not match %s`, (_, labels) => {
      expect(parseSelector(sel).evaluate(labels)).toBe(false);
      expect(parseSelector(parseSelector(sel).toString()).evaluate(labels)).toBe(false);
    });
  }
});

describe('evaluate: what counts as a present label', () => {
  it('ignores inherited properties of plain objects (constructor, toString, __proto__)', () => {
    for (const key of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
      expect(parseSelector(`has(${key})`).evaluate({})).toBe(false);
      expect(parseSelector(`${key} != "x"`).evaluate({})).toBe(true);
      expect(parseSelector(`${key} not in {"x"}`).evaluate({})).toBe(true);
      expect(parseSelector(`${key} contains ""`).evaluate({})).toBe(false);
    }
  });
  it('sees own properties named like Object.prototype members', () => {
    const labels = JSON.parse('{"__proto__": "p", "constructor": "c"}') as Record<string, string>;
    expect(parseSelector('__proto__ == "p" && constructor == "c"').evaluate(labels)).toBe(true);
  });
  it('ignores string values inherited through a prototype chain', () => {
    const labels = Object.create({ a: 'x' }) as Record<string, string>;
    expect(parseSelector('has(a)').evaluate(labels)).toBe(false);
    expect(parseSelector('a == "x"').evaluate(labels)).toBe(false);
    expect(parseSelector('a != "x"').evaluate(labels)).toBe(true);
    expect(parseSelector('a in {"x", "y"}').evaluate(labels)).toBe(false);
    expect(parseSelector('a not in {"x", "y"}').evaluate(labels)).toBe(true);
    expect(parseSelector('a starts with "x"').evaluate(labels)).toBe(false);
  });
  it('treats an undefined value as absent', () => {
    const labels = { a: undefined } as unknown as Record<string, string>;
    expect(parseSelector('has(a)').evaluate(labels)).toBe(false);
    expect(parseSelector('a != "x"').evaluate(labels)).toBe(true);
    expect(parseSelector('a not in {"x"}').evaluate(labels)).toBe(true);
  });
  it('works on null-prototype objects', () => {
    const labels = Object.assign(Object.create(null) as Record<string, string>, { a: 'b' });
    expect(parseSelector('a == "b" && !has(c)').evaluate(labels)).toBe(true);
  });
  it('short-circuits && and || left to right', () => {
    const reads: string[] = [];
    const labels = new Proxy({} as Record<string, string>, {
      get: (_t, key) => {
        reads.push(String(key));
        return undefined;
      },
    });
    parseSelector('has(a) && has(b)').evaluate(labels);
    parseSelector('!has(c) || has(d)').evaluate(labels);
    expect(reads).toEqual(['a', 'c']);
  });
});
