import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runValidate } from './validate.ts';
import { EXIT_UNENFORCED } from './exit-status.ts';
import { unreadKind } from '../api/unenforced-kinds.ts';

const unreadKindReason = (apiVersion: string, kind: string): string => {
  const k = unreadKind(apiVersion, kind);
  return k.status === 'not-enforced' ? k.reason : '';
};

const GOOD = `apiVersion: projectcalico.org/v3
kind: Tier
metadata:
  name: security
spec:
  order: 100
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: web
  namespace: shop
spec:
  selector: app == 'web'
  egress:
    - action: Allow
      protocol: TCP
      destination:
        ports: [443]
---
`;

const BAD = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: web
  namespace: data
spec:
  ingress:
    - action: Allow
      protocol: TCP
      destination:
        ports: [80, "80-90"]
    - action: Allow
    - action: Deny
      source:
        selector: "role == 'db' && && x == 'y'"
`;

const K8S_JSON = JSON.stringify({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'deny', namespace: 'shop' },
  spec: { podSelector: {} },
});

const LIST = `apiVersion: v1
kind: List
items:
  - apiVersion: projectcalico.org/v3
    kind: GlobalNetworkPolicy
    metadata: {name: allow-dns}
    spec:
      egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]
  - apiVersion: policy.networking.k8s.io/v1alpha1
    kind: AdminNetworkPolicy
    metadata: {name: admin-deny}
  - apiVersion: projectcalico.org/v3
    kind: HostEndpoint
    metadata: {name: node1-eth0}
    spec: {node: node1, interfaceName: eth0}
`;

const BROKEN = `apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: ok}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: [unclosed
`;

class Capture {
  out = '';
  err = '';
  readonly io = { stdout: (t: string) => void (this.out += t), stderr: (t: string) => void (this.err += t) };
}

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const c = new Capture();
  const code = await runValidate(argv, c.io);
  return { code, out: c.out, err: c.err };
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tessera-validate-'));
  await mkdir(path.join(dir, 'good'));
  await writeFile(path.join(dir, 'good', 'policies.yaml'), GOOD);
  await writeFile(path.join(dir, 'good', 'k8s.json'), K8S_JSON);
  await writeFile(path.join(dir, 'good', 'README.md'), '# not a manifest\n');
  await mkdir(path.join(dir, 'good', 'nested'));
  await writeFile(path.join(dir, 'good', 'nested', 'list.yml'), LIST);
  await writeFile(path.join(dir, 'bad.yaml'), BAD);
  await writeFile(path.join(dir, 'broken.yaml'), BROKEN);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('tessera validate', () => {
  it('prints ok for valid objects (a HostEndpoint too), notes skipped ones, says an AdminNetworkPolicy is NOT ENFORCED, recurses into directories, and exits 4', async () => {
    const { code, out } = await run(['-f', path.join(dir, 'good')]);
    const k8s = path.join(dir, 'good', 'k8s.json');
    const list = path.join(dir, 'good', 'nested', 'list.yml');
    expect(out.split('\n')).toEqual([
      `note: ${k8s} (document 1): skipped networking.k8s.io/v1 NetworkPolicy shop/deny: not a projectcalico.org resource`,
      'ok  GlobalNetworkPolicy allow-dns',
      `${list} (document 1, item 2): NOT ENFORCED: policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy admin-deny: ${unreadKindReason('policy.networking.k8s.io/v1alpha1', 'AdminNetworkPolicy')}`,
      'ok  HostEndpoint node1-eth0',
      'ok  Tier security',
      'ok  NetworkPolicy shop/web',
      '4 valid, 0 invalid, 1 NOT ENFORCED, 1 skipped',
      '',
    ]);
    expect(code).toBe(EXIT_UNENFORCED);
  });

  it('exits 0 for the same objects without the AdminNetworkPolicy', async () => {
    const { code, out } = await run(['-f', path.join(dir, 'good', 'k8s.json'), '-f', path.join(dir, 'good', 'policies.yaml')]);
    expect(out).toMatch(/\n2 valid, 0 invalid, 1 skipped\n$/);
    expect(code).toBe(0);
  });

  it('prints every error as "Kind ns/name: path: message" and exits 1', async () => {
    const { code, out } = await run(['-f', path.join(dir, 'bad.yaml')]);
    expect(out).toBe(
      [
        'NetworkPolicy data/web: spec.ingress[0].destination.ports[1]: "80-90" is not a port or a range (use "80:90")',
        "NetworkPolicy data/web: spec.ingress[2].source.selector: unexpected token '&&' at column 17",
        '0 valid, 1 invalid',
        '',
      ].join('\n'),
    );
    expect(code).toBe(1);
  });

  it('reads ClusterNetworkPolicy files (v1beta1 and v1alpha2): ok, or every error with its field path and exit 1; an experimental field is a warning', async () => {
    const file = path.join(dir, 'cnp.yaml');
    await writeFile(
      file,
      `apiVersion: policy.networking.k8s.io/v1beta1
kind: ClusterNetworkPolicy
metadata: {name: admin-ok}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {}}
  egress: [{action: Deny, to: [{networks: [169.254.169.254/32]}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: admin-bad}
spec:
  tier: Admin
  priority: 1001
  subject: {namespaces: {}, pods: {podSelector: {}}}
  ingress:
    - action: Deny
      from: [{namespaces: {}}]
      protocols: [{tcp: {destinationPort: {range: {start: 90, end: 80}}}}]
  egress: [{action: Accept, to: [{networks: [10.0.0.1/8]}]}]
---
apiVersion: policy.networking.k8s.io/v1beta1
kind: ClusterNetworkPolicy
metadata: {name: to-nodes}
spec:
  tier: Baseline
  priority: 0
  subject: {namespaces: {}}
  egress: [{action: Accept, to: [{nodes: {}}]}]
`,
    );
    const { code, out } = await run(['-f', file]);
    expect(out.split('\n')).toEqual([
      'ok  ClusterNetworkPolicy admin-ok',
      'ClusterNetworkPolicy admin-bad: spec.priority: Invalid value: 1001: spec.priority in body should be less than or equal to 1000',
      'ClusterNetworkPolicy admin-bad: spec.subject: Too many: 2: must have at most 1 items (namespaces, pods: exactly one may be set)',
      'ClusterNetworkPolicy admin-bad: spec.ingress[0].protocols[0].tcp.destinationPort.range: Start port must be less than End port',
      'ClusterNetworkPolicy admin-bad: spec.egress[0].to[0].networks[0]: Invalid CIDR format provided (host bits set: 10.0.0.0/8)',
      'ok  ClusterNetworkPolicy to-nodes',
      'warning: ClusterNetworkPolicy to-nodes: spec.egress[0].to[0].nodes: nodes is an experimental-channel field: the standard CRD rejects it (manifests/experimental/clusternetworkpolicies.yaml installs the experimental one)',
      '2 valid, 1 invalid',
      '',
    ]);
    expect(code).toBe(1);
  });

  it('names the file, line and column of a parse error on stderr, still checks the other documents, and exits 3', async () => {
    const { code, out, err } = await run(['-f', path.join(dir, 'broken.yaml')]);
    expect(out.trimEnd().split('\n')).toEqual(['ok  Tier ok', '1 valid, 0 invalid, 1 unreadable']);
    expect(err).toMatch(new RegExp(`^tessera validate: ${path.join(dir, 'broken.yaml').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:9:1: invalid YAML: `));
    expect(code).toBe(3);
  });

  it('accepts several -f flags and bare paths, and reports a missing path on stderr with exit 3', async () => {
    const missing = path.join(dir, 'nope.yaml');
    const { code, out, err } = await run(['-f', path.join(dir, 'good', 'policies.yaml'), missing]);
    expect(out).toContain('ok  NetworkPolicy shop/web');
    expect(err).toBe(`tessera validate: ${missing}: no such file or directory (ENOENT)\n`);
    expect(code).toBe(3);
  });

  it('--output json gives an unreadable document its line and column', async () => {
    const { code, out } = await run(['-f', path.join(dir, 'broken.yaml'), '--output', 'json']);
    const report = JSON.parse(out) as { results: Record<string, unknown>[] };
    expect(report.results[1]).toMatchObject({ status: 'unreadable', file: path.join(dir, 'broken.yaml'), document: 2, line: 9, column: 1 });
    expect(code).toBe(3);
  });

  it('warns about a hand-written knp.default.* policy without failing', async () => {
    const file = path.join(dir, 'reserved.yaml');
    await writeFile(
      file,
      'apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: knp.default.web, namespace: shop}\nspec: {}\n',
    );
    const { code, out } = await run(['-f', file]);
    expect(out).toContain(
      'warning: NetworkPolicy shop/knp.default.web: metadata.name: names starting "knp.default." are reserved for policies converted from Kubernetes NetworkPolicies; the converter will overwrite or delete it',
    );
    expect(code).toBe(0);
  });

  it('reports an unknown kind in projectcalico.org/v3 as an error', async () => {
    const file = path.join(dir, 'typo.yaml');
    await writeFile(file, 'apiVersion: projectcalico.org/v3\nkind: NetworkPolicies\nmetadata: {name: a, namespace: b}\n');
    const { code, out } = await run(['-f', file]);
    expect(out).toContain('NetworkPolicies b/a: kind: unknown kind "NetworkPolicies" in projectcalico.org/v3');
    expect(code).toBe(1);
  });

  it('--output json lists each object with file, document, errors and warnings', async () => {
    const { code, out } = await run(['-f', path.join(dir, 'bad.yaml'), '--output', 'json']);
    const report = JSON.parse(out) as { results: Record<string, unknown>[]; summary: Record<string, number> };
    expect(report.summary).toEqual({ valid: 0, invalid: 1, unenforced: 0, skipped: 0, unreadable: 0 });
    expect(report.results[0]).toMatchObject({
      status: 'invalid',
      file: path.join(dir, 'bad.yaml'),
      document: 1,
      kind: 'NetworkPolicy',
      namespace: 'data',
      name: 'web',
      warnings: [],
    });
    expect((report.results[0]?.['errors'] as unknown[]).length).toBe(2);
    expect(code).toBe(1);
  });

  it('warns when two documents define the same object (the later one wins)', async () => {
    const file = path.join(dir, 'good', 'policies.yaml');
    const { code, out } = await run(['-f', file, '-f', file]);
    expect(out).toContain(`warning: Tier security: metadata.name: same Tier as ${file} (document 1); the later one wins`);
    expect(code).toBe(0);
  });

  it('reads the staged kinds: Learn/Ignore warned, a Delete with a spec and a bad Set invalid, a bad stagedAction named (issue 27 item 12)', async () => {
    const file = path.join(dir, 'staged.yaml');
    await writeFile(
      file,
      `apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: learned, namespace: shop}
spec: {stagedAction: Learn, selector: "app == 'web'", ingress: [{action: Deny}]}
---
apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: gone}
spec: {stagedAction: Delete, tier: default, selector: all()}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: set, namespace: shop}
spec: {selector: "app == 'web'", ingress: [{action: Allow, protocol: TCP, destination: {ports: ["80-90"]}}]}
---
apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: k, namespace: shop}
spec: {stagedAction: Delete}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: odd, namespace: shop}
spec: {stagedAction: Maybe}
`,
    );
    const { code, out } = await run(['-f', file]);
    expect(out.split('\n')).toEqual([
      'ok  StagedNetworkPolicy shop/learned',
      "warning: StagedNetworkPolicy shop/learned: spec.stagedAction: Learn is accepted, as Calico accepts it, but NOT enforced and NOT previewed by simulate or explain (a Calico Enterprise policy-recommendation action); the agent counts the policy as Felix does",
      'StagedGlobalNetworkPolicy gone: spec: Spec fields, except Tier, should all be zero-value if stagedAction is Delete (set: selector)',
      'StagedNetworkPolicy shop/set: spec.ingress[0].destination.ports[0]: "80-90" is not a port or a range (use "80:90")',
      'ok  StagedKubernetesNetworkPolicy shop/k',
      'StagedNetworkPolicy shop/odd: spec.stagedAction: must be Set, Delete, Learn or Ignore, not "Maybe"',
      '2 valid, 3 invalid',
      '',
    ]);
    expect(code).toBe(1);
  });

  it('rejects a GlobalNetworkSet that claims a namespace (issue 27 item 4)', async () => {
    const file = path.join(dir, 'gns.yaml');
    await writeFile(file, `apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {name: inject, labels: {projectcalico.org/namespace: ns1}}\nspec: {nets: [203.0.113.0/24]}\n`);
    const { code, out } = await run(['-f', file]);
    expect(out.split('\n')[0]).toBe(
      "GlobalNetworkSet inject: metadata.labels.projectcalico.org/namespace: projectcalico.org/namespace is not a valid label name on a GlobalNetworkSet: Calico sets it from the namespace an object is in, and namespace-scoped rule selectors would match the set's nets as that namespace's",
    );
    expect(code).toBe(1);
  });

  it('exits 2 with usage on bad arguments', async () => {
    expect((await run([])).code).toBe(2);
    const bad = await run(['--output', 'xml', '-f', dir]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--output must be text or json, not "xml"');
    expect((await run(['--frobnicate'])).err).toContain('unknown option "--frobnicate"');
  });

  it('runs as `tessera validate` from the CLI entry point', async () => {
    const main = path.resolve(import.meta.dirname, 'main.ts');
    const tsx = path.resolve(import.meta.dirname, '../../node_modules/.bin/tsx');
    const exec = promisify(execFile);
    const good = await exec(tsx, [main, 'validate', '-f', path.join(dir, 'good', 'policies.yaml')]);
    expect(good.stdout).toBe('ok  Tier security\nok  NetworkPolicy shop/web\n2 valid, 0 invalid\n');
    await expect(exec(tsx, [main, 'validate', '-f', path.join(dir, 'bad.yaml')])).rejects.toMatchObject({ code: 1 });
  }, 30_000);
});
