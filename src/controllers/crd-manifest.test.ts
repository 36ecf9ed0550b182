import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { CRD_MANIFEST, renderCrdManifest } from './crd-manifest.ts';

describe('manifests/01-crds.yaml', () => {
  it('is in sync with crds/ (regenerate: npx tsx manifests/generate.ts)', () => {
    expect(readFileSync(CRD_MANIFEST, 'utf8')).toBe(renderCrdManifest());
  });

  it('holds the projectcalico.org CRDs', () => {
    const names = parseAllDocuments(readFileSync(CRD_MANIFEST, 'utf8'))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string } })
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names.sort()).toEqual([
      'CustomResourceDefinition/globalnetworkpolicies.projectcalico.org',
      'CustomResourceDefinition/globalnetworksets.projectcalico.org',
      'CustomResourceDefinition/networkpolicies.projectcalico.org',
      'CustomResourceDefinition/networksets.projectcalico.org',
      'CustomResourceDefinition/profiles.projectcalico.org',
      'CustomResourceDefinition/stagedglobalnetworkpolicies.projectcalico.org',
      'CustomResourceDefinition/stagedkubernetesnetworkpolicies.projectcalico.org',
      'CustomResourceDefinition/stagednetworkpolicies.projectcalico.org',
      'CustomResourceDefinition/tiers.projectcalico.org',
      'CustomResourceDefinition/workloadendpoints.projectcalico.org',
    ]);
  });
});
