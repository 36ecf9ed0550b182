import { describe, expect, it } from 'vitest';
import { dropLogTarget, parseDropLogPrefix, dropLogPrefix, type LoggedDrop } from './drop-log.ts';
import { RuleRenderer } from './rule-renderer.ts';
import { parseCounterLine } from './iptables/iptables-save.ts';
import { actionText, matchText } from './iptables/rule-text.ts';
import type { ChainRule } from './chain.ts';
import { probeDropLog } from './iptables/drop-log-probe.ts';
import { RecordingCommandRunner } from './command-runner.ts';
import { MARK_SCRATCH0, MARK_SCRATCH1 } from './marks.ts';
import { clearMark, setMark } from './action.ts';

/** A rule with its match and action as the iptables backend writes them. */
const asText = (r: ChainRule) => ({ ...r, match: matchText(r.match), action: actionText(r.action) });
import { makeRule } from '../proto/dataplane-messages.ts';

describe('drop log rendering', () => {
  it('validates its options as Felix writes a log rate', () => {
    expect(() => dropLogTarget({ rate: '10/sec' })).toThrow(/N\/second/);
    expect(() => dropLogTarget({ burst: 0 })).toThrow(/burst/);
    expect(() => dropLogTarget({ group: 70_000 })).toThrow(/group/);
    const drop = { match: '-p udp', action: '-j DROP', tag: { kind: 'rule', index: 1, action: 'deny' } } as const;
    const prefix = dropLogPrefix('cali-pi-np/a/b', 3, drop);
    expect(prefix).toMatch(/^cali-pi-np\/a\/b\|3\|[0-9a-f]{8}$/);
    const log = dropLogTarget({})('cali-pi-np/a/b', 3, drop);
    expect({ match: matchText(log.match), action: actionText(log.action) }).toEqual({
      match: '-m hashlimit --hashlimit-upto 10/second --hashlimit-burst 5 --hashlimit-name tdrop-1735f0689',
      action: `-j NFLOG --nflog-group 100 --nflog-prefix ${prefix} --nflog-size 128 --nflog-threshold 1`,
    });
    // The digest covers the drop rule: the same position with another rule is another prefix.
    expect(dropLogPrefix('cali-pi-np/a/b', 3, { ...drop, tag: { kind: 'rule', index: 2, action: 'deny' } })).not.toBe(prefix);
    expect(dropLogPrefix('cali-pi-np/a/b', 3, { ...drop, match: '-p tcp' })).not.toBe(prefix);
  });

  it('prefixes round-trip; anything else is not ours', () => {
    expect(parseDropLogPrefix(dropLogPrefix('cali-tw-cali1234', 12, { match: '', action: '-j DROP', tag: { kind: 'no-profile-matched' } }))).toEqual({ chain: 'cali-tw-cali1234', position: 12 });
    expect(parseDropLogPrefix('calico-packet')).toBeUndefined();
    expect(parseDropLogPrefix('cali-x|')).toBeUndefined();
    expect(parseDropLogPrefix('cali-x|-1|0123abcd')).toBeUndefined();
    expect(parseDropLogPrefix('cali-x|3')).toBeUndefined();
  });

  it('each deny rule is preceded by its log rule naming the deny\'s position; allows are tagged, not logged', () => {
    const r = new RuleRenderer({ ipVersion: 4, dropLog: {} });
    const [ingress] = r.policyChains({ kind: 'NetworkPolicy', namespace: 'shop', name: 'p', tier: 'default' }, {
      inboundRules: [makeRule({ action: 'allow', protocol: 'tcp' }), makeRule({ action: 'deny', protocol: 'udp', ruleId: 'r1' })],
      outboundRules: [],
    } as never);
    const rules = ingress!.rules;
    const deny = rules.findIndex((x) => x.tag?.kind === 'rule' && x.tag.action === 'deny');
    expect(asText(rules[deny]!)).toMatchObject({ match: '-p udp', action: '-j DROP', tag: { kind: 'rule', index: 1, action: 'deny' }, comments: ['rule r1'] });
    expect(matchText(rules[deny - 1]!.match)).toBe('-p udp -m hashlimit --hashlimit-upto 10/second --hashlimit-burst 5 --hashlimit-name tdrop-1735f0689');
    expect(actionText(rules[deny - 1]!.action)).toContain(`--nflog-prefix ${dropLogPrefix(ingress!.name, deny, asText(rules[deny]!) as LoggedDrop)} `);
    expect(rules[0]).toMatchObject({ tag: { kind: 'rule', index: 0, action: 'allow' } });
    expect(rules.filter((x) => actionText(x.action).includes('NFLOG'))).toHaveLength(1);
  });

  it('without the option nothing is logged (the rules are as before, tagged)', () => {
    const r = new RuleRenderer({ ipVersion: 4 });
    const [ingress] = r.policyChains({ kind: 'GlobalNetworkPolicy', name: 'p', tier: 'default' }, { inboundRules: [makeRule({ action: 'deny' })], outboundRules: [] } as never);
    expect(ingress!.rules.map(asText)).toEqual([{ match: '', action: '-j DROP', tag: { kind: 'rule', index: 0, action: 'deny' } }]);
  });
});

describe('staged policies on nodes', () => {
  it('a staged policy chain only counts: every rule RETURNs with its tag, no mark, no drop, no log; the endpoint jumps to it first', () => {
    const r = new RuleRenderer({ ipVersion: 4, dropLog: {} });
    const id = { kind: 'StagedNetworkPolicy' as const, namespace: 'shop', name: 'p', tier: 'default' };
    const [ingress] = r.policyChains(id, {
      inboundRules: [makeRule({ action: 'allow', protocol: 'tcp' }), makeRule({ action: 'log' }), makeRule({ action: 'deny', srcNets: ['10.0.0.0/8', '192.168.0.0/16'] })],
      outboundRules: [],
    } as never);
    expect(ingress!.name).toBe('cali-pi-snp/shop/p');
    const finals = ingress!.rules.filter((x) => x.tag !== undefined);
    expect(finals.map((x) => [x.tag, actionText(x.action)])).toEqual([
      [{ kind: 'rule', index: 0, action: 'allow' }, '-j RETURN'],
      [{ kind: 'rule', index: 2, action: 'deny' }, '-j RETURN'],
    ]);
    // Only RETURNs and the scratch marks of the two-CIDR match block: the accept and pass marks are never touched.
    const allowed = new Set(['-j RETURN', ...[setMark(MARK_SCRATCH0), setMark(MARK_SCRATCH1), clearMark(MARK_SCRATCH0), clearMark(MARK_SCRATCH1)].map(actionText)]);
    expect(ingress!.rules.map((x) => actionText(x.action)).filter((a) => !allowed.has(a))).toEqual([]);
    const [tw] = r.endpointChains('cali1234', {
      state: 'active',
      name: 'web',
      tiers: [{ name: 'default', defaultAction: 'Deny', ingressPolicies: [], egressPolicies: [], stagedIngressPolicies: [id] }],
      profileIds: ['kns.shop'],
    } as never);
    const jump = tw!.rules.findIndex((x) => actionText(x.action) === '-j cali-pi-snp/shop/p');
    expect(jump).toBeGreaterThan(0);
    expect(tw!.rules.some((x) => x.tag?.kind === 'end-of-tier')).toBe(false);
  });
});

describe('parseCounterLine', () => {
  it('reads counters, chain and hash of an iptables-save -c line', () => {
    expect(parseCounterLine('[7:392] -A cali-pi-np/shop/web -m comment --comment "cali:AbC-_12" -p udp -j DROP')).toEqual({ packets: 7, bytes: 392, chain: 'cali-pi-np/shop/web', hash: 'AbC-_12' });
    expect(parseCounterLine('[0:0] -A FORWARD -j ACCEPT')).toBeUndefined();
    expect(parseCounterLine(':cali-x - [0:0]')).toBeUndefined();
  });
});

describe('probeDropLog', () => {
  it('tries the log rule on a scratch chain, removes the chain, and reports the kernel\'s refusal', async () => {
    const ok = new RecordingCommandRunner();
    expect(await probeDropLog(ok, 'nft', 4, {})).toBeUndefined();
    expect(ok.calls.map((c) => c.cmd)).toEqual(['iptables-nft-restore', 'iptables-nft-restore']);
    expect(ok.calls[0]!.stdin).toMatch(/^\*filter\n:cali-tessera-droplog-probe - \[0:0\]\n-A cali-tessera-droplog-probe -m hashlimit .* -j NFLOG --nflog-group 100 /);
    expect(ok.calls[1]!.stdin).toContain('-X cali-tessera-droplog-probe');
    const refusing = new RecordingCommandRunner((c) => (c.stdin?.includes('NFLOG') === true ? { code: 2, stdout: '', stderr: "Couldn't load target `NFLOG':No such file or directory" } : undefined));
    expect(await probeDropLog(refusing, 'legacy', 6, {})).toMatch(/^ip6tables-legacy-restore \(2\): Couldn't load target `NFLOG'/);
    expect(refusing.calls).toHaveLength(2);
  });
});
