/**
 * `RuleScanner`: active policies and profiles → proto rules with resolved IP-set ids, and
 * the refcounted set of IP sets those rules need (Felix: `calc/rule_scanner.go`,
 * calico-semantics §1.9).
 *
 * Guarantees:
 * - per side, a positive and a negated selector merge into one set `(<pos>) && (!(<neg>))`;
 *   a negated selector alone gets its own set, used as a `not` match;
 * - each named port gets a named-port set on the side's positive selector (`all()` when
 *   there is none) and the rule's named-port protocol; the plain selector set is left out
 *   when the side has positive named ports and neither numeric ports nor negated named
 *   ports, because the named-port set already encodes the selector;
 * - IP sets are refcounted by id across every rule of every active policy and profile:
 *   `onIPSetActive` on 0→1, `onIPSetInactive` on 1→0. On an update the new sets are
 *   activated before the old ones are released, so a set in use by both never churns;
 * - a `services` destination gets the Service's ports set (`svc:`, `dstIpPortSetIds`), a
 *   `services` source its no-ports set (`svcnoport:`), AND-ed with the side's other selector
 *   sets (Felix `rule_scanner.go`); a rule without services hashes to the id it had before
 *   services were read (the field is left out of the id's input when empty);
 * - a profile that endpoints reference but that does not exist is emitted with drop-all
 *   rules (Felix's DummyDropRules: fail closed).
 */
import { makeRule, type Policy, type Profile, type Rule } from '../proto/index.ts';
import { makeUniqueId, parseSelector, type Selector } from '../selector/index.ts';
import { namedPortIPSet, selectorIPSet, serviceIPSet, type IPSetData } from './ipset-data.ts';
import type { ModelEntity, ModelPolicy, ModelProfile, ModelRule } from './model.ts';

export interface RuleScannerCallbacks {
  onIPSetActive(data: IPSetData): void;
  onIPSetInactive(setId: string): void;
  onPolicyUpdate(key: string, policy: ModelPolicy, parsed: Policy): void;
  onPolicyRemove(key: string, policy: ModelPolicy): void;
  onProfileUpdate(name: string, parsed: Profile): void;
  onProfileRemove(name: string): void;
}

/** Felix: `DummyDropRules` for a missing profile. */
export const DROP_ALL_PROFILE: Profile = Object.freeze({
  inboundRules: [dropRule()],
  outboundRules: [dropRule()],
});

function dropRule(): Rule {
  return makeRule({ action: 'deny', ruleId: makeUniqueId('r', 'dummy-drop') });
}


export class RuleScanner {
  readonly #cb: RuleScannerCallbacks;
  readonly #refs = new Map<string, { data: IPSetData; count: number }>();
  /** owner (`pol:<key>` / `prof:<name>`) → set ids it holds. */
  readonly #owned = new Map<string, readonly string[]>();
  readonly #selectors = new Map<string, Selector>();

  constructor(callbacks: RuleScannerCallbacks) {
    this.#cb = callbacks;
  }

  get activeSetCount(): number {
    return this.#refs.size;
  }

  updatePolicy(key: string, policy: ModelPolicy): void {
    const sets = new Map<string, IPSetData>();
    const parsed: Policy = {
      inboundRules: policy.inboundRules.map((r) => this.#parseRule(r, sets)),
      outboundRules: policy.outboundRules.map((r) => this.#parseRule(r, sets)),
      untracked: policy.untracked,
      preDnat: policy.preDnat,
      applyOnForward: policy.applyOnForward,
    };
    this.#own(`pol:${key}`, sets);
    this.#cb.onPolicyUpdate(key, policy, parsed);
  }

  removePolicy(key: string, policy: ModelPolicy): void {
    this.#cb.onPolicyRemove(key, policy);
    this.#own(`pol:${key}`, new Map());
  }

  /** `profile === undefined` means referenced but missing: drop-all rules. */
  updateProfile(name: string, profile: ModelProfile | undefined): void {
    const sets = new Map<string, IPSetData>();
    const parsed: Profile =
      profile === undefined
        ? DROP_ALL_PROFILE
        : {
            inboundRules: profile.inboundRules.map((r) => this.#parseRule(r, sets)),
            outboundRules: profile.outboundRules.map((r) => this.#parseRule(r, sets)),
          };
    this.#own(`prof:${name}`, sets);
    this.#cb.onProfileUpdate(name, parsed);
  }

  removeProfile(name: string): void {
    this.#cb.onProfileRemove(name);
    this.#own(`prof:${name}`, new Map());
  }

  #own(owner: string, sets: Map<string, IPSetData>): void {
    for (const [id, data] of sets) {
      const ref = this.#refs.get(id);
      if (ref !== undefined) ref.count++;
      else {
        this.#refs.set(id, { data, count: 1 });
        this.#cb.onIPSetActive(data);
      }
    }
    const old = this.#owned.get(owner);
    if (sets.size === 0) this.#owned.delete(owner);
    else this.#owned.set(owner, [...sets.keys()]);
    if (old === undefined) return;
    for (const id of old) {
      const ref = this.#refs.get(id);
      if (ref === undefined) continue;
      if (--ref.count === 0) {
        this.#refs.delete(id);
        this.#cb.onIPSetInactive(id);
      }
    }
  }

  #selector(text: string): Selector {
    let sel = this.#selectors.get(text);
    if (sel === undefined) {
      // A parse cache: many rules repeat selectors. Bounded crudely; a miss only costs a parse.
      if (this.#selectors.size > 50_000) this.#selectors.clear();
      // Texts come from the update processor, which only emits selectors that parse.
      sel = parseSelector(text);
      this.#selectors.set(text, sel);
    }
    return sel;
  }

  #parseRule(rule: ModelRule, sets: Map<string, IPSetData>): Rule {
    const src = this.#side('src', rule.src, rule.namedPortProtocol, sets);
    const dst = this.#side('dst', rule.dst, rule.namedPortProtocol, sets);
    const body: Omit<Rule, 'ruleId' | 'dstIpPortSetIds'> & { readonly dstIpPortSetIds?: readonly string[] } = {
      action: rule.action,
      ...(rule.ipVersion === undefined ? {} : { ipVersion: rule.ipVersion }),
      ...(rule.protocol === undefined ? {} : { protocol: rule.protocol }),
      ...(rule.notProtocol === undefined ? {} : { notProtocol: rule.notProtocol }),
      ...(rule.icmp === undefined ? {} : { icmp: rule.icmp }),
      ...(rule.notIcmp === undefined ? {} : { notIcmp: rule.notIcmp }),
      srcNets: rule.src.nets,
      notSrcNets: rule.src.notNets,
      dstNets: rule.dst.nets,
      notDstNets: rule.dst.notNets,
      srcPorts: rule.src.ports,
      notSrcPorts: rule.src.notPorts,
      dstPorts: rule.dst.ports,
      notDstPorts: rule.dst.notPorts,
      srcIpSetIds: src.ipSetIds,
      notSrcIpSetIds: src.notIpSetIds,
      dstIpSetIds: dst.ipSetIds,
      notDstIpSetIds: dst.notIpSetIds,
      srcNamedPortIpSetIds: src.namedPortIds,
      notSrcNamedPortIpSetIds: src.notNamedPortIds,
      dstNamedPortIpSetIds: dst.namedPortIds,
      notDstNamedPortIpSetIds: dst.notNamedPortIds,
      ...(rule.dst.service === '' ? {} : { dstIpPortSetIds: [this.#add(serviceIPSet(rule.dst.service, true), sets)] }),
    };
    // The id hashes the body as built here (its JSON is the id's input, so ids stay stable).
    return makeRule({ ...body, ruleId: makeUniqueId('r', JSON.stringify(body)) });
  }

  #add(d: IPSetData, sets: Map<string, IPSetData>): string {
    sets.set(d.id, d);
    return d.id;
  }

  #side(
    side: 'src' | 'dst',
    e: ModelEntity,
    proto: ModelRule['namedPortProtocol'],
    sets: Map<string, IPSetData>,
  ): { ipSetIds: string[]; notIpSetIds: string[]; namedPortIds: string[]; notNamedPortIds: string[] } {
    const add = (d: IPSetData): string => this.#add(d, sets);
    let pos: Selector | undefined;
    let neg: Selector | undefined;
    if (e.selector !== '') {
      pos = this.#selector(e.notSelector === '' ? e.selector : `(${e.selector}) && (!(${e.notSelector}))`);
    } else if (e.notSelector !== '') {
      neg = this.#selector(e.notSelector);
    }
    const npSel = pos ?? this.#selector('all()');
    const namedPortIds = e.namedPorts.map((n) => add(namedPortIPSet(npSel, proto, n)));
    const notNamedPortIds = e.notNamedPorts.map((n) => add(namedPortIPSet(npSel, proto, n)));
    const ipSetIds: string[] = [];
    const namedOnly = e.namedPorts.length > 0 && e.ports.length === 0 && e.notNamedPorts.length === 0;
    if (pos !== undefined && !namedOnly) ipSetIds.push(add(selectorIPSet(pos)));
    const notIpSetIds = neg === undefined ? [] : [add(selectorIPSet(neg))];
    if (side === 'src' && e.service !== '') ipSetIds.push(add(serviceIPSet(e.service, false)));
    return { ipSetIds, notIpSetIds, namedPortIds, notNamedPortIds };
  }
}
