import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ipSetName } from '../selector/index.ts';
import type { Chain, ChainRule } from './chain.ts';
import { actionText, matchText, ruleBody } from './iptables/rule-text.ts';
import { RuleRenderError, splitPortList } from './match-builder.ts';
import { RuleRenderer } from './rule-renderer.ts';
import { endpoint, npId, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';

const v4 = new RuleRenderer({ ipVersion: 4 });
const v6 = new RuleRenderer({ ipVersion: 6 });
const text = (rules: readonly ChainRule[]): string[] => rules.map((r) => ruleBody(r, '').trim());
const chainText = (c: Chain): string[] => text(c.rules).map((r) => `-A ${c.name} ${r}`);
const S = ipSetName('s:abc', 4);
const N = ipSetName('n:named', 4);

describe('RuleRenderer.renderRule: actions (calico-semantics §4.6)', () => {
  it('renders Allow as set-accept-mark then RETURN on the mark', () => {
    expect(text(v4.renderRule(rule({ action: 'allow' })))).toEqual(['-j MARK --set-xmark 0x10000/0x10000', '-m mark --mark 0x10000/0x10000 -j RETURN']);
  });
  it('renders Pass (next-tier) with the pass mark', () => {
    expect(text(v4.renderRule(rule({ action: 'next-tier' })))).toEqual(['-j MARK --set-xmark 0x20000/0x20000', '-m mark --mark 0x20000/0x20000 -j RETURN']);
  });
  it('renders Deny as DROP, or REJECT when configured', () => {
    expect(text(v4.renderRule(rule({ action: 'deny' })))).toEqual(['-j DROP']);
    expect(text(new RuleRenderer({ ipVersion: 4, denyAction: 'REJECT' }).renderRule(rule({ action: 'deny' })))).toEqual(['-j REJECT']);
  });
  it('renders Log as LOG with the calico-packet prefix (processing continues)', () => {
    expect(text(v4.renderRule(rule({ action: 'log', protocol: 'tcp' })))).toEqual(['-p tcp -j LOG --log-prefix calico-packet --log-level 5']);
  });
  it('adds the rule id as a comment on the action rule', () => {
    expect(text(v4.renderRule(rule({ action: 'deny', ruleId: 'abc' })))).toEqual(['-m comment --comment "rule abc" -j DROP']);
  });
});

describe('RuleRenderer.renderRule: matches (dataplane.md §3)', () => {
  it('renders protocol, ports, selector sets and one CIDR per side in a single rule', () => {
    const r = rule({ action: 'deny', protocol: 'tcp', srcNets: ['10.0.0.0/8'], dstNets: ['10.65.0.2'], srcIpSetIds: ['s:abc'], dstPorts: [port(80), port(8000, 8080)] });
    expect(text(v4.renderRule(r))).toEqual([`-p tcp --source 10.0.0.0/8 --destination 10.65.0.2/32 -m set --match-set ${S} src -m multiport --destination-ports 80,8000:8080 -j DROP`]);
  });

  it('renders negations: notProtocol, notNets, notPorts, negated selector and named-port sets', () => {
    const r = rule({
      action: 'deny',
      protocol: 'udp',
      notProtocol: 'tcp',
      notSrcNets: ['192.168.0.0/16'],
      notDstPorts: [port(53)],
      notSrcIpSetIds: ['s:abc'],
      notDstNamedPortIpSetIds: ['n:named'],
    });
    expect(text(v4.renderRule(r))).toEqual([
      `-p udp ! --source 192.168.0.0/16 -m set ! --match-set ${S} src -m multiport ! --destination-ports 53 -m set ! --match-set ${N} dst,dst -j DROP`,
    ]);
  });

  it('renders notProtocol as `! -p` alone; next to a protocol it is implied (iptables takes one -p), or contradicts it and the rule matches nothing', () => {
    expect(text(v4.renderRule(rule({ action: 'deny', notProtocol: 'tcp' })))).toEqual(['! -p tcp -j DROP']);
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'udp', notProtocol: 'tcp' })))).toEqual(['-p udp -j DROP']);
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'tcp', notProtocol: 6 })))).toEqual([]);
  });

  it('matches a single destination named port with dst,dst', () => {
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'tcp', dstNamedPortIpSetIds: ['n:named'] })))).toEqual([`-p tcp -m set --match-set ${N} dst,dst -j DROP`]);
  });

  it('matches a services destination set with dst,dst, AND-ed with the other criteria, in both families (Felix DstIpPortSetIds)', () => {
    const svc = 'svc:Jhwii46PCMT5NlhWsUqZmv7al8TeHFbNQMhoVg';
    const r = rule({ action: 'allow', srcIpSetIds: ['s:abc'], dstIpPortSetIds: [svc] });
    expect(ipSetName(svc, 4)).toBe('cali40svc:Jhwii46PCMT5NlhWsUqZm');
    expect(text(v4.renderRule(r))[0]).toBe(`-m set --match-set ${S} src -m set --match-set cali40svc:Jhwii46PCMT5NlhWsUqZm dst,dst -j MARK --set-xmark 0x10000/0x10000`);
    expect(text(v6.renderRule(rule({ action: 'deny', dstIpPortSetIds: [svc] })))).toEqual(['-m set --match-set cali60svc:Jhwii46PCMT5NlhWsUqZm dst,dst -j DROP']);
    // Not an alternative to the numeric ports, as a named-port set is: both must match.
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'tcp', dstPorts: [port(80)], dstIpPortSetIds: [svc] })))).toEqual([
      '-p tcp -m multiport --destination-ports 80 -m set --match-set cali40svc:Jhwii46PCMT5NlhWsUqZm dst,dst -j DROP',
    ]);
  });

  it('renders ICMP type and code, and the ICMPv6 form in the IPv6 table', () => {
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'icmp', icmp: { type: 8, code: 0 } })))).toEqual(['-p icmp -m icmp --icmp-type 8/0 -j DROP']);
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'icmp', notIcmp: { type: 3 } })))).toEqual(['-p icmp -m icmp ! --icmp-type 3 -j DROP']);
    expect(text(v6.renderRule(rule({ action: 'deny', protocol: 'icmpv6', icmp: { type: 128 } })))).toEqual(['-p ipv6-icmp -m icmp6 --icmpv6-type 128 -j DROP']);
  });

  it('renders nothing for a rule of the other IP family', () => {
    expect(v4.renderRule(rule({ ipVersion: 6 }))).toEqual([]);
    expect(v4.renderRule(rule({ protocol: 'icmpv6' }))).toEqual([]);
    expect(v6.renderRule(rule({ protocol: 'icmp' }))).toEqual([]);
    expect(v6.renderRule(rule({ srcNets: ['10.0.0.0/8'] }))).toEqual([]);
    expect(text(v6.renderRule(rule({ action: 'deny', srcNets: ['10.0.0.0/8', 'fd00::/64'] })))).toEqual(['--source fd00::/64 -j DROP']);
  });

  it('renders nothing for a rule whose notNets are all of the other family (Felix FilterRuleToIPVersion; issue 27 item 2)', () => {
    // The audit's input: an Allow with source.notNets [fd00::/64] must not allow all IPv4.
    expect(v4.renderRule(rule({ action: 'allow', notSrcNets: ['fd00::/64'] }))).toEqual([]);
    expect(v6.renderRule(rule({ action: 'allow', notDstNets: ['10.0.0.0/8'] }))).toEqual([]);
    expect(text(v6.renderRule(rule({ action: 'deny', notSrcNets: ['fd00::/64'] })))).toEqual(['! --source fd00::/64 -j DROP']);
    expect(text(v4.renderRule(rule({ action: 'deny', notSrcNets: ['10.0.0.0/8', 'fd00::/64'] })))).toEqual(['! --source 10.0.0.0/8 -j DROP']);
    // A negated catch-all of the family: the rule matches nothing there.
    expect(v4.renderRule(rule({ action: 'deny', notDstNets: ['0.0.0.0/0'] }))).toEqual([]);
  });

  it('uses a match block when the numeric ports need more than one 15-slot multiport match', () => {
    const ports = Array.from({ length: 16 }, (_, i) => port(1000 + i));
    expect(splitPortList(ports).map((c) => c.length)).toEqual([15, 1]);
    expect(text(v4.renderRule(rule({ action: 'deny', protocol: 'tcp', dstPorts: ports })))).toEqual([
      '-j MARK --set-xmark 0x40000/0x40000',
      '-j MARK --set-xmark 0x0/0x80000',
      `-p tcp -m multiport --destination-ports ${ports.slice(0, 15).map((p) => p.first).join(',')} -j MARK --set-xmark 0x80000/0x80000`,
      '-p tcp -m multiport --destination-ports 1015 -j MARK --set-xmark 0x80000/0x80000',
      '-m mark --mark 0x0/0x80000 -j MARK --set-xmark 0x0/0x40000',
      '-m mark --mark 0x40000/0x40000 -p tcp -j DROP',
    ]);
  });

  it('counts a range as two multiport slots', () => {
    const ranges = Array.from({ length: 8 }, (_, i) => port(1000 * (i + 1), 1000 * (i + 1) + 10));
    expect(splitPortList(ranges).map((c) => c.length)).toEqual([7, 1]);
  });

  it('ORs numeric ports with named-port sets in one block, and several CIDRs in another', () => {
    const r = rule({ protocol: 'tcp', dstPorts: [port(80)], dstNamedPortIpSetIds: ['n:named'], srcNets: ['10.1.0.0/16', '10.2.0.0/16'] });
    expect(text(v4.renderRule(r))).toEqual([
      '-j MARK --set-xmark 0x40000/0x40000',
      '-j MARK --set-xmark 0x0/0x80000',
      '--source 10.1.0.0/16 -j MARK --set-xmark 0x80000/0x80000',
      '--source 10.2.0.0/16 -j MARK --set-xmark 0x80000/0x80000',
      '-m mark --mark 0x0/0x80000 -j MARK --set-xmark 0x0/0x40000',
      '-j MARK --set-xmark 0x0/0x80000',
      '-p tcp -m multiport --destination-ports 80 -j MARK --set-xmark 0x80000/0x80000',
      `-m set --match-set ${N} dst,dst -j MARK --set-xmark 0x80000/0x80000`,
      '-m mark --mark 0x0/0x80000 -j MARK --set-xmark 0x0/0x40000',
      '-m mark --mark 0x40000/0x40000 -p tcp -j MARK --set-xmark 0x10000/0x10000',
      '-m mark --mark 0x10000/0x10000 -j RETURN',
    ]);
  });

  it('clears the all-blocks mark for each negated CIDR next to a positive one', () => {
    const r = rule({ action: 'deny', srcNets: ['10.0.0.0/8'], notSrcNets: ['10.1.0.0/16', '10.2.0.0/16'] });
    expect(text(v4.renderRule(r))).toEqual([
      '-j MARK --set-xmark 0x40000/0x40000',
      '--source 10.1.0.0/16 -j MARK --set-xmark 0x0/0x40000',
      '--source 10.2.0.0/16 -j MARK --set-xmark 0x0/0x40000',
      '-m mark --mark 0x40000/0x40000 --source 10.0.0.0/8 -j DROP',
    ]);
  });

  it('rejects values that cannot be rendered', () => {
    expect(() => v4.renderRule(rule({ dstPorts: [port(80)] }))).toThrow(RuleRenderError);
    expect(() => v4.renderRule(rule({ protocol: 'tcp', dstPorts: [port(70000)] }))).toThrow(RuleRenderError);
    expect(() => v4.renderRule(rule({ srcNets: ['10.0.0.0/8 -j ACCEPT'] }))).toThrow(RuleRenderError);
    expect(() => v4.renderRule(rule({ protocol: 'tcp;rm' }))).toThrow(RuleRenderError);
    expect(() => v4.renderRule(rule({ srcIpSetIds: ['s:x y'] }))).toThrow(RuleRenderError);
  });
});

describe('RuleRenderer: policy, endpoint and dispatch chains (dataplane.md §1)', () => {
  it('renders a policy into cali-pi-/cali-po- and strips the trailing RETURN', () => {
    const [pi, po] = v4.policyChains(npId('shop', 'web'), policy([rule({ protocol: 'tcp', dstPorts: [port(80)] })]));
    expect(chainText(pi!)).toEqual(['-A cali-pi-np/shop/web -p tcp -m multiport --destination-ports 80 -j MARK --set-xmark 0x10000/0x10000']);
    expect(po).toEqual({ name: 'cali-po-np/shop/web', rules: [] });
  });

  it('renders an endpoint chain: conntrack, clear marks, tiers with end-of-tier drop, profiles, final drop', () => {
    const ep = endpoint({
      interfaceName: 'cali0a',
      profileIds: ['kns.shop'],
      tiers: [tier('security', [npId('shop', 'a', 'security')], [], 'Pass'), tier('default', [npId('shop', 'web'), npId('shop', 'db')])],
    });
    const [tw, fw] = v4.endpointChains('cali0a', ep);
    expect(chainText(tw!)).toEqual([
      '-A cali-tw-cali0a -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A cali-tw-cali0a -m conntrack --ctstate INVALID -j DROP',
      '-A cali-tw-cali0a -j MARK --set-xmark 0x0/0x30000',
      '-A cali-tw-cali0a -m comment --comment "Start of tier security" -j MARK --set-xmark 0x0/0x20000',
      '-A cali-tw-cali0a -m mark --mark 0x0/0x20000 -j cali-pi-np/shop/a',
      '-A cali-tw-cali0a -m comment --comment "Return if policy accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A cali-tw-cali0a -m comment --comment "Start of tier default" -j MARK --set-xmark 0x0/0x20000',
      '-A cali-tw-cali0a -m mark --mark 0x0/0x20000 -j cali-pi-np/shop/web',
      '-A cali-tw-cali0a -m comment --comment "Return if policy accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A cali-tw-cali0a -m mark --mark 0x0/0x20000 -j cali-pi-np/shop/db',
      '-A cali-tw-cali0a -m comment --comment "Return if policy accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A cali-tw-cali0a -m comment --comment "End of tier default. Drop if no policies passed packet" -m mark --mark 0x0/0x20000 -j DROP',
      '-A cali-tw-cali0a -j cali-pri-kns.shop',
      '-A cali-tw-cali0a -m comment --comment "Return if profile accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A cali-tw-cali0a -m comment --comment "Drop if no profiles matched" -j DROP',
    ]);
    // No egress policies: the from-workload chain goes straight to the profiles.
    expect(chainText(fw!).slice(5)).toEqual([
      '-A cali-fw-cali0a -j cali-pro-kns.shop',
      '-A cali-fw-cali0a -m comment --comment "Return if profile accepted" -m mark --mark 0x10000/0x10000 -j RETURN',
      '-A cali-fw-cali0a -m comment --comment "Drop if no profiles matched" -j DROP',
    ]);
  });

  it('gives an inactive endpoint a single DROP', () => {
    const [tw] = v4.endpointChains('cali0a', endpoint({ state: 'inactive', profileIds: ['p'] }));
    expect(chainText(tw!)).toEqual(['-A cali-tw-cali0a -m comment --comment "Endpoint admin disabled" -j DROP']);
  });

  it('rejects interface names that are not Linux interface names', () => {
    expect(() => v4.endpointChains('cali0a -j ACCEPT', endpoint())).toThrow(RuleRenderError);
    expect(() => v4.endpointChains('a'.repeat(16), endpoint())).toThrow(RuleRenderError);
  });

  it('dispatches by interface with --goto and drops unknown interfaces', () => {
    const [from, to] = v4.dispatchChains(['calib', 'calia']);
    expect(chainText(from!)).toEqual([
      '-A cali-from-wl-dispatch -i calia -g cali-fw-calia',
      '-A cali-from-wl-dispatch -i calib -g cali-fw-calib',
      '-A cali-from-wl-dispatch -m comment --comment "Unknown interface" -j DROP',
    ]);
    expect(chainText(to!)[0]).toBe('-A cali-to-wl-dispatch -o calia -g cali-tw-calia');
  });

  it('splits the dispatch into a shallow tree by the character after the common prefix (Felix)', () => {
    const chains = v4.dispatchChains(['cali3', 'cali1b', 'cali2c', 'cali1a', 'cali1a']);
    expect(chains.map((c) => c.name)).toEqual(['cali-from-wl-dispatch-1', 'cali-from-wl-dispatch', 'cali-to-wl-dispatch-1', 'cali-to-wl-dispatch']);
    expect(chains.slice(0, 2).flatMap(chainText)).toEqual([
      '-A cali-from-wl-dispatch-1 -i cali1a -g cali-fw-cali1a',
      '-A cali-from-wl-dispatch-1 -i cali1b -g cali-fw-cali1b',
      '-A cali-from-wl-dispatch-1 -m comment --comment "Unknown interface" -j DROP',
      '-A cali-from-wl-dispatch -i cali1+ -g cali-from-wl-dispatch-1',
      '-A cali-from-wl-dispatch -i cali2c -g cali-fw-cali2c',
      '-A cali-from-wl-dispatch -i cali3 -g cali-fw-cali3',
      '-A cali-from-wl-dispatch -m comment --comment "Unknown interface" -j DROP',
    ]);
    expect(chainText(chains[3]!)[0]).toBe('-A cali-to-wl-dispatch -o cali1+ -g cali-to-wl-dispatch-1');
    expect(new RuleRenderer({ ipVersion: 4, denyAction: 'REJECT' }).dispatchChains([])[0]!.rules[0]!.action).toEqual({ type: 'reject' });
    expect(actionText(new RuleRenderer({ ipVersion: 4, denyAction: 'REJECT' }).dispatchChains([])[0]!.rules[0]!.action)).toBe('-j REJECT');
  });

  it('dispatch trees send every interface to its own chain and nothing else anywhere but the deny', () => {
    // A tiny evaluator for what the tree uses: exact and `+`-wildcard interface matches, goto.
    const walk = (chains: readonly Chain[], root: string, iface: string): string => {
      const byName = new Map(chains.map((c) => [c.name, c.rules]));
      let chain = root;
      for (let hops = 0; hops < 4; hops++) {
        for (const r of byName.get(chain)!) {
          const match = matchText(r.match);
          const action = actionText(r.action);
          const m = /^-[io] (\S+)$/.exec(match);
          const hit = match === '' || (m !== null && (m[1]!.endsWith('+') ? iface.startsWith(m[1]!.slice(0, -1)) : iface === m[1]));
          if (!hit) continue;
          if (!action.startsWith('-g ')) return action;
          chain = action.slice(3);
          if (!byName.has(chain)) return chain;
          break;
        }
      }
      throw new Error('dispatch loops');
    };
    const iface = fc.stringMatching(/^cali[0-9a-c]{1,3}$/);
    fc.assert(
      fc.property(fc.array(iface, { maxLength: 40 }), iface, (names, stranger) => {
        const chains = v4.dispatchChains(names);
        for (const n of names) {
          expect(walk(chains, 'cali-from-wl-dispatch', n)).toBe(`cali-fw-${n}`);
          expect(walk(chains, 'cali-to-wl-dispatch', n)).toBe(`cali-tw-${n}`);
        }
        if (!names.includes(stranger)) expect(walk(chains, 'cali-from-wl-dispatch', stranger)).toBe('-j DROP');
        expect(v4.dispatchChains([...names].reverse())).toEqual(chains);
      }),
      { numRuns: 500 },
    );
  });

  it("hooks FORWARD/INPUT/OUTPUT into cali- chains; FORWARD ends accepting the accept mark, then marking the rest as forwarded (Felix's StaticFilterForwardAppendRules)", () => {
    const hooks = v4.kernelHooks();
    expect(hooks.map((h) => [h.chain, text(h.inserts), text(h.appends)])).toEqual([
      ['INPUT', ['-j cali-INPUT'], []],
      ['FORWARD', ['-j cali-FORWARD'], ['-m comment --comment "Policy explicitly accepted packet." -m mark --mark 0x10000/0x10000 -j ACCEPT', '-j MARK --set-xmark 0x10000/0x10000']],
      ['OUTPUT', ['-j cali-OUTPUT'], []],
    ]);
  });

  it('sanitises comments and cuts them to 255 characters', () => {
    const [tw] = v4.endpointChains('cali0a', endpoint({ tiers: [tier(`t"x${'y'.repeat(300)}`, [npId('a', 'b')])] }));
    const start = tw!.rules[3]!;
    const c = ruleBody(start, '');
    expect(c).toContain('Start of tier t_xyyy');
    expect(/--comment "([^"]*)"/.exec(c)![1]).toHaveLength(255);
  });
});
