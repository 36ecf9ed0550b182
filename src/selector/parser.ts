/**
 * Recursive-descent parser for Calico selectors
 * (`libcalico-go/lib/selector/parser/parser.go`, grammar in calico-semantics §1.1):
 *
 *   selector  := or_expr? EOF            (empty or whitespace-only = all())
 *   or_expr   := and_expr ("||" and_expr)*
 *   and_expr  := operation ("&&" operation)*
 *   operation := "!"* primary            (only the parity of "!" counts)
 *   primary   := has(l) | all() | global() | l cmp STRING | l setop "{" set "}" | "(" or_expr ")"
 *
 * Guarantees:
 * - Accepts exactly the language Calico accepts, and throws `SelectorParseError` (never
 *   anything else) for everything else — with one deliberate limit: parentheses may nest
 *   at most `MAX_NESTING_DEPTH` deep, so hostile input cannot overflow the JS stack
 *   (Go's growable stacks let Calico go deeper; no real selector comes close).
 * - Returns a normalised tree (see ast.ts): single-operand groups vanish, a run of `!`
 *   collapses by parity, set members are sorted and unique. A `!` before a parenthesised
 *   negation is kept, as Calico keeps it: `!(!has(a))` is two `not` nodes.
 */
import {
  ALL_NODE,
  GLOBAL_NODE,
  makeGroup,
  makeSet,
  type SelectorNode,
  type ValueOperator,
} from './ast.ts';
import { SelectorParseError } from './errors.ts';
import { Tok, tokenize, truncate, type Token, type TokKind } from './lexer.ts';
import { Selector } from './selector.ts';

/**
 * Maximum depth of nested parentheses. Each level costs three JS stack frames here and one
 * or two in the compiled evaluator and printer, so 1000 stays far below Node's default stack.
 */
export const MAX_NESTING_DEPTH = 1000;

const VALUE_OPERATORS: Partial<Record<TokKind, ValueOperator>> = {
  [Tok.Eq]: 'eq',
  [Tok.Ne]: 'ne',
  [Tok.Contains]: 'contains',
  [Tok.StartsWith]: 'startsWith',
  [Tok.EndsWith]: 'endsWith',
};

/**
 * Parses and compiles a selector (Calico `selector.Parse`). Throws `SelectorParseError`, and
 * nothing else, for any input that Calico would reject.
 */
export function parseSelector(text: string): Selector {
  return new Selector(parseSelectorNode(text));
}

/** Parses selector text into a normalised syntax tree. Throws `SelectorParseError`. */
export function parseSelectorNode(text: string): SelectorNode {
  if (typeof text !== 'string') {
    throw new SelectorParseError(`selector must be a string, not ${text === null ? 'null' : typeof text}`, 0, String(text));
  }
  const tokens = tokenize(text);
  const parser = new Parser(text, tokens);
  return parser.parseRoot();
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(
    private readonly input: string,
    private readonly tokens: readonly Token[],
  ) {}

  parseRoot(): SelectorNode {
    if (this.peek().kind === Tok.EOF) return ALL_NODE;
    const node = this.parseOr();
    const rest = this.peek();
    if (rest.kind !== Tok.EOF) this.fail('unexpected content at end of selector', rest);
    return node;
  }

  /** The current token. The list always ends in EOF and the parser never moves past it. */
  private peek(offset = 0): Token {
    const i = Math.min(this.pos + offset, this.tokens.length - 1);
    return this.tokens[i] as Token;
  }

  private fail(reason: string, at: Token): never {
    throw new SelectorParseError(reason, at.start, this.input);
  }

  /** `'&&'`, `"x"` (a string token shows its own quotes) or `end of selector`, for messages. */
  private describe(t: Token): string {
    if (t.kind === Tok.EOF) return 'end of selector';
    const text = truncate(this.input.slice(t.start, t.end));
    return t.kind === Tok.String ? text : `'${text}'`;
  }

  private parseOr(): SelectorNode {
    const first = this.parseAnd();
    if (this.peek().kind !== Tok.Or) return first;
    const operands = [first];
    while (this.peek().kind === Tok.Or) {
      this.pos++;
      operands.push(this.parseAnd());
    }
    return makeGroup('or', operands);
  }

  private parseAnd(): SelectorNode {
    const first = this.parseOperation();
    if (this.peek().kind !== Tok.And) return first;
    const operands = [first];
    while (this.peek().kind === Tok.And) {
      this.pos++;
      operands.push(this.parseOperation());
    }
    return makeGroup('and', operands);
  }

  private parseOperation(): SelectorNode {
    let negated = false;
    while (this.peek().kind === Tok.Not) {
      negated = !negated;
      this.pos++;
    }
    const node = this.parsePrimary();
    // Calico wraps whatever the primary is, a parenthesised negation included.
    return negated ? { kind: 'not', operand: node } : node;
  }

  private parsePrimary(): SelectorNode {
    const t = this.peek();
    switch (t.kind) {
      case Tok.Has:
        this.pos++;
        return { kind: 'has', label: t.value };
      case Tok.All:
        this.pos++;
        return ALL_NODE;
      case Tok.Global:
        this.pos++;
        return GLOBAL_NODE;
      case Tok.Label:
        return this.parseLabelOperation(t);
      case Tok.LParen: {
        if (this.depth >= MAX_NESTING_DEPTH) {
          this.fail(`parentheses nested deeper than ${MAX_NESTING_DEPTH} levels`, t);
        }
        this.depth++;
        this.pos++;
        const node = this.parseOr();
        const close = this.peek();
        if (close.kind !== Tok.RParen) this.fail(`expected ')' but found ${this.describe(close)}`, close);
        this.pos++;
        this.depth--;
        return node;
      }
      case Tok.EOF:
        return this.fail('unexpected end of selector', t);
      default:
        return this.fail(`unexpected token ${this.describe(t)}`, t);
    }
  }

  /** `label OP "value"` or `label (not) in {…}`; `labelTok` is the current token. */
  private parseLabelOperation(labelTok: Token): SelectorNode {
    const op = this.peek(1);
    const label = labelTok.value;
    const valueOp = VALUE_OPERATORS[op.kind];
    if (valueOp !== undefined) {
      const value = this.peek(2);
      if (value.kind !== Tok.String) this.fail(`expected string literal but found ${this.describe(value)}`, value);
      this.pos += 3;
      return { kind: valueOp, label, value: value.value };
    }
    if (op.kind === Tok.In || op.kind === Tok.NotIn) {
      const brace = this.peek(2);
      if (brace.kind !== Tok.LBrace) this.fail('expected set literal', brace);
      this.pos += 3;
      const values: string[] = [];
      // Calico: members separated by commas, one trailing comma allowed, `{}` is empty.
      for (;;) {
        const member = this.peek();
        if (member.kind !== Tok.String) break;
        values.push(member.value);
        this.pos++;
        if (this.peek().kind !== Tok.Comma) break;
        this.pos++;
      }
      const close = this.peek();
      if (close.kind !== Tok.RBrace) {
        const prev = this.tokens[this.pos - 1] as Token;
        const wanted = prev.kind === Tok.String ? "',' or '}'" : "string literal or '}'";
        this.fail(`expected ${wanted} in set literal but found ${this.describe(close)}`, close);
      }
      this.pos++;
      return makeSet(op.kind === Tok.In ? 'in' : 'notIn', label, values);
    }
    if (op.kind === Tok.EOF) this.fail(`expected operator after label '${truncate(label)}' but found end of selector`, op);
    return this.fail(`expected operator after label '${truncate(label)}' but found ${this.describe(op)}`, op);
  }
}
