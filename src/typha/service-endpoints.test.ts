import type { V1EndpointSlice } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { hostPort, readyServiceAddresses, type EndpointSliceLister } from './service-endpoints.ts';

function lister(items: V1EndpointSlice[], seen: Array<{ namespace: string; labelSelector: string }> = []): EndpointSliceLister {
  return {
    listNamespacedEndpointSlice: (param) => {
      seen.push(param);
      return Promise.resolve({ items });
    },
  };
}

const slice = (addressType: string, port: Array<{ name?: string; port?: number }>, endpoints: V1EndpointSlice['endpoints']): V1EndpointSlice => ({
  addressType,
  ports: port,
  endpoints,
});

describe('readyServiceAddresses', () => {
  it('lists the ready endpoints of the Service on its named port, both families, IPv6 bracketed', async () => {
    const seen: Array<{ namespace: string; labelSelector: string }> = [];
    const api = lister(
      [
        slice('IPv4', [{ name: 'metrics', port: 9093 }, { name: 'tessera-typha', port: 5473 }], [
          { addresses: ['10.0.0.2'], conditions: { ready: true } },
          { addresses: ['10.0.0.1'] },
          { addresses: ['10.0.0.3'], conditions: { ready: false } },
          { addresses: ['10.0.0.4'], conditions: { ready: true, terminating: true } },
        ]),
        slice('IPv6', [{ name: 'tessera-typha', port: 5473 }], [{ addresses: ['fd00::1'], conditions: { ready: true } }]),
      ],
      seen,
    );
    expect(await readyServiceAddresses(api, 'tessera-system', 'tessera-typha')).toEqual(['10.0.0.1:5473', '10.0.0.2:5473', '[fd00::1]:5473']);
    expect(seen).toEqual([{ namespace: 'tessera-system', labelSelector: 'kubernetes.io/service-name=tessera-typha' }]);
  });

  it("takes a slice's only port when none has the name; a slice without the port contributes nothing", async () => {
    const api = lister([
      slice('IPv4', [{ port: 5473 }], [{ addresses: ['10.0.0.1'] }]),
      slice('IPv4', [{ name: 'a', port: 1 }, { name: 'b', port: 2 }], [{ addresses: ['10.0.0.9'] }]),
      slice('IPv4', [], [{ addresses: ['10.0.0.8'] }]),
    ]);
    expect(await readyServiceAddresses(api, 'ns', 'svc')).toEqual(['10.0.0.1:5473']);
  });

  it('hostPort brackets IPv6 only', () => {
    expect(hostPort('10.0.0.1', 1)).toBe('10.0.0.1:1');
    expect(hostPort('::1', 1)).toBe('[::1]:1');
  });
});
