/**
 * A ClusterNetworkPolicy checked as the API server checks it against network-policy-api
 * v0.3.0's CRD (cluster-network-policy-schema.ts): the same fields, facets and CEL rules, so
 * `tessera validate` and the node side reject what `kubectl apply` would, and accept what it
 * accepts. Each finding names its field path (`spec.egress[0].to[1].networks[0]`); where the CRD
 * has a CEL rule, the message carries that rule's message word for word ("Start port must be
 * less than End port", "Invalid CIDR format provided", the named-port rule), which the API
 * server prints too (crds/testdata/cluster-network-policy/ holds the fixtures both are tested
 * with: src/api/cluster-network-policy-validation.test.ts and
 * e2e/integration/cluster-network-policy-crds.int.test.ts).
 *
 * Which channel: `experimental` by default — its fields are a superset, and Tessera enforces
 * `nodes` and `destinationNamedPort`. With `channel: 'standard'` they are unknown fields, as
 * the standard CRD makes them. Either way, an experimental field gets a warning naming the
 * channel it needs.
 *
 * Warnings (the object is still valid, as the API server admits it): `domainNames` on a rule
 * that is not Accept (upstream documents "only for Accept rules" but has no rule for it), a
 * label-selector operator that is not In, NotIn, Exists or DoesNotExist, and In/NotIn without
 * values or Exists/DoesNotExist with some (metav1's rules, which a CRD does not apply).
 *
 * `null` counts as absent (the API server drops a null of a field that is not nullable).
 */
import { parseCidr } from './cidr.ts';
import { CNP_KIND, CNP_SERVED_VERSIONS, NETWORK_POLICY_API_GROUP } from './cluster-network-policy.ts';
import {
  CNP_ACTIONS,
  CNP_CIDR_MAX_LENGTH,
  CNP_CIDR_RULE,
  CNP_DOMAIN_NAME_PATTERN,
  CNP_MAX_ITEMS,
  CNP_MAX_PRIORITY,
  CNP_NAMED_PORT_RULE,
  CNP_RANGE_RULE,
  CNP_RULE_NAME_MAX_LENGTH,
  CNP_TIERS,
  clusterNetworkPolicySpecSchema,
} from './cluster-network-policy-schema.ts';
import type { CnpChannel } from './cluster-network-policy-schema.ts';
import { FieldErrorCollector, fieldPath, indexPath } from './field-error.ts';
import type { FieldError } from './field-error.ts';
import { isDns1123Subdomain } from './names.ts';
import { describeType, isAbsent, isRecord } from './shape.ts';
import type { TObject, TSchema } from '@sinclair/typebox';

export interface ClusterNetworkPolicyValidationOptions {
  /** The CRD channel to check against. @default 'experimental' */
  readonly channel?: CnpChannel;
}

const DOMAIN_NAME = new RegExp(CNP_DOMAIN_NAME_PATTERN);
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const PORT_FIELDS: ReadonlySet<string> = new Set(['number', 'range']);
/** The experimental channel's fields, by the object that holds them. */
const EXPERIMENTAL_FIELDS: Readonly<Record<string, readonly string[]>> = { protocol: ['destinationNamedPort'], egressPeer: ['nodes', 'domainNames'] };

/** The declared field names of each object node validation walks, per channel (from the schema declaration). */
interface Fields {
  readonly spec: ReadonlySet<string>;
  readonly subject: ReadonlySet<string>;
  readonly ingressRule: ReadonlySet<string>;
  readonly egressRule: ReadonlySet<string>;
  readonly ingressPeer: ReadonlySet<string>;
  readonly egressPeer: ReadonlySet<string>;
  readonly protocol: ReadonlySet<string>;
}

function at(schema: TSchema, ...steps: string[]): TObject {
  let node = schema as { properties?: Record<string, TSchema>; items?: TSchema };
  for (const step of steps) node = (step === '[]' ? node.items : node.properties?.[step]) as typeof node;
  return node as unknown as TObject;
}

function fieldsOf(channel: CnpChannel): Fields {
  const spec = clusterNetworkPolicySpecSchema(channel);
  const names = (o: TObject): ReadonlySet<string> => new Set(Object.keys(o.properties));
  return {
    spec: names(spec),
    subject: names(at(spec, 'subject')),
    ingressRule: names(at(spec, 'ingress', '[]')),
    egressRule: names(at(spec, 'egress', '[]')),
    ingressPeer: names(at(spec, 'ingress', '[]', 'from', '[]')),
    egressPeer: names(at(spec, 'egress', '[]', 'to', '[]')),
    protocol: names(at(spec, 'ingress', '[]', 'protocols', '[]')),
  };
}

const FIELDS: Readonly<Record<CnpChannel, Fields>> = { standard: fieldsOf('standard'), experimental: fieldsOf('experimental') };

/** Every finding in `obj` as a ClusterNetworkPolicy, in document order; `[]` when the API server would admit it and nothing deserves a warning. */
export function validateClusterNetworkPolicy(obj: unknown, opts: ClusterNetworkPolicyValidationOptions = {}): FieldError[] {
  const c = new FieldErrorCollector();
  new Checker(c, opts.channel ?? 'experimental').object(obj);
  return c.findings;
}

class Checker {
  readonly #c: FieldErrorCollector;
  readonly #channel: CnpChannel;
  readonly #fields: Fields;

  constructor(c: FieldErrorCollector, channel: CnpChannel) {
    this.#c = c;
    this.#channel = channel;
    this.#fields = FIELDS[channel];
  }

  object(obj: unknown): void {
    const c = this.#c;
    if (!isRecord(obj)) {
      c.error('', `must be an object, not ${describeType(obj)}`);
      return;
    }
    const versions = CNP_SERVED_VERSIONS.map((v) => `${NETWORK_POLICY_API_GROUP}/${v}`);
    if (!versions.includes(obj['apiVersion'] as string)) c.error('apiVersion', `must be one of ${versions.join(', ')}, not ${JSON.stringify(obj['apiVersion'])}`);
    if (obj['kind'] !== CNP_KIND) c.error('kind', `must be ${CNP_KIND}, not ${JSON.stringify(obj['kind'])}`);
    this.#metadata(obj['metadata']);
    const spec = obj['spec'];
    if (isAbsent(spec)) c.error('spec', 'Required value');
    else this.#spec(spec);
  }

  #metadata(meta: unknown): void {
    const c = this.#c;
    if (!isRecord(meta)) {
      c.error('metadata', isAbsent(meta) ? 'Required value' : `must be an object, not ${describeType(meta)}`);
      return;
    }
    const name = meta['name'];
    if (typeof name !== 'string' || name === '') c.error('metadata.name', 'Required value: name is required');
    else if (!isDns1123Subdomain(name)) c.error('metadata.name', `${JSON.stringify(name)} is not a valid name (a lowercase RFC 1123 subdomain)`);
    if (typeof meta['namespace'] === 'string' && meta['namespace'] !== '') {
      c.warning('metadata.namespace', 'ClusterNetworkPolicy is cluster-scoped: the namespace is ignored');
    }
  }

  #spec(spec: unknown): void {
    const c = this.#c;
    if (!this.#shape('spec', spec, this.#fields.spec)) return;
    const tier = spec['tier'];
    if (isAbsent(tier)) c.error('spec.tier', 'Required value');
    else this.#enum('spec.tier', tier, CNP_TIERS);

    const priority = spec['priority'];
    if (isAbsent(priority)) c.error('spec.priority', 'Required value');
    else if (this.#integer('spec.priority', priority)) {
      if (priority < 0) c.error('spec.priority', `Invalid value: ${priority}: spec.priority in body should be greater than or equal to 0`);
      if (priority > CNP_MAX_PRIORITY) c.error('spec.priority', `Invalid value: ${priority}: spec.priority in body should be less than or equal to ${CNP_MAX_PRIORITY}`);
    }

    const subject = spec['subject'];
    if (isAbsent(subject)) c.error('spec.subject', 'Required value');
    else if (this.#shape('spec.subject', subject, this.#fields.subject) && this.#exactlyOne('spec.subject', subject, this.#fields.subject)) {
      if (!isAbsent(subject['namespaces'])) this.#labelSelector('spec.subject.namespaces', subject['namespaces']);
      if (!isAbsent(subject['pods'])) this.#namespacedPods('spec.subject.pods', subject['pods']);
    }

    for (const dir of ['ingress', 'egress'] as const) {
      const rules = spec[dir];
      const path = `spec.${dir}`;
      if (isAbsent(rules) || !this.#list(path, rules, 0, CNP_MAX_ITEMS)) continue;
      rules.forEach((rule, i) => this.#rule(dir, indexPath(path, i), rule));
    }
  }

  #rule(dir: 'ingress' | 'egress', path: string, rule: unknown): void {
    const c = this.#c;
    if (!this.#shape(path, rule, dir === 'ingress' ? this.#fields.ingressRule : this.#fields.egressRule)) return;
    const action = rule['action'];
    if (isAbsent(action)) c.error(fieldPath(path, 'action'), 'Required value');
    else this.#enum(fieldPath(path, 'action'), action, CNP_ACTIONS);

    const name = rule['name'];
    if (!isAbsent(name) && this.#string(fieldPath(path, 'name'), name) && name.length > CNP_RULE_NAME_MAX_LENGTH) {
      c.error(fieldPath(path, 'name'), `Too long: may not be more than ${CNP_RULE_NAME_MAX_LENGTH} bytes`);
    }

    const peersField = dir === 'ingress' ? 'from' : 'to';
    const peersPath = fieldPath(path, peersField);
    const peers = rule[peersField];
    let hasAddressPeer = false;
    if (isAbsent(peers)) c.error(peersPath, 'Required value');
    else if (this.#list(peersPath, peers, 1, CNP_MAX_ITEMS)) {
      peers.forEach((peer, i) => {
        const peerPath = indexPath(peersPath, i);
        this.#peer(dir, peerPath, peer, action);
        if (isRecord(peer) && ['networks', 'nodes', 'domainNames'].some((f) => !isAbsent(peer[f]))) hasAddressPeer = true;
      });
    }

    const protocols = rule['protocols'];
    const protocolsPath = fieldPath(path, 'protocols');
    let hasNamedPort = false;
    if (!isAbsent(protocols) && this.#list(protocolsPath, protocols, 1, CNP_MAX_ITEMS)) {
      protocols.forEach((p, i) => {
        this.#protocol(indexPath(protocolsPath, i), p);
        if (isRecord(p) && !isAbsent(p['destinationNamedPort'])) hasNamedPort = true;
      });
    }
    // The experimental channel's rule on an egress rule (the standard channel has no named ports).
    if (dir === 'egress' && this.#channel === 'experimental' && hasAddressPeer && hasNamedPort) c.error(path, CNP_NAMED_PORT_RULE.message);
  }

  #peer(dir: 'ingress' | 'egress', path: string, peer: unknown, action: unknown): void {
    const c = this.#c;
    const fields = dir === 'ingress' ? this.#fields.ingressPeer : this.#fields.egressPeer;
    if (!this.#shape(path, peer, fields, dir === 'egress' ? 'egressPeer' : undefined)) return;
    if (!this.#exactlyOne(path, peer, fields)) return;
    if (!isAbsent(peer['namespaces'])) this.#labelSelector(fieldPath(path, 'namespaces'), peer['namespaces']);
    if (!isAbsent(peer['pods'])) this.#namespacedPods(fieldPath(path, 'pods'), peer['pods']);
    if (!isAbsent(peer['nodes'])) this.#labelSelector(fieldPath(path, 'nodes'), peer['nodes']);
    const networks = peer['networks'];
    if (!isAbsent(networks)) this.#set(fieldPath(path, 'networks'), networks, (at, v) => this.#cidr(at, v));
    const domains = peer['domainNames'];
    if (!isAbsent(domains)) {
      this.#set(fieldPath(path, 'domainNames'), domains, (at, v) => {
        if (this.#string(at, v) && !DOMAIN_NAME.test(v)) c.error(at, `Invalid value: ${JSON.stringify(v)}: ${at} in body should match '${CNP_DOMAIN_NAME_PATTERN}'`);
      });
      if (action !== 'Accept' && typeof action === 'string') {
        c.warning(fieldPath(path, 'domainNames'), `domainNames is only supported for Accept rules (the API server admits it on ${action}; Tessera, as Calico 3.32, fails the peer closed)`);
      }
    }
  }

  #protocol(path: string, p: unknown): void {
    const c = this.#c;
    if (!this.#shape(path, p, this.#fields.protocol, 'protocol')) return;
    if (!this.#exactlyOne(path, p, this.#fields.protocol)) return;
    const named = p['destinationNamedPort'];
    if (!isAbsent(named)) this.#string(fieldPath(path, 'destinationNamedPort'), named);
    for (const proto of ['tcp', 'udp', 'sctp']) {
      const match = p[proto];
      const matchPath = fieldPath(path, proto);
      if (isAbsent(match) || !this.#shape(matchPath, match, new Set(['destinationPort']))) continue;
      const port = match['destinationPort'];
      const portPath = fieldPath(matchPath, 'destinationPort');
      if (isAbsent(port)) {
        c.error(matchPath, `Invalid value: 0: ${matchPath} in body should have at least 1 properties`);
        continue;
      }
      if (!this.#shape(portPath, port, PORT_FIELDS) || !this.#exactlyOne(portPath, port, PORT_FIELDS)) continue;
      if (!isAbsent(port['number'])) this.#port(fieldPath(portPath, 'number'), port['number']);
      const range = port['range'];
      const rangePath = fieldPath(portPath, 'range');
      if (isAbsent(range) || !this.#shape(rangePath, range, new Set(['start', 'end']))) continue;
      const start = range['start'];
      const end = range['end'];
      if (isAbsent(start)) c.error(fieldPath(rangePath, 'start'), 'Required value');
      if (isAbsent(end)) c.error(fieldPath(rangePath, 'end'), 'Required value');
      const startOk = !isAbsent(start) && this.#port(fieldPath(rangePath, 'start'), start);
      const endOk = !isAbsent(end) && this.#port(fieldPath(rangePath, 'end'), end);
      if (startOk && endOk && !((start as number) < (end as number))) c.error(rangePath, CNP_RANGE_RULE.message);
    }
  }

  #port(path: string, v: unknown): boolean {
    if (!this.#integer(path, v)) return false;
    if (v < 1) this.#c.error(path, `Invalid value: ${v}: ${path} in body should be greater than or equal to 1`);
    else if (v > 65535) this.#c.error(path, `Invalid value: ${v}: ${path} in body should be less than or equal to 65535`);
    else return true;
    return false;
  }

  /** `isCIDR(self) && cidr(self) == cidr(self).masked()`, and at most 43 characters. */
  #cidr(path: string, v: unknown): void {
    const c = this.#c;
    if (!this.#string(path, v)) return;
    if (v.length > CNP_CIDR_MAX_LENGTH) c.error(path, `Too long: may not be more than ${CNP_CIDR_MAX_LENGTH} bytes`);
    const parsed = parseCidr(v);
    const slash = v.indexOf('/');
    const bits = slash < 0 ? '' : v.slice(slash + 1);
    const canonical = parsed.ok && !parsed.value.isAddress && !parsed.value.hasHostBits && !v.includes('%') && /^(0|[1-9][0-9]*)$/.test(bits);
    if (!canonical) {
      const hint = parsed.ok && parsed.value.hasHostBits ? ` (host bits set: ${parsed.value.network})` : parsed.ok && parsed.value.isAddress ? ' (an address, not a CIDR)' : '';
      c.error(path, `${CNP_CIDR_RULE.message}${hint}`);
    }
  }

  #labelSelector(path: string, sel: unknown): void {
    const c = this.#c;
    if (!this.#shape(path, sel, new Set(['matchLabels', 'matchExpressions']))) return;
    const labels = sel['matchLabels'];
    if (!isAbsent(labels) && this.#shape(fieldPath(path, 'matchLabels'), labels, undefined)) {
      for (const [k, v] of Object.entries(labels)) if (typeof v !== 'string') c.error(indexPath(fieldPath(path, 'matchLabels'), k), `must be a string, not ${describeType(v)}`);
    }
    const exprs = sel['matchExpressions'];
    const exprsPath = fieldPath(path, 'matchExpressions');
    if (isAbsent(exprs) || !this.#list(exprsPath, exprs, 0, undefined)) return;
    exprs.forEach((e, i) => {
      const ePath = indexPath(exprsPath, i);
      if (!this.#shape(ePath, e, new Set(['key', 'operator', 'values']))) return;
      for (const f of ['key', 'operator']) {
        if (isAbsent(e[f])) c.error(fieldPath(ePath, f), 'Required value');
        else this.#string(fieldPath(ePath, f), e[f]);
      }
      const values = e['values'];
      let count = 0;
      if (!isAbsent(values) && this.#list(fieldPath(ePath, 'values'), values, 0, undefined)) {
        count = values.length;
        values.forEach((v, j) => this.#string(indexPath(fieldPath(ePath, 'values'), j), v));
      }
      const op = e['operator'];
      if (typeof op !== 'string') return;
      if (!OPERATORS.includes(op)) c.warning(fieldPath(ePath, 'operator'), `${JSON.stringify(op)} is not a label selector operator (In, NotIn, Exists, DoesNotExist): the API server admits it, the selector matches nothing it can read`);
      else if ((op === 'In' || op === 'NotIn') && count === 0) c.warning(fieldPath(ePath, 'values'), `${op} needs at least one value`);
      else if ((op === 'Exists' || op === 'DoesNotExist') && count > 0) c.warning(fieldPath(ePath, 'values'), `${op} takes no values`);
    });
  }

  #namespacedPods(path: string, pods: unknown): void {
    if (!this.#shape(path, pods, new Set(['namespaceSelector', 'podSelector']))) return;
    if (!isAbsent(pods['namespaceSelector'])) this.#labelSelector(fieldPath(path, 'namespaceSelector'), pods['namespaceSelector']);
    if (isAbsent(pods['podSelector'])) this.#c.error(fieldPath(path, 'podSelector'), 'Required value');
    else this.#labelSelector(fieldPath(path, 'podSelector'), pods['podSelector']);
  }

  // ----- the schema's generic checks, with the API server's wording where it has one ----------

  /**
   * An object whose keys are all in `fields` (undefined: any key). An experimental field on the
   * standard channel is unknown, as the standard CRD makes it; on the experimental channel it
   * gets a warning naming the channel.
   */
  #shape(path: string, v: unknown, fields: ReadonlySet<string> | undefined, experimentalOf?: keyof typeof EXPERIMENTAL_FIELDS): v is Record<string, unknown> {
    if (!isRecord(v)) {
      this.#c.error(path, `must be an object, not ${describeType(v)}`);
      return false;
    }
    for (const key of Object.keys(v)) {
      if (fields !== undefined && !fields.has(key)) {
        const experimental = experimentalOf !== undefined && EXPERIMENTAL_FIELDS[experimentalOf]!.includes(key);
        this.#c.error(fieldPath(path, key), `unknown field ${JSON.stringify(key)}${experimental ? ' (an experimental-channel field: the standard CRD does not have it)' : ''}`);
      } else if (experimentalOf !== undefined && EXPERIMENTAL_FIELDS[experimentalOf]!.includes(key) && !isAbsent(v[key])) {
        this.#c.warning(fieldPath(path, key), `${key} is an experimental-channel field: the standard CRD rejects it (manifests/experimental/clusternetworkpolicies.yaml installs the experimental one)`);
      }
    }
    return true;
  }

  /**
   * minProperties 1, maxProperties 1 over the declared fields (`fields`; undeclared ones are
   * reported apart and pruned by the API server; null fields do not count: it drops them).
   */
  #exactlyOne(path: string, v: Record<string, unknown>, fields: ReadonlySet<string>): boolean {
    const set = Object.keys(v).filter((k) => fields.has(k) && !isAbsent(v[k]));
    if (set.length === 1) return true;
    this.#c.error(
      path,
      set.length === 0 ? `Invalid value: 0: ${path} in body should have at least 1 properties` : `Too many: ${set.length}: must have at most 1 items (${set.join(', ')}: exactly one may be set)`,
    );
    return false;
  }

  #list(path: string, v: unknown, min: number, max: number | undefined): v is unknown[] {
    if (!Array.isArray(v)) {
      this.#c.error(path, `must be a list, not ${describeType(v)}`);
      return false;
    }
    if (v.length < min) this.#c.error(path, `Invalid value: ${v.length}: ${path} in body should have at least ${min} items`);
    if (max !== undefined && v.length > max) this.#c.error(path, `Too many: ${v.length}: must have at most ${max} items`);
    return true;
  }

  /** A `set` list of 1..25 items: each checked, and none twice. */
  #set(path: string, v: unknown, check: (at: string, item: unknown) => void): void {
    if (!this.#list(path, v, 1, CNP_MAX_ITEMS)) return;
    const seen = new Set<unknown>();
    v.forEach((item, i) => {
      const itemPath = indexPath(path, i);
      check(itemPath, item);
      if (seen.has(item)) this.#c.error(itemPath, `Duplicate value: ${JSON.stringify(item)}`);
      seen.add(item);
    });
  }

  #enum(path: string, v: unknown, values: readonly string[]): void {
    if (this.#string(path, v) && !values.includes(v)) {
      this.#c.error(path, `Unsupported value: ${JSON.stringify(v)}: supported values: ${values.map((x) => JSON.stringify(x)).join(', ')}`);
    }
  }

  #string(path: string, v: unknown): v is string {
    if (typeof v === 'string') return true;
    this.#c.error(path, `must be a string, not ${describeType(v)}`);
    return false;
  }

  #integer(path: string, v: unknown): v is number {
    if (typeof v === 'number' && Number.isInteger(v)) return true;
    this.#c.error(path, `must be an integer, not ${typeof v === 'number' ? String(v) : describeType(v)}`);
    return false;
  }
}
