import { describe, expect, it } from 'vitest';
import type { LabelRestriction } from './label-restrictions.ts';
import { parseSelector } from './parser.ts';

type Expected = Record<string, { present?: boolean; absent?: boolean; values?: string[] }>;

function restrictionsOf(text: string): Expected {
  const out: Expected = {};
  for (const [label, r] of parseSelector(text).labelRestrictions()) out[label] = simplify(r);
  return out;
}

function simplify(r: LabelRestriction): Expected[string] {
  const s: Expected[string] = {};
  if (r.mustBePresent) s.present = true;
  if (r.mustBeAbsent) s.absent = true;
  if (r.mustHaveOneOfValues !== undefined) s.values = [...r.mustHaveOneOfValues].sort();
  return s;
}

/** Calico's label_restriction_test.go table, plus a few more. */
const TABLE: ReadonlyArray<readonly [string, Expected]> = [
  // Leaves.
  ['', {}],
  ['all()', {}],
  ['global()', {}],
  ["a == 'value'", { a: { present: true, values: ['value'] } }],
  ['has(a)', { a: { present: true } }],
  ["a in {'v1','v2'}", { a: { present: true, values: ['v1', 'v2'] } }],
  ['a in {}', { a: { present: true, values: [] } }],
  ["a not in {'v1','v2'}", {}],
  ["a contains 'foo'", { a: { present: true } }],
  ["a ends with 'foo'", { a: { present: true } }],
  ["a starts with 'foo'", { a: { present: true } }],
  ["a != 'value'", {}],
  // AND: union of constraints, value lists intersected.
  ["a == 'v1' && a == 'v1'", { a: { present: true, values: ['v1'] } }],
  ["a == 'v1' && a == 'v2'", { a: { present: true, values: [] } }],
  ["a == 'v1' && has(a)", { a: { present: true, values: ['v1'] } }],
  ["has(a) && a == 'v1'", { a: { present: true, values: ['v1'] } }],
  ["a in {'v1','v2'} && a in {'v2','v3'} ", { a: { present: true, values: ['v2'] } }],
  ["a in {'v1','v2', 'v3'} && a in {'v2','v3'} ", { a: { present: true, values: ['v2', 'v3'] } }],
  ['has(a) && !has(a)', { a: { present: true, absent: true } }],
  ["a == 'v1' && b == 'v2'", { a: { present: true, values: ['v1'] }, b: { present: true, values: ['v2'] } }],
  ["a == 'v1' && all()", { a: { present: true, values: ['v1'] } }],
  ["all() && a == 'v1'", { a: { present: true, values: ['v1'] } }],
  ["a != 'v1' && has(b)", { b: { present: true } }],
  // OR: only constraints common to every branch, value lists unioned.
  ["a == 'v1' || a == 'v2'", { a: { present: true, values: ['v1', 'v2'] } }],
  ["has(a) || a == 'v2'", { a: { present: true } }],
  ["a=='v2' || has(a)", { a: { present: true } }],
  ["a=='v2' || has(b)", {}],
  ["a=='v2' || (has(b) && has(a))", { a: { present: true } }],
  ["a == 'v1' || b == 'v2'", {}],
  ["a == 'v1' || all()", {}],
  ["all() || b == 'v2'", {}],
  ['!has(a) || !has(a)', { a: { absent: true } }],
  ['!has(a) || has(a)', {}],
  ["a in {'x'} || a in {'y'} || a in {'z', 'x'}", { a: { present: true, values: ['x', 'y', 'z'] } }],
  // NOT: only !has() inverts.
  ["!(a == 'value')", {}],
  ['!has(a)', { a: { absent: true } }],
  ['!!has(a)', { a: { present: true } }],
  // Calico: only `!has` inverts; a negated negation (two `not` nodes, ast.ts) restricts nothing.
  ['!(!has(a))', {}],
  ['!(has(a) && has(b))', {}],
  ["a not in {'x'} && !has(b)", { b: { absent: true } }],
];

describe('Selector.labelRestrictions (§1.10)', () => {
  it.each(TABLE)('%j restricts labels to %j', (text, expected) => {
    expect(restrictionsOf(text)).toEqual(expected);
  });
  it.each(TABLE.filter(([t]) => t !== ''))('is unchanged by an "all() &&" prefix: %j', (text, expected) => {
    expect(restrictionsOf(`all() && (${text})`)).toEqual(expected);
  });
  it('returns the same restrictions when asked twice, including after another selector', () => {
    const a = parseSelector("a in {'x','y'} && a in {'y'}");
    const b = parseSelector('has(b)');
    const first = [...a.labelRestrictions()];
    b.labelRestrictions();
    expect([...a.labelRestrictions()]).toEqual(first);
    expect(a.labelRestrictions()).toBe(a.labelRestrictions());
  });
});
