import { describe, expect, it } from 'vitest';
import { rejects } from '../../test/selector/rejects.ts';
import { isValidLabel, MAX_LABEL_LENGTH, Tok, tokenize } from './lexer.ts';
import { parseSelector } from './parser.ts';

/** Parses and returns the canonical form, or the error reason. */
function parse(text: string): string {
  return parseSelector(text).toString();
}

describe('tokenizer: whitespace', () => {
  it('treats only space and tab as whitespace', () => {
    expect(parse(' \t a == "b" \t ')).toBe('a == "b"');
  });
  it('rejects a trailing newline', () => {
    const err = rejects('a == "b"\n');
    expect(err.position).toBe(8);
    expect(err.message).toBe('unexpected character U+000A at column 9');
  });
  it('rejects a lone newline', () => {
    expect(rejects('\n').position).toBe(0);
  });
  it('rejects CR anywhere outside a string', () => {
    expect(rejects('a ==\r"b"').position).toBe(4);
    expect(rejects('\ra == "b"').position).toBe(0);
  });
  it('rejects LF between tokens', () => {
    expect(rejects('has(a) &&\nhas(b)').position).toBe(9);
  });
  it('rejects other Unicode whitespace (no-break space, vertical tab, form feed)', () => {
    rejects('a ==\u00a0"b"');
    rejects('a ==\v"b"');
    rejects('a ==\f"b"');
  });
  it('keeps newlines inside a string literal, which may hold any character but its quote', () => {
    const sel = parseSelector('a == "x\ny"');
    expect(sel.evaluate({ a: 'x\ny' })).toBe(true);
  });
});

describe('tokenizer: labels', () => {
  it('accepts every label character [a-zA-Z0-9_./-]', () => {
    expect(parse('aZ09_./- == "x"')).toBe('aZ09_./- == "x"');
  });
  it('accepts a label of exactly 512 characters', () => {
    const label = 'l'.repeat(MAX_LABEL_LENGTH);
    expect(parse(`${label} == "x"`)).toBe(`${label} == "x"`);
    expect(parse(`has(${label})`)).toBe(`has(${label})`);
  });
  it('rejects a label of 513 characters rather than splitting it', () => {
    expect(rejects(`${'l'.repeat(513)} == "x"`).reason).toBe('label longer than 512 characters');
    expect(rejects(`has(${'l'.repeat(513)})`).position).toBe(4);
  });
  it('rejects ":" and non-ASCII characters in labels', () => {
    rejects('a:b == "x"');
    rejects('café == "x"');
  });
  it('treats labels as case-sensitive', () => {
    const sel = parseSelector('App == "x"');
    expect(sel.evaluate({ App: 'x' })).toBe(true);
    expect(sel.evaluate({ app: 'x' })).toBe(false);
  });
  it('isValidLabel agrees with the tokenizer', () => {
    expect(isValidLabel('projectcalico.org/namespace')).toBe(true);
    expect(isValidLabel('')).toBe(false);
    expect(isValidLabel('a b')).toBe(false);
    expect(isValidLabel('l'.repeat(513))).toBe(false);
  });
});

describe('tokenizer: strings', () => {
  it('accepts single- and double-quoted strings', () => {
    expect(parse("a == 'b'")).toBe('a == "b"');
    expect(parse('a == "b"')).toBe('a == "b"');
  });
  it('lets a single-quoted string contain a double quote', () => {
    expect(parseSelector(`a == 'b"c'`).evaluate({ a: 'b"c' })).toBe(true);
  });
  it('has no escape sequences: a backslash-escaped quote ends the string', () => {
    const err = rejects('a == "b\\"c"');
    expect(err.reason).toBe('unterminated string');
    expect(err.position).toBe(10);
  });
  it('keeps backslashes literally', () => {
    expect(parseSelector("a == 'b\\n'").evaluate({ a: 'b\\n' })).toBe(true);
  });
  it('reports an unterminated string at its opening quote', () => {
    expect(rejects('a == "FOO').message).toBe('unterminated string at column 6');
    expect(rejects(`"FOO'`).position).toBe(0);
    expect(rejects(`'FOO`).position).toBe(0);
  });
  it('accepts the empty string', () => {
    expect(parse("a == ''")).toBe('a == ""');
  });
});

describe('tokenizer: symbol operators', () => {
  it('tokenizes == != ! && || ( ) { } ,', () => {
    const kinds = tokenize('== != ! && || ( ) { } ,').map((t) => t.kind);
    expect(kinds).toEqual([Tok.Eq, Tok.Ne, Tok.Not, Tok.And, Tok.Or, Tok.LParen, Tok.RParen, Tok.LBrace, Tok.RBrace, Tok.Comma, Tok.EOF]);
  });
  it.each([
    ['a = "b"', 2, "expected '==' but found lone '='"],
    ['has(a) & has(b)', 7, "expected '&&' but found lone '&'"],
    ['has(a) | has(b)', 7, "expected '||' but found lone '|'"],
    ['foo == "bar" &', 13, "expected '&&' but found lone '&'"],
  ])('rejects a lone = & or | in %j', (text, position, reason) => {
    const err = rejects(text);
    expect(err.position).toBe(position);
    expect(err.reason).toBe(reason);
  });
  it('reads "!" directly followed by "=" as !=', () => {
    expect(parse('a!="b"')).toBe('a != "b"');
    expect(tokenize('!=').map((t) => t.kind)).toEqual([Tok.Ne, Tok.EOF]);
  });
  it('reads "! =" with a space as negation followed by a lone =', () => {
    rejects('a ! = "b"');
  });
  it('reads "!" before anything else as negation', () => {
    expect(tokenize('!has(a)').map((t) => t.kind)).toEqual([Tok.Not, Tok.Has, Tok.EOF]);
  });
});

describe('tokenizer: function keywords', () => {
  it('requires has( to be contiguous: "has (a)" is an error', () => {
    expect(rejects('has (a)').reason).toBe("expected operator after label 'has' but found '('");
  });
  it('requires all( to be contiguous: "all ()" is an error', () => {
    rejects('all ()');
  });
  it('requires global( to be contiguous: "global ()" is an error', () => {
    rejects('global ()');
  });
  it('allows whitespace inside the parentheses: has( a ), all( ), global( )', () => {
    expect(parse('has( a )')).toBe('has(a)');
    expect(parse('has(\ta\t)')).toBe('has(a)');
    expect(parse('all( )')).toBe('all()');
    expect(parse('global(  )')).toBe('global()');
  });
  it('rejects has() without a label and has(a without a closing paren', () => {
    expect(rejects('has()').position).toBe(4);
    expect(rejects('has(a').reason).toBe("expected ')' to close has(");
    expect(rejects('has(a b)').position).toBe(6);
    expect(rejects('all(x)').reason).toBe("expected ')' to close all(");
  });
  it('treats keywords as case-sensitive: HAS(a) is an error', () => {
    rejects('HAS(a)');
    rejects('All()');
  });
});

describe('tokenizer: word operators are context-sensitive', () => {
  it.each([
    ['in in {"in"}', 'in in {"in"}'],
    ['contains contains "contains"', 'contains contains "contains"'],
    ['not in {"x"}', 'not in {"x"}'],
    ['not not in {"x"}', 'not not in {"x"}'],
    ['has == "x"', 'has == "x"'],
    ['all == "x"', 'all == "x"'],
    ['global == "x"', 'global == "x"'],
    ['starts starts with "s"', 'starts starts with "s"'],
    ['has(in) && in == "x"', '(has(in) && in == "x")'],
  ])('treats the words as plain labels where no operator is expected: %j', (text, canonical) => {
    expect(parse(text)).toBe(canonical);
  });
  it('requires whitespace between label and word operator: "acontains" is one label', () => {
    expect(rejects('acontains "x"').reason).toBe(`expected operator after label 'acontains' but found "x"`);
    rejects('ain {"x"}');
  });
  it.each(['a inx {"x"}', 'a containsx "x"', 'a startswithx "x"', 'a notin-x {"x"}', 'a in_ {"x"}'])(
    'requires a word boundary after the operator: %j is an error',
    (text) => {
      expect(rejects(text).position).toBe(2);
    },
  );
  it.each([
    ['a contains"x"', 'a contains "x"'],
    ['a in{"x"}', 'a in {"x"}'],
    ['a not in{"x"}', 'a not in {"x"}'],
    ['a starts with"x"', 'a starts with "x"'],
    ["a ends with'x'", 'a ends with "x"'],
  ])('accepts punctuation as the boundary after an operator: %j', (text, canonical) => {
    expect(parse(text)).toBe(canonical);
  });
  it.each([
    ['a startswith "x"', 'a starts with "x"'],
    ['a endswith "x"', 'a ends with "x"'],
    ['a notin {"x"}', 'a not in {"x"}'],
    ['a starts \t with "x"', 'a starts with "x"'],
    ['a not   in {"x"}', 'a not in {"x"}'],
  ])('accepts two-word operators with any or no whitespace: %j', (text, canonical) => {
    expect(parse(text)).toBe(canonical);
  });
  it('treats word operators as case-sensitive: "a IN {...}" is an error', () => {
    rejects('a IN {"x"}');
    rejects('a Contains "x"');
    rejects('a starts With "x"');
  });
  it('rejects a label followed by another label', () => {
    const err = rejects('a b');
    expect(err.position).toBe(2);
    expect(err.reason).toBe("expected operator after label 'a' but found 'b'");
  });
  it('rejects a label followed by an incomplete two-word operator', () => {
    rejects('a starts "x"');
    rejects('a not {"x"}');
    rejects('a ends');
  });
});

describe('tokenizer: token positions', () => {
  it('records start and end offsets, quotes included', () => {
    expect(tokenize(`a == 'b'`)).toEqual([
      { kind: Tok.Label, start: 0, end: 1, value: 'a' },
      { kind: Tok.Eq, start: 2, end: 4, value: '' },
      { kind: Tok.String, start: 5, end: 8, value: 'b' },
      { kind: Tok.EOF, start: 8, end: 8, value: '' },
    ]);
  });
  it('reports an unexpected character at its offset', () => {
    expect(rejects('a == "b" && %').message).toBe("unexpected character '%' at column 13");
  });
});
