/**
 * The generator's host rounds (policy-generator.ts `hostEndpoints`): random HostEndpoints over
 * the fixture's nodes (fixture.ts FIXTURE_NODES), the GlobalNetworkPolicy host flags, and the
 * selector terms, nets and ports that pick the hosts out.
 *
 * HostEndpoints: 0–2 per node (at least one in the round), each `*`, matched by expectedIPs
 * (the node's addresses; Felix matches the interface holding one — the node's `lo` and uplink)
 * or named (the uplink, `interfaceNames`). expectedIPs are also what selector IP sets learn of a
 * host, so a `*` or named endpoint carries them only sometimes. Labels: now and then the node's
 * (as automatic host endpoints copy them), `hep`, and a pod label (`app`) so pod terms select
 * hosts too; sometimes the `projectcalico-default-allow` profile or a namespace's (its labels
 * then the endpoint's, as a pod's); sometimes named ports the hosts
 * serve. Names sort by node, then draw: of two `*` endpoints on a node the smaller name is the
 * default (Felix `resolveHostEndpoints`). They are valid by construction as Calico validates them
 * (`validateHostEndpointSpec`: a node, and an interface name or expectedIPs; names within
 * `^[a-zA-Z0-9_.-]{1,15}$` or `*`), not filtered by Tessera's own validation: an API server of
 * either side refusing one is a finding.
 *
 * Flags, as Calico's validator accepts them (`validateGlobalNetworkPolicySpec`, reference
 * host-endpoints-and-services §B): preDNAT or doNotTrack need applyOnForward, never both;
 * preDNAT governs ingress only, so its egress rules go and its types are Ingress or absent
 * (clientv3 then defaults Ingress). doNotTrack on a `*` endpoint is drawn too: Felix ignores it
 * with a warning (felix/dataplane/linux/endpoint_mgr.go `updateHostEndpoints`), in v3.28 as at
 * HEAD, and so must Tessera.
 */
import type { V3Resource } from '../../src/api/index.ts';
import { FIXTURE_NODES } from './fixture.ts';
import type { Draw } from './policy-generator.ts';

/** Selector terms on the labels HostEndpoints carry (the node labels they copy, `hep`). */
export const HOST_TERMS = ["hep == 'a'", "hep in {'a', 'b'}", 'has(hep)', "zone == 'east'", 'has(node-role)', "kubernetes.io/hostname == 'node-2'"];
/** Nets holding one node's address or both. */
export const HOST_NETS4 = ['10.66.0.0/24', '10.66.0.2/32'];
export const HOST_NETS6 = ['fd00:66::/120', 'fd00:66::1/128'];
/** The hosts' failsafe port, numeric and by the name a HostEndpoint may give it. */
export const HOST_DST_PORTS: ReadonlyArray<number | string> = [22, 'ssh'];
export const HOST_PORT_NAME = 'ssh';

/** The named ports a HostEndpoint may declare: the hosts serve 22, 8080 and UDP 5353 (fixture.ts HOST_PORTS). */
const HOST_NAMED_PORTS = [
  { name: HOST_PORT_NAME, protocol: 'TCP', port: 22 },
  { name: 'http', protocol: 'TCP', port: 8080 },
  { name: 'dns', protocol: 'UDP', port: 5353 },
] as const;
/** The profile Calico synthesises (libcalico-go lib/resources/static.go): allow all, both directions. */
const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';
/**
 * Profile lists a HostEndpoint may name: the default-allow profile, or a namespace's profile
 * (allow all too, and its `labelsToApply` — `pcns.*` — become the endpoint's labels, Felix's
 * calc graph giving an endpoint its profiles' labels), alone or before the default-allow one.
 */
const HOST_PROFILES: ReadonlyArray<readonly string[]> = [[DEFAULT_ALLOW_PROFILE], [DEFAULT_ALLOW_PROFILE], ['kns.gamma'], ['kns.beta', DEFAULT_ALLOW_PROFILE]];

const hostEndpoint = (name: string, labels: Record<string, string>, spec: Record<string, unknown>): V3Resource =>
  ({ apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name, labels }, spec }) as unknown as V3Resource;

/** The HostEndpoints of one host round (see the file comment); `interfaceNames` lets some name the node's uplink. */
export function drawHostEndpoints(d: Draw, interfaceNames: boolean): V3Resource[] {
  const out: V3Resource[] = [];
  for (const node of FIXTURE_NODES) {
    for (let i = d.pick([0, 1, 1, 2]) - 1; i >= 0; i--) {
      const how = d.pick(interfaceNames ? (['*', '*', 'expected', 'named'] as const) : (['*', '*', 'expected'] as const));
      const spec: Record<string, unknown> = { node: node.name };
      if (how === '*') spec['interfaceName'] = '*';
      if (how === 'named') spec['interfaceName'] = node.uplink;
      if (how === 'expected' || d.chance(0.6)) spec['expectedIPs'] = d.pick([[node.ip, node.ip6], [node.ip], [node.ip6]]);
      if (d.chance(0.5)) spec['profiles'] = [...d.pick(HOST_PROFILES)];
      const ports = d.some(HOST_NAMED_PORTS, 2);
      if (ports.length > 0 && d.chance(0.5)) spec['ports'] = ports.map((p) => ({ ...p }));
      const labels: Record<string, string> = {};
      if (d.chance(0.5)) Object.assign(labels, node.labels);
      if (d.chance(0.7)) labels['hep'] = d.pick(['a', 'a', 'b']);
      if (d.chance(0.15)) labels['app'] = d.pick(['web', 'db']);
      out.push(hostEndpoint(`${node.name}-hep-${i}`, labels, spec));
    }
  }
  if (out.length > 0) return out;
  const node = d.pick(FIXTURE_NODES);
  return [hostEndpoint(`${node.name}-hep-0`, { hep: 'a' }, { node: node.name, interfaceName: '*' })];
}

/** Sets a GlobalNetworkPolicy spec's host flags (or none), as the file comment says. */
export function drawHostFlags(d: Draw, spec: Record<string, unknown>): void {
  switch (d.pick(['none', 'none', 'applyOnForward', 'preDNAT', 'doNotTrack'] as const)) {
    case 'none':
      if (d.chance(0.15)) spec['applyOnForward'] = false;
      return;
    case 'applyOnForward':
      spec['applyOnForward'] = true;
      return;
    case 'doNotTrack':
      spec['doNotTrack'] = true;
      spec['applyOnForward'] = true;
      return;
    case 'preDNAT':
      spec['preDNAT'] = true;
      spec['applyOnForward'] = true;
      delete spec['egress'];
      if (spec['types'] !== undefined) spec['types'] = ['Ingress'];
      return;
  }
}
