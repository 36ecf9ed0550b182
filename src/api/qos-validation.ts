/**
 * `spec.qosControls` of a WorkloadEndpoint, checked against the bounds Calico documents on
 * `QoSControls` (libcalico-go `internalapi/workloadendpoint.go`; the same bounds its pod
 * converter clamps annotations to). A field of 0 is "no limit" and always valid. Out of
 * bounds is a warning, never an error (an endpoint the agent refuses is dropped, and a remote
 * endpoint dropped widens the rules that deny it): Felix's iptables renderer panics on a packet
 * rate or burst above 10000 (the kernel's `XT_LIMIT_SCALE`), so the dataplane clamps an enforced
 * limit into its bounds (`qos-controls.ts`), and a negative one is no limit.
 *
 * Warnings say what Tessera does not do with a valid value: bandwidth, burst, peak rate and
 * minimum burst need `tc`, DSCP marking needs the mangle table — neither is programmed — and a
 * burst without its rate is never applied (by Calico either).
 */
import { fieldPath, type FieldErrorCollector } from './field-error.ts';
import { isAbsent } from './shape.ts';

interface Bound {
  readonly min: number;
  readonly max: number;
}

/** `v` (> 0) brought into `b`, as the dataplane programs it. */
function clampQoS(v: number, b: Bound): number {
  return Math.min(Math.max(v, b.min), b.max);
}
const BANDWIDTH: Bound = { min: 1000, max: 1e15 };
const BURST: Bound = { min: 1000, max: 34359738360 };
const PEAKRATE: Bound = { min: 1010, max: 1.01e15 };
const MINBURST: Bound = { min: 1000, max: 1e8 };
const PACKETS: Bound = { min: 1, max: 10000 };
const CONNECTIONS: Bound = { min: 1, max: 4294967295 };

/** Every numeric field, its bound, and whether Tessera enforces it. */
const FIELDS: ReadonlyArray<readonly [string, Bound, 'iptables' | 'tc']> = [
  ['ingressBandwidth', BANDWIDTH, 'tc'],
  ['ingressBurst', BURST, 'tc'],
  ['ingressPeakrate', PEAKRATE, 'tc'],
  ['ingressMinburst', MINBURST, 'tc'],
  ['egressBandwidth', BANDWIDTH, 'tc'],
  ['egressBurst', BURST, 'tc'],
  ['egressPeakrate', PEAKRATE, 'tc'],
  ['egressMinburst', MINBURST, 'tc'],
  ['ingressPacketRate', PACKETS, 'iptables'],
  ['ingressPacketBurst', PACKETS, 'iptables'],
  ['egressPacketRate', PACKETS, 'iptables'],
  ['egressPacketBurst', PACKETS, 'iptables'],
  ['ingressMaxConnections', CONNECTIONS, 'iptables'],
  ['egressMaxConnections', CONNECTIONS, 'iptables'],
];
const KNOWN = new Set([...FIELDS.map(([f]) => f), 'dscp']);

/** The message of the warning for a bandwidth field (validate and simulate print it). */
export const QOS_TC_UNENFORCED_MESSAGE = 'NOT ENFORCED by Tessera: bandwidth limits need tc, which Tessera does not program (packet-rate and connection limits are enforced)';
export const QOS_DSCP_UNENFORCED_MESSAGE = 'NOT ENFORCED by Tessera: DSCP marking is not programmed';

const DSCP_NAME = /^(DF|EF|AF[1-4][1-3]|CS[0-6])$/i;

/** Checks `qos` (the value of `spec.qosControls`, a record) at `path`. */
export function checkQoSControls(c: FieldErrorCollector, path: string, qos: Readonly<Record<string, unknown>>): void {
  // The API server prunes a field its schema does not have: a warning, not a reason to drop the endpoint.
  for (const key of Object.keys(qos)) if (!KNOWN.has(key)) c.warning(fieldPath(path, key), `unknown field, ignored (known: ${[...KNOWN].join(', ')})`);
  const value = (f: string): number => (typeof qos[f] === 'number' && (qos[f] as number) > 0 ? (qos[f] as number) : 0);
  for (const [field, b, how] of FIELDS) {
    const v = qos[field];
    if (isAbsent(v)) continue;
    const at = fieldPath(path, field);
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      c.error(at, `${JSON.stringify(v)} is not an integer`);
      continue;
    }
    if (v === 0) continue;
    if (how === 'tc') {
      c.warning(at, v < b.min || v > b.max ? `${QOS_TC_UNENFORCED_MESSAGE}; ${v} is also outside ${b.min}..${b.max}` : QOS_TC_UNENFORCED_MESSAGE);
      continue;
    }
    // Never an error: the agent drops an endpoint its validator refuses, and a remote endpoint
    // dropped leaves the IP sets of rules that deny it (a widening). The dataplane clamps.
    if (v < 0) c.warning(at, `${v} is negative: no limit is applied`);
    else if (v < b.min || v > b.max) c.warning(at, `${v} is outside ${b.min}..${b.max}: Tessera enforces ${clampQoS(v, b)}`);
  }
  for (const d of ['ingress', 'egress'] as const) {
    if (value(`${d}PacketBurst`) !== 0 && value(`${d}PacketRate`) === 0) {
      c.warning(fieldPath(path, `${d}PacketBurst`), `ignored without ${d}PacketRate (as in Calico)`);
    }
  }
  const dscp = qos['dscp'];
  if (!isAbsent(dscp)) {
    const at = fieldPath(path, 'dscp');
    const ok = (typeof dscp === 'number' && Number.isInteger(dscp) && dscp >= 0 && dscp <= 63) || (typeof dscp === 'string' && (DSCP_NAME.test(dscp.trim()) || /^([0-9]|[1-5][0-9]|6[0-3])$/.test(dscp)));
    if (!ok) c.error(at, `${JSON.stringify(dscp)} is not a valid DSCP value (0-63, or DF, EF, AF11-AF43, CS0-CS6)`);
    else c.warning(at, QOS_DSCP_UNENFORCED_MESSAGE);
  }
}
