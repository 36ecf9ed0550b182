/**
 * manifests/01-crds.yaml is generated from crds/ (the single source of the CRD schemas), so
 * `kubectl apply -f manifests/` installs exactly the CRDs the repository tests. Regenerate
 * with `npx tsx manifests/generate.ts`; crd-manifest.test.ts fails when the file is stale.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CRDS_DIR = join(REPO_ROOT, 'crds');
export const CRD_MANIFEST = join(REPO_ROOT, 'manifests', '01-crds.yaml');

const HEADER = `# Generated from crds/*.yaml by manifests/generate.ts (npx tsx manifests/generate.ts).
# Do not edit: change crds/generate.ts, regenerate crds/, then regenerate this file.
`;

/** Every crds/*.yaml, in file-name order, as one multi-document YAML stream. */
export function renderCrdManifest(crdsDir = CRDS_DIR): string {
  const files = readdirSync(crdsDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const docs = files.map((f) => {
    const text = readFileSync(join(crdsDir, f), 'utf8');
    // Drop each file's own comment header; ours says where the stream comes from.
    const body = text.replace(/^(#.*\n)+/, '').replace(/^---\n/, '');
    return `# Source: crds/${f}\n${body.endsWith('\n') ? body : `${body}\n`}`;
  });
  return HEADER + docs.map((d) => `---\n${d}`).join('');
}
