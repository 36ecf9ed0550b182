/**
 * The selector tokenizer: turns selector text into a flat token list ending in `EOF`.
 *
 * Mirrors Calico's hand-written tokenizer (`libcalico-go/lib/selector/tokenizer/tokenizer.go`,
 * PR #9564), quirks included, because Tessera must accept and reject exactly what Calico does:
 * - Whitespace is only space and tab. CR and LF outside a string literal are errors, even a
 *   trailing newline (Calico's `Parse()` does not trim; only `Normalise()` does).
 * - Labels are `[a-zA-Z0-9_./-]{1,512}`; a longer run is an error, not two labels.
 * - Strings are `"…"` or `'…'` with no escapes; a string ends at the first matching quote
 *   and may hold anything else, including the other quote and newlines.
 * - `has(`, `all(` and `global(` are only keywords when the `(` follows immediately.
 * - The word operators (`contains`, `starts with`, `ends with`, `in`, `not in`) are only
 *   recognised directly after a LABEL token, need a word boundary after them, and the
 *   two-word ones may be written without the space (`startswith`, `notin`). Anywhere else the
 *   same words are plain labels, so `in in {"in"}` is a valid selector.
 * - After a LABEL, anything that is neither a symbol nor a word operator is an error, which
 *   is how "a label followed by a label" is rejected.
 *
 * Like Calico, the whole input is tokenized before parsing starts, so a tokenizer error
 * anywhere wins over a grammar error earlier in the text.
 */
import { SelectorParseError } from './errors.ts';

/** Token kinds. Numbers rather than strings so the parser's switches stay cheap. */
export const Tok = {
  Label: 1,
  String: 2,
  LBrace: 3,
  RBrace: 4,
  Comma: 5,
  Eq: 6,
  Ne: 7,
  In: 8,
  Not: 9,
  NotIn: 10,
  Contains: 11,
  StartsWith: 12,
  EndsWith: 13,
  All: 14,
  Has: 15,
  LParen: 16,
  RParen: 17,
  And: 18,
  Or: 19,
  Global: 20,
  EOF: 21,
} as const;
export type TokKind = (typeof Tok)[keyof typeof Tok];

/**
 * One token. `start`/`end` are UTF-16 offsets into the input (`end` exclusive) covering the
 * token's full text, quotes included. `value` is the label name for `Label` and `Has`, the
 * unquoted contents for `String`, and `''` otherwise.
 */
export interface Token {
  readonly kind: TokKind;
  readonly start: number;
  readonly end: number;
  readonly value: string;
}

/** Calico: tokenizer.MaxLabelLength = 512. */
export const MAX_LABEL_LENGTH = 512;

/** `labelChar[c]` is 1 for the ASCII codes allowed in a label: `[a-zA-Z0-9_./-]`. */
const labelChar = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[a-zA-Z0-9_./-]/.test(ch)) labelChar[c] = 1;
}

/** True if `code` (a UTF-16 code unit) may appear in a label. */
export function isLabelChar(code: number): boolean {
  return code < 128 && labelChar[code] === 1;
}

/** True if `text` is a whole, valid label (Calico's `tokenizer.ValidLabel`). */
export function isValidLabel(text: string): boolean {
  if (text.length === 0 || text.length > MAX_LABEL_LENGTH) return false;
  for (let i = 0; i < text.length; i++) if (!isLabelChar(text.charCodeAt(i))) return false;
  return true;
}

const SPACE = 0x20;
const TAB = 0x09;

function skipWhitespace(input: string, i: number): number {
  while (i < input.length) {
    const c = input.charCodeAt(i);
    if (c !== SPACE && c !== TAB) break;
    i++;
  }
  return i;
}

/** End (exclusive) of the run of label characters starting at `i`. */
function labelEnd(input: string, i: number): number {
  while (i < input.length && isLabelChar(input.charCodeAt(i))) i++;
  return i;
}

/**
 * Matches a word operator whose first word is the label-character run `input[i, runEnd)`.
 * Returns its kind and end offset, or undefined.
 *
 * Calico (cutPrefixCheckBreak / cutMultiWordPrefixCheckBreak) requires a word boundary
 * after the operator's last word only, and allows optional whitespace between the words of
 * `starts with`, `ends with` and `not in`. In terms of label-character runs that is: the run
 * is the whole operator (`contains`, `in`, `startswith`, `endswith`, `notin`), or the run is
 * the first word and, after optional whitespace, the next run is exactly the second word.
 */
function matchWordOperator(input: string, i: number, runEnd: number): { kind: TokKind; end: number } | undefined {
  if (runEnd - i > 10) return undefined;
  const word = input.slice(i, runEnd);
  const single = SINGLE_WORD_OPERATORS.get(word);
  if (single !== undefined) return { kind: single, end: runEnd };
  const pair = TWO_WORD_OPERATORS.get(word);
  if (pair === undefined) return undefined;
  const second = skipWhitespace(input, runEnd);
  const secondEnd = labelEnd(input, second);
  if (secondEnd - second !== pair.second.length || !input.startsWith(pair.second, second)) return undefined;
  return { kind: pair.kind, end: secondEnd };
}

const SINGLE_WORD_OPERATORS: ReadonlyMap<string, TokKind> = new Map<string, TokKind>([
  ['contains', Tok.Contains],
  ['in', Tok.In],
  ['startswith', Tok.StartsWith],
  ['endswith', Tok.EndsWith],
  ['notin', Tok.NotIn],
]);

const TWO_WORD_OPERATORS: ReadonlyMap<string, { readonly second: string; readonly kind: TokKind }> = new Map([
  ['starts', { second: 'with', kind: Tok.StartsWith }],
  ['ends', { second: 'with', kind: Tok.EndsWith }],
  ['not', { second: 'in', kind: Tok.NotIn }],
]);

/** Describes the character at `i` for an error message: `'%'`, or `U+000A` if unprintable. */
export function describeChar(input: string, i: number): string {
  const cp = input.codePointAt(i) ?? 0;
  if (cp >= 0x21 && cp <= 0x7e) return `'${String.fromCharCode(cp)}'`;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Reads the label inside `has(` starting at `i` and returns its end.
 * Calico: cutIdentifier, which fails on an empty or over-long label.
 */
function readHasLabel(input: string, i: number): number {
  const end = labelEnd(input, i);
  if (end === i) {
    const found = i >= input.length ? 'end of selector' : describeChar(input, i);
    throw new SelectorParseError(`expected label inside has( but found ${found}`, i, input);
  }
  if (end - i > MAX_LABEL_LENGTH) {
    throw new SelectorParseError(`label longer than ${MAX_LABEL_LENGTH} characters`, i, input);
  }
  return end;
}

/** Tokenizes `input`; throws `SelectorParseError` on the first lexical error. */
export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  const n = input.length;
  let i = 0;
  let lastKind = 0;
  const push = (kind: TokKind, start: number, end: number, value: string): void => {
    tokens.push({ kind, start, end, value });
    lastKind = kind;
    i = end;
  };
  for (;;) {
    i = skipWhitespace(input, i);
    if (i >= n) {
      tokens.push({ kind: Tok.EOF, start: n, end: n, value: '' });
      return tokens;
    }
    const c = input.charCodeAt(i);
    switch (c) {
      case 0x28 /* ( */:
        push(Tok.LParen, i, i + 1, '');
        continue;
      case 0x29 /* ) */:
        push(Tok.RParen, i, i + 1, '');
        continue;
      case 0x7b /* { */:
        push(Tok.LBrace, i, i + 1, '');
        continue;
      case 0x7d /* } */:
        push(Tok.RBrace, i, i + 1, '');
        continue;
      case 0x2c /* , */:
        push(Tok.Comma, i, i + 1, '');
        continue;
      case 0x22 /* " */:
      case 0x27 /* ' */: {
        const close = input.indexOf(c === 0x22 ? '"' : "'", i + 1);
        if (close < 0) throw new SelectorParseError('unterminated string', i, input);
        push(Tok.String, i, close + 1, input.slice(i + 1, close));
        continue;
      }
      case 0x3d /* = */:
        if (input.charCodeAt(i + 1) !== 0x3d) throw new SelectorParseError("expected '==' but found lone '='", i, input);
        push(Tok.Eq, i, i + 2, '');
        continue;
      case 0x21 /* ! */:
        if (input.charCodeAt(i + 1) === 0x3d) push(Tok.Ne, i, i + 2, '');
        else push(Tok.Not, i, i + 1, '');
        continue;
      case 0x26 /* & */:
        if (input.charCodeAt(i + 1) !== 0x26) throw new SelectorParseError("expected '&&' but found lone '&'", i, input);
        push(Tok.And, i, i + 2, '');
        continue;
      case 0x7c /* | */:
        if (input.charCodeAt(i + 1) !== 0x7c) throw new SelectorParseError("expected '||' but found lone '|'", i, input);
        push(Tok.Or, i, i + 2, '');
        continue;
    }
    if (!isLabelChar(c)) throw new SelectorParseError(`unexpected character ${describeChar(input, i)}`, i, input);
    // A run of label characters: a word operator, a function keyword or a label.
    const runEnd = labelEnd(input, i);
    if (lastKind === Tok.Label) {
      // Only a word operator may follow a label here (symbols were handled above).
      const op = matchWordOperator(input, i, runEnd);
      if (op !== undefined) {
        push(op.kind, i, op.end, '');
        continue;
      }
      const label = tokens[tokens.length - 1]?.value ?? '';
      const found = `'${truncate(input.slice(i, runEnd))}'`;
      throw new SelectorParseError(`expected operator after label '${truncate(label)}' but found ${found}`, i, input);
    }
    // `has(`, `all(`, `global(`: the word must be followed directly by `(`; with a space it
    // is a label (that then lacks an operator), as in Calico.
    if (input.charCodeAt(runEnd) === 0x28 /* ( */) {
      const word = runEnd - i <= 6 ? input.slice(i, runEnd) : '';
      if (word === 'has') {
        const labelStart = skipWhitespace(input, runEnd + 1);
        const end = readHasLabel(input, labelStart);
        const close = skipWhitespace(input, end);
        if (input.charCodeAt(close) !== 0x29) throw new SelectorParseError("expected ')' to close has(", close, input);
        push(Tok.Has, i, close + 1, input.slice(labelStart, end));
        continue;
      }
      if (word === 'all' || word === 'global') {
        const close = skipWhitespace(input, runEnd + 1);
        if (input.charCodeAt(close) !== 0x29) throw new SelectorParseError(`expected ')' to close ${word}(`, close, input);
        push(word === 'all' ? Tok.All : Tok.Global, i, close + 1, '');
        continue;
      }
    }
    if (runEnd - i > MAX_LABEL_LENGTH) {
      throw new SelectorParseError(`label longer than ${MAX_LABEL_LENGTH} characters`, i, input);
    }
    push(Tok.Label, i, runEnd, input.slice(i, runEnd));
  }
}

/** Shortens long text for error messages so a 1 MB label does not produce a 1 MB message. */
export function truncate(text: string, max = 40): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
