/**
 * Hosts as endpoints in scenario files (../shared/scenarios/README.md, "Hosts as endpoints"):
 * the optional `nodes` list and probe endpoints that name a node. Shared by `tessera
 * simulate`'s reader (scenario-file.ts) and the e2e runner's (e2e/runner/scenario.ts), so both
 * accept and refuse the same files; each wraps the problems found here in its own error type,
 * prefixed with the file and scenario.
 *
 * What a valid scenario holds (every problem message names the field it is about):
 * - node names are non-empty, unique, and contain no `/` (a `/` makes an endpoint a pod);
 * - a node's `ip` is an IPv4 or an IPv6 address; `ip6` (optional, like a pod's) is an IPv6
 *   address beside an IPv4 `ip`: the node is dual-stack;
 * - no address is held twice in one scenario (two nodes, or a node and a pod);
 * - `labels` map strings to strings;
 * - `hostPorts`: port 1–65535, protocol TCP, UDP or SCTP (TCP when omitted), no port and
 *   protocol twice;
 * - a probe endpoint without `/` names a node of `nodes`; a probe `to` a node names one of its
 *   hostPorts (port and protocol: a node serves only those, as a pod serves its
 *   containerPorts); a node endpoint has an address of the probe's family (`ipVersion`, 4 when
 *   omitted); a node does not probe itself (self-traffic is not probed).
 *
 * A node that only pods name (`pods[].node`) needs no entry here: it has no address of its own
 * to probe. A listed node may also be a pod's `node`.
 */
import { isIPv4, isIPv6 } from 'node:net';

export type HostPortProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface ScenarioHostPort {
  readonly port: number;
  /** @default 'TCP' */
  readonly protocol?: HostPortProtocol;
}

export interface ScenarioNode {
  readonly name: string;
  /** The Node object's labels. */
  readonly labels?: Record<string, string>;
  /** The node's address in the scenario: IPv4 or IPv6. */
  readonly ip: string;
  /** An IPv6 address beside an IPv4 `ip` (a dual-stack node). */
  readonly ip6?: string;
  /** Ports the node serves in its host network namespace. */
  readonly hostPorts?: readonly ScenarioHostPort[];
}

/** The fields of a probe this module checks. */
export interface NodeProbeFields {
  readonly from: string;
  readonly to: string;
  readonly port: number;
  readonly protocol?: string;
  readonly ipVersion?: 4 | 6;
}

/** Whether a probe endpoint names a node (no `/`) rather than a pod (`ns/pod`). */
export function isNodeEndpoint(endpoint: string): boolean {
  return !endpoint.includes('/');
}

/** The node's address of `family`, or undefined when it has none. */
export function nodeAddress(node: Pick<ScenarioNode, 'ip' | 'ip6'>, family: 4 | 6): string | undefined {
  if (family === 4) return isIPv4(node.ip) ? node.ip : undefined;
  return isIPv6(node.ip) ? node.ip : node.ip6;
}

/** Whether `node` serves `port`/`protocol` (protocol TCP when omitted on either side). */
export function servesHostPort(node: Pick<ScenarioNode, 'hostPorts'>, port: number, protocol: string | undefined): boolean {
  return (node.hostPorts ?? []).some((h) => h.port === port && (h.protocol ?? 'TCP') === (protocol ?? 'TCP'));
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Every problem with a scenario's `nodes` (undefined is no nodes), each prefixed with its field
 * path (`nodes[1].hostPorts[0]`). `podAddresses` are the scenario's pods' addresses (`ip`,
 * `ip6`): a node may not take one.
 */
export function nodeProblems(nodes: unknown, podAddresses: Iterable<string>): string[] {
  if (nodes === undefined) return [];
  if (!Array.isArray(nodes)) return ['nodes must be a list'];
  const problems: string[] = [];
  const names = new Map<string, number>();
  const taken = new Map<string, string>();
  for (const a of podAddresses) taken.set(a, 'a pod');
  for (const [i, n] of (nodes as unknown[]).entries()) {
    const at = `nodes[${i}]`;
    if (!isObject(n)) {
      problems.push(`${at}: must be an object`);
      continue;
    }
    const name = n['name'];
    if (typeof name !== 'string' || name === '') problems.push(`${at}.name: required (a non-empty string)`);
    else if (name.includes('/')) problems.push(`${at}.name: ${JSON.stringify(name)} contains "/" (an endpoint with "/" is a pod)`);
    else if (names.has(name)) problems.push(`${at}.name: ${JSON.stringify(name)} is also nodes[${names.get(name)}]`);
    else names.set(name, i);
    const labels = n['labels'];
    if (labels !== undefined && !(isObject(labels) && Object.values(labels).every((v) => typeof v === 'string'))) problems.push(`${at}.labels: must map strings to strings`);
    const ip = n['ip'];
    const ip6 = n['ip6'];
    if (typeof ip !== 'string' || !(isIPv4(ip) || isIPv6(ip))) problems.push(`${at}.ip: ${JSON.stringify(ip)} is not an IPv4 or IPv6 address`);
    if (ip6 !== undefined) {
      if (typeof ip6 !== 'string' || !isIPv6(ip6)) problems.push(`${at}.ip6: ${JSON.stringify(ip6)} is not an IPv6 address`);
      else if (typeof ip === 'string' && isIPv6(ip)) problems.push(`${at}.ip6: beside an IPv6 ip (${ip}); ip6 is the IPv6 address of a node whose ip is IPv4`);
    }
    for (const [field, a] of [['ip', ip], ['ip6', ip6]] as const) {
      if (typeof a !== 'string' || !(isIPv4(a) || isIPv6(a))) continue;
      const holder = taken.get(a);
      if (holder !== undefined) problems.push(`${at}.${field}: ${a} is also the address of ${holder}`);
      else taken.set(a, at);
    }
    const hostPorts = n['hostPorts'];
    if (hostPorts === undefined) continue;
    if (!Array.isArray(hostPorts)) {
      problems.push(`${at}.hostPorts: must be a list`);
      continue;
    }
    const served = new Set<string>();
    for (const [j, h] of (hostPorts as unknown[]).entries()) {
      const hat = `${at}.hostPorts[${j}]`;
      const port = isObject(h) ? h['port'] : undefined;
      const protocol = isObject(h) ? (h['protocol'] ?? 'TCP') : undefined;
      if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) problems.push(`${hat}.port: ${JSON.stringify(port)} is not a port (1–65535)`);
      if (typeof protocol !== 'string' || !PROTOCOLS.has(protocol)) problems.push(`${hat}.protocol: ${JSON.stringify(protocol)} is not TCP, UDP or SCTP`);
      else if (typeof port === 'number') {
        const key = `${port}/${protocol}`;
        if (served.has(key)) problems.push(`${hat}: ${key} is listed twice`);
        served.add(key);
      }
    }
  }
  return problems;
}

/**
 * What is wrong with a probe's node endpoints, or undefined. Pod endpoints are the caller's to
 * check; `nodes` are the scenario's (valid: `nodeProblems` found nothing).
 */
export function probeNodeProblem(p: NodeProbeFields, nodes: ReadonlyMap<string, ScenarioNode>): string | undefined {
  const family = p.ipVersion ?? 4;
  for (const side of ['from', 'to'] as const) {
    const e = p[side];
    if (!isNodeEndpoint(e)) continue;
    const node = nodes.get(e);
    if (node === undefined) return `${side} ${JSON.stringify(e)} names no node of the scenario's nodes (an endpoint without "/" is a node)`;
    if (nodeAddress(node, family) === undefined) return `${side} node ${e} has no IPv${family} address (the probe's ipVersion is ${family})`;
  }
  if (p.from === p.to && isNodeEndpoint(p.from)) return `from and to are both node ${p.from}: self-traffic is not probed`;
  const to = isNodeEndpoint(p.to) ? nodes.get(p.to) : undefined;
  if (to !== undefined && !servesHostPort(to, p.port, p.protocol)) {
    return `node ${p.to} does not serve ${p.port}/${p.protocol ?? 'TCP'}: a probe to a node names one of its hostPorts`;
  }
  return undefined;
}

/** The scenario's nodes by name (for `probeNodeProblem`). */
export function nodesByName(nodes: readonly ScenarioNode[] | undefined): Map<string, ScenarioNode> {
  return new Map((nodes ?? []).map((n) => [n.name, n]));
}
