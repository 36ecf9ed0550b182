import { describe, expect, it } from 'vitest';
import { rejects } from '../../test/selector/rejects.ts';
import { SelectorParseError } from './errors.ts';
import { MAX_NESTING_DEPTH, parseSelector, parseSelectorNode } from './parser.ts';
import { makeUniqueId } from './unique-id.ts';

describe('parser: empty selectors', () => {
  it.each(['', ' ', '\t', '  \t  '])('parses %j as all()', (text) => {
    expect(parseSelectorNode(text)).toEqual({ kind: 'all' });
    expect(parseSelector(text).toString()).toBe('all()');
  });
});

describe('parser: negation', () => {
  it('collapses repeated ! by parity', () => {
    expect(parseSelector('!!has(a)').toString()).toBe('has(a)');
    expect(parseSelector('!!!has(a)').toString()).toBe('!has(a)');
    expect(parseSelector('!! ! has(a)').toString()).toBe('!has(a)');
    expect(parseSelector('! !!has(a)').toString()).toBe('!has(a)');
  });
  it('applies ! to exactly one operation: !a == "b" means !(a == "b")', () => {
    expect(parseSelectorNode('!a == "b"')).toEqual({ kind: 'not', operand: { kind: 'eq', label: 'a', value: 'b' } });
    expect(parseSelector('!a == "b" && has(c)').toString()).toBe('(!a == "b" && has(c))');
  });
  it("keeps a negated parenthesised negation as Calico does: !(!has(a)) is canonically !!has(a), with that ID", () => {
    const sel = parseSelector('!(!has(a))');
    expect(sel.toString()).toBe('!!has(a)');
    expect(sel.uniqueId()).toBe(makeUniqueId('s', '!!has(a)'));
    // Calico v3.30.3's selector.Parse("!(!has(a))").UniqueID(), run for this test.
    expect(sel.uniqueId()).toBe('s:VZFYmDV_Drir7seXQB5vQXF8-34s2nf1b8ItRA');
    expect(sel.uniqueId()).not.toBe(parseSelector('has(a)').uniqueId());
    expect(parseSelector('!((!has(a)))').toString()).toBe('!!has(a)');
    expect(parseSelector('!(!(!a == "b"))').toString()).toBe('!!!a == "b"');
    expect(parseSelector('!(!has(a) && has(b))').toString()).toBe('!(!has(a) && has(b))');
    // Its canonical form is not a fixed point: the printed run of ! collapses on re-parsing.
    expect(parseSelector('!!has(a)').toString()).toBe('has(a)');
  });
  it('toRoundTripString keeps the parentheses a negated negation needs to parse back to the same tree', () => {
    for (const text of ['!(!has(a))', '!(!(!a == "b"))', '(!(!has(a)) && has(b)) || !(!c in {"x"})']) {
      const sel = parseSelector(text);
      const again = parseSelector(sel.toRoundTripString());
      expect(again.root).toEqual(sel.root);
      expect(again.uniqueId()).toBe(sel.uniqueId());
    }
    expect(parseSelector('!(!has(a))').toRoundTripString()).toBe('!(!has(a))');
    expect(parseSelector('!(!(!has(a)))').toRoundTripString()).toBe('!(!(!has(a)))');
  });
  it('evaluates a negated negation as the operand', () => {
    expect(parseSelector('!(!has(a))').evaluate({ a: '' })).toBe(true);
    expect(parseSelector('!(!has(a))').evaluate({})).toBe(false);
  });
  it('rejects a bare !', () => {
    expect(rejects('!').message).toBe('unexpected end of selector at column 2');
  });
});

describe('parser: precedence and grouping', () => {
  it('binds && tighter than ||', () => {
    expect(parseSelector('has(a) || has(b) && has(c)').toString()).toBe('(has(a) || (has(b) && has(c)))');
    expect(parseSelector('has(a) && has(b) || has(c)').toString()).toBe('((has(a) && has(b)) || has(c))');
  });
  it('binds ! tighter than &&', () => {
    expect(parseSelector('!has(a) && has(b)').toString()).toBe('(!has(a) && has(b))');
  });
  it('lets parentheses override precedence', () => {
    expect(parseSelector('has(a) && (has(b) || has(c))').toString()).toBe('(has(a) && (has(b) || has(c)))');
  });
  it('keeps a chain of the same operator as one group', () => {
    expect(parseSelectorNode('has(a) && has(b) && has(c)')).toMatchObject({ kind: 'and', operands: { length: 3 } });
  });
});

describe('parser: set literals', () => {
  it('accepts the empty set {}', () => {
    expect(parseSelector('a in {}').toString()).toBe('a in {}');
    expect(parseSelector('a not in { }').toString()).toBe('a not in {}');
  });
  it('accepts a trailing comma: a in {"b",}', () => {
    expect(parseSelector('a in {"b",}').toString()).toBe('a in {"b"}');
  });
  it.each([
    ['a in {,}', 6, "expected string literal or '}' in set literal but found ','"],
    ['a in {"a" "b"}', 10, 'expected \',\' or \'}\' in set literal but found "b"'],
    ['a in {"a",,"b"}', 10, "expected string literal or '}' in set literal but found ','"],
    ['a in {"a"', 9, "expected ',' or '}' in set literal but found end of selector"],
    ['foo in {"", ||', 12, "expected string literal or '}' in set literal but found '||'"],
  ])('rejects the malformed set in %j', (text, position, reason) => {
    const err = rejects(text);
    expect(err.reason).toBe(reason);
    expect(err.position).toBe(position);
  });
  it('rejects a set operator without a set literal: a in "x" → expected set literal', () => {
    const err = rejects('a in "x"');
    expect(err.message).toBe('expected set literal at column 6');
    expect(rejects('a not in "x"').reason).toBe('expected set literal');
    expect(rejects('a in').message).toBe('expected set literal at column 5');
  });
});

describe('parser: errors', () => {
  it('reports an unexpected token with its text and 1-based column', () => {
    const err = rejects('has(a) && && has(b)');
    expect(err.message).toBe("unexpected token '&&' at column 11");
    expect(err.position).toBe(10);
    expect(err.name).toBe('SelectorParseError');
    expect(err.selector).toBe('has(a) && && has(b)');
  });
  it('reports leftover tokens as unexpected content at end of selector', () => {
    expect(rejects('has(a) has(b)').message).toBe('unexpected content at end of selector at column 8');
    expect(rejects('has(a) )').reason).toBe('unexpected content at end of selector');
    expect(rejects('a == "b" c').position).toBe(9);
  });
  it.each([
    ['b == b', "expected string literal but found 'b'"],
    ['b contains b', "expected string literal but found 'b'"],
    ['b starts with b', "expected string literal but found 'b'"],
    ['b ends with b', "expected string literal but found 'b'"],
    ["'b1' == b", "unexpected token 'b1'"],
    ['b', "expected operator after label 'b' but found end of selector"],
    ['a ', "expected operator after label 'a' but found end of selector"],
    ['a (', "expected operator after label 'a' but found '('"],
    ['foo != ||', "expected string literal but found '||'"],
    ['(', 'unexpected end of selector'],
    ['(a == "foo"', "expected ')' but found end of selector"],
    [')', "unexpected token ')'"],
    ['()', "unexpected token ')'"],
    ['has(foo) &&', 'unexpected end of selector'],
    ['has(foo) ||', 'unexpected end of selector'],
    ['{}', "unexpected token '{'"],
    ['a == "b" || ,', "unexpected token ','"],
  ])('rejects %j with %j', (text, reason) => {
    expect(rejects(text).reason).toBe(reason);
  });
  it('truncates very long token text in messages', () => {
    const err = rejects(`has(a) && "${'x'.repeat(1000)}"`);
    expect(err.message.length).toBeLessThan(120);
  });
  it('rejects non-string input with SelectorParseError', () => {
    expect(() => parseSelector(undefined as unknown as string)).toThrow(SelectorParseError);
    expect(() => parseSelector(null as unknown as string)).toThrow(SelectorParseError);
  });
});

describe('parser: nesting guard', () => {
  const nested = (depth: number): string => `${'('.repeat(depth)}has(a)${')'.repeat(depth)}`;
  it(`accepts ${MAX_NESTING_DEPTH} nested parentheses`, () => {
    expect(parseSelector(nested(MAX_NESTING_DEPTH)).toString()).toBe('has(a)');
  });
  it(`rejects ${MAX_NESTING_DEPTH + 1} nested parentheses with SelectorParseError, not RangeError`, () => {
    const err = rejects(nested(MAX_NESTING_DEPTH + 1));
    expect(err.position).toBe(MAX_NESTING_DEPTH);
  });
  it('rejects 100000 nested parentheses or negated groups without overflowing the stack', () => {
    rejects('('.repeat(100_000));
    rejects('!('.repeat(100_000));
  });
  it('evaluates, prints and restricts a maximally nested selector', () => {
    let text = 'a == "b"';
    for (let i = 0; i < MAX_NESTING_DEPTH; i++) text = `!(a == "b" && ${text})`;
    const sel = parseSelector(text);
    expect(typeof sel.evaluate({ a: 'b' })).toBe('boolean');
    expect(parseSelector(sel.toString()).uniqueId()).toBe(sel.uniqueId());
    expect(sel.labelRestrictions().size).toBe(0);
  });
  it('handles very long flat chains and runs of ! without recursion', () => {
    const chain = Array.from({ length: 50_000 }, (_, i) => `l${i} == "v"`).join(' && ');
    expect(parseSelector(chain).evaluate({ l0: 'x' })).toBe(false);
    expect(parseSelector(`${'!'.repeat(100_001)}has(a)`).toString()).toBe('!has(a)');
  });
});
