/**
 * A workload endpoint's QoS controls (`spec.qosControls`, or the pod's `qos.projectcalico.org/*`
 * annotations) in its `cali-tw-`/`cali-fw-` chains, as Felix renders them in iptables
 * (`felix/rules/endpoints.go` `endpointIptablesChain`):
 *
 * - packet rate: the first rules of the chain, before the conntrack rules, so every packet —
 *   of established connections too — counts: clear scratch mark 0; set it on a packet within
 *   `-m limit --limit <rate>/sec --limit-burst <burst>`; DROP a packet without it; clear it
 *   again (policy match blocks use the same bit afresh). Burst 0 means 5, as Calico documents
 *   and its pod-annotation converter defaults it;
 * - connections: right after the conntrack rules, so only the first segment of a new TCP
 *   connection meets it: `-p tcp --syn -m connlimit --connlimit-above <n> --connlimit-mask 0`
 *   → `REJECT --reject-with tcp-reset` — every address together, counted by this rule;
 * - ingress limits go in `cali-tw-` (traffic to the workload), egress in `cali-fw-`.
 *
 * Bandwidth, burst, peak rate and minimum burst are not iptables: Felix programs them with
 * `tc` (`felix/dataplane/linux/qos`), which Tessera does not; nor does it mark DSCP (Felix's
 * mangle-table `QoSPolicy`). `unenforcedQoSFields` names the
 * ones an endpoint sets, so the endpoint manager can say so (a warning per endpoint and the
 * `tessera_qos_unenforced_endpoints` gauge), and the offline tools too.
 */
import type { QoSControls } from '../proto/index.ts';
import { DROP, REJECT_TCP_RESET, clearMark, setMark } from './action.ts';
import type { ChainRule } from './chain.ts';
import { MARK_SCRATCH0 } from './marks.ts';
import { ANY, type Match } from './match.ts';
import { MatchBuilder } from './match-builder.ts';

/** The packet burst a packet rate without one gets (Calico's documented default). */
export const DEFAULT_PACKET_BURST = 5;
/**
 * The largest packet rate and burst the kernel's `limit` match takes (`XT_LIMIT_SCALE`) and the
 * largest connection limit (`u32`). A larger value is clamped — validation warns — rather than
 * refused: a refused endpoint would be dropped. A value ≤ 0 is no limit.
 */
const MAX_PACKET_LIMIT = 10000;
const MAX_CONNECTIONS = 0xffffffff;

type Direction = 'ingress' | 'egress';

const CLEAR_SCRATCH0 = clearMark(MARK_SCRATCH0);
const SET_SCRATCH0 = setMark(MARK_SCRATCH0);
const SCRATCH0_CLEAR: Match = new MatchBuilder().markClear(MARK_SCRATCH0).build();

/** The rules that go before the conntrack rules: the packet-rate limit of `dir`, if any. */
export function packetRateRules(qos: QoSControls | undefined, dir: Direction): ChainRule[] {
  const rate = Math.min((dir === 'ingress' ? qos?.ingressPacketRate : qos?.egressPacketRate) ?? 0, MAX_PACKET_LIMIT);
  if (!(rate > 0)) return [];
  const given = (dir === 'ingress' ? qos?.ingressPacketBurst : qos?.egressPacketBurst) ?? 0;
  const burst = given > 0 ? Math.min(given, MAX_PACKET_LIMIT) : DEFAULT_PACKET_BURST;
  const clear: ChainRule = { match: ANY, action: CLEAR_SCRATCH0, comments: [`Clear ${dir} packet rate limit mark`] };
  return [
    clear,
    { match: new MatchBuilder().packetRate(rate, burst).build(), action: SET_SCRATCH0, comments: [`Mark packets within ${dir} packet rate limit`] },
    { match: SCRATCH0_CLEAR, action: DROP, comments: [`Drop packets over ${dir} packet rate limit`] },
    clear,
  ];
}

/** The rules that go right after the conntrack rules: the connection limit of `dir`, if any. */
export function connectionLimitRules(qos: QoSControls | undefined, dir: Direction): ChainRule[] {
  const limit = Math.min((dir === 'ingress' ? qos?.ingressMaxConnections : qos?.egressMaxConnections) ?? 0, MAX_CONNECTIONS);
  if (!(limit > 0)) return [];
  return [
    {
      match: new MatchBuilder().tcpSyn().connlimitAbove(limit).build(),
      action: REJECT_TCP_RESET,
      comments: [`Reject connections over ${dir} connection limit`],
    },
  ];
}

/** The limits that need `tc` (Felix `dataplane/linux/qos`), which Tessera does not program. */
export const TC_QOS_FIELDS = [
  'ingressBandwidth',
  'ingressBurst',
  'ingressPeakrate',
  'ingressMinburst',
  'egressBandwidth',
  'egressBurst',
  'egressPeakrate',
  'egressMinburst',
] as const satisfies readonly (keyof QoSControls)[];

/** Every field that is set and not enforced: `TC_QOS_FIELDS`, then `dscp` (Felix marks it in the mangle table). */
export const UNENFORCED_QOS_FIELDS = [...TC_QOS_FIELDS, 'dscp'] as const;

/** The fields of `qos` that are set and not enforced (`UNENFORCED_QOS_FIELDS`), in that order. */
export function unenforcedQoSFields(qos: QoSControls | undefined): string[] {
  if (qos === undefined) return [];
  return [...TC_QOS_FIELDS.filter((f) => (qos[f] ?? 0) !== 0), ...(qos.dscp === undefined ? [] : ['dscp'])];
}
