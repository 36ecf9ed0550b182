/**
 * Every CRD fixture in crds/testdata and every Calico example, applied to the real
 * kube-apiserver with --dry-run=server: valid ones are accepted unchanged; each invalid one
 * is rejected with a message containing the field named in its `# expect:` header — the
 * structural schema and the CEL rules, as the API server evaluates them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, REPO_ROOT } from './shared-control-plane.ts';

const TESTDATA = join(REPO_ROOT, 'crds', 'testdata');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
}

function expectedHeader(file: string): string {
  const m = /^# expect: (.*)$/m.exec(readFileSync(file, 'utf8'));
  if (m?.[1] === undefined) throw new Error(`${file}: no "# expect:" header`);
  return m[1];
}

const rel = (f: string): string => relative(REPO_ROOT, f);

describe('CRD fixtures against the real API server', () => {
  beforeAll(async () => {
    await installCalicoCrds(adminKubeConfig());
    // The namespaced fixtures and examples live in the example namespaces.
    await kubectlOk(['apply', '-f', 'examples/k8s/00-namespaces.yaml']);
  });

  it.each(yamlFiles(join(TESTDATA, 'valid')).map(rel))('accepts %s', async (file) => {
    const r = await kubectl(['apply', '--dry-run=server', '-f', file]);
    expect(r.code, r.stderr).toBe(0);
  });

  it.each([...yamlFiles(join(TESTDATA, 'invalid')), ...yamlFiles(join(TESTDATA, 'invalid-cel'))].map(rel))(
    'rejects %s, naming the field',
    async (file) => {
      const r = await kubectl(['apply', '--dry-run=server', '-f', file]);
      expect(r.code).not.toBe(0);
      expect(r.stderr + r.stdout).toContain(expectedHeader(join(REPO_ROOT, file)));
    },
  );
});
