/**
 * Calico's selector language: parsing, canonical form, unique IDs, evaluation, label
 * restrictions for indexing, and the k8s LabelSelector translation. Re-exports only.
 */
export { SelectorParseError } from './errors.ts';
export { parseSelector, parseSelectorNode, MAX_NESTING_DEPTH } from './parser.ts';
export { Selector, ALL_SELECTOR_TEXT, NO_MATCH_SELECTOR_TEXT } from './selector.ts';
export type { Labels, Evaluator } from './compile.ts';
export type {
  SelectorNode,
  AllNode,
  GlobalNode,
  HasNode,
  ValueNode,
  ValueOperator,
  SetNode,
  NotNode,
  AndNode,
  OrNode,
  LabelNode,
} from './ast.ts';
export { makeGroup, makeNot, makeSet, toCanonicalString, toRoundTripString } from './ast.ts';
export type { LabelRestriction, LabelRestrictions } from './label-restrictions.ts';
export { prefixLabels } from './prefix-labels.ts';
export { makeUniqueId } from './unique-id.ts';
export { ipSetName, namedPortIpSetId, MAX_IPSET_NAME_LENGTH, type NamedPortProtocol } from './ipset-names.ts';
export {
  k8sLabelSelectorToCalico,
  ORCHESTRATOR_LABEL,
  type K8sLabelSelector,
  type K8sLabelSelectorOptions,
} from './k8s-label-selector.ts';
export { isValidLabel, MAX_LABEL_LENGTH } from './lexer.ts';
