/**
 * A pod's QoS annotations → `spec.qosControls`, as libcalico-go's pod converter reads them
 * (`k8s/conversion/workload_endpoint_default.go` `handleQoSControlsAnnotations`):
 *
 * - `kubernetes.io/{ingress,egress}-bandwidth`, then `qos.projectcalico.org/<field>` for the
 *   bandwidth (overriding them), burst, peakrate, minburst, packet rate, packet burst and max
 *   connections of each direction, each a Kubernetes quantity (quantity.ts), and
 *   `qos.projectcalico.org/dscp`;
 * - a value that does not parse is left out (0: no limit); one outside its range is clamped to
 *   the range — either way with an error;
 * - a burst without a bandwidth, a peakrate without a bandwidth (or not above it), a minburst
 *   without a peakrate and a packet burst without a packet rate are dropped, with an error;
 * - a bandwidth without a burst gets 4Gi bits, a packet rate without a burst 5 packets;
 * - nothing set: no `qosControls` at all.
 *
 * Calico logs the errors as one warning and builds the endpoint anyway; so does Tessera:
 * `errors` go to the caller, which says them (the controllers' log, the simulator's notes).
 */
import type { WorkloadEndpointSpec } from '../api/types.ts';
import { QuantityFormatError, quantityValue } from './quantity.ts';

export type QoSControlsSpec = NonNullable<WorkloadEndpointSpec['qosControls']>;
type NumericField = Exclude<keyof QoSControlsSpec, 'dscp'>;

export const QOS_ANNOTATION_PREFIX = 'qos.projectcalico.org/';

/** Inclusive bounds, as Calico's `resource.MustParse` constants give them. */
interface Bounds {
  readonly min: bigint;
  readonly max: bigint;
  /** How Calico's message spells them (`1k`, `1P`). */
  readonly minText: string;
  readonly maxText: string;
}
const bounds = (min: bigint, minText: string, max: bigint, maxText: string): Bounds => ({ min, max, minText, maxText });
const BANDWIDTH = bounds(1000n, '1k', 10n ** 15n, '1P');
const BURST = bounds(1000n, '1k', 0xffffffffn * 8n, '34359738360');
const PEAKRATE = bounds(1010n, '1010', 1_010_000_000_000_000n, '1010T');
const MINBURST = bounds(1000n, '1k', 100_000_000n, '100M');
const PACKET_RATE = bounds(1n, '1', 10_000n, '10k');
const PACKET_BURST = bounds(1n, '1', 10_000n, '10k');
const CONNECTIONS = bounds(1n, '1', 0xffffffffn, '4294967295');

/** Calico's `defaultBurst` (4Gi bits, 512Mi bytes) and `defaultPacketBurst`. */
export const DEFAULT_BURST = 4294967296;
export const DEFAULT_PACKET_BURST = 5;

/** The annotations read, in Calico's order: [annotation, field, bounds, what its error calls it]. */
const ANNOTATIONS: ReadonlyArray<readonly [string, NumericField, Bounds, string]> = [
  ['kubernetes.io/ingress-bandwidth', 'ingressBandwidth', BANDWIDTH, 'ingress bandwidth'],
  ['kubernetes.io/egress-bandwidth', 'egressBandwidth', BANDWIDTH, 'egress bandwidth'],
  [`${QOS_ANNOTATION_PREFIX}ingressBandwidth`, 'ingressBandwidth', BANDWIDTH, 'ingress bandwidth'],
  [`${QOS_ANNOTATION_PREFIX}egressBandwidth`, 'egressBandwidth', BANDWIDTH, 'egress bandwidth'],
  [`${QOS_ANNOTATION_PREFIX}ingressBurst`, 'ingressBurst', BURST, 'ingress burst'],
  [`${QOS_ANNOTATION_PREFIX}egressBurst`, 'egressBurst', BURST, 'egress burst'],
  [`${QOS_ANNOTATION_PREFIX}ingressPeakrate`, 'ingressPeakrate', PEAKRATE, 'ingress peakrate'],
  [`${QOS_ANNOTATION_PREFIX}egressPeakrate`, 'egressPeakrate', PEAKRATE, 'egress peakrate'],
  [`${QOS_ANNOTATION_PREFIX}ingressMinburst`, 'ingressMinburst', MINBURST, 'ingress minburst'],
  [`${QOS_ANNOTATION_PREFIX}egressMinburst`, 'egressMinburst', MINBURST, 'egress minburst'],
  [`${QOS_ANNOTATION_PREFIX}ingressPacketRate`, 'ingressPacketRate', PACKET_RATE, 'ingress packet rate'],
  [`${QOS_ANNOTATION_PREFIX}egressPacketRate`, 'egressPacketRate', PACKET_RATE, 'egress packet rate'],
  [`${QOS_ANNOTATION_PREFIX}ingressPacketBurst`, 'ingressPacketBurst', PACKET_BURST, 'ingress packet burst'],
  [`${QOS_ANNOTATION_PREFIX}egressPacketBurst`, 'egressPacketBurst', PACKET_BURST, 'egress packet burst'],
  [`${QOS_ANNOTATION_PREFIX}ingressMaxConnections`, 'ingressMaxConnections', CONNECTIONS, 'ingress max connections'],
  [`${QOS_ANNOTATION_PREFIX}egressMaxConnections`, 'egressMaxConnections', CONNECTIONS, 'egress max connections'],
];

export const DSCP_ANNOTATION = `${QOS_ANNOTATION_PREFIX}dscp`;
/** numorstring.DSCP: 0–63, or a name. */
const DSCP_NAME = /^(DF|EF|AF[1-4][1-3]|CS[0-6])$/;

export interface PodQoSControls {
  readonly qosControls: QoSControlsSpec | undefined;
  /** One line per annotation Calico would complain about: `<annotation>: <reason>`. */
  readonly errors: readonly string[];
}

/** The annotations a pod's QoS controls are read from (for the controllers' projection). */
export function isQoSAnnotation(name: string): boolean {
  return name.startsWith(QOS_ANNOTATION_PREFIX) || name === 'kubernetes.io/ingress-bandwidth' || name === 'kubernetes.io/egress-bandwidth';
}

/** `spec.qosControls` from `annotations` (see the file comment), with Calico's complaints. */
export function podQoSControls(annotations: Readonly<Record<string, string>> | undefined): PodQoSControls {
  const q: Record<string, number | string> = {};
  const errors: string[] = [];
  if (annotations === undefined) return { qosControls: undefined, errors };
  for (const [annotation, field, b, what] of ANNOTATIONS) {
    const text = annotations[annotation];
    if (text === undefined) continue;
    let v: bigint;
    try {
      v = quantityValue(text);
    } catch (err) {
      if (!(err instanceof QuantityFormatError)) throw err;
      errors.push(`${annotation}: error parsing ${what} annotation: ${err.message}`);
      q[field] = 0;
      continue;
    }
    if (v < b.min) {
      errors.push(`${annotation}: ${JSON.stringify(text)} is too small (less than ${b.minText}), setting it to ${b.minText}`);
      v = b.min;
    } else if (v > b.max) {
      errors.push(`${annotation}: ${JSON.stringify(text)} is too large (more than ${b.maxText}), setting it to ${b.maxText}`);
      v = b.max;
    }
    q[field] = Number(v);
  }
  const n = (f: NumericField): number => (q[f] as number | undefined) ?? 0;
  const drop = (f: NumericField, why: string): void => {
    errors.push(why);
    q[f] = 0;
  };
  for (const d of ['ingress', 'egress'] as const) {
    if (n(`${d}Burst`) !== 0 && n(`${d}Bandwidth`) === 0) drop(`${d}Burst`, `${d} bandwidth must be specified when ${d} burst is specified`);
  }
  for (const d of ['ingress', 'egress'] as const) {
    const peak = n(`${d}Peakrate`);
    if (peak !== 0 && (n(`${d}Bandwidth`) === 0 || n(`${d}Bandwidth`) >= peak)) drop(`${d}Peakrate`, `${d} peakrate must be greater than ${d} bandwidth when specified`);
  }
  for (const d of ['ingress', 'egress'] as const) {
    if (n(`${d}Minburst`) !== 0 && n(`${d}Peakrate`) === 0) drop(`${d}Minburst`, `${d} peakrate must be specified when ${d} minburst is specified`);
  }
  for (const d of ['ingress', 'egress'] as const) {
    if (n(`${d}PacketBurst`) !== 0 && n(`${d}PacketRate`) === 0) drop(`${d}PacketBurst`, `${d} packet rate must be specified when ${d} packet burst is specified`);
  }
  for (const d of ['ingress', 'egress'] as const) {
    if (n(`${d}Bandwidth`) !== 0 && n(`${d}Burst`) === 0) q[`${d}Burst`] = DEFAULT_BURST;
    if (n(`${d}PacketRate`) !== 0 && n(`${d}PacketBurst`) === 0) q[`${d}PacketBurst`] = DEFAULT_PACKET_BURST;
  }
  const dscp = annotations[DSCP_ANNOTATION];
  if (dscp !== undefined) {
    // DSCPFromString: a name in any case becomes its canonical spelling; digits are a number.
    const asNumber = /^[0-9]+$/.test(dscp) ? Number(dscp) : undefined;
    if (asNumber !== undefined && asNumber <= 63) q['dscp'] = asNumber;
    else if (asNumber === undefined && DSCP_NAME.test(dscp.trim().toUpperCase())) q['dscp'] = dscp.trim().toUpperCase();
    else errors.push(`${DSCP_ANNOTATION}: error parsing DSCP annotation: ${JSON.stringify(dscp)} is not 0-63 or a DSCP name (DF, EF, AF11-AF43, CS0-CS6)`);
  }
  // Zero limits are Calico's omitempty: left out (a DSCP of 0 is a value, kept).
  const out: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(q)) if (v !== 0 || k === 'dscp') out[k] = v;
  return { qosControls: Object.keys(out).length === 0 ? undefined : (out as QoSControlsSpec), errors };
}
