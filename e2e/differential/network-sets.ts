/**
 * Random NetworkSets and GlobalNetworkSets over the fixture (fixture.ts), and the selector
 * terms that pick them out in rule entities.
 *
 * A network set's nets join the IP sets of every rule selector its labels match (Felix's calc
 * graph: the label index treats a set like an endpoint whose addresses are its nets). A
 * NetworkSet carries its namespace as `projectcalico.org/namespace` and inherits its namespace's
 * profile labels (libcalico-go syncersv1/updateprocessors/networksetprocessor.go), so only rules
 * whose selector scope includes its namespace select it: a namespaced policy's own namespace, or
 * a rule `namespaceSelector` that matches. A GlobalNetworkSet is selected by a rule with no
 * namespace scope (a GlobalNetworkPolicy without `namespaceSelector`) or with
 * `namespaceSelector: global()`.
 *
 * Nets are drawn so that a set sometimes holds fixture pod addresses (10.66.x.y,
 * fd00:66:x::y: then a rule selecting the set matches that pod's traffic as if it selected the
 * pod) and sometimes none (documentation prefixes, the unused 10.66.9.0/24). Labels are
 * `set` and `zone`, plus now and then a pod label (`app`, `role`) so that pod terms such as
 * `app == 'web'` or `!has(role)` select sets too. No set claims `projectcalico.org/namespace`
 * (validation refuses it: it would move the set's addresses into that namespace's rules).
 */
import type { V3Resource } from '../../src/api/index.ts';
import type { Draw } from './policy-generator.ts';

/** Entity selector terms that match (or deliberately miss) the drawn sets' labels. */
export const NETWORK_SET_TERMS = ["set == 'a'", "set == 'b'", "set in {'a', 'c'}", "set != 'a'", 'has(set)', 'has(zone)', "zone == 'x'", '!has(zone)'];

/** Nets of both families; the comments say which pods each holds. */
const SET_NETS = [
  '10.66.1.0/24', // a1, a2
  '10.66.2.21/32', // b1
  '10.66.3.0/28', // none (g1 is .31, g2 .32)
  '10.66.3.32/32', // g2
  '10.66.0.0/16', // every pod
  '10.66.9.0/24', // none (the EndpointSlice address 10.66.9.50 only)
  '192.0.2.0/24', // none
  'fd00:66:1::/64', // a1, a2
  'fd00:66:2::21/128', // b1
  'fd00:66:3::32/128', // g2
  'fd00:66::/32', // every pod
  '2001:db8::/32', // none
];

const SET_NAMESPACES = ['alpha', 'beta', 'gamma'] as const;

/** Labels of one set: `set` and/or `zone`, now and then a pod label. */
function setLabels(d: Draw): Record<string, string> {
  const labels: Record<string, string> = {};
  if (d.chance(0.8)) labels['set'] = d.pick(['a', 'a', 'b', 'c']);
  if (d.chance(0.5)) labels['zone'] = d.pick(['x', 'y']);
  if (d.chance(0.2)) labels['app'] = d.pick(['web', 'db']);
  if (d.chance(0.1)) labels['role'] = 'admin';
  return labels;
}

/** 1–3 nets, of one family or both. */
function setNets(d: Draw): string[] {
  const nets = d.some(SET_NETS, 3);
  return nets.length > 0 ? nets : [d.pick(SET_NETS)];
}

/**
 * The network sets of one round: with probability `p`, 1–2 GlobalNetworkSets and 0–2
 * NetworkSets (each in a fixture namespace); otherwise none.
 */
export function drawNetworkSets(d: Draw, p = 0.5): V3Resource[] {
  if (!d.chance(p)) return [];
  const out: V3Resource[] = [];
  for (let i = d.int(1, 2) - 1; i >= 0; i--) {
    out.push({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata: { name: `gns-${i}`, labels: setLabels(d) }, spec: { nets: setNets(d) } } as V3Resource);
  }
  for (let i = d.int(0, 2) - 1; i >= 0; i--) {
    const namespace = d.pick(SET_NAMESPACES);
    out.push({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkSet', metadata: { name: `ns-${i}`, namespace, labels: setLabels(d) }, spec: { nets: setNets(d) } } as V3Resource);
  }
  return out;
}
