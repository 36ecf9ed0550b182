/**
 * Real IPv4 and IPv6 traffic through real iptables and ip6tables: the policy-states node
 * (three pods) made dual-stack — each pod has a /32 and a ULA /128, the node routes IPv6 via
 * the host veths' link-local next hop — and the driver programs both families
 * (`ipVersions: [4, 6]`). After each policy state, TCP and UDP probes run over both families,
 * and the kernel state of each family is checked: `cali-` chains with hash comments in
 * ip6tables, `cali60…` sets of family inet6, rules of one family absent from the other's
 * table, and foreign rules, chains and sets left exactly as they were.
 */
import { isIP } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rule, V3Resource } from '../../src/api/index.ts';
import { parseSave, ruleHashes } from '../../src/dataplane/index.ts';
import { BACKEND, DUAL_STACK_PODS, Harness, NAMESPACE, globalNetworkPolicy, matrix, networkPolicy } from './harness.ts';
import type { Expectation, IpFamily } from './probes.ts';
import type { Update } from '../../src/syncer/index.ts';

const web6 = DUAL_STACK_PODS.find((p) => p.name === 'web')!.ip6!;
const web4 = DUAL_STACK_PODS.find((p) => p.name === 'web')!.ip;
const client6 = DUAL_STACK_PODS.find((p) => p.name === 'client')!.ip6!;

const allowClientTcp: Rule = { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } };
const allowClientDns: Rule = { action: 'Allow', protocol: 'UDP', source: { selector: "app == 'client'" }, destination: { ports: ['dns'] } };
const webIngress = networkPolicy('web-ingress', { selector: "app == 'web'", types: ['Ingress'], ingress: [allowClientTcp] });
const webIngressWithDns = networkPolicy('web-ingress', { selector: "app == 'web'", types: ['Ingress'], ingress: [allowClientTcp, allowClientDns] });
const webIngressWithPing = networkPolicy('web-ingress', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [allowClientTcp, allowClientDns, { action: 'Allow', protocol: 'ICMPv6', icmp: { type: 128 } }],
});
/**
 * TCP to web by a CIDR of each family; UDP anywhere but web's IPv6 address — over IPv6 only:
 * a rule whose notNets are all IPv6 is left out of the IPv4 table (Felix `FilterRuleToIPVersion`),
 * so over IPv4 no rule allows UDP.
 */
const clientEgressRules: Rule[] = [
  { action: 'Allow', protocol: 'TCP', destination: { nets: [`${web6}/128`] } },
  { action: 'Allow', protocol: 'TCP', destination: { nets: [`${web4}/32`] } },
  { action: 'Allow', protocol: 'UDP', destination: { notNets: [`${web6}/128`] } },
];
const clientEgress = globalNetworkPolicy('client-egress', { selector: "app == 'client'", types: ['Egress'], egress: clientEgressRules });
const clientEgressNoV4Tcp = globalNetworkPolicy('client-egress', {
  selector: "app == 'client'",
  types: ['Egress'],
  egress: [{ action: 'Deny', ipVersion: 4, protocol: 'TCP', destination: { ports: [8080] } }, ...clientEgressRules],
});

/** Felix's chain names (HEAD suffix `<kind>/<ns>/<name>`). */
const WEB_INGRESS_CHAIN = `cali-pi-np/${NAMESPACE}/web-ingress`;
const CLIENT_EGRESS_CHAIN = 'cali-po-gnp/client-egress';

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));
const both = (blocked4: readonly string[], blocked6: readonly string[]): Expectation[] => [...matrix(blocked4, 4), ...matrix(blocked6, 6)];

/** Foreign state planted before the driver writes anything; it must survive every apply. */
const FOREIGN_SET = 'tsr-foreign6';

describe('dataplane: dual-stack policy states enforced on real IPv4 and IPv6 traffic', () => {
  let h: Harness;
  let foreignBefore: ReturnType<typeof foreignState>;

  const tool = (family: IpFamily, suffix = ''): string => `${family === 4 ? 'iptables' : 'ip6tables'}-${BACKEND}${suffix}`;
  const node = (args: readonly string[]): string => h.topo.exec(h.topo.nodeNs, args);
  /** Every table of `family` without our chains and hashed rules, counters stripped. */
  const foreign = (family: IpFamily): string[] =>
    node([tool(family, '-save')])
      .split('\n')
      .filter((l) => !l.startsWith('#') && !l.startsWith(':cali-') && !l.startsWith('-A cali-') && !l.includes('cali:'))
      .map((l) => l.replace(/ \[\d+:\d+\]$/, ''));
  const OWNED_SET_LINE = /^(create|add) cali[46]/;
  const sets = (): string[] => node(['ipset', 'list', '-o', 'save']).split('\n').filter((l) => l !== '');
  const ownedSets = (): string[] => sets().filter((l) => OWNED_SET_LINE.test(l));
  /** Everything in the node's iptables, ip6tables and IP sets that is not ours. */
  const foreignState = () => ({ iptables: foreign(4), ip6tables: foreign(6), ipsets: sets().filter((l) => !OWNED_SET_LINE.test(l)) });
  /** The rules of chain `name` (which must exist), as iptables-save prints them. */
  const chainRules = (save: string, name: string): string[] => {
    const lines = save.split('\n');
    expect(lines.some((l) => l.startsWith(`:${name} `)), `chain ${name} in\n${save}`).toBe(true);
    return lines.filter((l) => l.startsWith(`-A ${name} `));
  };

  beforeAll(async () => {
    h = await Harness.create({ ipVersions: [4, 6] }, DUAL_STACK_PODS);
    node([tool(6), '-N', 'TSR-FOREIGN6']);
    node([tool(6), '-A', 'TSR-FOREIGN6', '-s', 'fd00:99::/64', '-j', 'DROP']);
    node([tool(6), '-A', 'FORWARD', '-s', 'fd00:98::/64', '-j', 'TSR-FOREIGN6']);
    node([tool(4), '-A', 'FORWARD', '-s', '10.98.0.0/16', '-j', 'DROP']);
    // Foreign rules in the raw table, where the anti-spoofing and untracked policy hooks go (the table then exists
    // before and after, so the comparison is like for like).
    node([tool(4), '-t', 'raw', '-A', 'PREROUTING', '-s', '10.97.0.0/16', '-j', 'NOTRACK']);
    node([tool(6), '-t', 'raw', '-A', 'PREROUTING', '-s', 'fd00:96::/64', '-j', 'NOTRACK']);
    // And in the mangle table, where the host endpoint hooks go.
    node([tool(4), '-t', 'mangle', '-A', 'PREROUTING', '-s', '10.95.0.0/16', '-j', 'RETURN']);
    node([tool(6), '-t', 'mangle', '-A', 'PREROUTING', '-s', 'fd00:95::/64', '-j', 'RETURN']);
    node(['ipset', 'create', FOREIGN_SET, 'hash:net', 'family', 'inet6']);
    node(['ipset', 'add', FOREIGN_SET, 'fd00:97::/64']);
    foreignBefore = foreignState();
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('state 0, namespace profile only: everything allowed over both families', async () => {
    await h.update(upsert(...h.baseResources()));
    expect(await h.check(both([], []))).toEqual([]);
  });

  it('state 1, web accepts only TCP 8080 from client (a selector set per family)', async () => {
    await h.update(upsert(webIngress));
    const blocked = ['client->web/udp', 'other->web/tcp', 'other->web/udp'];
    expect(await h.check(both(blocked, blocked))).toEqual([]);
    expect(chainRules(h.saveNode(6), WEB_INGRESS_CHAIN).join('\n')).toMatch(/-m set --match-set cali60s:\S+ src/);
    expect(chainRules(h.saveNode(4), WEB_INGRESS_CHAIN).join('\n')).toMatch(/-m set --match-set cali40s:\S+ src/);
  });

  it('state 2, web also accepts UDP on the named port dns from client (hash:ip,port inet6)', async () => {
    await h.update(upsert(webIngressWithDns));
    const blocked = ['other->web/tcp', 'other->web/udp'];
    expect(await h.check(both(blocked, blocked))).toEqual([]);
    const sets = ownedSets();
    const v6Selector = sets.find((l) => l.startsWith('create cali60s:'));
    const v6NamedPort = sets.find((l) => l.startsWith('create cali60n:'));
    expect(v6Selector).toMatch(/^create cali60s:\S{1,24} hash:net family inet6 /);
    expect(v6NamedPort).toMatch(/^create cali60n:\S{1,24} hash:ip,port family inet6 /);
    expect(sets).toContain(`add ${v6Selector!.split(' ')[1]} ${client6}`);
    expect(sets).toContain(`add ${v6NamedPort!.split(' ')[1]} ${client6},udp:5353`);
    // Each family's sets hold only that family's members (`add <set> <addr>[,proto:port]`).
    const memberFamilies = (prefix: string) => new Set(sets.filter((l) => l.startsWith(`add ${prefix}`)).map((l) => isIP(l.split(' ')[2]!.split(',')[0]!)));
    expect(memberFamilies('cali40')).toEqual(new Set([4]));
    expect(memberFamilies('cali60')).toEqual(new Set([6]));
    expect(chainRules(h.saveNode(6), WEB_INGRESS_CHAIN).join('\n')).toMatch(/-m set --match-set cali60n:\S+ dst,dst/);
  });

  it('state 3, client sends TCP to web by CIDR, and UDP anywhere but web over IPv6; the IPv6-only notNets rule is absent from IPv4 (nets / notNets)', async () => {
    await h.update(upsert(clientEgress));
    const blocked = ['other->web/tcp', 'other->web/udp', 'client->web/udp'];
    expect(await h.check(both(blocked, blocked))).toEqual([]);
    const po6 = chainRules(h.saveNode(6), CLIENT_EGRESS_CHAIN).join('\n');
    expect(po6).toContain(`-d ${web6}/128 -p tcp`);
    expect(po6).toContain(`! -d ${web6}/128 -p udp`);
    const po4 = chainRules(h.saveNode(4), CLIENT_EGRESS_CHAIN).join('\n');
    expect(po4).toContain(`-d ${web4}/32 -p tcp`);
    expect(po4).not.toContain(web6);
    expect(po4).not.toContain('-p udp');
  });

  it('state 4, a rule with ipVersion 4 denies TCP only over IPv4 and is absent from the IPv6 table', async () => {
    await h.update(upsert(clientEgressNoV4Tcp));
    const blocked = ['other->web/tcp', 'other->web/udp'];
    expect(await h.check(both([...blocked, 'client->web/tcp', 'client->web/udp'], [...blocked, 'client->web/udp']))).toEqual([]);
    const deny = /^-A \S+ -p tcp .*-m multiport --dports 8080 -j DROP$/;
    expect(chainRules(h.saveNode(4), CLIENT_EGRESS_CHAIN).some((l) => deny.test(l))).toBe(true);
    expect(chainRules(h.saveNode(6), CLIENT_EGRESS_CHAIN).some((l) => l.includes('8080'))).toBe(false);
  });

  it('state 5, an ICMPv6 type match is programmed in the IPv6 table only (probes unchanged)', async () => {
    await h.update(upsert(webIngressWithPing));
    const blocked = ['other->web/tcp', 'other->web/udp'];
    expect(await h.check(both([...blocked, 'client->web/tcp', 'client->web/udp'], [...blocked, 'client->web/udp']))).toEqual([]);
    expect(chainRules(h.saveNode(6), WEB_INGRESS_CHAIN).join('\n')).toMatch(/-p ipv6-icmp .*-m icmp6 --icmpv6-type 128 /);
    expect(chainRules(h.saveNode(4), WEB_INGRESS_CHAIN).join('\n')).not.toMatch(/icmp/);
  });

  it('every owned ip6tables rule carries a hash comment that the read-back agrees with, and nothing foreign changed', () => {
    const save6 = h.saveNode(6);
    // The read-back sees exactly the hashes it wrote, so a refresh will not rewrite anything.
    const v6 = h.driver.tables.find((t) => t.ipVersion === 6)!;
    const { owned: kernelHashes } = parseSave(save6, new Set());
    for (const name of v6.desiredChainNames) expect(kernelHashes.get(name), name).toEqual(ruleHashes(name, v6.desiredRules(name)!));
    const owned = save6.split('\n').filter((l) => l.startsWith('-A cali-'));
    expect(owned.length).toBeGreaterThan(0);
    for (const l of owned) expect(l).toMatch(/^-A cali-\S+ .*?-m comment --comment "?cali:[A-Za-z0-9_-]{16}"?( |$)/);
    for (const chain of ['cali-FORWARD', 'cali-INPUT', 'cali-OUTPUT', 'cali-from-wl-dispatch', 'cali-to-wl-dispatch']) expect(save6).toContain(`:${chain} `);
    expect(save6).toMatch(/^-A FORWARD -m comment --comment "?cali:\S+"? -j cali-FORWARD$/m);
    expect(foreignBefore.ip6tables).toContain('-A TSR-FOREIGN6 -s fd00:99::/64 -j DROP');
    expect(foreignBefore.ipsets).toContain(`add ${FOREIGN_SET} fd00:97::/64`);
    expect(foreignState()).toEqual(foreignBefore);
  });

  it('state 6, policies deleted: everything allowed again, their chains and sets gone in both families', async () => {
    await h.update([
      { op: 'delete', kind: 'NetworkPolicy', name: 'web-ingress', namespace: NAMESPACE },
      { op: 'delete', kind: 'GlobalNetworkPolicy', name: 'client-egress' },
    ]);
    expect(await h.check(both([], []))).toEqual([]);
    expect(h.saveNode(4)).not.toMatch(/cali-p[io]-/);
    expect(h.saveNode(6)).not.toMatch(/cali-p[io]-/);
    // Set deletions are rate-limited to one per apply per family; wait for the throttled applies
    // (a liveness bound only, generous for a loaded machine).
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && ownedSets().length > 0) await new Promise((r) => setTimeout(r, 100));
    expect(ownedSets()).toEqual([]);
    expect(foreignState()).toEqual(foreignBefore);
  });
});
