// Writes manifests/01-crds.yaml from crds/, and manifests/experimental/clusternetworkpolicies.yaml
// from crds/experimental/ (see src/controllers/crd-manifest.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

import { CRD_MANIFEST, EXPERIMENTAL_CNP_MANIFEST, renderCrdManifest, renderExperimentalCnpManifest } from '../src/controllers/crd-manifest.ts';

writeFileSync(CRD_MANIFEST, renderCrdManifest());
mkdirSync(dirname(EXPERIMENTAL_CNP_MANIFEST), { recursive: true });
writeFileSync(EXPERIMENTAL_CNP_MANIFEST, renderExperimentalCnpManifest());
