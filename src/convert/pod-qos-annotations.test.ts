import { describe, expect, it } from 'vitest';
import type { K8sPod } from '../api/index.ts';
import { podQoSControls } from './pod-qos-annotations.ts';
import { projectPod } from './pod-projection.ts';
import { podToWorkloadEndpoint, podToWorkloadEndpointWithWarnings } from './workload-endpoint-builder.ts';

const Q = 'qos.projectcalico.org/';

describe('podQoSControls (libcalico-go handleQoSControlsAnnotations)', () => {
  it('reads every annotation as a quantity and defaults the bursts', () => {
    expect(
      podQoSControls({
        [`${Q}ingressBandwidth`]: '10M',
        [`${Q}egressBandwidth`]: '1G',
        [`${Q}egressBurst`]: '2Gi',
        [`${Q}egressPeakrate`]: '2G',
        [`${Q}egressMinburst`]: '1500k',
        [`${Q}ingressPacketRate`]: '100',
        [`${Q}egressPacketRate`]: '1k',
        [`${Q}egressPacketBurst`]: '20',
        [`${Q}ingressMaxConnections`]: '10',
        [`${Q}egressMaxConnections`]: '1',
        [`${Q}dscp`]: 'ef',
        unrelated: 'x',
      }),
    ).toEqual({
      qosControls: {
        ingressBandwidth: 10_000_000,
        ingressBurst: 4294967296,
        egressBandwidth: 1_000_000_000,
        egressBurst: 2147483648,
        egressPeakrate: 2_000_000_000,
        egressMinburst: 1_500_000,
        ingressPacketRate: 100,
        ingressPacketBurst: 5,
        egressPacketRate: 1000,
        egressPacketBurst: 20,
        ingressMaxConnections: 10,
        egressMaxConnections: 1,
        dscp: 'EF',
      },
      errors: [],
    });
  });

  it('lets the Calico bandwidth annotation override the Kubernetes one', () => {
    expect(podQoSControls({ 'kubernetes.io/ingress-bandwidth': '1M', [`${Q}ingressBandwidth`]: '2M', 'kubernetes.io/egress-bandwidth': '3M' }).qosControls).toEqual({
      ingressBandwidth: 2_000_000,
      ingressBurst: 4294967296,
      egressBandwidth: 3_000_000,
      egressBurst: 4294967296,
    });
  });

  it('leaves an unparseable value out, clamps one out of range, and says so for each', () => {
    const { qosControls, errors } = podQoSControls({
      [`${Q}ingressPacketRate`]: 'fast',
      [`${Q}egressPacketRate`]: '20k',
      [`${Q}ingressMaxConnections`]: '0',
      [`${Q}egressBandwidth`]: '10',
    });
    expect(qosControls).toEqual({ egressPacketRate: 10000, egressPacketBurst: 5, ingressMaxConnections: 1, egressBandwidth: 1000, egressBurst: 4294967296 });
    expect(errors).toEqual([
      `${Q}egressBandwidth: "10" is too small (less than 1k), setting it to 1k`,
      expect.stringMatching(/^qos\.projectcalico\.org\/ingressPacketRate: error parsing ingress packet rate annotation: quantities must match/),
      `${Q}egressPacketRate: "20k" is too large (more than 10k), setting it to 10k`,
      `${Q}ingressMaxConnections: "0" is too small (less than 1), setting it to 1`,
    ]);
  });

  it('drops a burst, peakrate, minburst or packet burst whose companion is missing', () => {
    const { qosControls, errors } = podQoSControls({
      [`${Q}ingressBurst`]: '1M',
      [`${Q}egressBandwidth`]: '5M',
      [`${Q}egressPeakrate`]: '5M',
      [`${Q}ingressMinburst`]: '2k',
      [`${Q}egressPacketBurst`]: '9',
    });
    expect(qosControls).toEqual({ egressBandwidth: 5_000_000, egressBurst: 4294967296 });
    expect(errors).toEqual([
      'ingress bandwidth must be specified when ingress burst is specified',
      'egress peakrate must be greater than egress bandwidth when specified',
      'ingress peakrate must be specified when ingress minburst is specified',
      'egress packet rate must be specified when egress packet burst is specified',
    ]);
  });

  it('rejects a DSCP that is neither 0-63 nor a name, and keeps a DSCP of 0', () => {
    expect(podQoSControls({ [`${Q}dscp`]: '64' }).qosControls).toBeUndefined();
    expect(podQoSControls({ [`${Q}dscp`]: '64' }).errors).toHaveLength(1);
    expect(podQoSControls({ [`${Q}dscp`]: '0' }).qosControls).toEqual({ dscp: 0 });
  });

  it('gives no qosControls for a pod without QoS annotations', () => {
    expect(podQoSControls({ a: 'b' })).toEqual({ qosControls: undefined, errors: [] });
    expect(podQoSControls(undefined)).toEqual({ qosControls: undefined, errors: [] });
  });
});

describe('Pod → WorkloadEndpoint with QoS annotations', () => {
  const pod: K8sPod = {
    metadata: { name: 'web', namespace: 'shop', annotations: { [`${Q}ingressMaxConnections`]: '1', [`${Q}ingressPacketRate`]: 'lots', other: 'x'.repeat(100) } },
    spec: { nodeName: 'node-1' },
    status: { podIP: '10.0.0.7' },
  };

  it('projects the annotations into spec.qosControls and returns what Calico would warn about', () => {
    const { endpoint, warnings } = podToWorkloadEndpointWithWarnings(pod);
    expect(endpoint?.spec.qosControls).toEqual({ ingressMaxConnections: 1 });
    expect(warnings).toEqual([expect.stringMatching(/^qos\.projectcalico\.org\/ingressPacketRate: error parsing/)]);
  });

  it('the controllers’ projected pod keeps the QoS annotations and only them', () => {
    const projected = projectPod(pod as never);
    expect(projected.metadata?.annotations).toEqual({ [`${Q}ingressMaxConnections`]: '1', [`${Q}ingressPacketRate`]: 'lots' });
    expect(podToWorkloadEndpoint(projected)).toEqual(podToWorkloadEndpoint(pod));
  });
});
