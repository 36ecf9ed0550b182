import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { KINDS, resourceName, type KindRow } from '../api/kinds.ts';
import { CRD_MANIFEST, renderCrdManifest } from './crd-manifest.ts';

describe('manifests/01-crds.yaml', () => {
  it('is in sync with crds/ (regenerate: npx tsx manifests/generate.ts)', () => {
    expect(readFileSync(CRD_MANIFEST, 'utf8')).toBe(renderCrdManifest());
  });

  it('holds the CRD of every kind-table row marked crd, and nothing else', () => {
    const names = parseAllDocuments(readFileSync(CRD_MANIFEST, 'utf8'))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string } })
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names.sort()).toEqual(
      KINDS.filter((r: KindRow) => r.crd === true)
        .map((r) => `CustomResourceDefinition/${resourceName(r)}`)
        .sort(),
    );
  });
});
