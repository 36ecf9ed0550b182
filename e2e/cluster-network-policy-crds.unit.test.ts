/**
 * The ClusterNetworkPolicy CRDs Tessera generates (crds/, crds/experimental/; declared in
 * src/api/cluster-network-policy-schema.ts) are upstream's, channel by channel: the same names,
 * scope, versions, annotations, printer columns and subresources, and per version the same
 * openAPIV3Schema — every type, facet, enum, limit and CEL rule — once descriptions are set
 * aside (Tessera describes the fields in its own words; the test checks that exactly the nodes
 * upstream describes are described).
 *
 * Upstream is the Go module sigs.k8s.io/network-policy-api@v0.3.0 in Tessera's module cache,
 * put there by `make setup` (`make network-policy-api`, e2e/network-policy-api.sh).
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { CNP_CHANNELS } from '../src/api/cluster-network-policy-schema.ts';
import type { CnpChannel } from '../src/api/cluster-network-policy-schema.ts';
import { EXPERIMENTAL_CNP_MANIFEST, renderExperimentalCnpManifest } from '../src/controllers/crd-manifest.ts';

type Obj = { [key: string]: unknown };

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MODULE = join(process.env['TESSERA_CACHE'] ?? join(homedir(), '.cache', 'tessera'), 'go', 'mod', 'sigs.k8s.io', 'network-policy-api@v0.3.0');
const FILE = 'policy.networking.k8s.io_clusternetworkpolicies.yaml';
const haveUpstream = existsSync(join(MODULE, 'config', 'crd'));
if (!haveUpstream) {
  console.warn(
    `SKIPPING the upstream comparison of the ClusterNetworkPolicy CRDs: ${MODULE} is absent. ` +
      'Run `make network-policy-api` (part of `make setup`) to download sigs.k8s.io/network-policy-api@v0.3.0.',
  );
}

const ours = (channel: CnpChannel): Obj => parse(readFileSync(join(root, 'crds', channel === 'standard' ? FILE : join('experimental', FILE)), 'utf8')) as Obj;
const upstream = (channel: CnpChannel): Obj => parse(readFileSync(join(MODULE, 'config', 'crd', channel, FILE), 'utf8')) as Obj;

/** `node` without its descriptions, and the paths where it had one. */
function undescribed(node: unknown, path = '', described: string[] = []): { schema: unknown; described: string[] } {
  if (Array.isArray(node)) return { schema: node.map((v, i) => undescribed(v, `${path}[${i}]`, described).schema), described };
  if (typeof node !== 'object' || node === null) return { schema: node, described };
  const out: Obj = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description' && typeof v === 'string') described.push(path);
    else out[k] = undescribed(v, `${path}.${k}`, described).schema;
  }
  return { schema: out, described };
}

const spec = (crd: Obj): Obj => crd['spec'] as Obj;
const versions = (crd: Obj): Obj[] => spec(crd)['versions'] as Obj[];
const schemaOf = (v: Obj): Obj => (v['schema'] as Obj)['openAPIV3Schema'] as Obj;

describe.skipIf(!haveUpstream)('ClusterNetworkPolicy CRDs equal upstream v0.3.0 (config/crd in the Go module)', () => {
  describe.each(CNP_CHANNELS)('the %s channel', (channel) => {
    it('has upstream\'s name, annotations, group, scope, names and short name', () => {
      const [a, b] = [ours(channel), upstream(channel)];
      expect(a['apiVersion']).toBe(b['apiVersion']);
      expect(a['kind']).toBe(b['kind']);
      expect(a['metadata']).toEqual(b['metadata']);
      expect((a['metadata'] as Obj)['annotations']).toMatchObject({ 'policy.networking.k8s.io/bundle-version': 'v0.3.0', 'policy.networking.k8s.io/channel': channel });
      const { versions: _a, ...restA } = spec(a);
      const { versions: _b, ...restB } = spec(b);
      expect(restA).toEqual(restB);
      expect(spec(a)['scope']).toBe('Cluster');
      expect((spec(a)['names'] as Obj)['shortNames']).toEqual(['cnp']);
    });

    it('serves v1alpha2 and v1beta1 (storage), with upstream\'s printer columns and status subresource', () => {
      const strip = (v: Obj): Obj => {
        const { schema: _s, ...rest } = v;
        return rest;
      };
      expect(versions(ours(channel)).map(strip)).toEqual(versions(upstream(channel)).map(strip));
      expect(versions(ours(channel)).map((v) => [v['name'], v['served'], v['storage']])).toEqual([
        ['v1alpha2', true, false],
        ['v1beta1', true, true],
      ]);
    });

    it.each(['v1alpha2', 'v1beta1'])('%s: the openAPIV3Schema is upstream\'s, descriptions aside, and describes exactly the nodes upstream does', (version) => {
      const pick = (crd: Obj): Obj => schemaOf(versions(crd).find((v) => v['name'] === version)!);
      const a = undescribed(pick(ours(channel)));
      const b = undescribed(pick(upstream(channel)));
      expect(a.schema).toEqual(b.schema);
      expect(a.described.sort()).toEqual(b.described.sort());
    });
  });
});

describe('ClusterNetworkPolicy CRDs, channel by channel', () => {
  /** Every property path of a schema. */
  function paths(node: Obj, path = ''): string[] {
    const out: string[] = [];
    for (const [k, v] of Object.entries((node['properties'] as Record<string, Obj> | undefined) ?? {})) out.push(`${path}.${k}`, ...paths(v, `${path}.${k}`));
    if (node['items'] !== undefined) out.push(...paths(node['items'] as Obj, `${path}[]`));
    return out;
  }

  it('experimental adds exactly destinationNamedPort, egress nodes and egress domainNames (and their sub-fields)', () => {
    const standard = new Set(paths(schemaOf(versions(ours('standard'))[1]!)));
    const added = paths(schemaOf(versions(ours('experimental'))[1]!)).filter((p) => !standard.has(p));
    const leaves = new Set(added.map((p) => /^(.*?\.(destinationNamedPort|nodes|domainNames))/.exec(p)?.[1]));
    expect([...leaves].sort()).toEqual([
      '.spec.egress[].protocols[].destinationNamedPort',
      '.spec.egress[].to[].domainNames',
      '.spec.egress[].to[].nodes',
      '.spec.ingress[].protocols[].destinationNamedPort',
    ]);
  });

  it('both versions of a channel share one schema (no conversion webhook)', () => {
    for (const channel of CNP_CHANNELS) {
      const [a, b] = versions(ours(channel));
      expect(schemaOf(a!)).toEqual(schemaOf(b!));
    }
  });

  it('manifests/experimental/clusternetworkpolicies.yaml is in sync (regenerate: npm run manifests)', () => {
    expect(readFileSync(EXPERIMENTAL_CNP_MANIFEST, 'utf8')).toBe(renderExperimentalCnpManifest());
    const docs = readFileSync(EXPERIMENTAL_CNP_MANIFEST, 'utf8').split(/^---$/m).filter((d) => d.trim() !== '' && !/^(#.*\n?)+$/.test(d.trim()));
    expect(docs).toHaveLength(1);
    expect(parse(docs[0]!)).toEqual(ours('experimental'));
  });
});
