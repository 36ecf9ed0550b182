import { describe, expect, it } from 'vitest';
import { makeGroup, makeNot, makeSet, normaliseNode, quoteValue, toCanonicalString, type SelectorNode } from './ast.ts';
import { parseSelector } from './parser.ts';

/** calico-semantics §1.5: every row of the canonical-form table. */
const CANONICAL_TABLE: ReadonlyArray<readonly [string, string]> = [
  [`a=='b'`, `a == "b"`],
  [`((a == "b"))`, `a == "b"`],
  [`a == "b" && c == "d"`, `(a == "b" && c == "d")`],
  [`a == "b" && c == "d" || e == "f"`, `((a == "b" && c == "d") || e == "f")`],
  [`(has(x) && has(y)) && has(z)`, `((has(x) && has(y)) && has(z))`],
  [`!(a == "b")`, `!a == "b"`],
  [`!(has(a) || has(b))`, `!(has(a) || has(b))`],
  [`!!has(a)`, `has(a)`],
  [`a in {'b','a','b'}`, `a in {"a", "b"}`],
  [`a in {"b",}`, `a in {"b"}`],
  [`a startswith 'x'`, `a starts with "x"`],
  [`a == 'x"y'`, `a == 'x"y'`],
  [``, `all()`],
];

/** Further cases from Calico's parser_test.go canonicalisation table. */
const UPSTREAM_CANONICAL: ReadonlyArray<readonly [string, string]> = [
  [` all() `, `all()`],
  [` (all() )`, `all()`],
  [`! (has( b)||! has(a ))`, `!(has(b) || !has(a))`],
  [`! (a == "b"&&! c != "d")`, `!(a == "b" && !c != "d")`],
  [`a == "'"`, `a == "'"`],
  [`a == '"'`, `a == '"'`],
  [`a contains '"'`, `a contains '"'`],
  [`a contains "'"`, `a contains "'"`],
  [`a startswith '"'`, `a starts with '"'`],
  [`a endswith "'"`, `a ends with "'"`],
  [`a!='"'`, `a != '"'`],
  [`a in {"d"}`, `a in {"d"}`],
  [`a in {"d", "a", "b"}`, `a in {"a", "b", "d"}`],
  [`a in {"z", "z", "x", "y", "x", "a"}`, `a in {"a", "x", "y", "z"}`],
  [`a not in {'x'}`, `a not in {"x"}`],
  [`a in {}`, `a in {}`],
  [`a in {'"', "'"}`, `a in {'"', "'"}`],
  [`global()`, `global()`],
  [`has(a) && (has(b))`, `(has(a) && has(b))`],
  [`has(a) && (has(b) && has(c))`, `(has(a) && (has(b) && has(c)))`],
  [`!(has(a) && has(b)) || !all()`, `(!(has(a) && has(b)) || !all())`],
];

describe('canonical form (Selector.toString)', () => {
  it.each(CANONICAL_TABLE)('prints %j as %j (§1.5 table)', (input, canonical) => {
    expect(parseSelector(input).toString()).toBe(canonical);
  });
  it.each(UPSTREAM_CANONICAL)('prints %j as %j (upstream table)', (input, canonical) => {
    expect(parseSelector(input).toString()).toBe(canonical);
  });
  it.each([...CANONICAL_TABLE, ...UPSTREAM_CANONICAL])('round-trips the canonical form of %j', (input) => {
    const sel = parseSelector(input);
    const again = parseSelector(sel.toString());
    expect(again.toString()).toBe(sel.toString());
    expect(again.uniqueId()).toBe(sel.uniqueId());
  });
  it('sorts set members by UTF-8 bytes, not UTF-16 code units', () => {
    // U+1F600 is D83D DE00 in UTF-16 (< U+FF5E) but F0 9F 98 80 in UTF-8 (> EF BD 9E).
    expect(parseSelector(`a in {"\u{1F600}", "\uFF5E", "z"}`).toString()).toBe(`a in {"z", "\uFF5E", "\u{1F600}"}`);
  });
  it('sorts set members case-sensitively with upper case first, as bytes do', () => {
    expect(parseSelector(`a in {"b", "B", "a", "A"}`).toString()).toBe(`a in {"A", "B", "a", "b"}`);
  });
  it('quotes with double quotes unless the value contains a double quote', () => {
    expect(quoteValue('x')).toBe('"x"');
    expect(quoteValue("it's")).toBe(`"it's"`);
    expect(quoteValue('say "hi"')).toBe(`'say "hi"'`);
  });
});

describe('tree constructors keep the tree normalised', () => {
  const has = (label: string): SelectorNode => ({ kind: 'has', label });
  it('makeGroup returns a lone operand unwrapped', () => {
    expect(makeGroup('and', [has('a')])).toEqual(has('a'));
    expect(() => makeGroup('or', [])).toThrow(RangeError);
  });
  it('makeNot cancels a double negation', () => {
    expect(makeNot(makeNot(has('a')))).toEqual(has('a'));
  });
  it('makeSet sorts and de-duplicates members', () => {
    expect(makeSet('in', 'a', ['b', 'a', 'b']).values).toEqual(['a', 'b']);
  });
  it('normaliseNode fixes hand-built trees and returns normalised trees unchanged', () => {
    const messy: SelectorNode = {
      kind: 'not',
      operand: { kind: 'not', operand: { kind: 'or', operands: [{ kind: 'in', label: 'a', values: ['y', 'x', 'x'] }] } },
    };
    expect(toCanonicalString(normaliseNode(messy))).toBe('!!a in {"x", "y"}');
    const parsed = parseSelector('(a in {"x", "y"} && !has(b)) || c == "d"').root;
    expect(normaliseNode(parsed)).toBe(parsed);
  });
});
