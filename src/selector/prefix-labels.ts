/**
 * Rewrites every label key in a selector with a prefix — Calico's `PrefixVisitor`
 * (`libcalico-go/lib/selector/parser/ast.go`). Felix uses it to turn a rule's
 * namespaceSelector `env == 'prod'` into `pcns.env == "prod"`, a selector over the labels
 * that namespace profiles give their endpoints.
 *
 * Unlike Calico's visitor, which mutates the selector in place, this returns a new
 * `Selector` and leaves the input untouched (selectors are shared and immutable here).
 */
import type { LabelNode, SelectorNode } from './ast.ts';
import { isLabelChar } from './lexer.ts';
import { Selector } from './selector.ts';

/**
 * Returns `sel` with `prefix` prepended to every label key. `prefix` must consist of label
 * characters (`[a-zA-Z0-9_./-]`) so the result still prints as a parseable selector;
 * otherwise throws `RangeError`. (Like Calico, the 512-character label limit is not
 * re-checked: a prefixed label may exceed it.)
 */
export function prefixLabels(sel: Selector, prefix: string): Selector {
  for (let i = 0; i < prefix.length; i++) {
    if (!isLabelChar(prefix.charCodeAt(i))) {
      throw new RangeError(`prefixLabels: prefix ${JSON.stringify(prefix)} contains a character not allowed in a label`);
    }
  }
  if (prefix === '') return sel;
  return new Selector(prefixNode(sel.root, prefix));
}

function prefixNode(node: SelectorNode, prefix: string): SelectorNode {
  switch (node.kind) {
    case 'all':
    case 'global':
      return node;
    case 'not':
      return { kind: 'not', operand: prefixNode(node.operand, prefix) };
    case 'and':
    case 'or':
      return { kind: node.kind, operands: node.operands.map((op) => prefixNode(op, prefix)) };
    default:
      return { ...node, label: prefix + node.label } satisfies LabelNode;
  }
}
