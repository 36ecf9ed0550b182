/**
 * Calico's and Tessera's conversion of one ClusterNetworkPolicy, each reduced to the fields the
 * differential compares (README.md here) — tier, order, selector, namespaceSelector, types, and
 * per rule action, protocol, source/destination selector, namespaceSelector, nets, ports and
 * Calico's `name` annotation — with the documented deliberate differences normalised away and
 * nothing else:
 *
 * - ports: numbers and ranges as text, names as `named <name>`;
 * - selector text → the canonical form of Tessera's selector parser (`''` stays `''`);
 * - a `namespaces` peer: Calico writes a bare namespaceSelector, Tessera adds the pod selector
 *   `projectcalico.org/orchestrator == 'k8s'` (module comment of the converter), so Calico's
 *   side gets that selector where its rule has a namespaceSelector and no selector or nets;
 * - rule annotations: Tessera's own (direction, index, failed-closed reason) are dropped, and so
 *   is `name` on Tessera's fail-closed stand-in rules (Calico's stand-in has no metadata).
 */
import { CNP_POD_SELECTOR, CNP_RULE_FAILED_ANNOTATION, CNP_RULE_NAME_ANNOTATION } from '../../src/convert/cluster-network-policy-converter.ts';
import { parseSelector } from '../../src/selector/index.ts';

type Json = Record<string, unknown>;

export interface NormalEntity {
  selector: string;
  namespaceSelector: string;
  nets: string[];
  ports: string[];
}
export interface NormalRule {
  action: string;
  protocol: string;
  name: string;
  source: NormalEntity;
  destination: NormalEntity;
}
export interface NormalPolicy {
  tier: string;
  order: number;
  selector: string;
  namespaceSelector: string;
  types: string[];
  ingress: NormalRule[];
  egress: NormalRule[];
}

/** The marker of selector text the parser rejects (Calico writes label text into selectors unescaped). */
export const UNPARSEABLE = 'UNPARSEABLE ';

function canonical(text: unknown): string {
  if (typeof text !== 'string' || text === '') return '';
  try {
    return parseSelector(text).toString();
  } catch {
    return `${UNPARSEABLE}${text}`;
  }
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => String(x)) : []);
/** Ports as both sides print them: a number, `"min:max"`, or a name — kept apart as `named <name>` (a name may be all digits). */
function ports(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return v.map((p) => (typeof p === 'number' ? String(p) : typeof p === 'string' && /^[0-9]+:[0-9]+$/.test(p) ? p : `named ${String(p)}`));
}
const rec = (v: unknown): Json => (typeof v === 'object' && v !== null ? (v as Json) : {});

function entity(v: unknown, calicoNamespacesPeer: boolean): NormalEntity {
  const e = rec(v);
  let selector = canonical(e['selector']);
  const namespaceSelector = canonical(e['namespaceSelector']);
  const nets = strings(e['nets']);
  if (calicoNamespacesPeer && selector === '' && namespaceSelector !== '' && nets.length === 0) selector = canonical(CNP_POD_SELECTOR);
  return { selector, namespaceSelector, nets, ports: ports(e['ports']) };
}

function rule(v: unknown, calico: boolean): NormalRule {
  const r = rec(v);
  const annotations = rec(rec(r['metadata'])['annotations']);
  const failedClosed = annotations[CNP_RULE_FAILED_ANNOTATION] !== undefined;
  const name = annotations[CNP_RULE_NAME_ANNOTATION];
  return {
    action: String(r['action']),
    protocol: r['protocol'] === undefined ? '' : String(r['protocol']),
    name: typeof name === 'string' && !failedClosed ? name : '',
    source: entity(r['source'], calico),
    destination: entity(r['destination'], calico),
  };
}

/** A GlobalNetworkPolicy spec (either side's JSON) in the compared form. */
export function normalise(spec: Json, side: 'calico' | 'tessera'): NormalPolicy {
  const calico = side === 'calico';
  return {
    tier: String(spec['tier']),
    order: Number(spec['order'] ?? 0),
    selector: canonical(spec['selector']),
    namespaceSelector: canonical(spec['namespaceSelector']),
    types: strings(spec['types']),
    ingress: (Array.isArray(spec['ingress']) ? spec['ingress'] : []).map((r) => rule(r, calico)),
    egress: (Array.isArray(spec['egress']) ? spec['egress'] : []).map((r) => rule(r, calico)),
  };
}

/** The paths where `a` and `b` differ, each with both values. */
export function differences(a: unknown, b: unknown, path = ''): string[] {
  if (Array.isArray(a) && Array.isArray(b)) {
    const out: string[] = [];
    if (a.length !== b.length) out.push(`${path}: length ${a.length} (Calico) vs ${b.length} (Tessera)`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) out.push(...differences(a[i], b[i], `${path}[${i}]`));
    return out;
  }
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((k) => differences((a as Json)[k], (b as Json)[k], path === '' ? k : `${path}.${k}`));
  }
  return a === b ? [] : [`${path}: ${JSON.stringify(a)} (Calico) vs ${JSON.stringify(b)} (Tessera)`];
}
