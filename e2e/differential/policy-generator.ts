/**
 * Seeded random policies over the fixture (fixture.ts): projectcalico.org/v3 Tiers,
 * NetworkPolicies, GlobalNetworkPolicies, NetworkSets and GlobalNetworkSets, and
 * networking.k8s.io/v1 NetworkPolicies, using every rule criterion the dataplane renders — tiers with orders and both default actions,
 * policy orders, Allow/Deny/Pass/Log, selectors with `!`, `has`, `in`, `not in`, `&&`, `||`,
 * `notSelector`, `namespaceSelector` (also on GlobalNetworkPolicies and their rule sides),
 * `serviceAccounts` and `serviceAccountSelector`, `nets`/`notNets` of both families,
 * `ports`/`notPorts` with named ports and ranges, TCP/UDP/ICMP/ICMPv6 with type and code,
 * `notProtocol`, `notICMP`, `ipVersion`; Kubernetes peers with ipBlock/except, named ports,
 * endPort, empty and absent lists; and, in some rounds, a namespace's `kns.<ns>` Profile
 * replaced by one with random rules (Pass among them) and the labels it carried; and `services`
 * — as an egress rule's destination and an ingress rule's source, the only places Calico takes
 * them — naming the fixture's Services (SERVICE_REFS: sliced ones, derived ones, one without
 * slices, one that does not exist), with an empty namespace in some namespaced policies (the
 * policy's own), and source ports next to a source `services`; and, in about half the rounds,
 * NetworkSets and GlobalNetworkSets (network-sets.ts) whose nets hold some pod addresses and
 * miss others, selected by rule-entity selector terms on their labels (alone, or scoped by a
 * rule's `namespaceSelector`, as Calico scopes NetworkSets).
 *
 * With `hostEndpoints` above 0 (off by default), also HostEndpoints of the fixture's nodes
 * (`*`, by expectedIPs, or — `hostInterfaceNames` — by the node's uplink name; labels, the
 * `projectcalico-default-allow` profile, named ports), GlobalNetworkPolicies with `doNotTrack`,
 * `preDNAT` and `applyOnForward` in the combinations Calico's validator accepts, and selector
 * terms and nets that pick the hosts out (host-endpoints.ts).
 *
 * GeneratorOptions says what else may be drawn: tiers and namespace profiles by default (the
 * kernel differential), none of them and only distinct policy orders with `FELIX_V3_28` (the
 * Felix differential, whose oracle is Felix v3.28 in Kubernetes-datastore mode). `fieldCoverage`
 * (field-coverage.ts) counts which fields a round drew.
 *
 * CIDRs: validation refuses a rule with CIDRs of both families (Calico's validator does), so
 * every rule's `nets`/`notNets` are of one family — drawn independently of `ipVersion` when
 * that is absent, so rules whose only CIDRs are of the other family than a probe's (a
 * `notNets: [fd00:…]` Allow probed over IPv4: not in the IPv4 chain, Felix
 * `FilterRuleToIPVersion`) are common.
 *
 * Every Calico object is checked with the project's own validation (`validateResource` after
 * `applyDefaults`) and regenerated until valid, so a round never tests input the API server
 * would refuse.
 *
 * Two choices keep both sides comparable without guessing what the kernel picks:
 * - source ports (numeric or named) either lie outside the probes' ephemeral range
 *   (32768–60999, Linux's default; the fixture's named ports are all below it) or cover all
 *   of it, so every source-port criterion holds for every ephemeral port or for none — the
 *   cases the verdict engine decides;
 * - ICMP type/code matches use echo request and reply (the probes send echo requests), plus
 *   other types that never match, so both outcomes occur.
 */
import { applyDefaults, isError, validateResource, type Rule, type EntityRule, type V3Resource } from '../../src/api/index.ts';
import type { K8sNetworkPolicy } from '../../src/api/index.ts';
import { namespaceToProfile } from '../../src/convert/index.ts';
import { NAMESPACES, SERVICE_REFS } from './fixture.ts';
import { drawHostEndpoints, drawHostFlags, HOST_DST_PORTS, HOST_NETS4, HOST_NETS6, HOST_PORT_NAME, HOST_TERMS } from './host-endpoints.ts';
import { drawNetworkSets, NETWORK_SET_TERMS } from './network-sets.ts';

/** The random source with the few draws a generator needs. */
export class Draw {
  constructor(private readonly next: () => number) {}

  chance(p: number): boolean {
    return this.next() < p;
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)] as T;
  }

  /** 0 to `max` distinct elements of `xs`, in their order. */
  some<T>(xs: readonly T[], max = xs.length): T[] {
    const n = this.int(0, Math.min(max, xs.length));
    const chosen = new Set<number>();
    while (chosen.size < n) chosen.add(this.int(0, xs.length - 1));
    return [...chosen].sort((a, b) => a - b).map((i) => xs[i] as T);
  }
}

const POD_TERMS = [
  "app == 'web'",
  "app == 'db'",
  "app != 'web'",
  'has(app)',
  '!has(app)',
  'has(role)',
  "role == 'admin'",
  "role in {'admin', 'client'}",
  "app in {'web', 'cache'}",
  "app not in {'db'}",
  "projectcalico.org/namespace == 'alpha'",
  "projectcalico.org/namespace != 'gamma'",
  // The labels the translation sets over the pods' own (fixture.ts: three pods claim others).
  "projectcalico.org/serviceaccount == 'front'",
  "projectcalico.org/serviceaccount in {'ops', 'default'}",
  "pcsa.projectcalico.org/name == 'ops'",
  "pcns.team == 'red'",
  "projectcalico.org/orchestrator == 'k8s'",
  'all()',
];
/** Rule entities select pods and network sets (network-sets.ts) alike. */
const ENTITY_TERMS = [...POD_TERMS, ...NETWORK_SET_TERMS];
const NS_TERMS = ["team == 'red'", "team == 'blue'", 'has(env)', '!has(env)', "projectcalico.org/name == 'beta'", "kubernetes.io/metadata.name in {'alpha', 'gamma'}", 'all()'];
const SA_TERMS = ["sa == 'front'", "sa == 'ops'", 'has(priv)', '!has(priv)', "sa not in {'ops'}", 'all()'];
const SA_NAMES = ['front', 'ops', 'default'];

const NETS4 = ['10.66.0.0/16', '10.66.1.0/24', '10.66.2.0/24', '10.66.3.0/24', '10.66.1.11/32', '10.66.3.32/32', '10.66.2.16/28', '0.0.0.0/0'];
const NETS6 = ['fd00:66::/32', 'fd00:66:1::/64', 'fd00:66:2::/64', 'fd00:66:3::/64', 'fd00:66:1::11/128', 'fd00:66:3::32/128', 'fd00:66:2::10/124', '::/0'];
const DST_PORTS: ReadonlyArray<number | string> = [80, 8080, 53, 5353, '50:90', '5000:9000', '1:1023', 'http', 'dns', 'metrics'];
const NAMED_PORTS = ['http', 'dns', 'metrics'];
/** None or all of the probes' ephemeral source ports, never part of them (see the file comment). */
const SRC_PORTS: ReadonlyArray<number | string> = [80, 53, '1:1023', '100:200', 'http', 'dns', '1024:65535', '32768:60999', '20000:65535', '1:65535'];
const ICMP_V4 = [{ type: 8 }, { type: 8, code: 0 }, { type: 8, code: 1 }, { type: 0 }, { type: 3, code: 1 }];
const ICMP_V6 = [{ type: 128 }, { type: 128, code: 0 }, { type: 128, code: 3 }, { type: 129 }, { type: 1 }];

/** Kubernetes ipBlocks: a CIDR and the exceptions inside it to draw from. */
const IP_BLOCKS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['10.66.0.0/16', ['10.66.1.0/24', '10.66.3.32/32', '10.66.2.16/28']],
  ['10.66.2.0/24', ['10.66.2.16/28', '10.66.2.21/32']],
  ['0.0.0.0/0', ['10.66.1.0/24', '10.66.3.0/24']],
  ['fd00:66::/32', ['fd00:66:1::/64', 'fd00:66:3::32/128']],
  ['fd00:66:2::/64', ['fd00:66:2::10/124', 'fd00:66:2::21/128']],
  ['::/0', ['fd00:66:1::/64']],
];

export interface GeneratedRound {
  /** Tiers first, then network sets, then the policies (and a namespace profile last), in apply order. */
  readonly objects: readonly (V3Resource | K8sNetworkPolicy)[];
}

/**
 * What a round may draw. The defaults suit the kernel differential (Tessera's verdict engine
 * against Tessera's own dataplane), which takes everything Tessera's v3 API takes;
 * `FELIX_V3_28` restricts rounds to what Felix v3.28 in Kubernetes-datastore mode can be given
 * and orders the same way Tessera does.
 */
export interface GeneratorOptions {
  /** Policies per round, at most. @default 5 */
  readonly maxPolicies?: number;
  /** Rules per direction of a policy, at most. @default 3 */
  readonly maxRules?: number;
  /**
   * Draw Tier objects (`tier-a`, `tier-b`) and the `tier` field of policies. Calico v3.28 OSS
   * has one implicit tier: the API module it builds with (github.com/projectcalico/api
   * v0.0.0-20240708202104-e3f70b269c2c, pkg/apis/projectcalico/v3) has no Tier kind and no
   * `tier` field, and libcalico-go's Kubernetes backend (lib/backend/k8s/k8s.go,
   * lib/backend/k8s/resources) has no tier client, so with `false` every Calico policy is in
   * `default` and names no tier.
   * @default true
   */
  readonly tiers?: boolean;
  /**
   * Replace a namespace's `kns.<ns>` Profile with one carrying random rules, in some rounds.
   * In Kubernetes-datastore mode Calico derives Profiles only from Namespaces and
   * ServiceAccounts (libcalico-go lib/backend/k8s/resources/profile.go): a Profile with user
   * rules cannot be written, so `false` draws none.
   * @default true
   */
  readonly profiles?: boolean;
  /**
   * Calico policy orders within a round are distinct, an absent order occurs at most once,
   * and no order is 1000 (every Kubernetes NetworkPolicy's). Felix orders equal orders by the
   * policy key's name (felix/calc/policy_sorter.go `PolKVLess`; absent = infinity) and Tessera
   * by Calico 3.32's tie key, so only distinct orders make the two comparable. Kubernetes
   * NetworkPolicies still tie among themselves at 1000: their rules are all Allow, so their
   * relative order cannot change a verdict.
   * @default false
   */
  readonly distinctOrders?: boolean;
  /** Probability that a round holds NetworkSets and GlobalNetworkSets (network-sets.ts). @default 0.5 */
  readonly networkSets?: number;
  /**
   * A rule may carry `protocol` and `notProtocol` together. Felix v3.28 renders both as `-p`
   * flags (felix/rules/policy.go's protocol and notProtocol matches, felix/iptables/
   * match_builder.go `Protocol`/`NotProtocol`), which iptables-restore refuses ("multiple -p
   * flags not allowed"); after its retries Felix panics (felix/iptables/table.go "Failed to
   * program iptables, giving up after retries") and exits. A Felix defect: `false` avoids it.
   * @default true
   */
  readonly protocolWithNotProtocol?: boolean;
  /**
   * A namespaced policy's `services` match may leave out the namespace. Calico documents it as
   * the policy's own namespace; Felix looks the Service up as `"/<name>"`
   * (felix/calc/rule_scanner.go, v3.28 and v3.32) and so matches nothing. A Felix defect, on
   * which Tessera follows the documentation and warns: `false` always names the namespace.
   * @default true
   */
  readonly servicesWithoutNamespace?: boolean;
  /**
   * A rule without a port-carrying protocol may match named ports. Calico accepts that since
   * its validator's `validateRule` checks numeric ports only (v3.32); v3.28's refuses any port
   * without protocol TCP, UDP or SCTP (libcalico-go/lib/validator/v3/validator.go, "rules that
   * specify ports must set protocol"), so such a rule never reaches a v3.28 Felix: `false`
   * draws ports only next to such a protocol.
   * @default true
   */
  readonly namedPortsWithoutProtocol?: boolean;
  /**
   * The probability that a round holds HostEndpoints (0–2 per node, each `*`, matched by its
   * node's address in `expectedIPs`, or named, `hostInterfaceNames`; with labels, sometimes the
   * `projectcalico-default-allow` profile, named ports). Above 0 every GlobalNetworkPolicy also
   * draws a host flag — `applyOnForward`, `preDNAT` (with `applyOnForward`, ingress only),
   * `doNotTrack` (with `applyOnForward`) or none, as Calico's validator accepts them
   * (`validateGlobalNetworkPolicySpec`) — and selectors, rule entities, nets and ports draw
   * from terms that pick the hosts out. 0 draws none of it, and every other draw is as without
   * the option (seeds keep their rounds).
   *
   * Felix v3.28 ignores `doNotTrack` policy on a `*` HostEndpoint with a warning
   * (felix/dataplane/linux/endpoint_mgr.go `updateHostEndpoints`, "DoNotTrack policy is not
   * supported for a HEP with `interfaceName: *`"), as Calico still does at HEAD (reference
   * host-endpoints-and-services §A.4) and as Tessera does: it is drawn, so a round compares
   * that both ignore it.
   * @default 0
   */
  readonly hostEndpoints?: number;
  /**
   * HostEndpoints may name the node's uplink (fixture.ts FIXTURE_NODES `uplink`) in
   * `interfaceName`. A scenario file names no interface ("Hosts as endpoints"), so the verdict
   * engine cannot match a named endpoint; only a comparison of two real dataplanes should draw it.
   * @default false
   */
  readonly hostInterfaceNames?: boolean;
}

/**
 * The share of rounds with HostEndpoints the differentials run with unless
 * `TESSERA_DIFFERENTIAL_HOST_ENDPOINTS` says otherwise (differential.ts `hostEndpointsFromEnv`):
 * half the rounds, in CI and the benches, now that Tessera enforces host endpoints end to end
 * (issue 29: calc graph, dataplane, verdict engine).
 */
export const DEFAULT_HOST_ENDPOINTS = 0.5;

/** The restrictions Felix v3.28 (bench/felix's pin) in Kubernetes-datastore mode needs; see GeneratorOptions. */
export const FELIX_V3_28: GeneratorOptions = Object.freeze({ tiers: false, profiles: false, distinctOrders: true, protocolWithNotProtocol: false, servicesWithoutNamespace: false, namedPortsWithoutProtocol: false });

/** Orders drawn when they need not be distinct (repeats on purpose: ties). */
const ORDERS = [10, 100, 100, 200, 500.5];
/** Orders drawn when they must be distinct: never 1000, the Kubernetes NetworkPolicies' order. */
const DISTINCT_ORDERS = [10, 50, 100, 150, 200, 500.5, 999, 1000.5, 1500, 2000];

export class PolicyGenerator {
  private readonly maxPolicies: number;
  private readonly maxRules: number;
  private readonly tiers: boolean;
  private readonly profiles: boolean;
  private readonly distinctOrders: boolean;
  private readonly networkSets: number;
  private readonly protocolWithNotProtocol: boolean;
  private readonly servicesWithoutNamespace: boolean;
  private readonly namedPortsWithoutProtocol: boolean;
  private readonly hostEndpoints: number;
  private readonly hostInterfaceNames: boolean;
  /** Draw lists, extended with the host ones in host rounds (`hostEndpoints` > 0). */
  private readonly policyTerms: readonly string[];
  private readonly entityTerms: readonly string[];
  private readonly nets4: readonly string[];
  private readonly nets6: readonly string[];
  private readonly dstPorts: ReadonlyArray<number | string>;
  private readonly namedPorts: readonly string[];
  /** Orders taken by the round's policies so far (`undefined`: absent), when they must be distinct. */
  private usedOrders = new Set<number | undefined>();

  constructor(
    private readonly d: Draw,
    opts: GeneratorOptions = {},
  ) {
    this.maxPolicies = opts.maxPolicies ?? 5;
    this.maxRules = opts.maxRules ?? 3;
    this.tiers = opts.tiers ?? true;
    this.profiles = opts.profiles ?? true;
    this.distinctOrders = opts.distinctOrders ?? false;
    this.networkSets = opts.networkSets ?? 0.5;
    this.protocolWithNotProtocol = opts.protocolWithNotProtocol ?? true;
    this.servicesWithoutNamespace = opts.servicesWithoutNamespace ?? true;
    this.namedPortsWithoutProtocol = opts.namedPortsWithoutProtocol ?? true;
    this.hostEndpoints = opts.hostEndpoints ?? 0;
    this.hostInterfaceNames = opts.hostInterfaceNames ?? false;
    const hosts = this.hostEndpoints > 0;
    this.policyTerms = hosts ? [...POD_TERMS, ...HOST_TERMS] : POD_TERMS;
    this.entityTerms = hosts ? [...ENTITY_TERMS, ...HOST_TERMS] : ENTITY_TERMS;
    this.nets4 = hosts ? [...NETS4, ...HOST_NETS4] : NETS4;
    this.nets6 = hosts ? [...NETS6, ...HOST_NETS6] : NETS6;
    this.dstPorts = hosts ? [...DST_PORTS, ...HOST_DST_PORTS] : DST_PORTS;
    this.namedPorts = hosts ? [...NAMED_PORTS, HOST_PORT_NAME] : NAMED_PORTS;
  }

  /** A selector of up to three terms joined by `&&`/`||`, maybe negated as a whole. */
  selector(terms: readonly string[]): string {
    const n = this.d.pick([1, 1, 1, 2, 2, 3]);
    let s = this.d.pick(terms);
    for (let i = 1; i < n; i++) s = `${s} ${this.d.pick(['&&', '||'])} ${this.d.pick(terms)}`;
    if (this.d.chance(0.15)) s = `!(${s})`;
    return s;
  }

  round(): GeneratedRound {
    const objects: (V3Resource | K8sNetworkPolicy)[] = [];
    const tiers = ['default'];
    for (const name of this.tiers ? ['tier-a', 'tier-b'] : []) {
      if (!this.d.chance(0.4)) continue;
      tiers.push(name);
      objects.push(this.valid(() => ({ apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name }, spec: { order: this.d.int(1, 3) * 100, defaultAction: this.d.pick(['Deny', 'Pass'] as const) } })));
    }
    for (const set of drawNetworkSets(this.d, this.networkSets)) objects.push(this.valid(() => set));
    if (this.hostEndpoints > 0 && this.d.chance(this.hostEndpoints)) objects.push(...drawHostEndpoints(this.d, this.hostInterfaceNames));
    this.usedOrders = new Set();
    const count = this.d.int(1, this.maxPolicies);
    for (let i = 0; i < count; i++) {
      const kind = this.d.pick(['cnp', 'cnp', 'gnp', 'gnp', 'knp']);
      if (kind === 'knp') {
        objects.push(this.k8sPolicy(`knp-${i}`));
        continue;
      }
      const policy = this.valid(() => this.calicoPolicy(kind === 'gnp' ? 'GlobalNetworkPolicy' : 'NetworkPolicy', `${kind}-${i}`, this.d.pick(tiers)));
      this.usedOrders.add((policy.spec as { order?: number } | undefined)?.order);
      objects.push(policy);
    }
    if (this.profiles && this.d.chance(0.3)) objects.push(this.valid(() => this.namespaceProfile(this.d.pick(NAMESPACES))));
    return { objects };
  }

  /** A policy order, or `undefined` for none; distinct within the round when `distinctOrders`. */
  private order(): number | undefined {
    if (!this.distinctOrders) return this.d.chance(0.7) ? this.d.pick(ORDERS) : undefined;
    const free = DISTINCT_ORDERS.filter((o) => !this.usedOrders.has(o));
    if (!this.usedOrders.has(undefined) && (free.length === 0 || this.d.chance(0.3))) return undefined;
    if (free.length === 0) throw new Error('PolicyGenerator: more policies in a round than distinct orders');
    return this.d.pick(free);
  }

  /**
   * `kns.<ns>` as the translation generates it (its labelsToApply, so selectors see the same
   * labels) with random rules instead of allow-all: a Pass in a profile returns from the
   * profile chain without accepting, so the final "no profile matched" drop decides.
   */
  private namespaceProfile(ns: (typeof NAMESPACES)[number]): V3Resource {
    const generated = namespaceToProfile({ metadata: { name: ns.name, labels: { ...ns.labels, 'kubernetes.io/metadata.name': ns.name } } });
    const rules = (direction: 'ingress' | 'egress'): Rule[] => {
      const out = this.rules('GlobalNetworkPolicy', direction);
      if (this.d.chance(0.5)) out.splice(this.d.int(0, out.length), 0, { action: 'Pass' });
      if (this.d.chance(0.5)) out.push({ action: 'Allow' });
      return out;
    };
    return { ...generated, spec: { ...generated.spec, ingress: rules('ingress'), egress: rules('egress') } } as V3Resource;
  }

  /** Draws from `make` until the result passes validation (20 tries, then throws). */
  private valid(make: () => V3Resource): V3Resource {
    for (let i = 0; i < 20; i++) {
      const r = make();
      if (validateResource(applyDefaults(structuredClone(r))).filter(isError).length === 0) return r;
    }
    throw new Error('PolicyGenerator: no valid object in 20 draws');
  }

  private calicoPolicy(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', name: string, tier: string): V3Resource {
    const d = this.d;
    const spec: Record<string, unknown> = {};
    // Calico: a policy not in `default` has a name prefixed with its tier.
    const fullName = tier === 'default' ? name : `${tier}.${name}`;
    if (this.tiers && (tier !== 'default' || d.chance(0.3))) spec['tier'] = tier;
    const order = this.order();
    if (order !== undefined) spec['order'] = order;
    if (d.chance(0.8)) spec['selector'] = this.selector(kind === 'GlobalNetworkPolicy' ? this.policyTerms : POD_TERMS);
    if (d.chance(0.15)) spec['serviceAccountSelector'] = this.selector(SA_TERMS);
    if (kind === 'GlobalNetworkPolicy' && d.chance(0.3)) spec['namespaceSelector'] = this.selector(NS_TERMS);
    const types = d.pick([['Ingress'], ['Egress'], ['Ingress', 'Egress'], undefined]);
    if (types !== undefined) spec['types'] = types;
    const ingress = this.rules(kind, 'ingress');
    const egress = this.rules(kind, 'egress');
    if (ingress.length > 0 || d.chance(0.3)) spec['ingress'] = ingress;
    if (egress.length > 0 || d.chance(0.3)) spec['egress'] = egress;
    if (kind === 'GlobalNetworkPolicy' && this.hostEndpoints > 0) drawHostFlags(this.d, spec);
    const metadata = kind === 'NetworkPolicy' ? { name: fullName, namespace: d.pick(['alpha', 'beta', 'gamma']) } : { name: fullName };
    return { apiVersion: 'projectcalico.org/v3', kind, metadata, spec } as V3Resource;
  }

  private rules(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', direction: 'ingress' | 'egress'): Rule[] {
    const out: Rule[] = [];
    const n = this.d.int(0, this.maxRules);
    for (let i = 0; i < n; i++) out.push(this.validRule(kind, direction));
    return out;
  }

  /**
   * A `services` entity: a fixture Service, its namespace left out in some namespaced
   * policies (then it is the policy's own, which may hold no Service of that name). Nothing
   * else may sit next to it but, on a source, ports (validation refuses the rest).
   */
  private servicesEntity(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', side: 'source' | 'destination', portsOk: boolean): EntityRule {
    const d = this.d;
    const ref = d.pick(SERVICE_REFS);
    const e: EntityRule = { services: kind === 'NetworkPolicy' && this.servicesWithoutNamespace && d.chance(0.3) ? { name: ref.name } : { name: ref.name, namespace: ref.namespace } };
    if (side === 'source') {
      const portList = portsOk ? SRC_PORTS : this.namedPortsWithoutProtocol ? SRC_PORTS.filter((p) => typeof p === 'string' && NAMED_PORTS.includes(p)) : [];
      if (d.chance(0.2)) e.ports = d.some(portList, 2);
      if (d.chance(0.1)) e.notPorts = d.some(portList, 2);
      for (const k of ['ports', 'notPorts'] as const) if (e[k]?.length === 0) delete e[k];
    }
    return e;
  }

  /** A rule that is valid on its own (checked inside a minimal policy of `kind`). */
  private validRule(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', direction: 'ingress' | 'egress'): Rule {
    const metadata = kind === 'NetworkPolicy' ? { name: 'probe', namespace: 'alpha' } : { name: 'probe' };
    for (;;) {
      const rule = this.rule(kind, direction);
      const policy = { apiVersion: 'projectcalico.org/v3', kind, metadata, spec: { [direction]: [rule] } } as V3Resource;
      if (validateResource(applyDefaults(structuredClone(policy))).filter(isError).length === 0) return rule;
    }
  }

  private rule(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', direction: 'ingress' | 'egress'): Rule {
    const d = this.d;
    const rule: Rule = { action: d.pick(['Allow', 'Allow', 'Allow', 'Deny', 'Deny', 'Pass', 'Log']) };
    const family = d.pick([undefined, undefined, 4, 6] as const);
    if (family !== undefined && d.chance(0.5)) rule.ipVersion = family;
    const protocol = d.pick([undefined, undefined, 'TCP', 'TCP', 'UDP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 6, 17]);
    if (protocol !== undefined) rule.protocol = protocol;
    if (d.chance(0.1) && (protocol === undefined || this.protocolWithNotProtocol)) rule.notProtocol = d.pick(['TCP', 'UDP', 'ICMP', 17]);
    const icmpFamily = protocol === 'ICMP' ? ICMP_V4 : protocol === 'ICMPv6' ? ICMP_V6 : undefined;
    if (icmpFamily !== undefined) {
      if (d.chance(0.5)) rule.icmp = { ...d.pick(icmpFamily) };
      if (d.chance(0.2)) rule.notICMP = { ...d.pick(icmpFamily) };
    }
    const portsOk = protocol === 'TCP' || protocol === 'UDP' || protocol === 6 || protocol === 17;
    // The peer side (an ingress rule's source, an egress rule's destination) names a Service now and then.
    const services = d.chance(0.2);
    const src = services && direction === 'ingress' ? this.servicesEntity(kind, 'source', portsOk) : this.entity(kind, family, portsOk, SRC_PORTS);
    const dst = services && direction === 'egress' ? this.servicesEntity(kind, 'destination', portsOk) : this.entity(kind, family, portsOk, this.dstPorts);
    if (src !== undefined && d.chance(0.7)) rule.source = src;
    if (dst !== undefined && d.chance(0.7)) rule.destination = dst;
    return rule;
  }

  private entity(kind: 'NetworkPolicy' | 'GlobalNetworkPolicy', family: 4 | 6 | undefined, portsOk: boolean, ports: ReadonlyArray<number | string>): EntityRule | undefined {
    const d = this.d;
    const e: EntityRule = {};
    if (d.chance(0.35)) e.selector = this.selector(this.entityTerms);
    if (d.chance(0.15)) e.notSelector = this.selector(this.entityTerms);
    if (d.chance(kind === 'GlobalNetworkPolicy' ? 0.3 : 0.15)) e.namespaceSelector = d.chance(0.1) ? 'global()' : this.selector(NS_TERMS);
    if (d.chance(0.12)) {
      const names = d.some(SA_NAMES, 2);
      e.serviceAccounts = { ...(names.length > 0 ? { names } : {}), ...(names.length === 0 || d.chance(0.3) ? { selector: this.selector(SA_TERMS) } : {}) };
    }
    const nets = family === 6 ? this.nets6 : family === 4 ? this.nets4 : d.pick([this.nets4, this.nets6]);
    if (d.chance(0.2)) e.nets = d.some(nets, 2);
    // Validation refuses a negated catch-all (it matches nothing).
    if (d.chance(0.2)) e.notNets = d.some(nets.filter((n) => !n.endsWith('/0')), 2);
    const portList = portsOk ? ports : this.namedPortsWithoutProtocol ? ports.filter((p) => typeof p === 'string' && this.namedPorts.includes(p)) : [];
    if (d.chance(0.3)) e.ports = d.some(portList, 3);
    if (d.chance(0.15)) e.notPorts = d.some(portList, 2);
    for (const k of Object.keys(e) as (keyof EntityRule)[]) if (Array.isArray(e[k]) && (e[k] as unknown[]).length === 0) delete e[k];
    return Object.keys(e).length === 0 ? undefined : e;
  }

  private k8sPolicy(name: string): K8sNetworkPolicy {
    const d = this.d;
    const spec: Record<string, unknown> = { podSelector: this.labelSelector(['app', 'role']) };
    const types = d.pick([['Ingress'], ['Egress'], ['Ingress', 'Egress'], undefined]);
    if (types !== undefined) spec['policyTypes'] = types;
    for (const dir of ['ingress', 'egress'] as const) {
      if (d.chance(0.3)) continue;
      const rules = [];
      for (let i = d.int(0, 2); i > 0; i--) {
        const r: Record<string, unknown> = {};
        const peers = d.pick([undefined, [], 'some']);
        if (peers === 'some') r[dir === 'ingress' ? 'from' : 'to'] = Array.from({ length: d.int(1, 2) }, () => this.k8sPeer());
        else if (peers !== undefined) r[dir === 'ingress' ? 'from' : 'to'] = peers;
        if (d.chance(0.5)) r['ports'] = Array.from({ length: d.int(0, 2) }, () => this.k8sPort());
        rules.push(r);
      }
      spec[dir] = rules;
    }
    return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: d.pick(['alpha', 'beta', 'gamma']) }, spec } as K8sNetworkPolicy;
  }

  private labelSelector(keys: readonly string[]): Record<string, unknown> {
    const d = this.d;
    const values: Record<string, string[]> = { app: ['web', 'db', 'cache'], role: ['admin', 'client'], team: ['red', 'blue'], env: ['prod'], 'kubernetes.io/metadata.name': ['alpha', 'beta', 'gamma'] };
    const sel: Record<string, unknown> = {};
    if (d.chance(0.4)) {
      const key = d.pick(keys);
      sel['matchLabels'] = { [key]: d.pick(values[key] ?? ['x']) };
    }
    if (d.chance(0.3)) {
      const key = d.pick(keys);
      const operator = d.pick(['In', 'NotIn', 'Exists', 'DoesNotExist']);
      sel['matchExpressions'] = [{ key, operator, ...(operator === 'In' || operator === 'NotIn' ? { values: d.some(values[key] ?? ['x'], 2).concat(d.pick(values[key] ?? ['x'])) } : {}) }];
    }
    return sel;
  }

  private k8sPeer(): Record<string, unknown> {
    const d = this.d;
    switch (d.pick(['pod', 'ns', 'both', 'ip'])) {
      case 'pod':
        return { podSelector: this.labelSelector(['app', 'role']) };
      case 'ns':
        return { namespaceSelector: this.labelSelector(['team', 'env', 'kubernetes.io/metadata.name']) };
      case 'both':
        return { podSelector: this.labelSelector(['app', 'role']), namespaceSelector: this.labelSelector(['team', 'env']) };
      default: {
        const [cidr, inside] = d.pick(IP_BLOCKS);
        const except = d.chance(0.5) ? d.some(inside, 2) : [];
        return { ipBlock: { cidr, ...(except.length > 0 ? { except } : {}) } };
      }
    }
  }

  private k8sPort(): Record<string, unknown> {
    const d = this.d;
    const protocol = d.pick([undefined, 'TCP', 'UDP']);
    const port = d.pick([undefined, 80, 53, 5353, 8080, 'http', 'dns', 'metrics', 50]);
    const out: Record<string, unknown> = {};
    if (protocol !== undefined) out['protocol'] = protocol;
    if (port !== undefined) out['port'] = port;
    if (typeof port === 'number' && d.chance(0.3)) out['endPort'] = port + d.pick([0, 10, 5000]);
    return out;
  }
}
