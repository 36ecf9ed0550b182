// Writes manifests/01-crds.yaml from crds/ (see src/controllers/crd-manifest.ts).
import { writeFileSync } from 'node:fs';

import { CRD_MANIFEST, renderCrdManifest } from '../src/controllers/crd-manifest.ts';

writeFileSync(CRD_MANIFEST, renderCrdManifest());
