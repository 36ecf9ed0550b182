/**
 * Label restrictions: per-label lower-bound constraints that any matching label set must
 * meet (Calico `LabelRestrictions()` in `libcalico-go/lib/selector/parser/ast.go`). The
 * label index uses them to consider a selector only for endpoints that could match,
 * instead of evaluating every selector against every endpoint.
 *
 * Rules (calico-semantics §1.10):
 * - `==` and `in` make the label present and restrict its values; `has`, `contains`,
 *   `starts with` and `ends with` make it present; `!has` makes it absent.
 * - `!=`, `not in` and every other negation add nothing: `!(a == 'b')` does not require
 *   `a` to be absent.
 * - AND unions the constraints, intersecting value lists; OR keeps only what every branch
 *   requires, unioning value lists (and dropping them if any branch allows any value).
 * - `all()`/`global()` add nothing.
 *
 * The restrictions are sound but not complete: a selector whose restrictions are
 * unsatisfiable can never match, but satisfiable restrictions do not prove that a selector
 * can match (`a == 'x' && a != 'x'`).
 */
import type { SelectorNode } from './ast.ts';

/** What a selector requires of one label. */
export interface LabelRestriction {
  /** The label must be present (e.g. `has(a)`, `a == 'x'`). */
  readonly mustBePresent: boolean;
  /** The label must be absent (`!has(a)`). */
  readonly mustBeAbsent: boolean;
  /**
   * If defined, the label's value must be one of these. `undefined` means any value;
   * an empty set means the selector can never match (`a == 'x' && a == 'y'`).
   */
  readonly mustHaveOneOfValues?: ReadonlySet<string>;
}

/** Label name → restriction. Labels with no restriction are not in the map. */
export type LabelRestrictions = ReadonlyMap<string, LabelRestriction>;

interface MutableRestriction {
  mustBePresent: boolean;
  mustBeAbsent: boolean;
  mustHaveOneOfValues?: Set<string>;
}

type Restrictions = Map<string, MutableRestriction>;

/** Computes the restrictions of a (normalised) tree. Always returns a fresh map. */
export function computeLabelRestrictions(node: SelectorNode): LabelRestrictions {
  return restrictionsOf(node);
}

/** True if some label's restriction can never be met, so the selector never matches. */
export function restrictionsUnsatisfiable(restrictions: LabelRestrictions): boolean {
  for (const r of restrictions.values()) {
    if (r.mustBePresent && r.mustBeAbsent) return true;
    if (r.mustHaveOneOfValues !== undefined && r.mustHaveOneOfValues.size === 0) return true;
  }
  return false;
}

function single(label: string, r: MutableRestriction): Restrictions {
  return new Map([[label, r]]);
}

function restrictionsOf(node: SelectorNode): Restrictions {
  switch (node.kind) {
    case 'eq':
      return single(node.label, { mustBePresent: true, mustBeAbsent: false, mustHaveOneOfValues: new Set([node.value]) });
    case 'in':
      return single(node.label, { mustBePresent: true, mustBeAbsent: false, mustHaveOneOfValues: new Set(node.values) });
    case 'has':
    case 'contains':
    case 'startsWith':
    case 'endsWith':
      return single(node.label, { mustBePresent: true, mustBeAbsent: false });
    case 'not':
      // Only `!has(a)` can be inverted: it forbids the label outright.
      if (node.operand.kind === 'has') return single(node.operand.label, { mustBePresent: false, mustBeAbsent: true });
      return new Map();
    case 'and':
      return andRestrictions(node.operands);
    case 'or':
      return orRestrictions(node.operands);
    default:
      // all(), global(), !=, not in.
      return new Map();
  }
}

function andRestrictions(operands: readonly SelectorNode[]): Restrictions {
  const out: Restrictions = new Map();
  for (const op of operands) {
    for (const [label, r] of restrictionsOf(op)) {
      const base = out.get(label);
      if (base === undefined) {
        out.set(label, r);
        continue;
      }
      base.mustBePresent ||= r.mustBePresent;
      base.mustBeAbsent ||= r.mustBeAbsent;
      if (base.mustHaveOneOfValues === undefined) {
        base.mustHaveOneOfValues = r.mustHaveOneOfValues;
      } else if (r.mustHaveOneOfValues !== undefined) {
        const other = r.mustHaveOneOfValues;
        for (const v of base.mustHaveOneOfValues) if (!other.has(v)) base.mustHaveOneOfValues.delete(v);
      }
    }
  }
  return out;
}

function orRestrictions(operands: readonly SelectorNode[]): Restrictions {
  const [first, ...rest] = operands as [SelectorNode, ...SelectorNode[]];
  const out = restrictionsOf(first);
  for (const op of rest) {
    if (out.size === 0) break;
    const opR = restrictionsOf(op);
    for (const [label, r] of out) {
      const other = opR.get(label);
      const present = r.mustBePresent && other !== undefined && other.mustBePresent;
      const absent = r.mustBeAbsent && other !== undefined && other.mustBeAbsent;
      if (!present && !absent) {
        out.delete(label);
        continue;
      }
      r.mustBePresent = present;
      r.mustBeAbsent = absent;
      if (!present || r.mustHaveOneOfValues === undefined || other?.mustHaveOneOfValues === undefined) {
        // At least one branch accepts any value (e.g. `has(a)`), so values cannot be limited.
        delete r.mustHaveOneOfValues;
      } else {
        for (const v of other.mustHaveOneOfValues) r.mustHaveOneOfValues.add(v);
      }
    }
  }
  return out;
}
