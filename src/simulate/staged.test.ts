import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { capture } from '../cli/testdata/capture.ts';
import { runExplain } from '../cli/explain.ts';
import { runSimulate } from '../cli/simulate.ts';

import { InputError } from '../runtime/input-error.ts';
import { classifyObjects } from './cluster-objects.ts';
import { commitStaged, describeStagedDiff, readStaged, stagedDiff } from './staged.ts';

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
    const bad = { apiVersion: 'projectcalico.org/v3', kind: 'StagedNetworkPolicy', metadata: { name: 'a', namespace: 'x' }, spec: { stagedAction: 'Learn' } };
    expect(() => readStaged(bad)).toThrow(InputError);
    expect(() => readStaged(bad)).toThrow('StagedNetworkPolicy x/a: spec.stagedAction: must be Set or Delete, not "Learn"');
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

describe('staged policies in the tools', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-staged-'));
  cpSync(fileURLToPath(new URL('../../examples/', import.meta.url)), dir, { recursive: true });
  writeFileSync(
    join(dir, '70-staged.yaml'),
    [
      'apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\nmetadata: {name: api, namespace: shop}\nspec: {stagedAction: Delete}',
      'apiVersion: projectcalico.org/v3\nkind: StagedKubernetesNetworkPolicy\nmetadata: {name: deny-all, namespace: shop}\nspec: {podSelector: {}, policyTypes: [Ingress]}',
    ].join('\n---\n'),
  );
  const files = ['-f', dir, '-f', join(dir, 'k8s')];

  it('simulate prints the enforced matrix, then the pairs the staged policies would change', async () => {
    const r = await capture(runSimulate, [...files, '--port', '8081']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('3 of 20 pairs allowed, 17 denied.');
    expect(r.stdout.trimEnd().split('\n').slice(-2)).toEqual(['staged: 2 policies; 1 of 20 pairs would change — 1 would become denied, 0 allowed', '  shop/frontend → shop/api: would be denied']);
  });

  it('explain gives the enforced verdict, then the staged one with its walk', async () => {
    const r = await capture(runExplain, [...files, '--from', 'shop/frontend', '--to', 'shop/api', '--port', '8081']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('shop/frontend → shop/api TCP/8081: ALLOWED');
    expect(r.stdout).toContain('with the staged policies committed (not enforced): DENIED — would become DENIED');
    expect(r.stdout).toContain('NetworkPolicy shop/knp.default.deny-all');
  });
});
