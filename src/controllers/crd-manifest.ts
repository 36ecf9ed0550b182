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
/**
 * The experimental channel of ClusterNetworkPolicy (egress `nodes`, `domainNames`,
 * `destinationNamedPort`), applied over manifests/ to opt in: `kubectl apply -f manifests/`
 * does not recurse into manifests/experimental/, so the default install is the standard channel.
 */
export const EXPERIMENTAL_CNP_MANIFEST = join(REPO_ROOT, 'manifests', 'experimental', 'clusternetworkpolicies.yaml');
export const EXPERIMENTAL_CNP_CRD = join(CRDS_DIR, 'experimental', 'policy.networking.k8s.io_clusternetworkpolicies.yaml');

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

/** manifests/experimental/clusternetworkpolicies.yaml: crds/experimental's CRD under a header saying how to use it. */
export function renderExperimentalCnpManifest(crdFile = EXPERIMENTAL_CNP_CRD): string {
  const body = readFileSync(crdFile, 'utf8').replace(/^(#.*\n)+/, '');
  return `# Generated from crds/experimental/policy.networking.k8s.io_clusternetworkpolicies.yaml by
# manifests/generate.ts (npx tsx manifests/generate.ts). Do not edit.
#
# The EXPERIMENTAL channel of the ClusterNetworkPolicy CRD (network-policy-api v0.3.0): the
# standard one (manifests/01-crds.yaml) plus egress \`nodes\` and \`domainNames\` peers and
# \`destinationNamedPort\`. Opt in after installing Tessera:
#   kubectl apply -f manifests/experimental/clusternetworkpolicies.yaml
# Back to the standard channel (remove experimental fields from existing objects first):
#   kubectl apply -f manifests/01-crds.yaml
---
${body}`;
}
