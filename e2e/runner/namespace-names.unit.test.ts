import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { runSimulate } from '../../src/cli/simulate.ts';
import { capture } from '../../src/cli/testdata/capture.ts';
import { mismatchTable } from './mismatch-table.ts';
import { NamespaceNames, newRunId, uniqueNamespaceName } from './namespace-names.ts';
import type { ProbeResult } from './run-scenario.ts';
import { loadScenarioFiles, type ManifestObject, type Scenario } from './scenario.ts';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const names = new NamespaceNames(['x', 'y', 'z'], 'r1');

/** A Calico policy in namespace x, or cluster-scoped with `namespace` null. */
const calico = (spec: object, kind = 'NetworkPolicy', namespace: string | null = 'x'): ManifestObject => ({
  apiVersion: 'projectcalico.org/v3',
  kind,
  metadata: { name: 'p', ...(namespace === null ? {} : { namespace }) },
  spec,
});
/** The value at `path` under `o['spec']` (objects and arrays), for reading rewritten policies. */
const at = (o: ManifestObject, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], o['spec']);

describe('uniqueNamespaceName', () => {
  it('is <name>-<run id>, a DNS-1123 label, for fresh random run ids', () => {
    const id = newRunId();
    expect(id).toMatch(/^[0-9a-f]{8}$/);
    expect(newRunId()).not.toBe(id);
    expect(uniqueNamespaceName('x', id)).toBe(`x-${id}`);
    expect(uniqueNamespaceName('kube-shop', id)).toMatch(DNS1123_LABEL);
  });

  it('keeps a name of 63 characters within 63, and two long names sharing a prefix apart', () => {
    const a = `${'a'.repeat(62)}1`;
    const b = `${'a'.repeat(62)}2`;
    for (const n of [a, b]) {
      expect(uniqueNamespaceName(n, 'deadbeef').length).toBeLessThanOrEqual(63);
      expect(uniqueNamespaceName(n, 'deadbeef')).toMatch(DNS1123_LABEL);
    }
    expect(uniqueNamespaceName(a, 'deadbeef')).not.toBe(uniqueNamespaceName(b, 'deadbeef'));
  });

  it('rejects a run id that would not keep the name a label, and a name that is not one', () => {
    expect(() => uniqueNamespaceName('x', 'Run_1')).toThrow(RangeError);
    expect(() => uniqueNamespaceName('x', '')).toThrow(RangeError);
    expect(() => uniqueNamespaceName('X', 'r1')).toThrow(/not a DNS-1123 label/);
  });
});

describe('NamespaceNames', () => {
  it('maps declared names both ways and leaves undeclared (cluster) namespaces alone', () => {
    expect(names.unique('x')).toBe('x-r1');
    expect(names.original('x-r1')).toBe('x');
    expect(names.unique('kube-system')).toBe('kube-system');
    expect([...names.mapping]).toEqual([['x', 'x-r1'], ['y', 'y-r1'], ['z', 'z-r1']]);
    expect(names.probe({ from: 'x/a', to: 'y/b', port: 80, expected: true })).toEqual({ from: 'x-r1/a', to: 'y-r1/b', port: 80, expected: true });
  });

  it('rewrites kubernetes.io/metadata.name of namespace labels and no other label', () => {
    expect(names.namespaceLabels({ 'kubernetes.io/metadata.name': 'x', ns: 'x', team: 'y' })).toEqual({ 'kubernetes.io/metadata.name': 'x-r1', ns: 'x', team: 'y' });
  });

  it('rewrites a Kubernetes NetworkPolicy: its namespace and namespaceSelectors on kubernetes.io/metadata.name', () => {
    const np: ManifestObject = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'x' },
      spec: {
        podSelector: { matchLabels: { pod: 'x' } },
        ingress: [
          {
            from: [
              { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'y', ns: 'y' } }, podSelector: { matchLabels: { pod: 'a' } } },
              { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['x', 'z'] }, { key: 'ns', operator: 'NotIn', values: ['y'] }] } },
              { ipBlock: { cidr: '10.0.0.0/8' } },
            ],
          },
        ],
        egress: [{ to: [{ namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['y', 'kube-system'] }] } }] }],
      },
    };
    const out = names.manifest(np);
    expect(out.metadata.namespace).toBe('x-r1');
    expect(at(out, 'podSelector')).toEqual({ matchLabels: { pod: 'x' } });
    expect(at(out, 'ingress', 0, 'from')).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'y-r1', ns: 'y' } }, podSelector: { matchLabels: { pod: 'a' } } },
      { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['x-r1', 'z-r1'] }, { key: 'ns', operator: 'NotIn', values: ['y'] }] } },
      { ipBlock: { cidr: '10.0.0.0/8' } },
    ]);
    expect(at(out, 'egress', 0, 'to', 0, 'namespaceSelector', 'matchExpressions', 0, 'values')).toEqual(['y-r1', 'kube-system']);
    expect(np.metadata.namespace).toBe('x');
  });

  it('rewrites a ClusterNetworkPolicy (any version): subject and peer namespace selectors on kubernetes.io/metadata.name, nothing else', () => {
    const meta = (v: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': v } });
    const cnp = (apiVersion: string, subject: object): ManifestObject => ({
      apiVersion,
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'c' },
      spec: {
        tier: 'Admin',
        priority: 1,
        subject,
        ingress: [{ action: 'Deny', from: [{ namespaces: meta('y') }, { pods: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['z', 'kube-system'] }] }, podSelector: meta('y') } }] }],
        egress: [{ action: 'Accept', to: [{ networks: ['10.0.0.0/8'] }, { nodes: meta('x') }, { namespaces: { matchLabels: { ns: 'y' } } }], protocols: [{ tcp: { destinationPort: { number: 80 } } }] }],
      },
    });
    const a = names.manifest(cnp('policy.networking.k8s.io/v1beta1', { namespaces: meta('x') }));
    expect(a.metadata).toEqual({ name: 'c' });
    expect(at(a, 'subject')).toEqual({ namespaces: meta('x-r1') });
    expect(at(a, 'ingress', 0, 'from')).toEqual([
      { namespaces: meta('y-r1') },
      { pods: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['z-r1', 'kube-system'] }] }, podSelector: meta('y') } },
    ]);
    // nodes select Node labels, networks are addresses, `ns` is an ordinary label: as written.
    expect(at(a, 'egress', 0, 'to')).toEqual([{ networks: ['10.0.0.0/8'] }, { nodes: meta('x') }, { namespaces: { matchLabels: { ns: 'y' } } }]);
    const b = names.manifest(cnp('policy.networking.k8s.io/v1alpha2', { pods: { namespaceSelector: meta('z'), podSelector: meta('z') } }));
    expect(at(b, 'subject')).toEqual({ pods: { namespaceSelector: meta('z-r1'), podSelector: meta('z') } });
    expect(at(b, 'priority')).toBe(1);
  });

  it('rewrites Calico namespaceSelectors on kubernetes.io/metadata.name and projectcalico.org/name', () => {
    const out = names.manifest(
      calico({
        selector: 'all()',
        ingress: [
          { action: 'Allow', source: { namespaceSelector: "kubernetes.io/metadata.name == 'y'" } },
          { action: 'Allow', source: { namespaceSelector: "projectcalico.org/name in {'x', 'z'} && team == 'ops'" } },
          { action: 'Deny', destination: { namespaceSelector: "kubernetes.io/metadata.name != 'kube-system'" } },
        ],
      }),
    );
    expect(at(out, 'ingress', 0, 'source', 'namespaceSelector')).toBe('kubernetes.io/metadata.name == "y-r1"');
    expect(at(out, 'ingress', 1, 'source', 'namespaceSelector')).toBe('(projectcalico.org/name in {"x-r1", "z-r1"} && team == "ops")');
    expect(at(out, 'ingress', 2, 'destination', 'namespaceSelector')).toBe("kubernetes.io/metadata.name != 'kube-system'");
    expect(at(out, 'selector')).toBe('all()');
  });

  it('rewrites Calico endpoint selectors on projectcalico.org/namespace and the pcns. name labels', () => {
    const out = names.manifest(
      calico(
        {
          selector: "projectcalico.org/namespace == 'x' && pod == 'a'",
          namespaceSelector: "kubernetes.io/metadata.name in {'x', 'y'}",
          egress: [
            { action: 'Allow', destination: { selector: "pcns.kubernetes.io/metadata.name == 'z' || pcns.projectcalico.org/name == 'y'", notSelector: "projectcalico.org/namespace == 'y'" } },
            { action: 'Allow', destination: { services: { name: 'api', namespace: 'y' } } },
          ],
        },
        'GlobalNetworkPolicy',
        null,
      ),
    );
    expect(out.metadata.namespace).toBeUndefined();
    expect(at(out, 'selector')).toBe('(projectcalico.org/namespace == "x-r1" && pod == "a")');
    expect(at(out, 'namespaceSelector')).toBe('kubernetes.io/metadata.name in {"x-r1", "y-r1"}');
    expect(at(out, 'egress', 0, 'destination', 'selector')).toBe('(pcns.kubernetes.io/metadata.name == "z-r1" || pcns.projectcalico.org/name == "y-r1")');
    expect(at(out, 'egress', 0, 'destination', 'notSelector')).toBe('projectcalico.org/namespace == "y-r1"');
    expect(at(out, 'egress', 1, 'destination', 'services')).toEqual({ name: 'api', namespace: 'y-r1' });
  });

  it('turns contains / starts with / ends with on a name label into the set of matching scenario namespaces', () => {
    const n = new NamespaceNames(['shop', 'shipping', 'x'], 'r1');
    expect(n.selector("kubernetes.io/metadata.name starts with 'sh'", 'namespace')).toBe('kubernetes.io/metadata.name in {"shipping-r1", "shop-r1"}');
    expect(n.selector("!(projectcalico.org/namespace ends with 'op')", 'endpoint')).toBe('!projectcalico.org/namespace in {"shop-r1"}');
    // "r" is in every unique name's suffix, but only one scenario name contains it.
    expect(n.selector("projectcalico.org/name contains 'r'", 'namespace')).toBe('projectcalico.org/name in {}');
    expect(n.selector("projectcalico.org/name contains 'p'", 'namespace')).toBe('projectcalico.org/name in {"shipping-r1", "shop-r1"}');
  });

  it('leaves every other label and selector byte for byte: ns/team labels, pod selectors, service-account selectors, the wrong label kind', () => {
    const policy = calico({
      selector: "pod == 'a'",
      serviceAccountSelector: "projectcalico.org/name == 'x'",
      ingress: [
        { action: 'Allow', source: { namespaceSelector: "ns == 'x'", selector: "role in {'x', 'y'}", serviceAccounts: { selector: "projectcalico.org/name == 'y'", names: ['x'] } } },
        // A namespace label in an endpoint selector (and vice versa) names no namespace there.
        { action: 'Allow', source: { namespaceSelector: "projectcalico.org/namespace == 'x'", selector: "kubernetes.io/metadata.name == 'x'" } },
        { action: 'Allow', source: { namespaceSelector: 'global()', nets: ['10.0.0.0/8'] } },
      ],
    });
    const out = names.manifest(policy);
    expect(out).toEqual({ ...policy, metadata: { ...policy.metadata, namespace: 'x-r1' } });
    const tier: ManifestObject = { apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100, defaultAction: 'Pass' } };
    expect(names.manifest(tier)).toEqual(tier);
    expect(names.selector('not a ( selector', 'namespace')).toBe('not a ( selector');
  });

  it('rewrites a whole scenario: namespaces, pods, policies, steps and probes; the original stays as written', () => {
    const s: Scenario = {
      name: 's',
      namespaces: [{ name: 'x', labels: { 'kubernetes.io/metadata.name': 'x', ns: 'x' } }, { name: 'y' }],
      pods: [{ namespace: 'x', name: 'a', ip: '10.0.0.1', node: 'n1', serviceAccount: 'sa' }, { namespace: 'y', name: 'b', ip: '10.0.0.2', node: 'n2' }],
      policies: [calico({ selector: 'all()' })],
      probes: [{ from: 'x/a', to: 'y/b', port: 80, expected: true }],
      steps: [
        {
          namespaceLabels: [{ name: 'y', labels: { 'kubernetes.io/metadata.name': 'y', team: 'ops' } }],
          podLabels: [{ namespace: 'x', name: 'a', labels: { pod: 'a' } }],
          deletePolicies: [{ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', namespace: 'x', name: 'p' }, { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', name: 'g' }],
          probes: [{ from: 'y/b', to: 'x/a', port: 53, protocol: 'UDP', expected: false }],
        },
      ],
    };
    const before = structuredClone(s);
    const live = names.scenario(s);
    expect(s).toEqual(before);
    expect(live.namespaces).toEqual([{ name: 'x-r1', labels: { 'kubernetes.io/metadata.name': 'x-r1', ns: 'x' } }, { name: 'y-r1' }]);
    expect(live.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['x-r1/a', 'y-r1/b']);
    expect(live.pods[0]?.serviceAccount).toBe('sa');
    expect(live.policies?.[0]?.metadata.namespace).toBe('x-r1');
    expect(live.probes).toEqual([{ from: 'x-r1/a', to: 'y-r1/b', port: 80, expected: true }]);
    const step = live.steps?.[0];
    expect(step?.namespaceLabels).toEqual([{ name: 'y-r1', labels: { 'kubernetes.io/metadata.name': 'y-r1', team: 'ops' } }]);
    expect(step?.podLabels).toEqual([{ namespace: 'x-r1', name: 'a', labels: { pod: 'a' } }]);
    expect(step?.deletePolicies?.map((r) => r.namespace)).toEqual(['x-r1', undefined]);
    expect(step?.probes[0]).toMatchObject({ from: 'y-r1/b', to: 'x-r1/a' });
  });

  it('reports probes with the scenario’s names: the mismatch table shows x/a, not x-r1/a', () => {
    const got: ProbeResult = { scenario: 's', step: 0, probe: names.probe({ from: 'x/a', to: 'y/b', port: 80, protocol: 'TCP', expected: false }), got: true };
    const table = mismatchTable([{ ...got, probe: names.originalProbe(got.probe) }]);
    expect(table).toContain('x/a   y/b');
    expect(table).not.toContain('r1');
  });
});

describe('verdicts are unchanged by the rewrite (tessera simulate on the original and the rewritten scenarios)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-ns-names-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Each probe's simulated verdict, in order. */
  async function verdicts(schema: string, scenarios: readonly Scenario[], file: string): Promise<Array<boolean | null>> {
    const path = join(dir, file);
    writeFileSync(path, JSON.stringify({ schema, scenarios }));
    const { stdout } = await capture(runSimulate, ['--scenarios', path, '--output', 'json']);
    const json = JSON.parse(stdout.trim().split('\n')[0] ?? '{}') as { results: Array<{ allowed: boolean | null }> };
    return json.results.map((r) => r.allowed);
  }

  it('for every scenario file of the project (and the selectors of each namespace-name form)', async () => {
    const files = loadScenarioFiles(['e2e/scenarios']);
    const ns = (name: string, extra: object = {}) => ({ name, labels: { 'kubernetes.io/metadata.name': name, ns: name, ...extra } });
    const pod = (namespace: string, name: string, ip: string) => ({ namespace, name, ip, node: 'node-1', labels: { pod: name }, containerPorts: [{ containerPort: 80, protocol: 'TCP' as const }] });
    const knp = (namespace: string, peer: object): ManifestObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'knp', namespace }, spec: { podSelector: {}, ingress: [{ from: [peer] }] } });
    const forms: Scenario = {
      name: 'namespace-name-forms',
      namespaces: [ns('x'), ns('y'), ns('shop')],
      pods: [pod('x', 'a', '10.9.0.1'), pod('y', 'b', '10.9.0.2'), pod('shop', 'c', '10.9.0.3')],
      policies: [
        knp('x', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } } }),
        knp('y', { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['x'] }] } }),
        calico({ selector: "projectcalico.org/namespace == 'shop'", ingress: [{ action: 'Allow', source: { namespaceSelector: "projectcalico.org/name starts with 's' || kubernetes.io/metadata.name == 'y'" } }] }, 'GlobalNetworkPolicy', null),
      ],
      probes: ['x/a', 'y/b', 'shop/c'].flatMap((from) => ['x/a', 'y/b', 'shop/c'].filter((to) => to !== from).map((to) => ({ from, to, port: 80, protocol: 'TCP' as const, expected: true }))),
      steps: [{ namespaceLabels: [{ name: 'x', labels: { 'kubernetes.io/metadata.name': 'x', team: 'ops' } }], probes: [{ from: 'x/a', to: 'shop/c', port: 80, protocol: 'TCP', expected: true }] }],
    };
    const all = [...files.map((f) => ({ schema: f.schema, scenarios: f.scenarios })), { schema: 'calico-truth-tables/v1', scenarios: [forms] }];
    let probes = 0;
    for (const [i, f] of all.entries()) {
      const n = NamespaceNames.of(f.scenarios);
      const original = await verdicts(f.schema, f.scenarios, `original-${i}.json`);
      const rewritten = await verdicts(f.schema, f.scenarios.map((s) => n.scenario(s)), `rewritten-${i}.json`);
      expect(rewritten).toEqual(original);
      probes += original.length;
    }
    expect(probes).toBeGreaterThan(3000);
    // The forms scenario is not trivial: its selectors both allow and deny.
    const formVerdicts = await verdicts('calico-truth-tables/v1', [forms], 'forms.json');
    expect(formVerdicts).toContain(true);
    expect(formVerdicts).toContain(false);
  }, 60_000);
});
