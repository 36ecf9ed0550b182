import { describe, expect, it } from 'vitest';
import { parseSelector } from './parser.ts';
import { prefixLabels } from './prefix-labels.ts';

/** Calico's PrefixVisitor table (parser_test.go), prefix "visited/". */
const VISITOR_TABLE: ReadonlyArray<readonly [string, string]> = [
  ["k == 'v'", 'visited/k == "v"'],
  ["k != 'v'", 'visited/k != "v"'],
  ["k contains 'v'", 'visited/k contains "v"'],
  ["k starts with 'v'", 'visited/k starts with "v"'],
  ["k ends with 'v'", 'visited/k ends with "v"'],
  ["k == 'v' && x == 'y'", '(visited/k == "v" && visited/x == "y")'],
  ["k == 'v' || has(x)", '(visited/k == "v" || has(visited/x))'],
  ["!(k == 'v')", '!visited/k == "v"'],
  ["k in {'v'}", 'visited/k in {"v"}'],
  ["k not in {'v'}", 'visited/k not in {"v"}'],
  [
    "!(!(k == 'v' && has(t) || all()) && (a in {'b', 'c'}))",
    '!(!((visited/k == "v" && has(visited/t)) || all()) && visited/a in {"b", "c"})',
  ],
];

describe('prefixLabels (Calico PrefixVisitor)', () => {
  it.each(VISITOR_TABLE)('rewrites %j as %j', (input, output) => {
    expect(prefixLabels(parseSelector(input), 'visited/').toString()).toBe(output);
  });
  it('leaves the input selector unchanged', () => {
    const sel = parseSelector('env == "prod"');
    const prefixed = prefixLabels(sel, 'pcns.');
    expect(sel.toString()).toBe('env == "prod"');
    expect(prefixed.evaluate({ 'pcns.env': 'prod' })).toBe(true);
    expect(prefixed.evaluate({ env: 'prod' })).toBe(false);
    expect(prefixed.uniqueId()).toBe(parseSelector('pcns.env == "prod"').uniqueId());
  });
  it('rejects a prefix that is not made of label characters', () => {
    expect(() => prefixLabels(parseSelector('has(a)'), 'bad prefix')).toThrow(RangeError);
  });
});
