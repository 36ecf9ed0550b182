import { describe, expect, it } from 'vitest';

import { apiVersionOf, KINDS, kindRow, kindRowOf, kindsWatchedBy, resourceName, resourceOf, type KindRow, type ResourceName } from './kinds.ts';

const rows: readonly KindRow[] = KINDS;

describe('the kind table', () => {
  it('names each resource once (<plural>.<group>, or <plural> for the core group)', () => {
    const names = rows.map(resourceName);
    expect(new Set(names).size).toBe(names.length);
    expect(resourceName(kindRow('pods'))).toBe('pods');
    expect(resourceName(kindRow('networkpolicies.networking.k8s.io'))).toBe('networkpolicies.networking.k8s.io');
  });

  it('ships a CRD only for projectcalico.org/v3 kinds and ClusterNetworkPolicy; an optional kind is a CRD a cluster may lack', () => {
    for (const r of rows.filter((r) => r.crd === true)) {
      expect(r.kind === 'ClusterNetworkPolicy' ? 'policy.networking.k8s.io/v1beta1' : 'projectcalico.org/v3').toBe(apiVersionOf(r));
    }
    for (const r of rows.filter((r) => r.optional === true)) expect(r.crd).toBe(true);
  });

  it('every row is watched by someone, and (apiVersion, kind) finds it again', () => {
    for (const r of rows) {
      expect(r.watchers.length).toBeGreaterThan(0);
      expect(kindRowOf(apiVersionOf(r), r.kind)).toBe(r);
    }
    expect(kindRowOf('projectcalico.org/v3', 'NoSuchKind')).toBeUndefined();
  });

  it('apiVersion and REST resource of a row: the core group has no group prefix', () => {
    expect(apiVersionOf(kindRow('namespaces'))).toBe('v1');
    expect(apiVersionOf(kindRow('tiers.projectcalico.org'))).toBe('projectcalico.org/v3');
    expect(resourceOf(kindRow('pods'))).toEqual({ group: '', version: 'v1', plural: 'pods' });
  });

  it('kindsWatchedBy keeps table order; Typha watches exactly what an agent would (an agent behind it sees the same kinds)', () => {
    for (const watcher of ['agent', 'typha', 'controllers', 'simulate'] as const) {
      const watched = kindsWatchedBy(watcher);
      expect(watched).toEqual(rows.filter((r) => r.watchers.includes(watcher)));
    }
    expect(kindsWatchedBy('typha')).toEqual(kindsWatchedBy('agent'));
  });

  it('kindRow of a name not in the table is a RangeError naming it', () => {
    expect(() => kindRow('nosuchthings.projectcalico.org' as ResourceName)).toThrow(new RangeError('kindRow: no kind table row for resource nosuchthings.projectcalico.org'));
  });
});
