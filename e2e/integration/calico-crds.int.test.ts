import { describe, expect, it } from 'vitest';

import { CALICO_CRD_NAMES, crdNamesInRepo, installCalicoCrds } from './calico-crds.ts';
import { kubectlOk } from './kubectl.ts';
import { adminKubeConfig } from './shared-control-plane.ts';

describe('crds/ against a real kube-apiserver', () => {
  it('crds/ defines exactly the CRDs Tessera serves (projectcalico.org, and ClusterNetworkPolicy\'s standard channel)', () => {
    expect(crdNamesInRepo()).toEqual([...CALICO_CRD_NAMES]);
  });

  it('kubectl apply -f crds/ establishes every CRD, serving and storing projectcalico.org/v3 (ClusterNetworkPolicy: v1beta1)', async () => {
    const crds = await installCalicoCrds(adminKubeConfig());

    expect(crds.map((crd) => crd.metadata?.name).sort()).toEqual([...CALICO_CRD_NAMES]);
    for (const crd of crds) {
      const cnp = crd.spec.group === 'policy.networking.k8s.io';
      expect(cnp ? crd.spec.names.kind : crd.spec.group).toBe(cnp ? 'ClusterNetworkPolicy' : 'projectcalico.org');
      expect(crd.spec.versions.filter((v) => v.served && v.storage).map((v) => v.name)).toEqual([cnp ? 'v1beta1' : 'v3']);
      expect(crd.status?.acceptedNames?.kind).toBe(crd.spec.names.kind);
    }
  });

  it('a second kubectl apply -f crds/ changes nothing', async () => {
    await installCalicoCrds(adminKubeConfig());

    const out = await kubectlOk(['apply', '-f', 'crds/']);

    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(CALICO_CRD_NAMES.length);
    for (const line of lines) expect(line).toMatch(/ unchanged$/);
  });

  it('discovery lists every kind under projectcalico.org/v3', async () => {
    await installCalicoCrds(adminKubeConfig());

    const out = await kubectlOk(['api-resources', '--api-group=projectcalico.org', '-o', 'name']);

    expect(out.trim().split('\n').sort()).toEqual(CALICO_CRD_NAMES.filter((n) => n.endsWith('.projectcalico.org')));
  });
});
