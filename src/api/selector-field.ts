/**
 * Validation of a selector-valued field: the text must parse with Calico's selector
 * grammar, and `global()` may appear only where Calico allows it.
 *
 * The parser's message is reported as is at the field path, so a user sees
 * `spec.ingress[2].source.selector: unexpected token '&&' at column 7`.
 *
 * `global()` (matches non-namespaced endpoints: host endpoints, global network sets) is
 * valid only as the whole of an EntityRule `namespaceSelector` (validator.go
 * `validateEntityRule`; CEL rules on the policy specs and EntityRule).
 */
import { parseSelectorNode, SelectorParseError } from '../selector/index.ts';
import type { FieldErrorCollector } from './field-error.ts';
import { MAX_SELECTOR_LENGTH } from './schema-rule.ts';
import { describeType, isAbsent } from './shape.ts';

// CRD `MaxLength=1024` on every selector field, declared with the schema.
export { MAX_SELECTOR_LENGTH };

/**
 * Selector texts that parsed, and whether each is `global()` alone. A sync validates thousands
 * of policies whose selectors repeat (`app == 'web'`, `projectcalico.org/orchestrator ==
 * 'k8s'`); a parse is a tokenizer and a parser, a lookup is a hash. Texts that fail are not
 * remembered, so their message is built as before. Bounded: cleared when full.
 */
const PARSED = new Map<string, boolean>();
const PARSED_MAX = 4096;

export interface SelectorFieldOptions {
  /** True only for an EntityRule `namespaceSelector`, where `global()` alone is allowed. */
  readonly allowGlobal?: boolean;
  /** Calico checks `global(` only in some fields; others are merely parsed. */
  readonly checkGlobal?: boolean;
}

export function checkSelectorField(
  c: FieldErrorCollector,
  path: string,
  value: unknown,
  { allowGlobal = false, checkGlobal = true }: SelectorFieldOptions = {},
): void {
  if (isAbsent(value)) return;
  if (typeof value !== 'string') {
    c.error(path, `must be a selector string, not ${describeType(value)}`);
    return;
  }
  if (value.length > MAX_SELECTOR_LENGTH) {
    c.error(path, `selector is ${value.length} characters long; at most ${MAX_SELECTOR_LENGTH} are allowed`);
  }
  let isGlobalOnly = PARSED.get(value);
  if (isGlobalOnly === undefined) {
    try {
      // The tree only: a parser tree is the `Selector`'s root as is, and validation never evaluates.
      isGlobalOnly = parseSelectorNode(value).kind === 'global';
    } catch (err) {
      if (err instanceof SelectorParseError) {
        c.error(path, err.message);
      } else {
        c.error(path, `selector could not be parsed: ${err instanceof Error ? err.message : String(err)}`);
      }
      return;
    }
    if (PARSED.size >= PARSED_MAX) PARSED.clear();
    PARSED.set(value, isGlobalOnly);
  }
  if (!checkGlobal || !value.includes('global(')) return;
  if (!allowGlobal) {
    c.error(path, 'global() can only be used in an EntityRule namespaceSelector');
  } else if (!isGlobalOnly) {
    c.error(path, 'global() cannot be combined with other selectors');
  }
}
