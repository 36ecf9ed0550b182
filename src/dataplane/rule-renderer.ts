/**
 * Proto policies, profiles and endpoints → chains of the neutral model (chain.ts; dataplane.md §1–3,
 * calico-semantics §4.5–4.6; Felix `rules/static.go`, `dispatch.go`, `endpoints.go`,
 * `policy.go`).
 *
 * Pure and deterministic: the same input always renders the same chains, so rule hashes are
 * stable across restarts and an unchanged ruleset is never rewritten. One renderer per IP
 * family; rules that cannot apply to the family render to nothing: those that
 * `filterRuleToIpVersion` omits (proto/rule-ip-version.ts: the other `ipVersion`, a CIDR list —
 * negated ones too — all of the other family, a negated catch-all) and an ICMPv6 rule in the
 * IPv4 table (or the reverse).
 *
 * The static chains and kernel hooks of the filter, mangle and raw tables (Felix's order,
 * host endpoint hooks included) are static-chains.ts, host endpoint chains
 * host-endpoint-chains.ts, their dispatch host-dispatch.ts. Here (filter table):
 * - dispatch chains `--goto` per-endpoint chains and DROP unknown interfaces;
 * - `cali-tw-`/`cali-fw-`: packet-rate limit, conntrack, connection limit (qos-controls.ts),
 *   clear marks, tiers, profiles, final DROP;
 * - `cali-pi-`/`cali-po-` and `cali-pri-`/`cali-pro-`: one rule set per Calico rule.
 *
 * Rules are built as data — criteria through `MatchBuilder`, actions as `Action` values — so
 * the renderer writes no backend's text; the iptables backend renders them (iptables/rule-text.ts).
 */
import { filterRuleToIpVersion, isStagedPolicy, type PolicyId, type Policy, type PortRange, type Profile, type Rule, type TierInfo, type WorkloadEndpoint } from '../proto/index.ts';
import { ipSetName } from '../selector/index.ts';
import type { RpfSkip } from './anti-spoofing.ts';
import { DEFAULT_FAILSAFES, type FailsafeConfig } from './failsafes.ts';
import { hostDispatchChains } from './host-dispatch.ts';
import { filterKernelHooks, filterStaticChains, mangleKernelHooks, mangleStaticChains, rawKernelHooks, rawStaticChains, type StaticChainConfig } from './static-chains.ts';
import { ACCEPT, DROP, REJECT, RETURN, clearMark, goTo, jump, setMark, type Action } from './action.ts';
import type { Chain, ChainRule, KernelHooks } from './chain.ts';
import { dispatchTree } from './dispatch-tree.ts';
import { dropLogTarget, type DropLogOptions, type DropLogRule, type RuleTag } from './drop-log.ts';
import { connectionLimitRules, packetRateRules } from './qos-controls.ts';
import {
  CHAIN_FROM_WL_DISPATCH,
  CHAIN_TO_WL_DISPATCH,
  endpointChainName,
  policyChainName,
  profileChainName,
  type Direction,
} from './chain-names.ts';
import { ruleDigestText } from './iptables/rule-text.ts';
import { MARK_ACCEPT, MARK_PASS, MARK_SCRATCH0, MARK_SCRATCH1 } from './marks.ts';
import { ANY, type Match, type Side } from './match.ts';
import { MatchBuilder, RuleRenderError, parseCidr, protocolInFamily, protocolToken, splitPortList } from './match-builder.ts';

export type { KernelHooks } from './chain.ts';

/** The text a drop rule's log prefix digests (see drop-log.ts `LoggedDrop`). */
export type DropDigestText = (match: Match, action: Action) => { readonly match: string; readonly action: string };

export interface RuleRendererOptions {
  readonly ipVersion: 4 | 6;
  /** Felix `IptablesFilterDenyAction`. @default 'DROP' */
  readonly denyAction?: 'DROP' | 'REJECT';
  /** Felix `LogPrefix`. @default 'calico-packet' */
  readonly logPrefix?: string;
  /** Felix `InterfacePrefix`: host-side names of workload interfaces. @default ['cali'] */
  readonly interfacePrefixes?: readonly string[];
  /** Felix `DefaultEndpointToHostAction`. @default 'DROP' */
  readonly endpointToHostAction?: 'DROP' | 'ACCEPT' | 'RETURN';
  /**
   * Log every policy drop (deny rules, end-of-tier and no-profile drops) to NFLOG before it
   * happens, rate-limited per node (drop-log.ts). @default undefined: no drop log
   */
  readonly dropLog?: DropLogOptions;
  /**
   * What a drop rule's NFLOG prefix digests: the rule as the backend writes it, so the flow log
   * can tell a drop rule that changed since a packet was logged. @default the iptables text
   * (iptables/rule-text.ts `ruleDigestText`)
   */
  readonly dropDigestText?: DropDigestText;
  /** Felix `FailsafeInboundHostPorts` / `FailsafeOutboundHostPorts`. @default Felix's (failsafes.ts) */
  readonly failsafes?: FailsafeConfig;
}

/** Linux `IFNAMSIZ` 16 incl. NUL; the character class keeps names safe as restore tokens. */
const IFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

export function isValidInterfaceName(name: string): boolean {
  return IFACE_NAME.test(name);
}

const NONE: readonly string[] = Object.freeze([]);
const SET_ACCEPT_MARK = setMark(MARK_ACCEPT);
const SET_PASS_MARK = setMark(MARK_PASS);
const ACCEPTED: Match = new MatchBuilder().markSet(MARK_ACCEPT).build();
const PASS_CLEAR: Match = new MatchBuilder().markClear(MARK_PASS).build();
/** Allow and Pass set their mark, then return at once (the caller checks the mark). */
const RETURN_IF_ACCEPTED: ChainRule = { match: ACCEPTED, action: RETURN };
const RETURN_IF_PASSED: ChainRule = { match: new MatchBuilder().markSet(MARK_PASS).build(), action: RETURN };
const SCRATCH0_SET: Match = new MatchBuilder().markSet(MARK_SCRATCH0).build();
const SCRATCH1_CLEAR: Match = new MatchBuilder().markClear(MARK_SCRATCH1).build();
const CONNTRACK_ESTABLISHED: Match = new MatchBuilder().conntrackState('RELATED', 'ESTABLISHED').build();
const CONNTRACK_INVALID: Match = new MatchBuilder().conntrackState('INVALID').build();
/** Felix's default `VXLANPort`. */
const VXLAN: Match = new MatchBuilder().protocolDestPort('udp', 4789).build();
const IPIP: Match = new MatchBuilder().protocol(protocolToken('ipip', 4)).build();
const PORT_PROTOCOLS = new Set(['tcp', 'udp', 'sctp', 'udplite']);
/** IANA numbers of the names `protocolToken` yields (anything else is a number already). */
const TOKEN_NUMBERS: Readonly<Record<string, number>> = { tcp: 6, udp: 17, icmp: 1, 'ipv6-icmp': 58, sctp: 132, udplite: 136, esp: 50, ah: 51, gre: 47 };

/** The protocol number of a `protocolToken` result. */
function tokenNumber(token: string): number {
  return TOKEN_NUMBERS[token] ?? Number(token);
}

export class RuleRenderer {
  readonly ipVersion: 4 | 6;
  /** Felix `IptablesFilterDenyAction` as an action. */
  readonly denyTarget: Action;
  private readonly logTarget: Action;
  private readonly prefixes: readonly string[];
  private readonly toHostAction: Action;
  private readonly failsafes: FailsafeConfig;
  private readonly dropLog: DropLogRule | undefined;
  private readonly dropDigestText: DropDigestText;
  /** The builder `renderRuleInto` reuses for each rule's final match. */
  private readonly scratch = new MatchBuilder();

  constructor(opts: RuleRendererOptions) {
    const { ipVersion, denyAction = 'DROP', logPrefix = 'calico-packet', interfacePrefixes = ['cali'], endpointToHostAction = 'DROP' } = opts;
    if (ipVersion !== 4 && ipVersion !== 6) throw new RangeError(`RuleRenderer: ipVersion must be 4 or 6, got ${String(ipVersion)}`);
    if (!/^[A-Za-z0-9_.:-]{1,29}$/.test(logPrefix)) throw new RangeError(`RuleRenderer: logPrefix '${logPrefix}' must be 1–29 safe characters`);
    for (const p of interfacePrefixes) {
      if (!/^[A-Za-z0-9_.-]{1,14}$/.test(p)) throw new RangeError(`RuleRenderer: interface prefix '${p}' is not a valid interface name prefix`);
    }
    this.ipVersion = ipVersion;
    this.denyTarget = denyAction === 'REJECT' ? REJECT : DROP;
    this.logTarget = { type: 'log', prefix: logPrefix, level: 5 };
    this.prefixes = interfacePrefixes;
    this.toHostAction = endpointToHostAction === 'ACCEPT' ? ACCEPT : endpointToHostAction === 'RETURN' ? RETURN : DROP;
    this.failsafes = opts.failsafes ?? DEFAULT_FAILSAFES;
    this.dropLog = opts.dropLog === undefined ? undefined : dropLogTarget(opts.dropLog);
    this.dropDigestText = opts.dropDigestText ?? ruleDigestText;
  }

  /**
   * Appends a drop decision: with the drop log, first the same match logging to NFLOG (the
   * prefix names `chain` and the drop rule's position), then the drop itself, tagged.
   */
  pushDrop(out: ChainRule[], chain: string, match: Match, action: Action, tag: RuleTag, comments?: readonly string[]): void {
    if (this.dropLog !== undefined) {
      const log = this.dropLog(chain, out.length + 1, { ...this.dropDigestText(match, action), tag });
      out.push({ match: match.length === 0 ? log.match : new MatchBuilder().and(match).and(log.match).build(), action: log.action });
    }
    out.push(comments === undefined ? { match, action, tag } : { match, action, comments, tag });
  }

  /** Whether `iface` is reached by the hooks (`-i <prefix>+`); other interfaces bypass policy. */
  coversInterface(iface: string): boolean {
    return this.prefixes.some((p) => iface.startsWith(p));
  }

  // ---- static chains (static-chains.ts) ----------------------------------------------------

  private get staticConfig(): StaticChainConfig {
    return { ipVersion: this.ipVersion, prefixes: this.prefixes, toHostAction: this.toHostAction, failsafes: this.failsafes };
  }

  /** The hooks from the kernel's filter chains into ours. */
  kernelHooks(): KernelHooks[] {
    return filterKernelHooks();
  }

  /**
   * `cali-FORWARD`, `cali-INPUT`, `cali-OUTPUT`, `cali-wl-to-host`, the failsafe chains, and the
   * host endpoint dispatch chains they jump to, empty (host-endpoint-manager.ts fills them).
   */
  staticChains(): Chain[] {
    return [...filterStaticChains(this.staticConfig), ...hostDispatchChains('filter', this.prefixes)];
  }

  /** The hooks from the kernel's raw `PREROUTING` and `OUTPUT` into ours. */
  rawKernelHooks(): KernelHooks[] {
    return rawKernelHooks();
  }

  /** The raw table's static chains (anti-spoofing with `skips`, untracked host policy hooks) and its empty host dispatch chains. */
  rawChains(skips: readonly RpfSkip[] = []): Chain[] {
    return [...rawStaticChains(this.staticConfig, skips), ...hostDispatchChains('raw', this.prefixes)];
  }

  /** The hooks from the kernel's mangle `PREROUTING` and `POSTROUTING` into ours. */
  mangleKernelHooks(): KernelHooks[] {
    return mangleKernelHooks();
  }

  /** The mangle table's static chains and its empty host dispatch chains. */
  mangleChains(): Chain[] {
    return [...mangleStaticChains(this.staticConfig), ...hostDispatchChains('mangle', this.prefixes)];
  }

  // ---- dispatch -----------------------------------------------------------------------------

  /**
   * `cali-from-wl-dispatch` and `cali-to-wl-dispatch` (Felix `dispatch.go`): each interface
   * `--goto`s its endpoint chain, and anything else ends in the deny action ("Unknown
   * interface"), so a workload the agent has no endpoint for is dropped.
   *
   * A shallow tree of chains (dispatch-tree.ts), each ending in the deny.
   */
  dispatchChains(interfaces: Iterable<string>): Chain[] {
    const unknown: ChainRule[] = [{ match: ANY, action: this.denyTarget, comments: ['Unknown interface'] }];
    const names = [...interfaces];
    return [
      ...dispatchTree(names, { root: CHAIN_FROM_WL_DISPATCH, ifaceDir: 'in', target: (i) => goTo(endpointChainName(i, 'egress')), endRules: unknown }),
      ...dispatchTree(names, { root: CHAIN_TO_WL_DISPATCH, ifaceDir: 'out', target: (i) => goTo(endpointChainName(i, 'ingress')), endRules: unknown }),
    ];
  }

  // ---- endpoints ----------------------------------------------------------------------------

  /** `cali-tw-<iface>` (ingress) and `cali-fw-<iface>` (egress) for one workload endpoint. */
  endpointChains(iface: string, ep: WorkloadEndpoint): Chain[] {
    if (!isValidInterfaceName(iface)) throw new RuleRenderError(`interface name '${iface}' is not a valid Linux interface name`);
    return [this.endpointChain(iface, ep, 'ingress'), this.endpointChain(iface, ep, 'egress')];
  }

  private endpointChain(iface: string, ep: WorkloadEndpoint, dir: Direction): Chain {
    const name = endpointChainName(iface, dir);
    if (ep.state !== 'active') {
      return { name, rules: [{ match: ANY, action: DROP, comments: ['Endpoint admin disabled'] }] };
    }
    // QoS limits where Felix puts them (qos-controls.ts): the packet rate before conntrack,
    // the connection limit right after it.
    const rules: ChainRule[] = [
      ...packetRateRules(ep.qosControls, dir),
      { match: CONNTRACK_ESTABLISHED, action: ACCEPT },
      { match: CONNTRACK_INVALID, action: DROP },
      ...connectionLimitRules(ep.qosControls, dir),
      { match: ANY, action: clearMark(MARK_ACCEPT | MARK_PASS) },
    ];
    if (dir === 'egress') {
      rules.push({ match: VXLAN, action: DROP, comments: ['Drop VXLAN encapped packets originating in workloads'] });
      rules.push({ match: IPIP, action: DROP, comments: ['Drop IPinIP encapped packets originating in workloads'] });
    }
    // Staged policies first: their chains only count (RETURN on every outcome; the accept and
    // pass marks untouched, the scratch marks set afresh by every rule that uses them), so
    // enforcement below sees the packet exactly as if they were not there.
    for (const tier of ep.tiers) {
      for (const id of (dir === 'ingress' ? tier.stagedIngressPolicies : tier.stagedEgressPolicies) ?? []) rules.push({ match: ANY, action: jump(policyChainName(id, dir)) });
    }
    for (const tier of ep.tiers) this.tierRules(rules, name, tier, dir);
    for (const profile of ep.profileIds) {
      rules.push({ match: ANY, action: jump(profileChainName(profile, dir)) });
      rules.push({ match: ACCEPTED, action: RETURN, comments: ['Return if profile accepted'] });
    }
    this.pushDrop(rules, name, ANY, DROP, { kind: 'no-profile-matched' }, ['Drop if no profiles matched']);
    return { name, rules };
  }

  private tierRules(out: ChainRule[], chain: string, tier: TierInfo, dir: Direction): void {
    const policies: readonly PolicyId[] = dir === 'ingress' ? tier.ingressPolicies : tier.egressPolicies;
    if (policies.length === 0) return;
    out.push({ match: ANY, action: clearMark(MARK_PASS), comments: [`Start of tier ${tier.name}`] });
    for (const id of policies) {
      out.push({ match: PASS_CLEAR, action: jump(policyChainName(id, dir)) });
      out.push({ match: ACCEPTED, action: RETURN, comments: ['Return if policy accepted'] });
    }
    if (tier.defaultAction !== 'Pass') {
      this.pushDrop(out, chain, PASS_CLEAR, this.denyTarget, { kind: 'end-of-tier', tier: tier.name, policies }, [`End of tier ${tier.name}. Drop if no policies passed packet`]);
    }
  }

  // ---- policies and profiles ----------------------------------------------------------------

  /**
   * `cali-pi-<id>` and `cali-po-<id>`. A staged policy's chains only count: each rule's final
   * iptables rule RETURNs whatever its action (tagged with it, so its kernel counter is the
   * packets that rule would allow, deny or pass), neither the accept nor the pass mark is set, and nothing is dropped or logged.
   */
  policyChains(id: PolicyId, policy: Policy): Chain[] {
    const ingress = policyChainName(id, 'ingress');
    const egress = policyChainName(id, 'egress');
    const staged = isStagedPolicy(id);
    return [
      { name: ingress, rules: this.rulesChain(ingress, policy.inboundRules, staged) },
      { name: egress, rules: this.rulesChain(egress, policy.outboundRules, staged) },
    ];
  }

  /** `cali-pri-<name>` and `cali-pro-<name>`. */
  profileChains(name: string, profile: Profile): Chain[] {
    const ingress = profileChainName(name, 'ingress');
    const egress = profileChainName(name, 'egress');
    return [
      { name: ingress, rules: this.rulesChain(ingress, profile.inboundRules) },
      { name: egress, rules: this.rulesChain(egress, profile.outboundRules) },
    ];
  }

  private rulesChain(chain: string, rules: readonly Rule[], staged = false): ChainRule[] {
    const out: ChainRule[] = [];
    for (let i = 0; i < rules.length; i++) this.renderRuleInto(rules[i]!, out, chain, i, staged);
    // A staged chain's RETURNs are its counters: none is stripped.
    if (staged) return out;
    // A RETURN at the very end of a chain is a no-op whatever it matches (Felix strips them).
    while (out.length > 0 && out[out.length - 1]!.action.type === 'return') out.pop();
    return out;
  }

  /**
   * One Calico rule → iptables rules. Criteria that iptables can express only once per rule
   * (several CIDRs or port alternatives on a side, negated CIDRs next to a positive one) become
   * match blocks on the scratch marks; everything else goes into the final rule that carries
   * the action. Throws `RuleRenderError` for values that cannot be rendered.
   */
  renderRule(rule: Rule): ChainRule[] {
    const out: ChainRule[] = [];
    this.renderRuleInto(rule, out, '', 0);
    return out;
  }

  /**
   * {@link renderRule}, appending to `out` (a chain renders thousands: no array per rule); the
   * rule is the owner's rule `index`, rendered into `chain` (for its tag and drop-log prefix).
   */
  private renderRuleInto(original: Rule, out: ChainRule[], chain: string, index: number, staged = false): void {
    // A staged Log rule would write to the kernel log for a policy that is not in force.
    if (staged && original.action === 'log') return;
    const v = this.ipVersion;
    // The one family filter the verdict engine applies too (proto/rule-ip-version.ts).
    const rule = filterRuleToIpVersion(original, v);
    if (rule === undefined) return;
    if (rule.protocol !== undefined && !protocolInFamily(rule.protocol, v)) return;
    if ((rule.icmp !== undefined || rule.notIcmp !== undefined) && rule.protocol === undefined) {
      throw new RuleRenderError('an ICMP type match needs protocol icmp or icmpv6');
    }
    const srcPos = this.canonicalNets(rule.srcNets);
    const dstPos = this.canonicalNets(rule.dstNets);
    const srcNeg = this.canonicalNets(rule.notSrcNets);
    const dstNeg = this.canonicalNets(rule.notDstNets);

    const proto = rule.protocol === undefined ? undefined : protocolToken(rule.protocol, v);
    const needsProto = rule.srcPorts.length + rule.dstPorts.length + rule.notSrcPorts.length + rule.notDstPorts.length > 0;
    if (needsProto && (proto === undefined || !PORT_PROTOCOLS.has(proto))) {
      throw new RuleRenderError('numeric ports need protocol tcp, udp, sctp or udplite');
    }

    // `build()` copies, so one builder serves every rule (this runs for each of thousands).
    const single = this.scratch.reset();
    if (proto !== undefined) single.protocol(proto);
    if (rule.notProtocol !== undefined) {
      const notProto = protocolToken(rule.notProtocol, v);
      // iptables takes one `-p` per rule ("multiple -p flags not allowed": Felix's `-p X ! -p Y`
      // fails the whole restore). Next to a positive protocol the negated one either names the
      // same protocol (the rule matches nothing: render nothing) or is implied by it.
      if (proto === undefined) single.protocol(notProto, true);
      else if (tokenNumber(proto) === tokenNumber(notProto)) return;
    }

    // Criteria iptables can express once per rule become match blocks (OR of alternatives)
    // or, for negated CIDRs, "clear the all-blocks mark if this matches".
    const blocks: Match[][] = [];
    const negBlocks: Match[] = [];
    this.netMatches('src', srcPos, srcNeg, single, blocks, negBlocks);
    this.netMatches('dst', dstPos, dstNeg, single, blocks, negBlocks);
    this.sideMatches('src', proto, rule.srcPorts, rule.srcNamedPortIpSetIds, rule.notSrcPorts, rule.notSrcNamedPortIpSetIds, rule.srcIpSetIds, rule.notSrcIpSetIds, single, blocks);
    this.sideMatches('dst', proto, rule.dstPorts, rule.dstNamedPortIpSetIds, rule.notDstPorts, rule.notDstNamedPortIpSetIds, rule.dstIpSetIds, rule.notDstIpSetIds, single, blocks);
    // `services` destinations (Felix `DstIpPortSetIds`): address and port in every set, AND-ed.
    for (const id of rule.dstIpPortSetIds) single.ipSet('dst', ipSetName(id, v), true);

    if (rule.icmp !== undefined) single.icmp(rule.icmp, v);
    if (rule.notIcmp !== undefined) single.icmp(rule.notIcmp, v, true);

    let match = single.build();
    if (blocks.length > 0 || negBlocks.length > 0) {
      out.push({ match: ANY, action: setMark(MARK_SCRATCH0) });
      for (const alts of blocks) {
        out.push({ match: ANY, action: clearMark(MARK_SCRATCH1) });
        for (const alt of alts) out.push({ match: alt, action: setMark(MARK_SCRATCH1) });
        out.push({ match: SCRATCH1_CLEAR, action: clearMark(MARK_SCRATCH0) });
      }
      for (const neg of negBlocks) out.push({ match: neg, action: clearMark(MARK_SCRATCH0) });
      match = new MatchBuilder().and(SCRATCH0_SET).and(match).build();
    }
    const tag: RuleTag = { kind: 'rule', index, action: rule.action === 'next-tier' ? 'pass' : rule.action };
    const comments = rule.ruleId === '' ? undefined : [`rule ${rule.ruleId}`];
    if (staged) {
      out.push(comments === undefined ? { match, action: RETURN, tag } : { match, action: RETURN, comments, tag });
      return;
    }
    if (rule.action === 'deny' && chain !== '') this.pushDrop(out, chain, match, this.denyTarget, tag, comments);
    else out.push(comments === undefined ? { match, action: this.actionTarget(rule), tag } : { match, action: this.actionTarget(rule), comments, tag });
    if (rule.action === 'allow') out.push(RETURN_IF_ACCEPTED);
    else if (rule.action === 'next-tier') out.push(RETURN_IF_PASSED);
  }

  /** The target of a rule's final iptables rule. */
  private actionTarget(rule: Rule): Action {
    switch (rule.action) {
      case 'allow':
        return SET_ACCEPT_MARK;
      case 'next-tier':
        return SET_PASS_MARK;
      case 'deny':
        return this.denyTarget;
      case 'log':
        return this.logTarget;
      default:
        throw new RuleRenderError(`action '${String((rule as Rule).action)}' is not supported`);
    }
  }

  /** A family-filtered CIDR list in canonical text (throws `RuleRenderError` on a bad CIDR). */
  private canonicalNets(nets: readonly string[]): readonly string[] {
    // Most lists are empty: no allocation for them (this runs four times per rule).
    if (nets.length === 0) return NONE;
    const out: string[] = [];
    for (const n of nets) {
      const c = parseCidr(n);
      if (c.family !== this.ipVersion) throw new RuleRenderError(`CIDR '${n}' is not IPv${this.ipVersion}`);
      out.push(c.text);
    }
    return out;
  }

  private netMatches(side: Side, pos: readonly string[], neg: readonly string[], single: MatchBuilder, blocks: Match[][], negBlocks: Match[]): void {
    if (pos.length === 1) single.net(side, pos[0]!);
    else if (pos.length > 1) blocks.push(pos.map((c) => new MatchBuilder().net(side, c).build()));
    if (neg.length === 1 && pos.length === 0) single.net(side, neg[0]!, true);
    else for (const c of neg) negBlocks.push(new MatchBuilder().net(side, c).build());
  }

  private sideMatches(
    side: Side,
    proto: string | undefined,
    numeric: readonly PortRange[],
    named: readonly string[],
    notNumeric: readonly PortRange[],
    notNamed: readonly string[],
    sets: readonly string[],
    notSets: readonly string[],
    single: MatchBuilder,
    blocks: Match[][],
  ): void {
    if (numeric.length + named.length + notNumeric.length + notNamed.length + sets.length + notSets.length === 0) return;
    const v = this.ipVersion;
    for (const id of sets) single.ipSet(side, ipSetName(id, v), false);
    for (const id of notSets) single.ipSet(side, ipSetName(id, v), false, true);
    // Numeric ports and named-port sets of one side are alternatives (OR).
    const chunks = numeric.length === 0 ? [] : splitPortList(numeric);
    const nAlts = chunks.length + named.length;
    if (nAlts === 1) {
      // The protocol is already in `single`.
      if (chunks.length === 1) single.ports(side, chunks[0]!);
      else single.ipSet(side, ipSetName(named[0]!, v), true);
    } else if (nAlts > 1) {
      const alts: Match[] = [];
      for (const chunk of chunks) alts.push(new MatchBuilder().protocol(proto!).ports(side, chunk).build());
      for (const id of named) alts.push(new MatchBuilder().ipSet(side, ipSetName(id, v), true).build());
      blocks.push(alts);
    }
    if (notNumeric.length > 0) for (const chunk of splitPortList(notNumeric)) single.ports(side, chunk, true);
    for (const id of notNamed) single.ipSet(side, ipSetName(id, v), true, true);
  }
}
