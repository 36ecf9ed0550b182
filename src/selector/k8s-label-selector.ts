/**
 * Kubernetes `LabelSelector` → Calico selector text, as Calico's KDD converter does it
 * (`k8sSelectorToCalico` in `libcalico-go/lib/backend/k8s/conversion/conversion.go`,
 * calico-semantics §3.3). The output must match Calico's text exactly because converted
 * policies are compared and hashed downstream; it is deliberately NOT canonicalised.
 *
 * - Pod selectors always start with `projectcalico.org/orchestrator == 'k8s'`, so host
 *   endpoints and network sets never match a Kubernetes NetworkPolicy; nil or `{}` gives
 *   just that term.
 * - Then `matchLabels` with keys sorted bytewise as `k == 'v'`, then `matchExpressions` in
 *   the given order: In → `k in { 'v1', 'v2' }`, NotIn → `k not in { 'v1', 'v2' }`,
 *   Exists → `has(k)`, DoesNotExist → `! has(k)`; unknown operators are skipped.
 *   All terms are joined with ` && `.
 * - Namespace selectors have no orchestrator term: nil → `""` (the policy's own namespace),
 *   no matchLabels and no matchExpressions → `all()`. (As in Calico, a selector whose only
 *   expressions have unknown operators yields `""`.)
 * - Values are not validated (an In with no values prints `k in { '' }`): the apiserver
 *   validates LabelSelectors, and offline input must be validated before conversion.
 * - `null` where hand-written YAML may put it decodes as Go's zero value: a `null`
 *   matchExpression has no operator and is skipped, a `null` value is `''`, `null`
 *   matchLabels/matchExpressions are empty.
 */
import { compareUtf8 } from './byte-order.ts';

/**
 * The structural shape of a Kubernetes `metav1.LabelSelector`. Structural so that
 * `@kubernetes/client-node`'s `V1LabelSelector` is accepted without importing it here.
 */
export interface K8sLabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: Array<{ key: string; operator: string; values?: Array<string | null> | null } | null> | null;
}

/** Options for `k8sLabelSelectorToCalico`. */
export interface K8sLabelSelectorOptions {
  /** True for a pod selector (adds the orchestrator term), false for a namespace selector. */
  pod: boolean;
}

/** Calico: apiv3.LabelOrchestrator. */
export const ORCHESTRATOR_LABEL = 'projectcalico.org/orchestrator';

export function k8sLabelSelectorToCalico(
  sel: K8sLabelSelector | undefined | null,
  opts: K8sLabelSelectorOptions,
): string {
  const terms: string[] = [];
  if (opts.pod) terms.push(`${ORCHESTRATOR_LABEL} == 'k8s'`);
  if (sel === undefined || sel === null) return terms.join(' && ');

  const matchLabels = sel.matchLabels ?? {};
  const expressions = sel.matchExpressions ?? [];
  const keys = Object.keys(matchLabels);
  if (!opts.pod && keys.length === 0 && expressions.length === 0) return 'all()';

  keys.sort(compareUtf8);
  for (const k of keys) terms.push(`${k} == '${matchLabels[k] ?? ''}'`);

  for (const e of expressions) {
    // Go decodes a `null` element as the zero requirement: no operator, so skipped below.
    if (e === null || e === undefined) continue;
    const valueList = (e.values ?? []).map((v) => v ?? '').join("', '");
    switch (e.operator) {
      case 'In':
        terms.push(`${e.key} in { '${valueList}' }`);
        break;
      case 'NotIn':
        terms.push(`${e.key} not in { '${valueList}' }`);
        break;
      case 'Exists':
        terms.push(`has(${e.key})`);
        break;
      case 'DoesNotExist':
        terms.push(`! has(${e.key})`);
        break;
      default:
        // Calico ignores operators it does not know.
        break;
    }
  }
  return terms.join(' && ');
}
