import { describe, expect, it } from 'vitest';
import { ACCEPT, DROP, REJECT, RETURN, clearMark, goTo, jump, setMark, type Action } from '../action.ts';
import { MatchBuilder } from '../match-builder.ts';
import { ANY } from '../match.ts';
import { actionText, matchText, ruleBody, ruleTail, sanitizeComment } from './rule-text.ts';

const m = (): MatchBuilder => new MatchBuilder();

describe('iptables rule text (the fragments Tessera has always written: rule hashes depend on them)', () => {
  it.each([
    [m().protocol('tcp'), '-p tcp'],
    [m().protocol('udp', true), '! -p udp'],
    [m().inInterface('cali+'), '-i cali+'],
    [m().outInterface('cali0a'), '-o cali0a'],
    [m().net('src', '10.0.0.0/8'), '--source 10.0.0.0/8'],
    [m().net('dst', 'fd00::/64', true), '! --destination fd00::/64'],
    [m().ports('dst', [{ first: 80, last: 80 }, { first: 8000, last: 8080 }]), '-m multiport --destination-ports 80,8000:8080'],
    [m().ports('src', [{ first: 22, last: 22 }], true), '-m multiport ! --source-ports 22'],
    [m().ipSet('src', 'cali40s:abc', false), '-m set --match-set cali40s:abc src'],
    [m().ipSet('dst', 'cali40n:abc', true, true), '-m set ! --match-set cali40n:abc dst,dst'],
    [m().icmp({ type: 8, code: 0 }, 4), '-m icmp --icmp-type 8/0'],
    [m().icmp({ type: 128 }, 6, true), '-m icmp6 ! --icmpv6-type 128'],
    [m().markSet(0x10000), '-m mark --mark 0x10000/0x10000'],
    [m().markClear(0x20000), '-m mark --mark 0x0/0x20000'],
    [m().conntrackState('RELATED', 'ESTABLISHED'), '-m conntrack --ctstate RELATED,ESTABLISHED'],
    [m().protocolDestPort('udp', 4789), '-p udp -m udp --dport 4789'],
    [m().rateLimit('10/second', 5, 'tdrop-x'), '-m hashlimit --hashlimit-upto 10/second --hashlimit-burst 5 --hashlimit-name tdrop-x'],
    [m().markSet(0x40000).protocol('tcp').ipSet('src', 's1', false), '-m mark --mark 0x40000/0x40000 -p tcp -m set --match-set s1 src'],
    [m(), ''],
  ])('%# renders %s', (b, text) => {
    expect(matchText(b.build())).toBe(text);
  });

  it.each<[Action, string]>([
    [ACCEPT, '-j ACCEPT'],
    [DROP, '-j DROP'],
    [REJECT, '-j REJECT'],
    [RETURN, '-j RETURN'],
    [jump('cali-pi-x'), '-j cali-pi-x'],
    [goTo('cali-fw-cali0a'), '-g cali-fw-cali0a'],
    [setMark(0x10000), '-j MARK --set-xmark 0x10000/0x10000'],
    [clearMark(0xffff0000 & ~0x10000), '-j MARK --set-xmark 0x0/0xfffe0000'],
    [{ type: 'log', prefix: 'calico-packet', level: 5 }, '-j LOG --log-prefix calico-packet --log-level 5'],
    [{ type: 'nflog', group: 100, prefix: 'cali-x|1|0123abcd', size: 128, threshold: 1 }, '-j NFLOG --nflog-group 100 --nflog-prefix cali-x|1|0123abcd --nflog-size 128 --nflog-threshold 1'],
  ])('%# renders %s', (action, text) => {
    expect(actionText(action)).toBe(text);
  });

  it('writes comments first, then the match, then the action, with the hash comment in front', () => {
    const rule = { match: m().protocol('tcp').build(), action: DROP, comments: ['rule "r1"', 'x'] };
    expect(ruleTail(rule)).toBe('-m comment --comment "rule _r1_" -m comment --comment "x" -p tcp -j DROP');
    expect(ruleBody({ match: ANY, action: ACCEPT }, 'HASH')).toBe('HASH -j ACCEPT');
    expect(sanitizeComment('a'.repeat(300))).toHaveLength(255);
  });
});

describe('MatchBuilder validation (a bad value fails the render, never the restore)', () => {
  it('rejects values that could break out of their token', () => {
    expect(() => m().ipSet('src', 'bad name', false)).toThrow(/not a valid set name/);
    expect(() => m().ports('dst', [{ first: 70000, last: 70000 }])).toThrow(/not in 0..65535/);
    expect(() => m().ports('dst', [{ first: 90, last: 80 }])).toThrow(/reversed/);
    expect(() => m().icmp({ type: 256 }, 4)).toThrow(/not in 0..255/);
    expect(() => m().inInterface('cali x')).toThrow(/not a valid interface/);
    expect(() => m().inInterface('a-name-longer-than-15')).toThrow(/not a valid interface/);
  });

  it('shares a recurring criterion between rules and builds matches of exact length', () => {
    const a = m().protocol('tcp').ports('dst', [{ first: 80, last: 80 }]).ipSet('src', 'cali40s:x', false).build();
    const b = m().protocol('tcp').ports('dst', [{ first: 80, last: 80 }]).ipSet('src', 'cali40s:x', false).build();
    expect(a).not.toBe(b);
    a.forEach((c, i) => expect(c).toBe(b[i]));
    expect(Object.isFrozen(a[0])).toBe(true);
    expect(m().ports('dst', [{ first: 80, last: 81 }]).build()[0]).not.toBe(a[1]);
  });
});
