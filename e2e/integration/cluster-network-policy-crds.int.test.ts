/**
 * The generated ClusterNetworkPolicy CRDs on a real kube-apiserver, channel by channel: the
 * standard one (crds/, manifests/01-crds.yaml) and then the experimental one applied over it
 * (manifests/experimental/), as a user opts in. Every fixture of
 * crds/testdata/cluster-network-policy/ is applied with --dry-run=server: a valid one is
 * accepted by the channels its `# channel:` header names (both by default); an invalid one is
 * rejected by them with a message containing its `# expect:` header — upstream's CEL messages,
 * the OpenAPI facets, and `unknown field` for an experimental field on the standard channel.
 * src/api/cluster-network-policy-validation.test.ts runs the same fixtures through
 * `validateClusterNetworkPolicy`. At the end the standard channel is back (what crds/ installs).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ApiextensionsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CNP_CRD_NAME } from '../../src/api/cluster-network-policy-crd.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig, REPO_ROOT } from './shared-control-plane.ts';

const FIXTURES = join(REPO_ROOT, 'crds', 'testdata', 'cluster-network-policy');
const STANDARD = 'crds/policy.networking.k8s.io_clusternetworkpolicies.yaml';
const EXPERIMENTAL = 'manifests/experimental/clusternetworkpolicies.yaml';

interface Fixture {
  readonly file: string;
  readonly channels: readonly string[];
  readonly expect: string | undefined;
}

function fixtures(dir: 'valid' | 'invalid'): Fixture[] {
  return readdirSync(join(FIXTURES, dir))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => {
      const text = readFileSync(join(FIXTURES, dir, f), 'utf8');
      const channel = /^# channel: (.*)$/m.exec(text)?.[1];
      return {
        file: relative(REPO_ROOT, join(FIXTURES, dir, f)),
        channels: channel === undefined ? ['standard', 'experimental'] : [channel],
        expect: /^# expect: (.*)$/m.exec(text)?.[1],
      };
    });
}

/** Applies `file` and waits until the CRD is Established with `channel`'s schema served. */
async function install(file: string, channel: string): Promise<void> {
  await kubectlOk(['apply', '-f', file]);
  const api = adminKubeConfig().makeApiClient(ApiextensionsV1Api);
  await pollUntil(
    async () => {
      const crd = await api.readCustomResourceDefinition({ name: CNP_CRD_NAME });
      const established = (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
      return established && crd.metadata?.annotations?.['policy.networking.k8s.io/channel'] === channel ? true : undefined;
    },
    { description: `the ${channel} ClusterNetworkPolicy CRD to be Established`, timeoutMs: 60_000 },
  );
  // The API server swaps a CRD's schema asynchronously: wait until an object only this
  // channel accepts (or rejects) is judged so.
  const probe = relative(REPO_ROOT, join(FIXTURES, 'valid', 'experimental-fields.yaml'));
  await pollUntil(async () => ((await kubectl(['apply', '--dry-run=server', '-f', probe])).code === 0) === (channel === 'experimental') || undefined, {
    description: `the ${channel} schema to be served`,
    timeoutMs: 60_000,
  });
}

describe.each(['standard', 'experimental'])('the %s ClusterNetworkPolicy CRD against the real API server', (channel) => {
  beforeAll(async () => {
    await install(channel === 'standard' ? STANDARD : EXPERIMENTAL, channel);
  });

  afterAll(async () => {
    if (channel === 'experimental') await install(STANDARD, 'standard');
  });

  const valid = fixtures('valid');
  const invalid = fixtures('invalid');

  it.each(valid.filter((f) => f.channels.includes(channel)).map((f) => f.file))('accepts %s', async (file) => {
    const r = await kubectl(['apply', '--dry-run=server', '-f', file]);
    expect(r.code, r.stderr).toBe(0);
  });

  it.each(invalid.filter((f) => f.channels.includes(channel)).map((f) => [f.file, f.expect] as const))('rejects %s with "%s"', async (file, message) => {
    expect(message, `${file}: no "# expect:" header`).toBeDefined();
    const r = await kubectl(['apply', '--dry-run=server', '-f', file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toContain(message);
  });

  it('serves v1beta1 (storage) and v1alpha2, with upstream\'s annotations and short name', async () => {
    const crd = await adminKubeConfig().makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: CNP_CRD_NAME });
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([
      ['v1alpha2', true, false],
      ['v1beta1', true, true],
    ]);
    expect(crd.metadata?.annotations).toMatchObject({ 'policy.networking.k8s.io/bundle-version': 'v0.3.0', 'policy.networking.k8s.io/channel': channel });
    expect(crd.spec.names.shortNames).toEqual(['cnp']);
    const resources = await kubectlOk(['api-resources', '--api-group=policy.networking.k8s.io', '-o', 'wide']);
    expect(resources).toMatch(/clusternetworkpolicies\s+cnp\s+policy\.networking\.k8s\.io\/v1beta1\s+false\s+ClusterNetworkPolicy/);
  });
});

describe('a ClusterNetworkPolicy stored under one version reads back under the other', () => {
  afterAll(async () => {
    await kubectl(['delete', 'clusternetworkpolicies.policy.networking.k8s.io', 'cnp-int-roundtrip', '--ignore-not-found']);
  });

  it('created as v1alpha2, read as v1beta1 with the printer columns', async () => {
    await kubectlOk(['apply', '-f', '-'], {
      stdin: JSON.stringify({
        apiVersion: 'policy.networking.k8s.io/v1alpha2',
        kind: 'ClusterNetworkPolicy',
        metadata: { name: 'cnp-int-roundtrip' },
        spec: { tier: 'Baseline', priority: 7, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
      }),
    });
    const got = JSON.parse(await kubectlOk(['get', 'clusternetworkpolicies.v1beta1.policy.networking.k8s.io', 'cnp-int-roundtrip', '-o', 'json'])) as { apiVersion: string; spec: unknown };
    expect(got.apiVersion).toBe('policy.networking.k8s.io/v1beta1');
    expect(got.spec).toEqual({ tier: 'Baseline', priority: 7, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    const table = await kubectlOk(['get', 'clusternetworkpolicies.policy.networking.k8s.io', 'cnp-int-roundtrip']);
    expect(table).toMatch(/NAME\s+TIER\s+PRIORITY\s+AGE/);
    expect(table).toMatch(/cnp-int-roundtrip\s+Baseline\s+7\s/);
  });
});
