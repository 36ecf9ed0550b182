import { describe, expect, it } from 'vitest';
import { k8sLabelSelectorToCalico, type K8sLabelSelector } from './k8s-label-selector.ts';
import { parseSelector } from './parser.ts';

const ORCH = "projectcalico.org/orchestrator == 'k8s'";

describe('k8sLabelSelectorToCalico: pod selectors', () => {
  it('sorts matchLabels keys after the orchestrator term (§3.3 example)', () => {
    expect(k8sLabelSelectorToCalico({ matchLabels: { b: '2', a: '1' } }, { pod: true })).toBe(
      "projectcalico.org/orchestrator == 'k8s' && a == '1' && b == '2'",
    );
  });
  it('gives just the orchestrator term for nil, undefined and {}', () => {
    expect(k8sLabelSelectorToCalico(null, { pod: true })).toBe(ORCH);
    expect(k8sLabelSelectorToCalico(undefined, { pod: true })).toBe(ORCH);
    expect(k8sLabelSelectorToCalico({}, { pod: true })).toBe(ORCH);
  });
  it('translates expressions in the given order, after matchLabels', () => {
    const sel: K8sLabelSelector = {
      matchLabels: { role: 'db' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['b', 'a'] },
        { key: 'env', operator: 'In', values: ['prod', 'staging'] },
        { key: 'team', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    };
    expect(k8sLabelSelectorToCalico(sel, { pod: true })).toBe(
      `${ORCH} && role == 'db' && tier not in { 'b', 'a' } && env in { 'prod', 'staging' } && has(team) && ! has(legacy)`,
    );
  });
  it('ignores unknown operators', () => {
    expect(
      k8sLabelSelectorToCalico({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }, { key: 'b', operator: 'Exists' }] }, { pod: true }),
    ).toBe(`${ORCH} && has(b)`);
  });
  it('prints an In with no values as k in { \'\' }, like Calico (validation is the caller\'s job)', () => {
    expect(k8sLabelSelectorToCalico({ matchExpressions: [{ key: 'a', operator: 'In' }] }, { pod: true })).toBe(`${ORCH} && a in { '' }`);
  });
  it('sorts matchLabels keys bytewise', () => {
    expect(k8sLabelSelectorToCalico({ matchLabels: { b: '1', B: '2', 'a.b/c': '3' } }, { pod: false })).toBe(
      "B == '2' && a.b/c == '3' && b == '1'",
    );
  });
  it('produces text that parses and evaluates as Kubernetes would', () => {
    const text = k8sLabelSelectorToCalico(
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] },
      { pod: true },
    );
    const sel = parseSelector(text);
    expect(sel.evaluate({ 'projectcalico.org/orchestrator': 'k8s', app: 'web' })).toBe(true);
    expect(sel.evaluate({ 'projectcalico.org/orchestrator': 'k8s', app: 'web', env: 'dev' })).toBe(false);
    expect(sel.evaluate({ app: 'web' })).toBe(false);
  });
});

describe('k8sLabelSelectorToCalico: namespace selectors', () => {
  it('maps nil to "" (the policy\'s own namespace)', () => {
    expect(k8sLabelSelectorToCalico(null, { pod: false })).toBe('');
    expect(k8sLabelSelectorToCalico(undefined, { pod: false })).toBe('');
  });
  it('maps {} to all()', () => {
    expect(k8sLabelSelectorToCalico({}, { pod: false })).toBe('all()');
    expect(k8sLabelSelectorToCalico({ matchLabels: {}, matchExpressions: [] }, { pod: false })).toBe('all()');
  });
  it('has no orchestrator term', () => {
    expect(k8sLabelSelectorToCalico({ matchLabels: { env: 'prod' } }, { pod: false })).toBe("env == 'prod'");
  });
  it('yields "" when the only expressions have unknown operators, as Calico does', () => {
    expect(k8sLabelSelectorToCalico({ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }, { pod: false })).toBe('');
  });
});
