/**
 * `Selector`: a parsed, compiled Calico label selector (Calico's `parser.Selector`).
 *
 * Guarantees:
 * - Immutable. The tree (`root`) is normalised (see ast.ts) and compiled once, in the
 *   constructor, into a closure tree, so `evaluate` never re-parses and never allocates.
 * - `toString()` is the canonical form (calico-semantics §1.5) and `uniqueId()` is
 *   `MakeUniqueID("s", canonical)` (§1.6); both are computed on first use and cached on the
 *   instance, because most selectors are only ever evaluated.
 * - Two selectors with the same canonical form are interchangeable: same matches, same
 *   unique ID, same IP set.
 * - Safe to share between callers; there is no mutable state beyond the lazy caches.
 */
import { normaliseNode, toCanonicalString, toRoundTripString, type SelectorNode } from './ast.ts';
import { compileNode, type Evaluator, type Labels } from './compile.ts';
import {
  computeLabelRestrictions,
  restrictionsUnsatisfiable,
  type LabelRestrictions,
} from './label-restrictions.ts';
import { makeUniqueId } from './unique-id.ts';

/** The selector that matches everything (Calico `selector.All`). */
export const ALL_SELECTOR_TEXT = 'all()';
/** The selector that matches nothing (Calico `selector.NoMatch`). */
export const NO_MATCH_SELECTOR_TEXT = '!all()';

export class Selector {
  /** The normalised syntax tree. Read-only: build a new `Selector` to change it. */
  readonly root: SelectorNode;
  readonly #matches: Evaluator;
  #canonical: string | undefined;
  #uniqueId: string | undefined;

  /**
   * Wraps a syntax tree. The tree is normalised first (a no-op returning the same nodes for
   * trees from the parser), so hand-built or rewritten trees get the same canonical form as
   * their parsed equivalents. Most callers want `parseSelector` instead.
   */
  constructor(root: SelectorNode) {
    this.root = normaliseNode(root);
    this.#matches = compileNode(this.root);
  }

  /**
   * True if `labels` match. A label is present iff `labels` has an own string-valued
   * property with that key (`undefined` counts as absent); see compile.ts.
   */
  evaluate(labels: Labels): boolean {
    return this.#matches(labels);
  }

  /**
   * Canonical form, e.g. `(a == "b" && has(c))` — Calico's, which the unique ID hashes.
   * Parsing it yields an equal selector unless the tree holds a negated negation:
   * `!(!has(a))` prints `!!has(a)`, which parses as `has(a)` (see `toRoundTripString`).
   */
  toString(): string {
    this.#canonical ??= toCanonicalString(this.root);
    return this.#canonical;
  }

  /** Text that parses to exactly this tree (the canonical form, `!(!…)` kept in parentheses). */
  toRoundTripString(): string {
    return toRoundTripString(this.root);
  }

  /** `s:` + base64url(SHA-224("s:" + canonical)), 40 characters; equal for equal selectors. */
  uniqueId(): string {
    this.#uniqueId ??= makeUniqueId('s', this.toString());
    return this.#uniqueId;
  }

  /** True if both selectors have the same canonical form. */
  equals(other: Selector): boolean {
    return this === other || this.toString() === other.toString();
  }

  /**
   * Per-label constraints any match must meet, for indexing (see label-restrictions.ts).
   * Like Felix (PR #11846), only the most recently computed result is cached — process-wide,
   * not per selector — because per-selector maps add up at tens of thousands of selectors
   * while callers typically ask for the same selector several times in a row.
   * The returned map is shared with that cache: do not mutate it.
   */
  labelRestrictions(): LabelRestrictions {
    return cachedLabelRestrictions(this);
  }

  /**
   * True if the label restrictions prove the selector can never match
   * (`a == 'x' && a == 'y'`, `has(a) && !has(a)`, `a in {}`). False does not prove the
   * opposite: `a == 'x' && a != 'x'` never matches either.
   */
  neverMatches(): boolean {
    return restrictionsUnsatisfiable(this.labelRestrictions());
  }
}

let lastRestricted: Selector | undefined;
let lastRestrictions: LabelRestrictions = new Map();

function cachedLabelRestrictions(sel: Selector): LabelRestrictions {
  if (lastRestricted !== sel) {
    lastRestrictions = computeLabelRestrictions(sel.root);
    lastRestricted = sel;
  }
  return lastRestrictions;
}
