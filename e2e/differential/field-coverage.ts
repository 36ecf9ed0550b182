/**
 * How often each field was drawn in a round's objects (or many rounds'): the Felix
 * differential prints it so that a run says which parts of the API it actually compared.
 *
 * Keys are field paths with the object's kind in front and array indices and names removed:
 * `GlobalNetworkPolicy.spec.ingress[].destination.notNets`,
 * `networking.k8s.io/NetworkPolicy.spec.ingress[].from[].ipBlock.except`,
 * `GlobalNetworkSet.spec.nets`. Every present field counts once per object or array element
 * that holds it, inner ones too (`NetworkPolicy.spec.egress[].destination` and
 * `NetworkPolicy.spec.egress[].destination.ports`); an array of scalars is one field, its
 * elements are not. Maps whose keys are data (labels, `labelsToApply`, `matchLabels`) are one
 * field too, so label names do not become paths. `kind=<kind>` counts objects.
 *
 * Values that select different behaviour, not just different data, get keys of their own,
 * counted wherever they occur: `action=Pass`, `protocol=ICMPv6` (also a Kubernetes port's),
 * `notProtocol=UDP`, `ipVersion=6`, `defaultAction=Pass`, `namespaceSelector=global()`, the
 * GlobalNetworkPolicy host flags `doNotTrack=true`, `preDNAT=true`, `applyOnForward=true` (and
 * `=false`), a HostEndpoint's `interfaceName=*` (or the name), and a profile list naming
 * `profiles=projectcalico-default-allow`.
 */

/** Keys whose values are counted as `key=value`. */
const VALUE_KEYS = new Set(['action', 'protocol', 'notProtocol', 'ipVersion', 'defaultAction', 'doNotTrack', 'preDNAT', 'applyOnForward', 'interfaceName']);
/** The profile Calico synthesises; a HostEndpoint naming it allows what no policy decides. */
const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';
/** Maps keyed by data, counted as one field. */
const DATA_MAPS = new Set(['labels', 'annotations', 'labelsToApply', 'matchLabels']);

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The kind as a key's prefix: bare for projectcalico.org/v3, `group/Kind` otherwise. */
function kindOf(o: Obj): string {
  const kind = typeof o['kind'] === 'string' ? o['kind'] : '?';
  const api = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  if (api.startsWith('projectcalico.org/') || !api.includes('/')) return kind;
  return `${api.slice(0, api.lastIndexOf('/'))}/${kind}`;
}

/** Adds the counts of `objects` to `into` (a new map by default) and returns it. */
export function fieldCoverage(objects: readonly unknown[], into = new Map<string, number>()): Map<string, number> {
  const bump = (key: string): void => {
    into.set(key, (into.get(key) ?? 0) + 1);
  };
  const walk = (v: Obj, at: string): void => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      const path = `${at}.${k}`;
      bump(path);
      if (VALUE_KEYS.has(k) && (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean')) bump(`${k}=${x}`);
      if (k === 'profiles' && Array.isArray(x) && x.includes(DEFAULT_ALLOW_PROFILE)) bump(`profiles=${DEFAULT_ALLOW_PROFILE}`);
      if (k === 'namespaceSelector' && typeof x === 'string' && x.trim() === 'global()') bump('namespaceSelector=global()');
      if (DATA_MAPS.has(k)) continue;
      if (isObj(x)) walk(x, path);
      else if (Array.isArray(x)) for (const e of x) if (isObj(e)) walk(e, `${path}[]`);
    }
  };
  for (const o of objects) {
    if (!isObj(o)) continue;
    const kind = kindOf(o);
    bump(`kind=${kind}`);
    for (const part of ['metadata', 'spec'] as const) {
      const x = o[part];
      if (isObj(x)) walk(x, `${kind}.${part}`);
    }
  }
  return into;
}
