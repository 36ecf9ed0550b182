import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { defaultK8sPolicyTypes, runConvert } from './convert.ts';

function capture(): { out: { stdout(t: string): void; stderr(t: string): void }; stdout: () => string; stderr: () => string } {
  let o = '';
  let e = '';
  return { out: { stdout: (t) => (o += t), stderr: (t) => (e += t) }, stdout: () => o, stderr: () => e };
}

function file(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-convert-'));
  const p = join(dir, 'np.yaml');
  writeFileSync(p, text);
  return p;
}

const EGRESS_ONLY = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: dns, namespace: shop}
spec:
  podSelector: {}
  egress:
    - ports: [{protocol: UDP, port: 53}]
`;

describe('tessera convert', () => {
  it('prints knp.default.<name> as YAML, applying the apiserver policyTypes defaulting first', async () => {
    const c = capture();
    expect(await runConvert(['-f', file(EGRESS_ONLY)], c.out)).toBe(0);
    const doc = parse(c.stdout()) as { metadata: { name: string }; spec: { types: string[] } };
    expect(doc.metadata.name).toBe('knp.default.dns');
    expect(doc.spec.types).toEqual(['Ingress', 'Egress']);
  });

  it('--output json prints one object', async () => {
    const c = capture();
    expect(await runConvert(['-f', file(EGRESS_ONLY), '--output', 'json'], c.out)).toBe(0);
    expect((JSON.parse(c.stdout()) as { spec: { egress: unknown[] } }).spec.egress).toEqual([
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [53] } },
    ]);
  });

  it('reports a dropped rule on stderr, prints the rest, exits 1', async () => {
    const c = capture();
    const text = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad, namespace: shop}
spec:
  podSelector: {}
  ingress:
    - ports: [{port: http, endPort: 90}]
    - ports: [{port: 443}]
`;
    expect(await runConvert(['-f', file(text)], c.out)).toBe(1);
    expect(c.stderr()).toMatch(/NetworkPolicy shop\/bad: spec\.ingress\[0\]: rule dropped: k8s rule couldn't be converted/);
    expect((parse(c.stdout()) as { spec: { ingress: unknown[] } }).spec.ingress).toHaveLength(1);
  });

  it('usage errors exit 2', async () => {
    const c = capture();
    expect(await runConvert([], c.out)).toBe(2);
    expect(await runConvert(['-f', 'x', '--output', 'xml'], c.out)).toBe(2);
  });

  it('defaultK8sPolicyTypes leaves explicit policyTypes alone', () => {
    const np = { spec: { policyTypes: ['Egress'], ingress: [{}] } };
    expect(defaultK8sPolicyTypes(np)).toBe(np);
  });
});
