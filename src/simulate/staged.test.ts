import { describe, expect, it } from 'vitest';

import { InputError } from '../runtime/input-error.ts';
import { classifyObjects } from './cluster-objects.ts';
import { readStaged } from '../api/staged.ts';
import { commitStaged, describeStagedDiff, previewedStaged, stagedDiff } from './staged.ts';

const calicoNp = (name: string, ns: string, order: number): unknown => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec: { order, selector: 'all()', ingress: [{ action: 'Allow' }] },
});

describe('staged policies', () => {
  it('are kept apart from what the calc graph reads, each with its counterpart (stagedAction Set when absent)', () => {
    const notes: string[] = [];
    const objs = classifyObjects(
      [
        calicoNp('a', 'x', 1),
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 2, selector: 'all()' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedGlobalNetworkPolicy', metadata: { name: 'g' }, spec: { stagedAction: 'Delete' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedKubernetesNetworkPolicy', metadata: { name: 'k' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } },
      ],
      notes,
    );
    expect(objs.calico.map((r) => r.kind)).toEqual(['NetworkPolicy']);
    expect(objs.staged?.map((s) => [s.kind, s.namespace ?? '', s.name, s.action])).toEqual([
      ['StagedNetworkPolicy', 'x', 'a', 'Set'],
      ['StagedGlobalNetworkPolicy', '', 'g', 'Delete'],
      ['StagedKubernetesNetworkPolicy', 'default', 'k', 'Set'],
    ]);
    expect(objs.staged?.[0]?.counterpart).toEqual({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 2, selector: 'all()' } });
    expect(objs.staged?.[2]?.counterpart).toMatchObject({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'default' } });
    expect(notes).toEqual([]);
  });

  it('a bad stagedAction is an input error naming the object and field', () => {
    const bad = { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { stagedAction: 'Maybe' } };
    expect(() => readStaged(bad)).toThrow(InputError);
    expect(() => readStaged(bad)).toThrow('StagedNetworkPolicy x/a: spec.stagedAction: must be Set, Delete, Learn or Ignore, not "Maybe"');
    expect(() => readStaged({ ...bad, spec: { stagedAction: 'learn' } })).toThrow('must be Set, Delete, Learn or Ignore, not "learn"');
  });

  it("Learn and Ignore (Calico's enum) are accepted, noted loudly, and neither enforced nor previewed (issue 27 item 12)", () => {
    const notes: string[] = [];
    const objs = classifyObjects(
      [
        calicoNp('a', 'x', 1),
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { stagedAction: 'Ignore', selector: 'all()', ingress: [{ action: 'Deny' }] } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedGlobalNetworkPolicy', metadata: { name: 'g' }, spec: { stagedAction: 'Learn', selector: 'all()', ingress: [{ action: 'Deny' }] } },
      ],
      notes,
    );
    expect(objs.staged?.map((s) => s.action)).toEqual(['Ignore', 'Learn']);
    expect(notes).toEqual([
      'StagedNetworkPolicy x/a: stagedAction Ignore is accepted, as Calico accepts it, but NOT enforced and NOT previewed: it is a Calico Enterprise policy-recommendation action with no commit to preview (the agent counts the policy on its staged chains, as Felix does)',
      'StagedGlobalNetworkPolicy g: stagedAction Learn is accepted, as Calico accepts it, but NOT enforced and NOT previewed: it is a Calico Enterprise policy-recommendation action with no commit to preview (the agent counts the policy on its staged chains, as Felix does)',
    ]);
    expect(previewedStaged(objs.staged ?? [])).toEqual([]);
    // Committing changes nothing: neither replaces x/a nor adds g.
    expect(commitStaged(objs, objs.staged ?? []).calico).toEqual(objs.calico);
  });

  it("a staged Delete that carries a spec is rejected with Calico's message; tier alone (and zero values) are fine", () => {
    const del = (kind: string, spec: Record<string, unknown>, namespace?: string): unknown => ({ apiVersion: 'projectcalico.org/v3', kind, metadata: { name: 'd', ...(namespace === undefined ? {} : { namespace }) }, spec: { stagedAction: 'Delete', ...spec } });
    expect(() => readStaged(del('StagedNetworkPolicy', { selector: 'all()', ingress: [{ action: 'Allow' }] }, 'x'))).toThrow(
      'StagedNetworkPolicy x/d: spec: Spec fields, except Tier, should all be zero-value if stagedAction is Delete (set: selector, ingress)',
    );
    expect(() => readStaged(del('StagedGlobalNetworkPolicy', { order: 0, types: [] }))).toThrow(
      'StagedGlobalNetworkPolicy d: spec: Spec fields, except Tier, should all be zero-value if stagedAction is Delete (set: order, types)',
    );
    expect(() => readStaged(del('StagedKubernetesNetworkPolicy', { podSelector: { matchLabels: { app: 'web' } } }, 'x'))).toThrow(
      'StagedKubernetesNetworkPolicy x/d: spec: Spec fields should all be zero-value if stagedAction is Delete (set: podSelector)',
    );
    // A key Calico's Go type lacks is dropped by its decoder, so never judged (StagedKubernetesNetworkPolicy has no tier).
    expect(readStaged(del('StagedKubernetesNetworkPolicy', { tier: 'default' }, 'x')).action).toBe('Delete');
    expect(readStaged(del('StagedNetworkPolicy', { tier: 'security', selector: '', doNotTrack: false, order: null }, 'x')).action).toBe('Delete');
    expect(readStaged(del('StagedKubernetesNetworkPolicy', { podSelector: {} }, 'x')).action).toBe('Delete');
  });

  it('committing: Set replaces or creates the counterpart, Delete removes it, later staged objects win; the input is untouched', () => {
    const objs = classifyObjects(
      [
        calicoNp('a', 'x', 1),
        calicoNp('b', 'x', 1),
        { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'k', namespace: 'x' }, spec: { podSelector: {} } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { order: 5 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'b', namespace: 'x' }, spec: { stagedAction: 'Delete' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'c', namespace: 'x' }, spec: { order: 7 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'c', namespace: 'x' }, spec: { order: 8 } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedKubernetesNetworkPolicy', metadata: { name: 'k', namespace: 'x' }, spec: { stagedAction: 'Delete' } },
      ],
      [],
    );
    const committed = commitStaged(objs, objs.staged ?? []);
    expect(committed.calico.map((r) => `${r.metadata.name}:${(r.spec as { order?: number }).order}`)).toEqual(['a:5', 'c:8']);
    expect(committed.networkPolicies).toEqual([]);
    expect(objs.calico).toHaveLength(2);
    expect(objs.networkPolicies).toHaveLength(1);
  });

  it('a staged Delete removes a NetworkPolicy written without a namespace (both are in default)', () => {
    const objs = classifyObjects(
      [
        { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'a' }, spec: { selector: 'all()' } },
        { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a' }, spec: { stagedAction: 'Delete' } },
      ],
      [],
    );
    expect(commitStaged(objs, objs.staged ?? []).calico.filter((r) => r.kind === 'NetworkPolicy')).toEqual([]);
  });

  it('the diff counts pairs that would change, each way', () => {
    const d = stagedDiff(['x/a', 'x/b', 'y/c'], [[false, true, true], [true, false, false], [false, false, false]], [[false, false, true], [true, false, true], [false, false, false]], 2);
    expect(d).toEqual({ policies: 2, pairs: 6, becomeDenied: 1, becomeAllowed: 1, changes: [{ from: 'x/a', to: 'x/b', staged: 'denied' }, { from: 'x/b', to: 'y/c', staged: 'allowed' }] });
    expect(describeStagedDiff(d)).toEqual([
      'staged: 2 policies; 2 of 6 pairs would change — 1 would become denied, 1 allowed',
      '  x/a → x/b: would be denied',
      '  x/b → y/c: would be allowed',
    ]);
  });
});
