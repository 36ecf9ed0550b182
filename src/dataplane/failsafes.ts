/**
 * Failsafe ports: traffic a host endpoint's policy can never block, so that protecting a node
 * cannot cut it off from what keeps it in the cluster (Felix `FailsafeInboundHostPorts`,
 * `FailsafeOutboundHostPorts`; `rules/static.go` `failsafeInChain`/`failsafeOutChain`;
 * host-endpoints-and-services §A.7).
 *
 * - Every host endpoint chain (filter, mangle and raw `cali-th-`/`cali-fh-`) jumps to
 *   `cali-failsafe-out`/`cali-failsafe-in` before any policy; the forward chains do not.
 * - `cali-failsafe-in` accepts each inbound entry (`-p <proto> --dport <port> [-s <net>]`),
 *   `cali-failsafe-out` each outbound entry (`--dport <port> [-d <net>]`). An entry whose net is
 *   of the other IP family is left out of that family's chain.
 * - In the raw table only, each chain also accepts the reverse direction of the other list
 *   (`cali-failsafe-in` the outbound entries as `--sport`, with the net as source;
 *   `cali-failsafe-out` the inbound ones as `--sport`, with the net as destination): raw runs
 *   before conntrack, and without them a reply could fall through to a doNotTrack policy and
 *   leave half of a failsafe connection untracked.
 *
 * What the defaults cover (individual ports, not ranges): Felix's lists, unchanged since v3.29 —
 * - inbound: SSH (tcp 22), DHCP client (udp 68), BGP (tcp 179), etcd (tcp 2379, 2380), Typha
 *   (tcp 5473), the Kubernetes API server (tcp 6443), tcp 6666 and 6667 (etcd in some
 *   distributions);
 * - outbound: DNS (udp 53), DHCP server (udp 67), BGP, etcd, Typha, the API server, 6666, 6667;
 * - and, inbound, Tessera's additions ({@link TESSERA_FAILSAFE_INBOUND_ADDITIONS}): its pods'
 *   health ports 9093–9095 and the kubelet's API (tcp 10250).
 * - NOT covered: NodePorts, an API server on another port (443 behind a load balancer), DNS over
 *   TCP, other host-network pods' probe ports (a kubeadm control plane's etcd 2381, controller
 *   manager 10257, scheduler 10259 — on `lo` under a `*` HostEndpoint), and the replies of
 *   connections the host opens to other ports (filter and mangle let replies through by
 *   conntrack, so these only matter for untracked policy).
 */
import { ACCEPT } from './action.ts';
import type { Chain, ChainRule } from './chain.ts';
import { CHAIN_FAILSAFE_IN, CHAIN_FAILSAFE_OUT } from './chain-names.ts';
import { MatchBuilder, parseCidr } from './match-builder.ts';

/** One failsafe entry (Felix `ProtoPort`): a protocol and port, optionally limited to a peer network. */
export interface ProtoPort {
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
  /** CIDR (canonical) of the peer: the source of inbound, the destination of outbound traffic. */
  readonly net?: string;
}

const entries = (text: string): readonly ProtoPort[] =>
  Object.freeze(
    text.split(',').map((e) => {
      const [protocol, port] = e.split(':');
      return Object.freeze({ protocol: protocol as ProtoPort['protocol'], port: Number(port) });
    }),
  );

/** Felix's default `FailsafeInboundHostPorts`. */
export const FELIX_FAILSAFE_INBOUND: readonly ProtoPort[] = entries('tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667');
/** Felix's default `FailsafeOutboundHostPorts`. */
export const FELIX_FAILSAFE_OUTBOUND: readonly ProtoPort[] = entries('udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667');

/**
 * Inbound ports Tessera's default adds to Felix's: the health and metrics ports of its own
 * host-network pods (Typha 9093, controllers 9094, agent 9095, as manifests/ run them) and the
 * kubelet's API (10250). A HostEndpoint policy that does not admit them would otherwise fail the
 * kubelet's liveness probes of Tessera's pods — they are host-network pods, so their probes are
 * host traffic, policed by a `*` HostEndpoint (on `lo` too) — and restart them, and cut the API
 * server's `kubectl logs`/`exec` to the node. Measured on kind: a `*` HostEndpoint with no policy
 * restarted the controllers and an agent within a minute under Felix's list alone.
 */
export const TESSERA_FAILSAFE_INBOUND_ADDITIONS: readonly ProtoPort[] = entries('tcp:9093,tcp:9094,tcp:9095,tcp:10250');

/** The agent's default inbound failsafes: Felix's list, then {@link TESSERA_FAILSAFE_INBOUND_ADDITIONS}. */
export const DEFAULT_FAILSAFE_INBOUND: readonly ProtoPort[] = Object.freeze([...FELIX_FAILSAFE_INBOUND, ...TESSERA_FAILSAFE_INBOUND_ADDITIONS]);
/** The agent's default outbound failsafes: Felix's list. */
export const DEFAULT_FAILSAFE_OUTBOUND: readonly ProtoPort[] = FELIX_FAILSAFE_OUTBOUND;

/** A failsafe port list that cannot be parsed; names the list and the entry. */
export class FailsafePortsError extends Error {
  override readonly name = 'FailsafePortsError';
  constructor(
    readonly text: string,
    readonly entry: string,
    reason: string,
  ) {
    super(`failsafe ports '${text}': entry '${entry}': ${reason}`);
  }
}

/**
 * Parses Felix's port-list syntax (`PortListParam.Parse`): comma-separated `<port>`,
 * `<proto>:<port>` or `<proto>:<net>:<port>`, an IPv6 net in brackets
 * (`tcp:[fd00::/64]:22`); the protocol (tcp or udp, any case) defaults to tcp; blank entries
 * are skipped; `none` (any case) is the empty list. Throws {@link FailsafePortsError}.
 */
export function parseFailsafePorts(text: string): ProtoPort[] {
  if (text.trim().toLowerCase() === 'none') return [];
  const out: ProtoPort[] = [];
  for (const raw of text.split(',')) {
    let entry = raw.trim();
    if (entry === '') continue;
    let net: string | undefined;
    const open = entry.indexOf('[');
    if (open >= 0 && entry.includes(']')) {
      const close = entry.indexOf(']:');
      if (close < open) throw new FailsafePortsError(text, raw.trim(), "an IPv6 net must be written '[<net>]:<port>'");
      net = entry.slice(open + 1, close);
      entry = entry.slice(0, open) + entry.slice(close + 2);
    }
    const parts = entry.split(':');
    if (parts.length > 3) throw new FailsafePortsError(text, raw.trim(), 'ports should be <protocol>:<net>:<number> or <protocol>:<number> or <number>');
    let protocol = 'tcp';
    let port = parts[parts.length - 1]!;
    if (parts.length === 3) {
      net = parts[1]!;
      protocol = parts[0]!.toLowerCase();
    } else if (parts.length === 2) {
      protocol = parts[0]!.toLowerCase();
    }
    port = port.trim();
    if (protocol !== 'tcp' && protocol !== 'udp') throw new FailsafePortsError(text, raw.trim(), `unknown protocol: ${protocol}`);
    if (!/^\d+$/.test(port)) throw new FailsafePortsError(text, raw.trim(), 'ports should be integers');
    const n = Number(port);
    if (n > 65535) throw new FailsafePortsError(text, raw.trim(), 'ports must be in range 0-65535');
    if (net === undefined || net === '') {
      out.push({ protocol, port: n });
      continue;
    }
    let cidr: string;
    try {
      cidr = parseCidr(net).text;
    } catch {
      throw new FailsafePortsError(text, raw.trim(), `invalid CIDR or IP ${net}`);
    }
    out.push({ protocol, port: n, net: cidr });
  }
  return out;
}

/** The family of an entry's net; undefined for an entry without one. */
function netFamily(p: ProtoPort): 4 | 6 | undefined {
  return p.net === undefined ? undefined : parseCidr(p.net).family;
}

/** `-p <proto> --dport|--sport <port> [-s|-d <net>] -j ACCEPT`, or nothing for the other family. */
function failsafeRule(p: ProtoPort, ipVersion: 4 | 6, portSide: 'src' | 'dst', netSide: 'src' | 'dst'): ChainRule | undefined {
  const family = netFamily(p);
  if (family !== undefined && family !== ipVersion) return undefined;
  const m = new MatchBuilder().protocol(p.protocol).ports(portSide, [{ first: p.port, last: p.port }]);
  if (p.net !== undefined) m.net(netSide, p.net);
  return { match: m.build(), action: ACCEPT };
}

/** Failsafe entries in the configuration a renderer takes. */
export interface FailsafeConfig {
  readonly inbound: readonly ProtoPort[];
  readonly outbound: readonly ProtoPort[];
}

export const DEFAULT_FAILSAFES: FailsafeConfig = Object.freeze({ inbound: DEFAULT_FAILSAFE_INBOUND, outbound: DEFAULT_FAILSAFE_OUTBOUND });

/**
 * `cali-failsafe-in` and `cali-failsafe-out` for one table of family `ipVersion` (see the module
 * comment; `raw` adds the reverse entries).
 */
export function failsafeChains(table: 'filter' | 'mangle' | 'raw', ipVersion: 4 | 6, cfg: FailsafeConfig): Chain[] {
  const push = (out: ChainRule[], r: ChainRule | undefined): void => {
    if (r !== undefined) out.push(r);
  };
  const fsIn: ChainRule[] = [];
  const fsOut: ChainRule[] = [];
  for (const p of cfg.inbound) push(fsIn, failsafeRule(p, ipVersion, 'dst', 'src'));
  for (const p of cfg.outbound) push(fsOut, failsafeRule(p, ipVersion, 'dst', 'dst'));
  if (table === 'raw') {
    for (const p of cfg.outbound) push(fsIn, failsafeRule(p, ipVersion, 'src', 'src'));
    for (const p of cfg.inbound) push(fsOut, failsafeRule(p, ipVersion, 'src', 'dst'));
  }
  return [
    { name: CHAIN_FAILSAFE_IN, rules: fsIn },
    { name: CHAIN_FAILSAFE_OUT, rules: fsOut },
  ];
}
