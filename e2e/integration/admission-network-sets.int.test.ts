/**
 * manifests/22-admission-network-sets.yaml against the real API server: a NetworkSet or a
 * GlobalNetworkSet labelled projectcalico.org/namespace is refused on create and on update,
 * to a cluster admin too, with the object and the field named; the same sets without the label
 * are admitted. (Before: a GlobalNetworkSet labelled `projectcalico.org/namespace: ns1` was
 * admitted and its nets matched ns1's namespace-scoped rules — issue 27 item 4.)
 *
 * Also pins why this is an admission policy and not a CRD rule: the API server refuses a CRD
 * whose CEL rule reads metadata.labels. The binding is cluster-wide: this file removes it.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pollUntil } from '../controlplane/poll-until.ts';
import { installCalicoCrds } from './calico-crds.ts';
import { kubectl, kubectlOk } from './kubectl.ts';
import { adminKubeConfig } from './shared-control-plane.ts';
import { removeTesseraAdmission } from './tessera-admission.ts';

const WAIT = { timeoutMs: 30_000, intervalMs: 200 };
const LABEL = 'projectcalico.org/namespace';

function set(kind: 'NetworkSet' | 'GlobalNetworkSet', name: string, labels: Record<string, string>, namespace?: string): string {
  return JSON.stringify({
    apiVersion: 'projectcalico.org/v3',
    kind,
    metadata: { name, labels, ...(namespace === undefined ? {} : { namespace }) },
    spec: { nets: ['203.0.113.0/24'] },
  });
}

function refusal(kind: string, object: string): string {
  return `${kind} ${object}: metadata.labels.${LABEL}: ${LABEL} is not a valid label name on a ${kind}`;
}

describe('admission for network sets (manifests/22-admission-network-sets.yaml)', () => {
  const ns = `ns-adm-${randomBytes(3).toString('hex')}`;
  const gns = `claim-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    await installCalicoCrds(adminKubeConfig());
    await kubectlOk(['apply', '-f', 'manifests/22-admission-network-sets.yaml']);
    await kubectlOk(['create', 'namespace', ns]);
    // The policy and its binding reach the admission plugin through its own informers.
    await pollUntil(
      async () => {
        const r = await kubectl(['create', '--dry-run=server', '-f', '-'], { stdin: set('GlobalNetworkSet', `${gns}-probe`, { [LABEL]: ns }) });
        return r.code !== 0 && r.stderr.includes(refusal('GlobalNetworkSet', `${gns}-probe`)) ? true : undefined;
      },
      { description: 'the network-set admission policy to refuse a namespace claim', ...WAIT },
    );
  });

  afterAll(async () => {
    await removeTesseraAdmission();
    await kubectl(['delete', 'globalnetworksets.projectcalico.org', gns, `${gns}-ok`, '--ignore-not-found']);
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('refuses a GlobalNetworkSet labelled projectcalico.org/namespace, to a cluster admin too', async () => {
    const r = await kubectl(['create', '-f', '-', '--as=ns-admin', '--as-group=system:masters'], { stdin: set('GlobalNetworkSet', gns, { [LABEL]: ns, role: 'db' }) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(refusal('GlobalNetworkSet', gns));
  });

  it('refuses a NetworkSet labelled projectcalico.org/namespace, whichever namespace it names', async () => {
    for (const claimed of [ns, 'kube-system']) {
      const r = await kubectl(['create', '-f', '-'], { stdin: set('NetworkSet', 'inject', { [LABEL]: claimed }, ns) });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(refusal('NetworkSet', `${ns}/inject`));
    }
  });

  it('admits the set without the label, and refuses an update that adds it', async () => {
    await kubectlOk(['create', '-f', '-'], { stdin: set('GlobalNetworkSet', `${gns}-ok`, { role: 'db' }) });
    const r = await kubectl(['label', 'globalnetworksets.projectcalico.org', `${gns}-ok`, `${LABEL}=${ns}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(refusal('GlobalNetworkSet', `${gns}-ok`));
    const live = JSON.parse(await kubectlOk(['get', 'globalnetworksets.projectcalico.org', `${gns}-ok`, '-o', 'json'])) as { metadata: { labels?: Record<string, string> } };
    expect(live.metadata.labels).toEqual({ role: 'db' });
  });

  it('admits a server-side apply that empties the labels (they reach admission null: the Felix differential found it refused)', async () => {
    const name = `${gns}-empty`;
    const apply = (labels: Record<string, string>) => kubectl(['apply', '--server-side', '--field-manager=emptying', '-f', '-'], { stdin: set('GlobalNetworkSet', name, labels) });
    expect((await apply({ set: 'a', zone: 'x' })).code).toBe(0);
    const emptied = await apply({});
    expect(emptied.stderr).toBe('');
    expect(emptied.code).toBe(0);
    expect((await apply({ [LABEL]: ns })).stderr).toContain(refusal('GlobalNetworkSet', name));
    await kubectl(['delete', 'globalnetworksets.projectcalico.org', name, '--ignore-not-found']);
  });

  it('a CRD rule cannot read metadata.labels (why this is admission, not CEL in crds/)', async () => {
    const group = `t${randomBytes(3).toString('hex')}.tessera.test`;
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `things.${group}` },
      spec: {
        group,
        scope: 'Cluster',
        names: { plural: 'things', singular: 'thing', kind: 'Thing' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                'x-kubernetes-validations': [{ rule: `!has(self.metadata.labels) || !('${LABEL}' in self.metadata.labels)` }],
              },
            },
          },
        ],
      },
    };
    const r = await kubectl(['create', '--dry-run=server', '-f', '-'], { stdin: JSON.stringify(crd) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("compilation failed: ERROR: <input>:1:5: undefined field 'labels'");
  });
});
