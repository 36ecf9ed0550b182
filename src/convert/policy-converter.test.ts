import { describe, expect, it } from 'vitest';

import { parsePort } from '../api/port.ts';
import { convertNetworkPolicy, simplifyPorts } from './policy-converter.ts';
import { isError, validateResource } from '../api/index.ts';
import type { K8sNetworkPolicy, K8sNetworkPolicySpec } from '../api/index.ts';

const ORCH = "projectcalico.org/orchestrator == 'k8s'";

function np(spec: K8sNetworkPolicySpec, name = 'p', namespace = 'ns'): K8sNetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

function ingressRules(spec: K8sNetworkPolicySpec): unknown {
  return convertNetworkPolicy(np(spec)).policy.spec.ingress;
}

function ports(...p: Array<number | string>): ReturnType<typeof simplifyPorts> {
  return p.map((x) => {
    const r = parsePort(x);
    if (!r.ok) throw new Error(r.message);
    return r.value;
  });
}

describe('convertNetworkPolicy: identity and policy-level fields (§3.1, §3.2)', () => {
  it('names the policy knp.default.<name> in the same namespace, tier default, order 1000', () => {
    const { policy, errors } = convertNetworkPolicy(np({ podSelector: {}, policyTypes: ['Ingress'] }, 'web', 'prod'));
    expect(errors).toEqual([]);
    expect(policy).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'knp.default.web', namespace: 'prod' },
      spec: { tier: 'default', order: 1000, selector: ORCH, types: ['Ingress'] },
    });
  });

  it.each([
    [['Egress', 'Ingress'], ['Ingress', 'Egress']],
    [['Egress'], ['Egress']],
    [['Ingress'], ['Ingress']],
    [[], ['Ingress']],
    [undefined, ['Ingress']],
  ])('policyTypes %j → types %j (always Ingress before Egress; empty → [Ingress])', (given, expected) => {
    const spec: K8sNetworkPolicySpec = given === undefined ? {} : { policyTypes: given };
    expect(convertNetworkPolicy(np(spec)).policy.spec.types).toEqual(expected);
  });

  it('empty policyTypes with egress rules: [Ingress], egress still converted, and a warning', () => {
    const r = convertNetworkPolicy(np({ egress: [{}] }));
    expect(r.policy.spec.types).toEqual(['Ingress']);
    expect(r.policy.spec.egress).toEqual([{ action: 'Allow', source: {}, destination: {} }]);
    expect(r.warnings.join()).toMatch(/not enforced/);
  });

  it('policyTypes [Egress] with ingress rules: ingress converted, not governed', () => {
    const p = convertNetworkPolicy(np({ policyTypes: ['Egress'], ingress: [{}] })).policy;
    expect(p.spec.types).toEqual(['Egress']);
    expect(p.spec.ingress).toHaveLength(1);
  });

  it('absent or empty ingress: no rules (deny-all for the selected pods)', () => {
    expect(ingressRules({ policyTypes: ['Ingress'] })).toBeUndefined();
    expect(ingressRules({ policyTypes: ['Ingress'], ingress: [] })).toBeUndefined();
  });
});

describe('selector translation (§3.3)', () => {
  it('pod selector: orchestrator term, sorted matchLabels, then expressions in order', () => {
    const p = convertNetworkPolicy(
      np({
        podSelector: {
          matchLabels: { b: '2', a: '1' },
          matchExpressions: [
            { key: 'z', operator: 'In', values: ['v2', 'v1'] },
            { key: 'y', operator: 'NotIn', values: ['x'] },
            { key: 'x', operator: 'Exists' },
            { key: 'w', operator: 'DoesNotExist' },
            { key: 'q', operator: 'Bogus' },
          ],
        },
      }),
    ).policy;
    expect(p.spec.selector).toBe(
      `${ORCH} && a == '1' && b == '2' && z in { 'v2', 'v1' } && y not in { 'x' } && has(x) && ! has(w)`,
    );
  });

  it('nil and {} pod selectors give the orchestrator term alone', () => {
    expect(convertNetworkPolicy(np({})).policy.spec.selector).toBe(ORCH);
    expect(convertNetworkPolicy(np({ podSelector: {} })).policy.spec.selector).toBe(ORCH);
  });

  it('peer namespace selectors: nil → own namespace (omitted), {} → all()', () => {
    expect(ingressRules({ ingress: [{ from: [{ namespaceSelector: {} }] }] })).toEqual([
      { action: 'Allow', source: { selector: ORCH, namespaceSelector: 'all()' }, destination: {} },
    ]);
    expect(ingressRules({ ingress: [{ from: [{ podSelector: { matchLabels: { role: 'fe' } } }] }] })).toEqual([
      { action: 'Allow', source: { selector: `${ORCH} && role == 'fe'` }, destination: {} },
    ]);
  });

  it('a peer with both selectors ANDs them in one rule', () => {
    expect(
      ingressRules({
        ingress: [{ from: [{ podSelector: { matchLabels: { a: 'b' } }, namespaceSelector: { matchLabels: { team: 'ops' } } }] }],
      }),
    ).toEqual([{ action: 'Allow', source: { selector: `${ORCH} && a == 'b'`, namespaceSelector: "team == 'ops'" }, destination: {} }]);
  });
});

describe('ports, protocols and rule emission (§3.4)', () => {
  it('ingress: [{}] is one rule with no peer, no protocol and no ports (allow all)', () => {
    expect(ingressRules({ ingress: [{}] })).toEqual([{ action: 'Allow', source: {}, destination: {} }]);
  });

  it('protocol defaults to TCP; numbers stay numbers, named ports stay strings', () => {
    expect(ingressRules({ ingress: [{ ports: [{ port: 80 }, { port: 'http' }] }] })).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [80, 'http'] } },
    ]);
  });

  it('endPort makes a port:endPort range', () => {
    expect(ingressRules({ ingress: [{ ports: [{ protocol: 'UDP', port: 3000, endPort: 3100 }] }] })).toEqual([
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: ['3000:3100'] } },
    ]);
  });

  it('outer loop over protocols in sorted order (SCTP < TCP < UDP), inner loop over peers in order', () => {
    const A = { podSelector: { matchLabels: { p: 'a' } } };
    const B = { podSelector: { matchLabels: { p: 'b' } } };
    const rules = ingressRules({
      ingress: [{ from: [A, B], ports: [{ protocol: 'UDP', port: 53 }, { port: 80 }, { protocol: 'SCTP', port: 9 }] }],
    }) as Array<{ protocol: string; source: { selector: string } }>;
    expect(rules.map((r) => `${r.protocol},${r.source.selector.slice(-2, -1)}`)).toEqual([
      'SCTP,a',
      'SCTP,b',
      'TCP,a',
      'TCP,b',
      'UDP,a',
      'UDP,b',
    ]);
  });

  it('a port entry without a number allows every port of its protocol, whatever the order', () => {
    for (const order of [
      [{ port: 80 }, { protocol: 'TCP' }],
      [{ protocol: 'TCP' }, { port: 80 }],
    ]) {
      expect(ingressRules({ ingress: [{ ports: order }] })).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: {} }]);
    }
    expect(ingressRules({ ingress: [{ ports: [{}] }] })).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: {} }]);
    expect(ingressRules({ ingress: [{ ports: [{ protocol: 'UDP' }, { port: 80 }] }] })).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [80] } },
      { action: 'Allow', protocol: 'UDP', source: {}, destination: {} },
    ]);
  });

  it('egress rules put peers and ports on the destination and leave source empty', () => {
    const p = convertNetworkPolicy(
      np({ policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ protocol: 'UDP', port: 53 }] }] }),
    ).policy;
    expect(p.spec.egress).toEqual([
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [53], nets: ['10.0.0.0/8'] } },
    ]);
  });

  it('a rule whose port does not parse is dropped and reported; the other rules are kept', () => {
    const r = convertNetworkPolicy(
      np({
        ingress: [{ ports: [{ port: 'http', endPort: 90 }] }, { ports: [{ port: 443 }] }],
        egress: [{ ports: [{ port: 90, endPort: 80 }] }],
        policyTypes: ['Ingress', 'Egress'],
      }),
    );
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [443] } }]);
    expect(r.policy.spec.egress).toBeUndefined();
    expect(r.errors).toEqual([
      {
        direction: 'ingress',
        index: 0,
        field: 'spec.ingress[0].ports[0]',
        reason: expect.stringMatching(/^k8s rule couldn't be converted: failed to parse k8s port: invalid port http:90/),
      },
      { direction: 'egress', index: 0, field: 'spec.egress[0].ports[0]', reason: expect.stringMatching(/invalid port 90:80/) },
    ]);
  });

  it('the upstream example reason for a negative port', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ ports: [{ port: -50, endPort: -1 }] }] }));
    expect(r.errors[0]?.reason).toMatch(/^k8s rule couldn't be converted: failed to parse k8s port: invalid port -50:-1: /);
  });

  it('ports are simplified per protocol group', () => {
    expect(
      ingressRules({ ingress: [{ ports: [{ port: 82 }, { port: 80 }, { port: 81 }, { port: 'web' }, { protocol: 'UDP', port: 5 }] }] }),
    ).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['web', '80:82'] } },
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [5] } },
    ]);
  });
});

describe('protocol case and port 0, as Calico\'s converter reads them (issue 27 item 13)', () => {
  it('protocol: tcp is TCP (ProtocolFromString folds case) and groups with TCP entries', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ ports: [{ protocol: 'tcp' as 'TCP', port: 80 }, { protocol: 'TCP', port: 81 }, { protocol: 'udp' as 'UDP', port: 53 }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['80:81'] } },
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [53] } },
    ]);
  });

  it('a lowercase protocol with no port allows every port of that protocol, overriding its numbers', () => {
    expect(ingressRules({ ingress: [{ ports: [{ port: 80 }, { protocol: 'sctp' as 'SCTP' }, { protocol: 'tcp' as 'TCP' }] }] })).toEqual([
      { action: 'Allow', protocol: 'SCTP', source: {}, destination: {} },
      { action: 'Allow', protocol: 'TCP', source: {}, destination: {} },
    ]);
  });

  it("folds as Go's strings.EqualFold: 'ſ' is s; a name that is no protocol is kept as written", () => {
    expect(ingressRules({ ingress: [{ ports: [{ protocol: 'ſctp' as 'SCTP', port: 9 }] }] })).toEqual([{ action: 'Allow', protocol: 'SCTP', source: {}, destination: { ports: [9] } }]);
    expect(ingressRules({ ingress: [{ ports: [{ protocol: 'Tcpx' as 'TCP', port: 9 }] }] })).toEqual([{ action: 'Allow', protocol: 'Tcpx', source: {}, destination: { ports: [9] } }]);
  });

  it('the converted policy with protocol: tcp is a valid v3 policy (no longer dropped whole by the agent)', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ ports: [{ protocol: 'tcp' as 'TCP', port: 80 }] }] }));
    expect(validateResource(r.policy).filter(isError)).toEqual([]);
  });

  it('port: 0 alone matches only destination port 0: no rule, never every port; the rest of the rule is kept', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ ports: [{ port: 0 }] }, { ports: [{ port: 0 }, { port: 80 }, { protocol: 'UDP', port: 0 }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [80] } }]);
    expect(r.warnings).toEqual([
      expect.stringMatching(/^spec\.ingress\[0\]\.ports\[0\]: port 0 includes port 0, .*matches nothing and is left out$/),
      expect.stringMatching(/^spec\.ingress\[1\]\.ports\[0\]: port 0 /),
      expect.stringMatching(/^spec\.ingress\[1\]\.ports\[2\]: port 0 /),
    ]);
  });

  it('port: "0" is port 0 too, and an entry without a port still allows every port of its protocol', () => {
    expect(ingressRules({ ingress: [{ ports: [{ port: '0' }, { protocol: 'TCP' }] }] })).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: {} }]);
  });

  it('port: 0 with endPort: 90 is the range 1:90 (Calico 0:90, less port 0)', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ ports: [{ port: 0, endPort: 90 }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['1:90'] } }]);
    expect(r.warnings).toEqual([expect.stringMatching(/port 0:90 includes port 0, .*converted as 1:90$/)]);
  });
});

describe('simplifyPorts (Calico SimplifyPorts)', () => {
  it('keeps lists with at most one numeric port unchanged, in order', () => {
    expect(simplifyPorts(ports(80, 'foo'))).toEqual(ports(80, 'foo'));
    expect(simplifyPorts(ports('foo', 'bar', 80))).toEqual(ports('foo', 'bar', 80));
    expect(simplifyPorts(ports(80))).toEqual(ports(80));
    expect(simplifyPorts([])).toEqual([]);
  });

  it('upstream case: 81:90, 4, 2, foo, 80:81, 3, 1, 9090, http → foo, http, 1:4, 80:90, 9090', () => {
    expect(simplifyPorts(ports('81:90', 4, 2, 'foo', '80:81', 3, 1, 9090, 'http'))).toEqual(
      ports('foo', 'http', '1:4', '80:90', 9090),
    );
  });

  it('counts numeric ports by expanding ranges, as Calico does', () => {
    expect(simplifyPorts(ports('80:82', 'http'))).toEqual(ports('http', '80:82'));
    expect(simplifyPorts(ports('80:80', 'http'))).toEqual(ports('80:80', 'http'));
    expect(simplifyPorts(ports(80, 80, 'http'))).toEqual(ports('http', 80));
    expect(simplifyPorts(ports('80:81'))).toEqual(ports('80:81'));
  });

  it('de-duplicates and merges contained ranges', () => {
    expect(simplifyPorts(ports(80, 80, '70:100', 90))).toEqual(ports('70:100'));
  });
});

describe('peers (§3.5)', () => {
  it('ipBlock: normalised CIDR and except, no selectors', () => {
    expect(ingressRules({ ingress: [{ from: [{ ipBlock: { cidr: '10.1.2.3/16', except: ['10.1.5.0/24', '10.1.6.7/24'] } }] }] })).toEqual([
      { action: 'Allow', source: { nets: ['10.1.0.0/16'], notNets: ['10.1.5.0/24', '10.1.6.0/24'] }, destination: {} },
    ]);
    expect(ingressRules({ ingress: [{ from: [{ ipBlock: { cidr: '2001:DB8::1/32' } }] }] })).toEqual([
      { action: 'Allow', source: { nets: ['2001:db8::/32'] }, destination: {} },
    ]);
  });

  it('never fails open: a cidr Go cannot parse drops the rule (Calico would match any address)', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ ipBlock: { cidr: 'nonsense' } }] }, { ports: [{ port: 443 }] }] }));
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [443] } }]);
    expect(r.errors).toEqual([
      {
        direction: 'ingress',
        index: 0,
        field: 'spec.ingress[0].from[0].ipBlock.cidr',
        reason: expect.stringMatching(/^k8s rule couldn't be converted: spec\.ingress\[0\]\.from\[0\]\.ipBlock\.cidr: "nonsense" is not a CIDR/),
      },
    ]);
  });

  it.each([
    ['a missing cidr', { ipBlock: { cidr: undefined as unknown as string } }, 'spec.ingress[0].from[1].ipBlock.cidr'],
    ['a bare address (Go ParseCIDR needs a prefix)', { ipBlock: { cidr: '10.0.0.1' } }, 'spec.ingress[0].from[1].ipBlock.cidr'],
    ['a zone', { ipBlock: { cidr: 'fe80::/64%eth0' } }, 'spec.ingress[0].from[1].ipBlock.cidr'],
    ['a bad except entry (Calico would keep the earlier ones and drop the rest)', { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16', 'bad', '10.2.0.0/16'] } }, 'spec.ingress[0].from[1].ipBlock.except[1]'],
    ['a null except entry (Go: "")', { ipBlock: { cidr: '10.0.0.0/8', except: [null] } }, 'spec.ingress[0].from[1].ipBlock.except[0]'],
  ])('%s drops the rule, naming the field', (_what, peer, field) => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ podSelector: {} }, peer] }] }));
    expect(r.policy.spec.ingress).toBeUndefined();
    expect(r.errors.map((e) => e.field)).toEqual([field]);
  });

  it('a leading zero in an IPv4 field (accepted by the apiserver, rejected by Go) drops the rule and says why', () => {
    const r = convertNetworkPolicy(np({ policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '010.0.0.0/8' } }] }] }));
    expect(r.policy.spec.egress).toBeUndefined();
    expect(r.errors[0]?.field).toBe('spec.egress[0].to[0].ipBlock.cidr');
    expect(r.errors[0]?.reason).toMatch(/leading zero.*Kubernetes' legacy parser reads the zeros as decimal/);
  });

  it('a peer with only a namespaceSelector selects every pod there (orchestrator term)', () => {
    expect(ingressRules({ ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }] }] })).toEqual([
      { action: 'Allow', source: { selector: ORCH, namespaceSelector: "team == 'ops'" }, destination: {} },
    ]);
  });
});

/**
 * The classes a differential run against Calico v3.30.3's own conversion found (issue 16):
 * exact inputs, and Calico's exact output.
 */
describe('Calico parity on inputs the apiserver accepts (issue 16)', () => {
  it('ipBlock cidr 10.0.0.0/08 (leading zero in the prefix length) → nets [10.0.0.0/8]', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/08' } }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', source: { nets: ['10.0.0.0/8'] }, destination: {} }]);
  });

  it('except ["10.1.0.0/016", …] → notNets [10.1.0.0/16, …], every exception kept', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/016', '10.2.0.0/16', '10.3.0.0/0024'] } }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([
      { action: 'Allow', source: { nets: ['10.0.0.0/8'], notNets: ['10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/24'] }, destination: {} },
    ]);
  });

  it('except ["0.0.0.0/3", "0.0.0.0/3"] and two spellings of one CIDR → each notNet once, a policy the v3 validator accepts (notNets is a set)', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['0.0.0.0/3', '0.0.0.0/3', '10.1.0.0/16', '10.1.2.3/16'] } }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', source: { nets: ['0.0.0.0/0'], notNets: ['0.0.0.0/3', '10.1.0.0/16'] }, destination: {} }]);
    expect(validateResource(r.policy).filter(isError)).toEqual([]);
  });

  it('IPv4-mapped cidr ::ffff:10.0.0.0/104 → 10.0.0.0/8 (as Go and Kubernetes read it)', () => {
    const r = convertNetworkPolicy(np({ ingress: [{ from: [{ ipBlock: { cidr: '::ffff:10.0.0.0/104', except: ['::ffff:10.1.0.0/112'] } }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', source: { nets: ['10.0.0.0/8'], notNets: ['10.1.0.0/16'] }, destination: {} }]);
  });

  it('ports [{port: 80, endPort: 82}, {port: http}] → ["http", "80:82"] (Calico counts expanded ports)', () => {
    expect(ingressRules({ ingress: [{ ports: [{ port: 80, endPort: 82 }, { port: 'http' }] }] })).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['http', '80:82'] } },
    ]);
  });
});

describe('null list elements decode as Go zero values (hand-written YAML)', () => {
  it('from: [null] is a peer with no selectors: the policy namespace\'s pods, not any source', () => {
    expect(ingressRules({ ingress: [{ from: [null] }] })).toEqual([{ action: 'Allow', source: { selector: ORCH }, destination: {} }]);
    const egress = convertNetworkPolicy(np({ policyTypes: ['Egress'], egress: [{ to: [null], ports: [{ port: 53, protocol: 'UDP' }] }] })).policy.spec.egress;
    expect(egress).toEqual([{ action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [53], selector: ORCH } }]);
  });

  it('ingress: [null] is ingress: [{}] (allow all); egress: [null] likewise', () => {
    const r = convertNetworkPolicy(np({ policyTypes: ['Ingress', 'Egress'], ingress: [null], egress: [null] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', source: {}, destination: {} }]);
    expect(r.policy.spec.egress).toEqual([{ action: 'Allow', source: {}, destination: {} }]);
  });

  it('ports: [null] is ports: [{}]: every TCP port', () => {
    expect(ingressRules({ ingress: [{ ports: [null] }] })).toEqual([{ action: 'Allow', protocol: 'TCP', source: {}, destination: {} }]);
    expect(ingressRules({ ingress: [{ ports: [null, { protocol: 'UDP', port: 53 }] }] })).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: {} },
      { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: [53] } },
    ]);
  });

  it('matchExpressions: [null] is a requirement with no operator, skipped as Calico skips it (with a warning)', () => {
    const r = convertNetworkPolicy(np({ podSelector: { matchLabels: { app: 'web' }, matchExpressions: [null] }, ingress: [{ from: [{ podSelector: { matchExpressions: [null, { key: 'a', operator: 'Exists' }] } }] }] }));
    expect(r.errors).toEqual([]);
    expect(r.policy.spec.selector).toBe(`${ORCH} && app == 'web'`);
    expect(r.policy.spec.ingress).toEqual([{ action: 'Allow', source: { selector: `${ORCH} && has(a)` }, destination: {} }]);
    expect(r.warnings).toEqual([
      'spec.ingress[0].from[0].podSelector.matchExpressions[0]: operator undefined is not In, NotIn, Exists or DoesNotExist: ignored, as Calico does',
      'spec.podSelector.matchExpressions[0]: operator undefined is not In, NotIn, Exists or DoesNotExist: ignored, as Calico does',
    ]);
  });

  it('null lists are absent lists; null values and policy types are zero values', () => {
    const r = convertNetworkPolicy(
      np({ podSelector: null, policyTypes: [null, 'Ingress'], ingress: [{ from: null, ports: null }, { from: [{ podSelector: { matchExpressions: [{ key: 'k', operator: 'In', values: [null, 'x'] }] } }] }] }),
    );
    expect(r.policy.spec.types).toEqual(['Ingress']);
    expect(r.policy.spec.ingress).toEqual([
      { action: 'Allow', source: {}, destination: {} },
      { action: 'Allow', source: { selector: `${ORCH} && k in { '', 'x' }` }, destination: {} },
    ]);
  });

  it('a value of the wrong type drops its rule, naming the field, and never throws', () => {
    const bad = (rule: unknown): ReturnType<typeof convertNetworkPolicy> => convertNetworkPolicy(np({ ingress: [rule as never] }));
    expect(bad('x').errors[0]?.field).toBe('spec.ingress[0]');
    expect(bad({ from: 'x' }).errors[0]?.field).toBe('spec.ingress[0].from');
    expect(bad({ from: [{ ipBlock: 'x' }] }).errors[0]?.field).toBe('spec.ingress[0].from[0].ipBlock');
    expect(bad({ ports: [{ port: true }] }).errors[0]?.field).toBe('spec.ingress[0].ports[0].port');
    expect(bad({ ports: [{ port: 80, endPort: 80.5 }] }).errors[0]?.field).toBe('spec.ingress[0].ports[0].endPort');
    expect(bad({ ports: [{ protocol: 6 }] }).errors[0]?.field).toBe('spec.ingress[0].ports[0].protocol');
    const notAList = convertNetworkPolicy(np({ ingress: 'x' as never }));
    expect(notAList.policy.spec.ingress).toBeUndefined();
    expect(notAList.warnings).toEqual(['spec.ingress: "x" is not a list: no ingress rules converted']);
  });
});

describe('worked example (§3.7)', () => {
  it('prod/web converts to prod/knp.default.web', () => {
    const { policy, errors } = convertNetworkPolicy(
      np(
        {
          podSelector: { matchLabels: { app: 'web' } },
          policyTypes: ['Ingress'],
          ingress: [
            {
              from: [{ podSelector: { matchLabels: { role: 'fe' } } }, { namespaceSelector: { matchLabels: { team: 'ops' } } }],
              ports: [{ port: 8080 }, { port: 'metrics' }],
            },
          ],
        },
        'web',
        'prod',
      ),
    );
    expect(errors).toEqual([]);
    expect(policy.metadata).toEqual({ name: 'knp.default.web', namespace: 'prod' });
    expect(policy.spec).toEqual({
      tier: 'default',
      order: 1000,
      selector: `${ORCH} && app == 'web'`,
      types: ['Ingress'],
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: { selector: `${ORCH} && role == 'fe'` }, destination: { ports: [8080, 'metrics'] } },
        { action: 'Allow', protocol: 'TCP', source: { selector: ORCH, namespaceSelector: "team == 'ops'" }, destination: { ports: [8080, 'metrics'] } },
      ],
    });
  });
});
