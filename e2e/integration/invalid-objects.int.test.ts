import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { kindRowOf } from '../../src/api/kinds.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl } from './kubectl.ts';
import { adminKubeConfig, REPO_ROOT } from './shared-control-plane.ts';

const FIXTURES = join(REPO_ROOT, 'e2e', 'integration', 'fixtures', 'invalid');

/** Each fixture, the field the API server must name, and the reason it must give. */
const CASES = [
  { file: 'networkpolicy-order-not-a-number.yaml', field: 'spec.order', reason: 'must be of type number' },
  { file: 'tier-order-not-a-number.yaml', field: 'spec.order', reason: 'must be of type number' },
  { file: 'networkpolicy-types-bad-enum.yaml', field: 'spec.types[1]', reason: 'Unsupported value: "Sideways"' },
  { file: 'globalnetworkpolicy-action-bad-enum.yaml', field: 'spec.egress[0].action', reason: 'Unsupported value: "Accept"' },
  { file: 'globalnetworkpolicy-rule-missing-action.yaml', field: 'spec.ingress[0].action', reason: 'Required value' },
  { file: 'workloadendpoint-bad-interface-name.yaml', field: 'spec.interfaceName', reason: 'should match' },
] as const;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

function load(file: string): Manifest {
  return parse(readFileSync(join(FIXTURES, file), 'utf8')) as Manifest;
}

describe('the API server rejects invalid projectcalico.org/v3 objects, naming the field', () => {
  beforeAll(async () => {
    const admin = adminKubeConfig();
    await installCalicoCrds(admin);
    // So namespaced fixtures reach schema validation instead of failing on a missing namespace.
    await admin
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'tessera-invalid' } } })
      .catch((err: unknown) => {
        if (!(err instanceof ApiException && err.code === 409)) throw err;
      });
  });

  it.each(CASES)('kubectl apply $file fails: "$field: … $reason"', async ({ file, field, reason }) => {
    const result = await kubectl(['apply', '-f', relative(REPO_ROOT, join(FIXTURES, file))]);

    expect(result.code).not.toBe(0);
    const { kind, metadata } = load(file);
    expect(result.stderr).toContain(`The ${kind} "${metadata.name}" is invalid`);
    const line = result.stderr.split('\n').find((l) => l.includes(`${field}: `)) ?? result.stderr;
    expect(line).toContain(`${field}: `);
    expect(line).toContain(reason);
  });

  it.each(CASES)('CustomObjectsApi create of $file gets 422 Invalid with a cause for $field', async ({ file, field, reason }) => {
    const manifest = load(file);
    const [group, version] = manifest.apiVersion.split('/') as [string, string];
    const row = kindRowOf(manifest.apiVersion, manifest.kind);
    if (row === undefined) throw new Error(`${file}: ${manifest.apiVersion} ${manifest.kind} is not in the kind table`);
    const { plural } = row;
    const api = adminKubeConfig().makeApiClient(CustomObjectsApi);

    const failure = await (manifest.metadata.namespace === undefined
      ? api.createClusterCustomObject({ group, version, plural, body: manifest })
      : api.createNamespacedCustomObject({ group, version, plural, namespace: manifest.metadata.namespace, body: manifest })
    ).then(
      () => undefined,
      (err: unknown) => err,
    );

    expect(failure).toBeInstanceOf(ApiException);
    const { code, body } = failure as ApiException<unknown>;
    expect(code).toBe(422);
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as {
      reason: string;
      details?: { causes?: Array<{ field?: string; message?: string }> };
    };
    expect(status.reason).toBe('Invalid');
    const cause = status.details?.causes?.find((c) => c.field === field);
    expect(cause, JSON.stringify(status.details?.causes)).toBeDefined();
    expect(`${cause?.message}`).toContain(reason.replace(/^Unsupported value: /, ''));
  });
});
