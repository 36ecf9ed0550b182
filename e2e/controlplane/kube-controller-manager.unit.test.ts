import { describe, expect, it } from 'vitest';

import { KubeControllerManager } from './kube-controller-manager.ts';

const options = { binary: '/bin/false', kubeconfigPath: '/k', certDir: '/c', logFile: '/l', port: 10257 };

describe('KubeControllerManager', () => {
  it('runs exactly the controllers it is given, without leader election, on loopback', () => {
    const kcm = new KubeControllerManager({ ...options, controllers: ['endpointslice'] });
    expect(kcm.args()).toEqual([
      '--kubeconfig=/k',
      '--controllers=endpointslice',
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      '--bind-address=127.0.0.1',
      '--secure-port=10257',
      '--cert-dir=/c',
    ]);
    expect(kcm.url).toBe('https://127.0.0.1:10257');
  });

  it('refuses an empty controller list (kube-controller-manager would run its defaults)', () => {
    expect(() => new KubeControllerManager({ ...options, controllers: [] })).toThrow(RangeError);
  });
});
