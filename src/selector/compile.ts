/**
 * Compiles a selector tree into a tree of closures, once, when the selector is built.
 *
 * Why closures: a selector is evaluated against every endpoint's labels on every label or
 * policy change, so `evaluate` is the hot path of the calc graph. Each closure captures its
 * label key, its value (or a `Set<string>` for `in`/`not in`) and its children, so evaluation
 * does no parsing, no dispatch on node kind and allocates nothing: no arrays, objects or
 * strings are created per call.
 *
 * Label presence rule (Calico's `Labels.Get` returns `(value, present)`): a label is present
 * iff `labels` has an OWN property with that key whose value is a string. Consequences:
 * - inherited properties never count, so plain objects are safe with keys such as
 *   `constructor`, `toString` or `__proto__` (checked with `Object.prototype.hasOwnProperty`,
 *   which does not allocate);
 * - a value of `undefined` (or any other non-string, which the types forbid anyway) counts
 *   as absent.
 * The value is read first and ownership is only checked when the answer depends on it, so
 * the common non-matching case costs one property load.
 *
 * Evaluation semantics (calico-semantics §1.4, `ast.go`):
 * `==`, `in`, `contains`, `starts with`, `ends with`, `has` are false for an absent label;
 * `!=` and `not in` are true for an absent label; an empty operand of contains/starts/ends
 * matches any present value; `&&`/`||` evaluate left to right and short-circuit.
 */
import type { SelectorNode } from './ast.ts';

/** Label map accepted by `evaluate`. See the module comment for what counts as present. */
export type Labels = Readonly<Record<string, string>>;

/** A compiled selector. Pure; never throws for a `Labels` argument. */
export type Evaluator = (labels: Labels) => boolean;

const hasOwn = Object.prototype.hasOwnProperty;

const alwaysTrue: Evaluator = () => true;

/** Compiles `node` (and its subtree) into an `Evaluator`. */
export function compileNode(node: SelectorNode): Evaluator {
  switch (node.kind) {
    case 'all':
    case 'global':
      return alwaysTrue;
    case 'has': {
      const key = node.label;
      return (labels) => typeof labels[key] === 'string' && hasOwn.call(labels, key);
    }
    case 'eq': {
      const key = node.label;
      const want = node.value;
      // `=== want` already implies a string value; only ownership is left to check.
      return (labels) => labels[key] === want && hasOwn.call(labels, key);
    }
    case 'ne': {
      const key = node.label;
      const avoid = node.value;
      // Absent (including inherited) → true; present → value differs.
      return (labels) => labels[key] !== avoid || !hasOwn.call(labels, key);
    }
    case 'contains': {
      const key = node.label;
      const part = node.value;
      return (labels) => {
        const v = labels[key];
        return typeof v === 'string' && v.includes(part) && hasOwn.call(labels, key);
      };
    }
    case 'startsWith': {
      const key = node.label;
      const prefix = node.value;
      return (labels) => {
        const v = labels[key];
        return typeof v === 'string' && v.startsWith(prefix) && hasOwn.call(labels, key);
      };
    }
    case 'endsWith': {
      const key = node.label;
      const suffix = node.value;
      return (labels) => {
        const v = labels[key];
        return typeof v === 'string' && v.endsWith(suffix) && hasOwn.call(labels, key);
      };
    }
    case 'in': {
      const key = node.label;
      if (node.values.length === 0) return () => false;
      if (node.values.length === 1) {
        const want = node.values[0] as string;
        return (labels) => labels[key] === want && hasOwn.call(labels, key);
      }
      const set = new Set<string>(node.values);
      return (labels) => {
        const v = labels[key];
        return typeof v === 'string' && set.has(v) && hasOwn.call(labels, key);
      };
    }
    case 'notIn': {
      const key = node.label;
      if (node.values.length === 0) return alwaysTrue;
      const set = new Set<string>(node.values);
      return (labels) => {
        const v = labels[key];
        return typeof v !== 'string' || !set.has(v) || !hasOwn.call(labels, key);
      };
    }
    case 'not': {
      const inner = compileNode(node.operand);
      return (labels) => !inner(labels);
    }
    case 'and':
      return compileAnd(node.operands.map(compileNode));
    case 'or':
      return compileOr(node.operands.map(compileNode));
  }
}

/** Fixed-arity closures for the common small groups avoid the loop and array indexing. */
function compileAnd(fs: readonly Evaluator[]): Evaluator {
  const [a, b, c, d] = fs as [Evaluator, Evaluator, Evaluator, Evaluator];
  switch (fs.length) {
    case 2:
      return (labels) => a(labels) && b(labels);
    case 3:
      return (labels) => a(labels) && b(labels) && c(labels);
    case 4:
      return (labels) => a(labels) && b(labels) && c(labels) && d(labels);
    default:
      return (labels) => {
        for (let i = 0; i < fs.length; i++) if (!(fs[i] as Evaluator)(labels)) return false;
        return true;
      };
  }
}

function compileOr(fs: readonly Evaluator[]): Evaluator {
  const [a, b, c, d] = fs as [Evaluator, Evaluator, Evaluator, Evaluator];
  switch (fs.length) {
    case 2:
      return (labels) => a(labels) || b(labels);
    case 3:
      return (labels) => a(labels) || b(labels) || c(labels);
    case 4:
      return (labels) => a(labels) || b(labels) || c(labels) || d(labels);
    default:
      return (labels) => {
        for (let i = 0; i < fs.length; i++) if ((fs[i] as Evaluator)(labels)) return true;
        return false;
      };
  }
}
