/**
 * The ClusterNetworkPolicy converter. The first block translates Calico 3.32's test vectors
 * (`libcalico-go/lib/backend/k8s/conversion/clusternetworkpolicy_test.go`, by `It` title); the
 * rest are Tessera's fail-closed cases and the `nodes` peer.
 */
import { describe, expect, it } from 'vitest';

import type { ClusterNetworkPolicy, ClusterNetworkPolicySpec, NodePeerInfo } from '../api/cluster-network-policy.ts';
import { isError, validateResource, type Rule } from '../api/index.ts';
import { cnpRuleKey, convertClusterNetworkPolicy, CNP_RULE_FAILED_ANNOTATION, type CnpConversionResult } from './cluster-network-policy-converter.ts';

const ORCH = "projectcalico.org/orchestrator == 'k8s'";

function cnp(spec: unknown, name = 'test.policy'): ClusterNetworkPolicy {
  return { apiVersion: 'policy.networking.k8s.io/v1beta1', kind: 'ClusterNetworkPolicy', metadata: { name }, spec: spec as ClusterNetworkPolicySpec };
}

function convert(spec: unknown, nodes: readonly NodePeerInfo[] = []): CnpConversionResult {
  return convertClusterNetworkPolicy(cnp(spec), nodes);
}

/** The policy of a conversion that must succeed, checked against Tessera's own v3 validation. */
function gnp(spec: unknown, nodes: readonly NodePeerInfo[] = []): NonNullable<CnpConversionResult['policy']> {
  const r = convert(spec, nodes);
  if (r.policy === null) throw new Error(r.problem);
  // Calico's own output may mix families in one `nets` (`[0.0.0.0/0, ::/0]`), which its v3
  // validator refuses for a written policy; Felix splits it per family, and so does Tessera.
  expect(validateResource(r.policy).filter((e) => isError(e) && e.message !== 'rule contains both IPv4 and IPv6 CIDRs')).toEqual([]);
  return r.policy;
}

function meta(direction: 'ingress' | 'egress', index: number, name?: string): Rule['metadata'] {
  return { annotations: { ...(name === undefined ? {} : { name }), 'tessera.io/cnp-rule-direction': direction, 'tessera.io/cnp-rule-index': String(index) } };
}

/** A rule with its metadata left out (most vectors compare the match only). */
function bare(r: Rule): Omit<Rule, 'metadata'> {
  const { metadata: _m, ...rest } = r;
  return rest;
}

const NS_SUBJECT = { namespaces: { matchLabels: { label: 'value', label2: 'value2' } } };
const tcp = (n: number): unknown => ({ tcp: { destinationPort: { number: n } } });
const range = (proto: 'tcp' | 'udp', start: number, end: number): unknown => ({ [proto]: { destinationPort: { range: { start, end } } } });

describe("Calico's vectors: Admin tier", () => {
  it('should parse a basic k8s ClusterNetworkPolicy to a GlobalNetworkPolicy', () => {
    const p = gnp({
      priority: 100,
      tier: 'Admin',
      subject: NS_SUBJECT,
      ingress: [{ name: 'The first ingress rule', action: 'Accept', protocols: [tcp(80)], from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }] }],
    });
    expect(p.metadata.name).toBe('test.policy');
    expect(p.spec.tier).toBe('kube-admin');
    expect(p.spec.order).toBe(100);
    expect(p.spec.namespaceSelector).toBe("label == 'value' && label2 == 'value2'");
    expect(p.spec.selector).toBe(ORCH);
    expect(p.spec.ingress).toEqual([
      { metadata: meta('ingress', 0, 'The first ingress rule'), action: 'Allow', protocol: 'TCP', source: { selector: ORCH, namespaceSelector: "k == 'v' && k2 == 'v2'" }, destination: { ports: [80] } },
    ]);
    expect(p.spec.egress).toBeUndefined();
    expect(p.spec.types).toEqual(['Ingress']);
  });

  it('should drop rules with invalid action in a k8s ClusterNetworkPolicy', () => {
    const protocols = [tcp(80), range('tcp', 2000, 3000)];
    const r = convert({
      priority: 300,
      tier: 'Admin',
      subject: NS_SUBJECT,
      ingress: [
        { name: 'A random ingress rule', action: 'Log', from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }] },
        { name: 'A random ingress rule 2', action: 'Accept', protocols, from: [{ namespaces: { matchLabels: { k10: 'v10', k20: 'v20' } } }] },
      ],
      egress: [
        { name: 'A random egress rule', action: 'Deny', protocols, to: [{ namespaces: { matchLabels: { k3: 'v3', k4: 'v4' } } }] },
        { name: 'A random egress rule 2', action: 'Drop', to: [{ namespaces: { matchLabels: { k30: 'v30', k40: 'v40' } } }] },
      ],
    });
    expect(r.errors.map((e) => [e.direction, e.index, e.outcome, e.reason])).toEqual([
      ['ingress', 0, 'dropped', 'k8s rule couldn\'t be converted: spec.ingress[0].action: unsupported cluster network policy action "Log"'],
      ['egress', 1, 'dropped', 'k8s rule couldn\'t be converted: spec.egress[1].action: unsupported cluster network policy action "Drop"'],
    ]);
    expect(r.policy?.spec.ingress).toEqual([
      { metadata: meta('ingress', 1, 'A random ingress rule 2'), action: 'Allow', protocol: 'TCP', source: { selector: ORCH, namespaceSelector: "k10 == 'v10' && k20 == 'v20'" }, destination: { ports: [80, '2000:3000'] } },
    ]);
    expect(r.policy?.spec.egress).toEqual([
      { metadata: meta('egress', 0, 'A random egress rule'), action: 'Deny', protocol: 'TCP', destination: { selector: ORCH, namespaceSelector: "k3 == 'v3' && k4 == 'v4'", ports: [80, '2000:3000'] } },
    ]);
  });

  it('should parse a k8s ClusterNetworkPolicy with no ports', () => {
    const p = gnp({
      priority: 200,
      tier: 'Admin',
      subject: NS_SUBJECT,
      ingress: [{ name: 'A random ingress rule', action: 'Pass', from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }] }],
      egress: [{ name: 'A random egress rule', action: 'Deny', to: [{ namespaces: { matchLabels: { k3: 'v3', k4: 'v4' } } }] }],
    });
    expect(p.spec.ingress).toEqual([{ metadata: meta('ingress', 0, 'A random ingress rule'), action: 'Pass', source: { selector: ORCH, namespaceSelector: "k == 'v' && k2 == 'v2'" }, destination: {} }]);
    expect(p.spec.egress).toEqual([{ metadata: meta('egress', 0, 'A random egress rule'), action: 'Deny', destination: { selector: ORCH, namespaceSelector: "k3 == 'v3' && k4 == 'v4'" } }]);
  });

  it('should drop rules with invalid ports in a k8s ClusterNetworkPolicy', () => {
    const good = [tcp(80), range('tcp', 2000, 3000)];
    const bad = [tcp(80), range('tcp', 1000, 10)];
    const r = convert({
      priority: 300,
      tier: 'Admin',
      subject: NS_SUBJECT,
      ingress: [
        { name: 'A random ingress rule', action: 'Accept', protocols: bad, from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }] },
        { name: 'A random ingress rule 2', action: 'Pass', protocols: good, from: [{ namespaces: { matchLabels: { k10: 'v10', k20: 'v20' } } }] },
      ],
      egress: [
        { name: 'A random egress rule', action: 'Deny', protocols: good, to: [{ namespaces: { matchLabels: { k3: 'v3', k4: 'v4' } } }] },
        { name: 'A random egress rule 2', action: 'Accept', protocols: bad, to: [{ namespaces: { matchLabels: { k30: 'v30', k40: 'v40' } } }] },
      ],
    });
    expect(r.errors.map((e) => [e.direction, e.index, e.outcome, e.field])).toEqual([
      ['ingress', 0, 'dropped', 'spec.ingress[0].protocols[1].tcp.destinationPort.range'],
      ['egress', 1, 'dropped', 'spec.egress[1].protocols[1].tcp.destinationPort.range'],
    ]);
    expect(r.errors[0]?.reason).toContain('minimum port number (1000) is greater than maximum port number (10) in port range');
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Pass', protocol: 'TCP', source: { selector: ORCH, namespaceSelector: "k10 == 'v10' && k20 == 'v20'" }, destination: { ports: [80, '2000:3000'] } }]);
    expect(r.policy?.spec.egress?.map(bare)).toEqual([{ action: 'Deny', protocol: 'TCP', destination: { selector: ORCH, namespaceSelector: "k3 == 'v3' && k4 == 'v4'", ports: [80, '2000:3000'] } }]);
  });

  it('should parse an ClusterNetworkPolicy with no rules', () => {
    const p = gnp({ priority: 500, tier: 'Admin', subject: NS_SUBJECT });
    expect(p.spec.namespaceSelector).toBe("label == 'value' && label2 == 'value2'");
    expect(p.spec.ingress).toBeUndefined();
    expect(p.spec.egress).toBeUndefined();
    expect(p.spec.types).toBeUndefined();
  });

  const multiPeers = {
    ingress: [{ name: 'A random ingress rule', action: 'Pass', from: [{ namespaces: { matchLabels: { k: 'v' } } }, { pods: { podSelector: { matchLabels: { k2: 'v2' } } } }] }],
    egress: [
      {
        name: 'A random egress rule',
        action: 'Deny',
        to: [{ namespaces: { matchLabels: { k3: 'v3' } } }, { pods: { namespaceSelector: { matchLabels: { k4: 'v4' } }, podSelector: { matchLabels: { k5: 'v5' } } } }],
      },
    ],
  };

  it('should parse an ClusterNetworkPolicy with Namespaces subject and multiple peers', () => {
    const p = gnp({ priority: 600, tier: 'Admin', subject: NS_SUBJECT, ...multiPeers });
    expect(p.spec.namespaceSelector).toBe("label == 'value' && label2 == 'value2'");
    expect(p.spec.selector).toBe(ORCH);
    expect(p.spec.ingress?.map((r) => r.source)).toEqual([{ selector: ORCH, namespaceSelector: "k == 'v'" }, { namespaceSelector: 'all()', selector: `${ORCH} && k2 == 'v2'` }]);
    expect(p.spec.egress?.map((r) => r.destination)).toEqual([{ selector: ORCH, namespaceSelector: "k3 == 'v3'" }, { namespaceSelector: "k4 == 'v4'", selector: `${ORCH} && k5 == 'v5'` }]);
    expect(p.spec.types).toEqual(['Ingress', 'Egress']);
  });

  it('should parse an ClusterNetworkPolicy with Pods subject and multiple peers', () => {
    const p = gnp({ priority: 600, tier: 'Admin', subject: { pods: { podSelector: { matchLabels: { label2: 'value2' } } } }, ...multiPeers });
    expect(p.spec.namespaceSelector).toBe('all()');
    expect(p.spec.selector).toBe(`${ORCH} && label2 == 'value2'`);
    expect(p.spec.ingress).toHaveLength(2);
    expect(p.spec.egress).toHaveLength(2);
    expect(p.spec.types).toEqual(['Ingress', 'Egress']);
  });

  it('should parse a k8s ClusterNetworkPolicy with a DoesNotExist expression', () => {
    const p = gnp({
      priority: 600,
      tier: 'Admin',
      subject: { pods: { podSelector: { matchLabels: { label: 'value', label2: 'value2' } } } },
      ingress: [{ name: 'A random ingress rule', action: 'Accept', protocols: [tcp(80)], from: [{ pods: { podSelector: { matchExpressions: [{ key: 'toast', operator: 'DoesNotExist' }] } } }] }],
    });
    expect(p.spec.selector).toBe(`${ORCH} && label == 'value' && label2 == 'value2'`);
    expect(p.spec.ingress).toEqual([
      { metadata: meta('ingress', 0, 'A random ingress rule'), action: 'Allow', protocol: 'TCP', source: { namespaceSelector: 'all()', selector: `${ORCH} && ! has(toast)` }, destination: { ports: [80] } },
    ]);
    expect(p.spec.types).toEqual(['Ingress']);
  });

  it('should parse an ClusterNetworkPolicy with multiple peers and ports (named ports first, then TCP, then UDP; peers within)', () => {
    const protocols = [tcp(80), range('udp', 20, 30), { destinationNamedPort: 'http-port' }, { destinationNamedPort: '8080' }];
    const p = gnp({ priority: 600, tier: 'Admin', subject: NS_SUBJECT, ...multiPeers, ingress: [{ ...multiPeers.ingress[0], protocols }], egress: [{ ...multiPeers.egress[0], protocols }] });
    const peerA = { selector: ORCH, namespaceSelector: "k == 'v'" };
    const peerB = { namespaceSelector: 'all()', selector: `${ORCH} && k2 == 'v2'` };
    // Calico keeps "8080" as a port name; it is no IANA service name, so no container port has
    // it and Tessera leaves it out (the same match: nothing).
    expect(p.spec.ingress?.map((r) => [r.protocol, r.source, r.destination?.ports])).toEqual([
      [undefined, peerA, ['http-port']],
      [undefined, peerB, ['http-port']],
      ['TCP', peerA, [80]],
      ['TCP', peerB, [80]],
      ['UDP', peerA, ['20:30']],
      ['UDP', peerB, ['20:30']],
    ]);
    const egA = { selector: ORCH, namespaceSelector: "k3 == 'v3'" };
    const egB = { namespaceSelector: "k4 == 'v4'", selector: `${ORCH} && k5 == 'v5'` };
    expect(p.spec.egress?.map((r) => [r.protocol, r.destination])).toEqual([
      [undefined, { ports: ['http-port'], ...egA }],
      [undefined, { ports: ['http-port'], ...egB }],
      ['TCP', { ports: [80], ...egA }],
      ['TCP', { ports: [80], ...egB }],
      ['UDP', { ports: ['20:30'], ...egA }],
      ['UDP', { ports: ['20:30'], ...egB }],
    ]);
  });

  it.each([
    ['empty namespaces in Subject', { namespaces: {} }],
    ['empty podSelector in Subject', { pods: { podSelector: {} } }],
  ])('should parse an ClusterNetworkPolicy with %s', (_t, subject) => {
    const p = gnp({ priority: 500, tier: 'Admin', subject });
    expect(p.spec.selector).toBe(ORCH);
    expect(p.spec.namespaceSelector).toBe('all()');
  });

  const podSubject = { pods: { podSelector: { matchLabels: { label: 'value' } } } };

  it('should parse an ClusterNetworkPolicy with a rule with namespaceSelector', () => {
    const p = gnp({ tier: 'Admin', priority: 600, subject: podSubject, ingress: [{ name: 'r', action: 'Accept', from: [{ namespaces: { matchLabels: { namespaceRole: 'dev', namespaceFoo: 'bar' } } }] }] });
    expect(p.spec.selector).toBe(`${ORCH} && label == 'value'`);
    expect(p.spec.namespaceSelector).toBe('all()');
    expect(p.spec.ingress?.[0]?.source).toEqual({ selector: ORCH, namespaceSelector: "namespaceFoo == 'bar' && namespaceRole == 'dev'" });
  });

  it('should parse an ClusterNetworkPolicy with a rule with podSelector', () => {
    const p = gnp({ tier: 'Admin', priority: 600, subject: podSubject, egress: [{ name: 'r', action: 'Accept', to: [{ pods: { podSelector: { matchLabels: { namespaceRole: 'dev', namespaceFoo: 'bar' } } } }] }] });
    expect(p.spec.egress?.[0]?.destination).toEqual({ namespaceSelector: 'all()', selector: `${ORCH} && namespaceFoo == 'bar' && namespaceRole == 'dev'` });
    expect(p.spec.types).toEqual(['Egress']);
  });

  it('should fail parsing an ClusterNetworkPolicy with a rule with neither namespaces or pods set', () => {
    const r = convert({ tier: 'Admin', priority: 600, subject: podSubject, ingress: [{ name: 'in', action: 'Accept', from: [{}] }], egress: [{ name: 'out', action: 'Pass', to: [{}] }] });
    expect(r.errors.map((e) => [e.direction, e.outcome, e.reason])).toEqual([
      ['ingress', 'dropped', "k8s rule couldn't be converted: spec.ingress[0].from[0]: none of supported fields in 'From' is set"],
      ['egress', 'deny', "k8s rule couldn't be converted: spec.egress[0].to[0]: none of supported fields in 'To' is set"],
    ]);
    expect(r.policy?.spec.ingress).toBeUndefined();
    expect(r.policy?.spec.egress?.map(bare)).toEqual([{ action: 'Deny' }]);
    expect(r.policy?.spec.egress?.[0]?.metadata?.annotations?.[CNP_RULE_FAILED_ANNOTATION]).toContain("'To'");
    expect(r.policy?.spec.types).toEqual(['Egress']);
  });

  it('should parse an ClusterNetworkPolicy with a rule with empty namespaceSelector / empty podSelector', () => {
    const p = gnp({
      tier: 'Admin',
      priority: 600,
      subject: podSubject,
      ingress: [{ action: 'Accept', from: [{ namespaces: { matchLabels: {} } }] }],
      egress: [{ action: 'Pass', to: [{ pods: { namespaceSelector: { matchLabels: {} }, podSelector: { matchLabels: {} } } }] }],
    });
    expect(p.spec.ingress?.[0]?.source).toEqual({ selector: ORCH, namespaceSelector: 'all()' });
    expect(p.spec.egress?.[0]?.destination).toEqual({ namespaceSelector: 'all()', selector: ORCH });
  });

  it('should parse an ClusterNetworkPolicy with a rule with both a namespace and a pod selector', () => {
    const p = gnp({
      tier: 'Admin',
      priority: 1000,
      subject: podSubject,
      ingress: [{ action: 'Deny', from: [{ pods: { namespaceSelector: { matchLabels: { namespaceRole: 'dev', namespaceFoo: 'bar' } }, podSelector: { matchLabels: { podA: 'B', podC: 'D' } } } }] }],
    });
    expect(p.spec.ingress?.[0]?.source).toEqual({ selector: `${ORCH} && podA == 'B' && podC == 'D'`, namespaceSelector: "namespaceFoo == 'bar' && namespaceRole == 'dev'" });
  });

  it('should parse an ClusterNetworkPolicy with a Subject with MatchExpressions', () => {
    const p = gnp({ tier: 'Admin', priority: 500, subject: { namespaces: { matchExpressions: [{ key: 'k', operator: 'In', values: ['v1', 'v2'] }] } } });
    expect(p.spec.namespaceSelector).toBe("k in { 'v1', 'v2' }");
    expect(p.spec.selector).toBe(ORCH);
  });

  it('should replace an unsupported ClusterNetworkPolicy rule with Deny action with a deny-all one', () => {
    const bad = [range('udp', 40, 20)];
    const r = convert({
      tier: 'Admin',
      priority: 600,
      subject: NS_SUBJECT,
      ingress: [
        { name: 'A random ingress rule', action: 'Pass', protocols: bad, from: [{ namespaces: { matchLabels: { k: 'v' } } }] },
        { name: 'A random ingress rule 2', action: 'Accept', protocols: bad, from: [{ namespaces: { matchLabels: { k: 'v' } } }] },
      ],
      egress: [
        { name: 'A random egress rule', action: 'Deny', protocols: bad, to: [{ namespaces: { matchLabels: { k3: 'v3' } } }] },
        { name: 'A random egress rule 2', action: 'Deny', protocols: [tcp(80)], to: [{ namespaces: { matchLabels: { k4: 'v4' } } }] },
      ],
    });
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
    expect(r.policy?.spec.egress?.map(bare)).toEqual([{ action: 'Deny' }, { action: 'Deny', protocol: 'TCP', destination: { selector: ORCH, ports: [80], namespaceSelector: "k4 == 'v4'" } }]);
    expect(r.policy?.spec.ingress?.[0]?.metadata?.annotations).toMatchObject({ name: 'A random ingress rule', 'tessera.io/cnp-rule-index': '0' });
    expect(r.policy?.spec.types).toEqual(['Ingress', 'Egress']);
  });

  it('should parse a k8s ClusterNetworkPolicy with a Networks peer (also 0.0.0.0/0 and ::/0, with and without ports)', () => {
    for (const [nets, protocols] of [
      [['10.10.10.0/24', '1.1.1.1/32'], undefined],
      [['0.0.0.0/0', '::/0'], undefined],
      [['10.10.10.0/24', '1.1.1.1/32'], [tcp(80)]],
    ] as const) {
      const p = gnp({
        tier: 'Admin',
        priority: 200,
        subject: NS_SUBJECT,
        egress: [{ name: 'A random egress rule', action: 'Deny', ...(protocols ? { protocols } : {}), to: [{ namespaces: { matchLabels: { k3: 'v3' } } }, { networks: nets }] }],
      });
      const ports = protocols ? { ports: [80] } : {};
      const proto = protocols ? { protocol: 'TCP' } : {};
      expect(p.spec.egress).toEqual([
        { metadata: meta('egress', 0, 'A random egress rule'), action: 'Deny', ...proto, destination: { selector: ORCH, ...ports, namespaceSelector: "k3 == 'v3'" } },
        { metadata: meta('egress', 0, 'A random egress rule'), action: 'Deny', ...proto, destination: { ...ports, nets: [...nets] } },
      ]);
    }
  });

  it('should parse a k8s ClusterNetworkPolicy with an invalid networks peer', () => {
    const r = convert({
      tier: 'Admin',
      priority: 200,
      subject: NS_SUBJECT,
      ingress: [{ name: 'in', action: 'Pass', protocols: [tcp(80)], from: [{ namespaces: { matchLabels: { k: 'v' } } }] }],
      egress: [{ name: 'out', action: 'Deny', protocols: [tcp(80)], to: [{ namespaces: { matchLabels: { k3: 'v3' } } }, { networks: ['10.10.10.0/24', '1.1.1.1/66'] }] }],
    });
    expect(r.errors.map((e) => e.field)).toEqual(['spec.egress[0].to[1].networks[1]']);
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Pass', protocol: 'TCP', source: { selector: ORCH, namespaceSelector: "k == 'v'" }, destination: { ports: [80] } }]);
    expect(r.policy?.spec.egress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });
});

describe("Calico's vectors: Baseline tier and malformed policies", () => {
  it('should parse a basic k8s ClusterNetworkPolicy to a GlobalNetworkPolicy', () => {
    const p = gnp({
      tier: 'Baseline',
      subject: { pods: { namespaceSelector: { matchLabels: { label: 'value', label2: 'value2' } }, podSelector: { matchLabels: { foo: 'bar' } } } },
      ingress: [{ name: 'The first ingress rule', action: 'Accept', protocols: [tcp(80), { destinationNamedPort: 'http-port' }], from: [{ namespaces: { matchLabels: { k: 'v', k2: 'v2' } } }] }],
      egress: [
        { name: 'The first egress rule', action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }] },
        { action: 'Accept', to: [{ networks: ['0.0.0.0/0'] }] },
      ],
    });
    expect(p.spec.tier).toBe('kube-baseline');
    expect(p.spec.order).toBe(0);
    expect(p.spec.namespaceSelector).toBe("label == 'value' && label2 == 'value2'");
    expect(p.spec.selector).toBe(`${ORCH} && foo == 'bar'`);
    const src = { selector: ORCH, namespaceSelector: "k == 'v' && k2 == 'v2'" };
    expect(p.spec.ingress).toEqual([
      { metadata: meta('ingress', 0, 'The first ingress rule'), action: 'Allow', source: src, destination: { ports: ['http-port'] } },
      { metadata: meta('ingress', 0, 'The first ingress rule'), action: 'Allow', protocol: 'TCP', source: src, destination: { ports: [80] } },
    ]);
    expect(p.spec.egress).toEqual([
      { metadata: meta('egress', 0, 'The first egress rule'), action: 'Deny', destination: { nets: ['10.0.0.0/8'] } },
      { metadata: meta('egress', 1), action: 'Allow', destination: { nets: ['0.0.0.0/0'] } },
    ]);
  });

  it('should parse a k8s ClusterNetworkPolicy with an invalid networks peer (and an empty ingress peer)', () => {
    const protocols = [tcp(80), { destinationNamedPort: 'foobar' }];
    const r = convert({
      tier: 'Baseline',
      subject: NS_SUBJECT,
      ingress: [{ action: 'Deny', protocols, from: [{}] }],
      egress: [{ name: 'out', action: 'Deny', protocols, to: [{ namespaces: { matchLabels: { k3: 'v3' } } }, { networks: ['10.10.10.0/24', '1.1.1.1/66'] }] }],
    });
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
    expect(r.policy?.spec.egress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });

  it.each([
    ['an invalid tier', { priority: 100, tier: 'InvalidTier', subject: { namespaces: {} } }, 'spec.tier'],
    ['no subject selector', { priority: 100, tier: 'Admin', subject: {} }, 'spec.subject'],
  ])('gives no policy (Calico: a tombstone) for %s', (_t, spec, field) => {
    const r = convert(spec);
    expect(r.policy).toBeNull();
    expect(r.problem).toContain(field);
  });
});

describe('fail closed: what Calico widens or does not know', () => {
  const base = { tier: 'Admin', priority: 10, subject: { namespaces: {} } };
  const peer = { namespaces: { matchLabels: { a: 'b' } } };

  it.each([
    ['domainNames (experimental; as Calico 3.32)', { domainNames: ['*.example.com'] }, 'spec.egress[0].to[1].domainNames'],
    ['an unknown peer kind (a newer CRD)', { services: { name: 'x' } }, 'spec.egress[0].to[1].services'],
    ['a peer with two fields', { namespaces: {}, networks: ['10.0.0.0/8'] }, 'spec.egress[0].to[1]'],
    ['a CIDR without a prefix length', { networks: ['10.0.0.1'] }, 'spec.egress[0].to[1].networks[0]'],
    ['an unknown selector operator (Calico would skip it and widen)', { namespaces: { matchExpressions: [{ key: 'a', operator: 'Like', values: ['b'] }] } }, 'spec.egress[0].to[1].namespaces.matchExpressions[0].operator'],
  ])('%s: a Deny or Pass rule becomes a bare Deny, an Accept rule is dropped', (_t, bad, field) => {
    for (const action of ['Deny', 'Pass', 'Accept'] as const) {
      const r = convert({ ...base, egress: [{ name: 'x', action, to: [peer, bad] }, { action: 'Accept', to: [peer] }] });
      expect(r.errors.map((e) => e.field)).toEqual([field]);
      const rules = r.policy?.spec.egress ?? [];
      if (action === 'Accept') expect(rules.map(bare)).toEqual([{ action: 'Allow', destination: { selector: ORCH, namespaceSelector: "a == 'b'" } }]);
      else expect(rules.map(bare)).toEqual([{ action: 'Deny' }, { action: 'Allow', destination: { selector: ORCH, namespaceSelector: "a == 'b'" } }]);
    }
  });

  it.each([
    ['an unknown protocol (Calico: all traffic)', [{ icmp: {} }], 'spec.ingress[0].protocols[0].icmp'],
    ['an empty protocol entry (Calico: all traffic)', [{}], 'spec.ingress[0].protocols[0]'],
    ['an empty named port (Calico: all traffic)', [{ destinationNamedPort: '' }], 'spec.ingress[0].protocols[0]'],
    ['tcp without destinationPort (Calico: every port)', [{ tcp: {} }], 'spec.ingress[0].protocols[0].tcp.destinationPort'],
    ['port number 0 (Calico: every port)', [{ tcp: { destinationPort: { number: 0 } } }], 'spec.ingress[0].protocols[0].tcp.destinationPort'],
    ['port number 70000', [tcp(70000)], 'spec.ingress[0].protocols[0].tcp.destinationPort.number'],
    ['an unknown port field', [{ tcp: { destinationPort: { number: 80, sourcePort: 1 } } }], 'spec.ingress[0].protocols[0].tcp.destinationPort.sourcePort'],
    ['an unknown rule field', undefined, 'spec.ingress[0].except'],
  ])('ingress %s', (_t, protocols, field) => {
    const rule = { action: 'Deny', from: [peer], ...(protocols === undefined ? { except: [] } : { protocols }) };
    const r = convert({ ...base, ingress: [rule] });
    expect(r.errors.map((e) => [e.field, e.outcome])).toEqual([[field, 'deny']]);
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });

  it('an ingress nodes or networks peer (egress-only kinds) fails closed', () => {
    const r = convert({ ...base, ingress: [{ action: 'Pass', from: [{ nodes: {} }] }, { action: 'Accept', from: [{ networks: ['10.0.0.0/8'] }] }] });
    expect(r.errors.map((e) => [e.field, e.outcome])).toEqual([
      ['spec.ingress[0].from[0].nodes', 'deny'],
      ['spec.ingress[1].from[0].networks', 'dropped'],
    ]);
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });

  it('a rule the caller names (validation findings) fails closed with that reason', () => {
    const r = convertClusterNetworkPolicy(cnp({ ...base, ingress: [{ action: 'Pass', from: [peer] }, { action: 'Accept', from: [peer] }] }), [], {
      failRules: new Map([
        [cnpRuleKey('ingress', 0), 'name: too long'],
        [cnpRuleKey('ingress', 1), 'name: too long'],
      ]),
    });
    expect(r.errors.map((e) => [e.index, e.outcome, e.reason])).toEqual([
      [0, 'deny', "k8s rule couldn't be converted: name: too long"],
      [1, 'dropped', "k8s rule couldn't be converted: name: too long"],
    ]);
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });

  it('a named port that is no IANA service name matches nothing: no rule, never every port', () => {
    const p = gnp({ ...base, ingress: [{ action: 'Deny', from: [peer], protocols: [{ destinationNamedPort: 'HTTP' }] }] });
    expect(p.spec.ingress).toBeUndefined();
  });

  it('spec.ingress that is not a list denies the direction', () => {
    const r = convert({ ...base, ingress: { action: 'Accept' } });
    expect(r.policy?.spec.ingress?.map(bare)).toEqual([{ action: 'Deny' }]);
  });
});

describe('the experimental egress nodes peer (beyond Calico)', () => {
  const base = { tier: 'Admin', priority: 5, subject: { namespaces: {} } };
  const nodes: NodePeerInfo[] = [
    { name: 'node-b', labels: { role: 'worker' }, addresses: ['10.0.0.12', 'fd00::12', 'node-b.example'] },
    { name: 'node-a', labels: { role: 'worker' }, addresses: ['10.0.0.11', '10.0.0.11'] },
    { name: 'cp', labels: { role: 'control-plane' }, addresses: ['10.0.0.1'] },
  ];

  it('is the /32 and /128 of every address of every Node the selector picks, sorted by node name', () => {
    const r = convert({ ...base, egress: [{ name: 'workers', action: 'Accept', protocols: [tcp(10250)], to: [{ nodes: { matchLabels: { role: 'worker' } } }] }] }, nodes);
    expect(r.readsNodes).toBe(true);
    expect(r.policy?.spec.egress).toEqual([
      { metadata: meta('egress', 0, 'workers'), action: 'Allow', protocol: 'TCP', destination: { ports: [10250], nets: ['10.0.0.11/32', '10.0.0.12/32', 'fd00::12/128'] } },
    ]);
  });

  it('an empty selector picks every Node', () => {
    const p = gnp({ ...base, egress: [{ action: 'Deny', to: [{ nodes: {} }] }] }, nodes);
    expect(p.spec.egress?.[0]?.destination?.nets).toEqual(['10.0.0.1/32', '10.0.0.11/32', '10.0.0.12/32', 'fd00::12/128']);
  });

  it.each(['Accept', 'Deny', 'Pass'])('picking no Node, a %s rule emits nothing for that peer (never a rule matching every destination)', (action) => {
    const r = convert({ ...base, egress: [{ action, to: [{ nodes: { matchLabels: { role: 'gpu' } } }, { networks: ['192.0.2.0/24'] }] }] }, nodes);
    expect(r.errors).toEqual([]);
    expect(r.policy?.spec.egress?.map((x) => x.destination)).toEqual([{ nets: ['192.0.2.0/24'] }]);
    const alone = convert({ ...base, egress: [{ action, to: [{ nodes: { matchLabels: { role: 'gpu' } } }] }] }, nodes);
    expect(alone.policy?.spec.egress).toBeUndefined();
    expect(alone.policy?.spec.types).toBeUndefined();
  });

  it('readsNodes is false without a nodes peer', () => {
    expect(convert({ ...base, egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }] }] }).readsNodes).toBe(false);
  });
});
