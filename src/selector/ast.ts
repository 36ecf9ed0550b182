/**
 * Selector syntax tree: node types, the constructors that keep it normalised, and the
 * canonical printer (Calico's `Selector.String()`, `libcalico-go/lib/selector/parser/ast.go`).
 *
 * Invariants of a normalised tree (every tree a `Selector` holds is normalised):
 * - `and`/`or` nodes have at least two operands. A group with one operand is replaced by it,
 *   exactly as Calico's parser does; nested groups are kept, not flattened, because the
 *   canonical form (and so the unique ID and the IP set name) depends on the nesting.
 * - A `not` wraps another `not` only as Calico's parser builds one. A run of `!` collapses
 *   by parity (`!!has(a)` is `has(a)`), but a negated parenthesised negation keeps both
 *   nodes: `!(!has(a))` prints `!!has(a)`, and that canonical form — Calico's, and so the
 *   selector's unique ID and IP set name — is not itself a fixed point: it re-parses to
 *   `has(a)`. Code that must re-parse a printed selector into the same tree uses
 *   `toRoundTripString`, which keeps those parentheses.
 * - Set members (`in`/`not in`) are de-duplicated and sorted by UTF-8 bytes, as Calico's
 *   `ConvertToStringSetInPlace` does, so the canonical form does not depend on input order.
 *
 * Nodes are plain frozen-by-convention data (`readonly` everywhere) so later code can walk
 * and rewrite trees (see `prefixLabels`) without touching evaluation internals.
 */
import { compareUtf8 } from './byte-order.ts';

/** `all()`: matches everything. */
export interface AllNode {
  readonly kind: 'all';
}

/** `global()`: like `all()` except inside a rule's namespaceSelector (rewritten there, §3.8). */
export interface GlobalNode {
  readonly kind: 'global';
}

/** `has(label)`: the label is present, whatever its value (even ""). */
export interface HasNode {
  readonly kind: 'has';
  readonly label: string;
}

/** The leaf operators that compare a label's value with one string. */
export type ValueOperator = 'eq' | 'ne' | 'contains' | 'startsWith' | 'endsWith';

/** `label OP "value"` for `==`, `!=`, `contains`, `starts with`, `ends with`. */
export interface ValueNode {
  readonly kind: ValueOperator;
  readonly label: string;
  readonly value: string;
}

/** `label in {…}` / `label not in {…}`. `values` are unique and sorted by UTF-8 bytes. */
export interface SetNode {
  readonly kind: 'in' | 'notIn';
  readonly label: string;
  readonly values: readonly string[];
}

/** `!operand`. The operand is a `not` only for `!(!…)` (see the module invariants). */
export interface NotNode {
  readonly kind: 'not';
  readonly operand: SelectorNode;
}

/** `(a && b && …)` with at least two operands, evaluated left to right, short-circuiting. */
export interface AndNode {
  readonly kind: 'and';
  readonly operands: readonly SelectorNode[];
}

/** `(a || b || …)` with at least two operands, evaluated left to right, short-circuiting. */
export interface OrNode {
  readonly kind: 'or';
  readonly operands: readonly SelectorNode[];
}

/** Any selector node. Discriminated on `kind`. */
export type SelectorNode = AllNode | GlobalNode | HasNode | ValueNode | SetNode | NotNode | AndNode | OrNode;

/** Nodes that test one label (everything that `prefixLabels` rewrites). */
export type LabelNode = HasNode | ValueNode | SetNode;

export const ALL_NODE: AllNode = Object.freeze({ kind: 'all' });
export const GLOBAL_NODE: GlobalNode = Object.freeze({ kind: 'global' });

/** Sorts and de-duplicates set members bytewise. Returns a new array. */
export function normaliseSetValues(values: readonly string[]): string[] {
  const sorted = [...values].sort(compareUtf8);
  let w = 0;
  for (let r = 0; r < sorted.length; r++) {
    if (w === 0 || sorted[r] !== sorted[w - 1]) sorted[w++] = sorted[r] as string;
  }
  sorted.length = w;
  return sorted;
}

/** True if `values` is already strictly ascending bytewise (so unique). */
function isNormalisedSet(values: readonly string[]): boolean {
  for (let i = 1; i < values.length; i++) {
    if (compareUtf8(values[i - 1] as string, values[i] as string) >= 0) return false;
  }
  return true;
}

/**
 * `!operand`, cancelling a double negation: for code that builds selectors by meaning. (The
 * parser, which must keep Calico's tree, wraps instead: `!(!x)` stays two nodes.)
 */
export function makeNot(operand: SelectorNode): SelectorNode {
  return operand.kind === 'not' ? operand.operand : { kind: 'not', operand };
}

/** An `and`/`or` group; a single operand is returned as is. `operands` must be non-empty. */
export function makeGroup(kind: 'and' | 'or', operands: readonly SelectorNode[]): SelectorNode {
  if (operands.length === 0) throw new RangeError(`makeGroup: an '${kind}' group needs at least one operand`);
  if (operands.length === 1) return operands[0] as SelectorNode;
  return { kind, operands };
}

/** `label in {…}` or `label not in {…}` with the members normalised. */
export function makeSet(kind: 'in' | 'notIn', label: string, values: readonly string[]): SetNode {
  return { kind, label, values: isNormalisedSet(values) ? values : normaliseSetValues(values) };
}

/**
 * Returns `node` normalised (see the module invariants). Returns the same object when it is
 * already normalised, so normalising a parsed tree allocates nothing.
 */
export function normaliseNode(node: SelectorNode): SelectorNode {
  switch (node.kind) {
    case 'in':
    case 'notIn':
      return isNormalisedSet(node.values) ? node : makeSet(node.kind, node.label, node.values);
    case 'not': {
      const operand = normaliseNode(node.operand);
      return operand === node.operand ? node : { kind: 'not', operand };
    }
    case 'and':
    case 'or': {
      if (node.operands.length === 0) throw new RangeError(`selector '${node.kind}' node has no operands`);
      let changed = node.operands.length < 2;
      const operands = node.operands.map((op) => {
        const n = normaliseNode(op);
        if (n !== op) changed = true;
        return n;
      });
      return changed ? makeGroup(node.kind, operands) : node;
    }
    default:
      return node;
  }
}

const VALUE_OPERATOR_TEXT: Readonly<Record<ValueOperator, string>> = {
  eq: ' == ',
  ne: ' != ',
  contains: ' contains ',
  startsWith: ' starts with ',
  endsWith: ' ends with ',
};

/**
 * Quotes a value the way Calico prints it: double quotes unless the value contains `"`,
 * then single quotes. (A value holding both quote characters cannot come out of the parser.)
 */
export function quoteValue(value: string): string {
  return value.includes('"') ? `'${value}'` : `"${value}"`;
}

/**
 * Canonical text of a (normalised) node: Calico's `collectFragments`. Leaves print as
 * `label OP "value"`; every group is parenthesised; `!` is printed directly before its
 * operand. `parse(toCanonicalString(n))` yields a tree that prints identically, except
 * where `n` holds a negated negation (`!!has(a)` re-parses as `has(a)`).
 */
export function toCanonicalString(node: SelectorNode): string {
  return printNode(node, false);
}

/**
 * Text that parses back to exactly `node`: the canonical form, except that a negated
 * negation keeps its parentheses (`!(!has(a))`). For selectors that are printed to be
 * combined and parsed again (the update processor), so that the final tree — and its
 * canonical form and unique ID — are the ones Calico computes from the text as written.
 */
export function toRoundTripString(node: SelectorNode): string {
  return printNode(node, true);
}

function printNode(node: SelectorNode, keepNotNot: boolean): string {
  switch (node.kind) {
    case 'all':
      return 'all()';
    case 'global':
      return 'global()';
    case 'has':
      return `has(${node.label})`;
    case 'eq':
    case 'ne':
    case 'contains':
    case 'startsWith':
    case 'endsWith':
      return node.label + VALUE_OPERATOR_TEXT[node.kind] + quoteValue(node.value);
    case 'in':
    case 'notIn': {
      let out = node.label + (node.kind === 'in' ? ' in {' : ' not in {');
      for (let i = 0; i < node.values.length; i++) {
        if (i > 0) out += ', ';
        out += quoteValue(node.values[i] as string);
      }
      return `${out}}`;
    }
    case 'not':
      if (keepNotNot && node.operand.kind === 'not') return `!(${printNode(node.operand, true)})`;
      return `!${printNode(node.operand, keepNotNot)}`;
    case 'and':
    case 'or': {
      const sep = node.kind === 'and' ? ' && ' : ' || ';
      let out = '(';
      for (let i = 0; i < node.operands.length; i++) {
        if (i > 0) out += sep;
        out += printNode(node.operands[i] as SelectorNode, keepNotNot);
      }
      return `${out})`;
    }
  }
}
