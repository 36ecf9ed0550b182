import { describe, expect, it } from 'vitest';
import { ALL_SELECTOR_TEXT, NO_MATCH_SELECTOR_TEXT, Selector } from './selector.ts';
import { parseSelector } from './parser.ts';

describe('Selector.uniqueId', () => {
  it.each([
    ['all()', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
    ['', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
    [' (all() )', 's:5y5I3VdRZfDU01O--xXAPx2yxCQQqMf0M6IWug'],
    ['!(has(b) || !has(a))', 's:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q'],
    ['! (has( b)||! has(a ))', 's:Iss0uCleLYv1GSv_pNm7hAO58kE9jAx1NKyG3Q'],
    ['! (a == "b"&&! c != "d")', 's:lh3haoY1ikTRkd4UZu0nWSaIBknYLPJLX16d-w'],
    ['b == "b"', 's:8Fb8HeM2GAxsfgNYVjbNrgSZ2H4cZJI8ODNBVg'],
  ])('pins the upstream ID of %j to %s', (text, id) => {
    expect(parseSelector(text).uniqueId()).toBe(id);
  });
  it('gives equivalent spellings one ID: a==\'b\', a == "b" and ((a == "b"))', () => {
    const ids = new Set([`a=='b'`, `a == "b"`, `((a == "b"))`].map((t) => parseSelector(t).uniqueId()));
    expect(ids.size).toBe(1);
  });
  it('is "s:" plus 38 base64url characters', () => {
    expect(parseSelector('has(x)').uniqueId()).toMatch(/^s:[A-Za-z0-9_-]{38}$/);
  });
  it('is stable across calls on one instance', () => {
    const sel = parseSelector('a in {"x", "y"}');
    expect(sel.uniqueId()).toBe(sel.uniqueId());
    expect(sel.toString()).toBe(sel.toString());
  });
});

describe('Selector', () => {
  it('exposes the normalised tree read-only as root', () => {
    expect(parseSelector('has(a) && !b == "c"').root).toEqual({
      kind: 'and',
      operands: [
        { kind: 'has', label: 'a' },
        { kind: 'not', operand: { kind: 'eq', label: 'b', value: 'c' } },
      ],
    });
  });
  it('can be built from a hand-made tree, which is normalised', () => {
    const sel = new Selector({ kind: 'and', operands: [{ kind: 'in', label: 'a', values: ['y', 'x'] }] });
    expect(sel.toString()).toBe('a in {"x", "y"}');
    expect(sel.uniqueId()).toBe(parseSelector('a in {"x","y"}').uniqueId());
  });
  it('equals compares canonical forms', () => {
    expect(parseSelector('a == "b"').equals(parseSelector("((a=='b'))"))).toBe(true);
    expect(parseSelector('a == "b"').equals(parseSelector('a != "b"'))).toBe(false);
  });
  it('exports the all() and no-match selector texts', () => {
    expect(ALL_SELECTOR_TEXT).toBe('all()');
    expect(parseSelector(ALL_SELECTOR_TEXT).evaluate({})).toBe(true);
    expect(parseSelector(NO_MATCH_SELECTOR_TEXT).evaluate({})).toBe(false);
  });
  it('neverMatches reports selectors whose restrictions cannot be met', () => {
    expect(parseSelector('a == "x" && a == "y"').neverMatches()).toBe(true);
    expect(parseSelector('has(a) && !has(a)').neverMatches()).toBe(true);
    expect(parseSelector('a in {}').neverMatches()).toBe(true);
    expect(parseSelector('a == "x" && b == "y"').neverMatches()).toBe(false);
    expect(parseSelector('all()').neverMatches()).toBe(false);
  });
});
