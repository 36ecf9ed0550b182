import { describe, expect, it } from 'vitest';
import { validateResource } from './validation.ts';
import { QOS_DSCP_UNENFORCED_MESSAGE, QOS_TC_UNENFORCED_MESSAGE } from './qos-validation.ts';

const wep = (qosControls: unknown) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'WorkloadEndpoint',
  metadata: { name: 'n-k8s-p-eth0', namespace: 'ns' },
  spec: { node: 'n', orchestrator: 'k8s', pod: 'p', endpoint: 'eth0', interfaceName: 'cali1', ipNetworks: ['10.0.0.1/32'], qosControls },
});

describe('WorkloadEndpoint spec.qosControls (Calico QoSControls bounds)', () => {
  it('accepts the enforced limits without a word, and 0 as "no limit"', () => {
    expect(validateResource(wep({ ingressPacketRate: 10000, ingressPacketBurst: 1, egressPacketRate: 1, ingressMaxConnections: 4294967295, egressMaxConnections: 0 }))).toEqual([]);
  });

  it('warns that bandwidth fields and DSCP are not enforced', () => {
    expect(validateResource(wep({ ingressBandwidth: 1000000, ingressBurst: 4294967296, dscp: 'EF' }))).toEqual([
      { path: 'spec.qosControls.ingressBandwidth', message: QOS_TC_UNENFORCED_MESSAGE, severity: 'warning' },
      { path: 'spec.qosControls.ingressBurst', message: QOS_TC_UNENFORCED_MESSAGE, severity: 'warning' },
      { path: 'spec.qosControls.dscp', message: QOS_DSCP_UNENFORCED_MESSAGE, severity: 'warning' },
    ]);
  });

  it('rejects non-integers and a bad DSCP; warns (never refuses) about a limit out of bounds, which the dataplane clamps', () => {
    expect(validateResource(wep({ ingressPacketRate: 10001, egressPacketBurst: -1, ingressMaxConnections: 4294967296, egressBandwidth: 999, ingressPeakrate: 1.5, dscp: 64 }))).toEqual([
      { path: 'spec.qosControls.ingressPeakrate', message: '1.5 is not an integer' },
      { path: 'spec.qosControls.egressBandwidth', message: `${QOS_TC_UNENFORCED_MESSAGE}; 999 is also outside 1000..1000000000000000`, severity: 'warning' },
      { path: 'spec.qosControls.ingressPacketRate', message: '10001 is outside 1..10000: Tessera enforces 10000', severity: 'warning' },
      { path: 'spec.qosControls.egressPacketBurst', message: '-1 is negative: no limit is applied', severity: 'warning' },
      { path: 'spec.qosControls.ingressMaxConnections', message: '4294967296 is outside 1..4294967295: Tessera enforces 4294967295', severity: 'warning' },
      { path: 'spec.qosControls.dscp', message: '64 is not a valid DSCP value (0-63, or DF, EF, AF11-AF43, CS0-CS6)' },
    ]);
  });

  it('warns about a packet burst without a packet rate and an unknown field', () => {
    const findings = validateResource(wep({ egressPacketBurst: 9, ingressPacketRat: 5 }));
    expect(findings.map((f) => [f.path, f.severity])).toEqual([
      ['spec.qosControls.ingressPacketRat', 'warning'],
      ['spec.qosControls.egressPacketBurst', 'warning'],
    ]);
  });
});
