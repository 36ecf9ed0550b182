import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, REPO_ROOT } from './shared-control-plane.ts';

const EXAMPLES_DIR = join(REPO_ROOT, 'examples');
const CALICO_API_VERSION = 'projectcalico.org/v3';

interface ExampleFile {
  /** Path relative to the repository root, as passed to kubectl. */
  readonly path: string;
  readonly objects: ReadonlyArray<KubernetesObject & { spec?: unknown }>;
}

/** Every YAML file under examples/ (recursively), parsed; files read in name order. */
function exampleFiles(): ExampleFile[] {
  return (readdirSync(EXAMPLES_DIR, { recursive: true, encoding: 'utf8' }) as string[])
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => {
      const absolute = join(EXAMPLES_DIR, f);
      const objects = parseAllDocuments(readFileSync(absolute, 'utf8'))
        .map((doc) => doc.toJS() as (KubernetesObject & { spec?: unknown }) | null)
        .filter((o): o is KubernetesObject & { spec?: unknown } => o !== null);
      return { path: relative(REPO_ROOT, absolute), objects };
    });
}

const files = exampleFiles();
const calicoFiles = files.filter((f) => f.objects.some((o) => o.apiVersion === CALICO_API_VERSION));
/** The Kubernetes objects the examples refer to (namespaces, pods, …); Namespace files first. */
const prerequisiteFiles = files
  .filter((f) => !calicoFiles.includes(f))
  .sort((a, b) => Number(!hasNamespace(a)) - Number(!hasNamespace(b)));

function hasNamespace(file: ExampleFile): boolean {
  return file.objects.some((o) => o.kind === 'Namespace');
}

describe('examples/ against a real kube-apiserver with crds/ applied', () => {
  beforeAll(async () => {
    await installCalicoCrds(adminKubeConfig());
    for (const file of prerequisiteFiles) await kubectlOk(['apply', '-f', file.path]);
  });

  it('examples/ holds Calico v3 examples', () => {
    expect(calicoFiles.length).toBeGreaterThan(0);
  });

  it.each(calicoFiles.map((f) => [f.path, f] as const))('%s applies unchanged and is stored as written', async (_path, file) => {
    const result = await kubectl(['apply', '-f', file.path]);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const objects = KubernetesObjectApi.makeApiClient(adminKubeConfig());
    for (const written of file.objects) {
      const stored = (await objects.read({
        apiVersion: written.apiVersion,
        kind: written.kind,
        metadata: { name: written.metadata?.name, namespace: written.metadata?.namespace },
      } as KubernetesObject & { metadata: { name: string } })) as KubernetesObject & { spec?: unknown };
      // Nothing pruned or rewritten: every field of the file is in the stored object (the API
      // server may add defaults, e.g. spec.tier).
      expect(stored.spec ?? {}).toMatchObject((written.spec ?? {}) as object);
      expect(stored.metadata?.labels ?? {}).toMatchObject(written.metadata?.labels ?? {});
    }
  });

  it('applying the Calico examples again reports every object unchanged', async () => {
    for (const file of calicoFiles) await kubectlOk(['apply', '-f', file.path]);

    for (const file of calicoFiles) {
      const out = await kubectlOk(['apply', '-f', file.path]);
      for (const line of out.trim().split('\n')) expect(line).toMatch(/ unchanged$/);
    }
  });
});
