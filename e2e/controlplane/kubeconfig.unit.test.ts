import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { kubeConfigFor, kubeconfigYaml } from './kubeconfig.ts';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('kubeconfig', () => {
  it('writes one cluster, user and context, with the CA as base64 certificate-authority-data', () => {
    const doc = parse(kubeconfigYaml({ server: 'https://127.0.0.1:6443', token: 't0k', user: 'admin', caPem: PEM }));

    expect(doc).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'tessera', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': Buffer.from(PEM).toString('base64') } },
      ],
      users: [{ name: 'admin', user: { token: 't0k' } }],
      contexts: [{ name: 'tessera', context: { cluster: 'tessera', user: 'admin' } }],
      'current-context': 'tessera',
      preferences: {},
    });
  });

  it('skips TLS verification only when no CA is given, and carries the namespace', () => {
    const kc = kubeConfigFor({ server: 'https://127.0.0.1:1', token: 't', user: 'system:serviceaccount:ns:sa', namespace: 'ns' });

    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://127.0.0.1:1', skipTLSVerify: true });
    expect(kc.getCurrentUser()).toMatchObject({ name: 'system:serviceaccount:ns:sa', token: 't' });
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe('ns');
  });
});
