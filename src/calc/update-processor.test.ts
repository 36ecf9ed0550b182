/**
 * The v1 view Felix indexes (calico-semantics §3.8), checked on the reference's worked
 * example and on each rewriting rule; and the validation filter.
 */
import { describe, expect, it } from 'vitest';
import type { GlobalNetworkPolicy, NetworkPolicy, V3Resource } from '../api/index.ts';
import { parseSelector } from '../selector/index.ts';
import type { ModelPolicy, ModelUpdate } from './model.ts';
import { UpdateProcessor, type InvalidResource } from './update-processor.ts';

const canon = (s: string): string => parseSelector(s).toString();

function process(r: V3Resource): { out: ModelUpdate[]; invalid: InvalidResource[] } {
  const invalid: InvalidResource[] = [];
  const p = new UpdateProcessor({ onInvalid: (i) => invalid.push(i) });
  const out = p.process({ op: 'upsert', resource: r });
  expect(invalid).toEqual([]);
  return { out, invalid };
}

function policyOf(r: V3Resource): ModelPolicy {
  const { out, invalid } = process(r);
  expect(invalid).toEqual([]);
  const u = out.at(-1);
  if (u?.kind !== 'policy' || u.value === null) throw new Error('no policy');
  return u.value;
}

const knpWeb: NetworkPolicy = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'knp.default.web', namespace: 'prod' },
  spec: {
    order: 1000,
    tier: 'default',
    types: ['Ingress'],
    selector: "projectcalico.org/orchestrator == 'k8s' && app == 'web'",
    ingress: [
      { action: 'Allow', protocol: 'TCP', source: { selector: "projectcalico.org/orchestrator == 'k8s' && role == 'fe'" }, destination: { ports: [8080, 'metrics'] } },
      { action: 'Allow', protocol: 'TCP', source: { selector: "projectcalico.org/orchestrator == 'k8s'", namespaceSelector: "team == 'ops'" }, destination: { ports: [8080, 'metrics'] } },
      { action: 'Allow', source: { selector: "projectcalico.org/orchestrator == 'k8s'", namespaceSelector: 'all()' } },
    ],
  },
};

describe('UpdateProcessor (v1 view)', () => {
  it('reproduces the reference worked example (§3.7/§3.8)', () => {
    const p = policyOf(knpWeb);
    expect(p.id).toEqual({ tier: 'default', name: 'knp.default.web', namespace: 'prod', kind: 'NetworkPolicy' });
    expect(p.selector).toBe(canon("(projectcalico.org/orchestrator == 'k8s' && app == 'web') && projectcalico.org/namespace == 'prod'"));
    const [r1, r2, r3] = p.inboundRules;
    expect(r1?.src.selector).toBe(canon("(projectcalico.org/namespace == 'prod') && (projectcalico.org/orchestrator == 'k8s' && role == 'fe')"));
    expect(r2?.src.selector).toBe(canon("(pcns.team == \"ops\") && (projectcalico.org/orchestrator == 'k8s')"));
    expect(r3?.src.selector).toBe(canon("(has(projectcalico.org/namespace)) && (projectcalico.org/orchestrator == 'k8s')"));
    expect(r1?.dst).toMatchObject({ ports: [{ first: 8080, last: 8080 }], namedPorts: ['metrics'], selector: '' });
    expect(r1).toMatchObject({ action: 'allow', protocol: 'tcp', namedPortProtocol: 'tcp' });
    expect(p).toMatchObject({ governsIngress: true, governsEgress: false });
  });

  it('rewrites global() in a namespaceSelector to !has(projectcalico.org/namespace)', () => {
    const p = policyOf({ ...knpWeb, spec: { ...knpWeb.spec, ingress: [{ action: 'Deny', source: { namespaceSelector: 'global()' } }] } });
    expect(p.inboundRules[0]?.src.selector).toBe(canon('!has(projectcalico.org/namespace)'));
  });

  it('applies the namespace scope only to entities that select endpoints', () => {
    const p = policyOf({
      ...knpWeb,
      spec: { ...knpWeb.spec, ingress: [{ action: 'Allow', protocol: 'UDP', source: { nets: ['10.0.0.0/8'] }, destination: { ports: [80] } }, { action: 'Allow', source: { notSelector: "a == 'b'" } }] },
    });
    expect(p.inboundRules[0]?.src.selector).toBe('');
    expect(p.inboundRules[0]?.dst.selector).toBe('');
    expect(p.inboundRules[1]?.src).toMatchObject({ selector: canon("projectcalico.org/namespace == 'prod'"), notSelector: canon("a == 'b'") });
  });

  it('turns serviceAccounts and serviceAccountSelector into pcsa. selectors', () => {
    const p = policyOf({
      ...knpWeb,
      spec: {
        ...knpWeb.spec,
        selector: '',
        serviceAccountSelector: "role == 'api'",
        ingress: [{ action: 'Allow', source: { serviceAccounts: { names: ['a', 'b'], selector: "tier == 'x'" } } }],
      },
    });
    expect(p.selector).toBe(canon("projectcalico.org/namespace == 'prod' && (pcsa.role == 'api')"));
    expect(p.inboundRules[0]?.src.selector).toBe(
      canon("(projectcalico.org/namespace == 'prod') && ((pcsa.tier == 'x') && (projectcalico.org/serviceaccount in {'a', 'b'}))"),
    );
  });

  it("builds serviceAccounts selectors in Calico's shape (upstream rules_test.go vectors), so IP set IDs are Calico's", () => {
    const p = policyOf({
      ...knpWeb,
      metadata: { name: 'p', namespace: 'namespace' },
      spec: {
        selector: '',
        types: ['Ingress'],
        ingress: [
          {
            action: 'Allow',
            source: { serviceAccounts: { names: ['sa1', 'sa2'], selector: "key == 'value1'" } },
            destination: { namespaceSelector: "nskey == 'nsvalue'", serviceAccounts: { names: ['sa3'], selector: "key == 'value2'" } },
          },
          { action: 'Allow', source: { selector: "role == 'fe'", serviceAccounts: { names: ['admin'] } } },
        ],
      },
    });
    // Felix parses the processor's text and keys IP sets by its canonical form.
    expect(p.inboundRules[0]?.src.selector).toBe(
      canon('(projectcalico.org/namespace == \'namespace\') && ((pcsa.key == "value1") && (projectcalico.org/serviceaccount in {"sa1", "sa2"}))'),
    );
    expect(p.inboundRules[0]?.dst.selector).toBe(canon('(pcns.nskey == "nsvalue") && ((pcsa.key == "value2") && (projectcalico.org/serviceaccount in {"sa3"}))'));
    expect(p.inboundRules[1]?.src.selector).toBe(canon("(projectcalico.org/namespace == 'namespace') && ((projectcalico.org/serviceaccount in {'admin'}) && (role == 'fe'))"));
  });

  it('rewrites a GlobalNetworkPolicy serviceAccountSelector all() to has(projectcalico.org/serviceaccount), as Calico does', () => {
    const gnp = (spec: GlobalNetworkPolicy['spec']): GlobalNetworkPolicy => ({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec });
    // Upstream globalnetworkpolicyprocessor_test.go: selector `mylabel == 'selectme'`, serviceAccountSelector all().
    expect(policyOf(gnp({ selector: "mylabel == 'selectme'", serviceAccountSelector: 'all()' })).selector).toBe(
      canon("(mylabel == 'selectme') && has(projectcalico.org/serviceaccount)"),
    );
    expect(policyOf(gnp({ serviceAccountSelector: 'all()' })).selector).toBe('has(projectcalico.org/serviceaccount)');
    // Calico rewrites every all() of the text so far: the policy's own all() narrows too.
    expect(policyOf(gnp({ selector: 'all()', serviceAccountSelector: "role == 'x'" })).selector).toBe(canon("has(projectcalico.org/serviceaccount) && pcsa.role == 'x'"));
    // namespaceSelector all() → has(namespace) first, then the service-account pass.
    expect(policyOf(gnp({ selector: 'all()', namespaceSelector: 'all()', serviceAccountSelector: 'all()' })).selector).toBe(
      canon('((has(projectcalico.org/namespace)) && has(projectcalico.org/namespace)) && has(projectcalico.org/serviceaccount)'),
    );
    // A NetworkPolicy's serviceAccountSelector all() is not rewritten (ConvertNetworkPolicyV3ToV1Value): every endpoint of the namespace.
    expect(policyOf({ ...knpWeb, spec: { selector: "app == 'a'", serviceAccountSelector: 'all()', types: ['Ingress'] } }).selector).toBe(
      canon("((app == 'a') && projectcalico.org/namespace == 'prod') && all()"),
    );
  });

  it('leaves global policy selectors unscoped, prefixes its namespaceSelector, and maps its flags', () => {
    const g: GlobalNetworkPolicy = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'g' },
      spec: {
        selector: "app == 'x'",
        namespaceSelector: "env == 'prod'",
        preDNAT: true,
        applyOnForward: true,
        types: ['Ingress'],
        ingress: [{ action: 'Pass', source: { selector: "b == 'c'" } }],
      },
    };
    const p = policyOf(g);
    expect(p.id).toEqual({ tier: 'default', name: 'g', kind: 'GlobalNetworkPolicy' });
    expect(p.selector).toBe(canon("(app == 'x') && (pcns.env == 'prod')"));
    expect(p.inboundRules[0]).toMatchObject({ action: 'next-tier', src: { selector: canon("b == 'c'") } });
    expect(p).toMatchObject({ preDnat: true, applyOnForward: true, untracked: false });
  });

  it("keeps a negated negation's tree through the rewrite, so its IP set ID is Calico's (!!has(a))", () => {
    const g: GlobalNetworkPolicy = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'g' },
      spec: { selector: 'all()', types: ['Ingress'], ingress: [{ action: 'Allow', source: { selector: '!(!has(a))' }, destination: { notSelector: '!(!has(b))' } }] },
    };
    const rule = policyOf(g).inboundRules[0];
    // Calico v3.30.3: selector.Parse("!(!has(a))").UniqueID().
    expect(parseSelector(rule?.src.selector ?? '').uniqueId()).toBe('s:VZFYmDV_Drir7seXQB5vQXF8-34s2nf1b8ItRA');
    expect(parseSelector(rule?.dst.notSelector ?? '').toString()).toBe('!!has(b)');
  });

  it('defaults types from the rules (API defaulting) before Felix reads them', () => {
    const p = policyOf({ ...knpWeb, spec: { selector: "app == 'a'", egress: [{ action: 'Allow' }] } });
    expect(p).toMatchObject({ governsIngress: false, governsEgress: true, id: { tier: 'default' } });
  });

  it('adds the implicit namespace label to endpoints and splits v4/v6 addresses', () => {
    const { out } = process({
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: 'w', namespace: 'ns', labels: { app: 'x', 'projectcalico.org/namespace': 'spoofed' } },
      spec: { node: 'n', orchestrator: 'k8s', interfaceName: 'cali1', ipNetworks: ['10.0.0.1/32', 'fc00::1/128', '10.0.0.2/32'], ports: [{ name: 'http', protocol: 'TCP', port: 80 }] },
    });
    expect(out[0]?.value).toMatchObject({
      key: 'ns/w',
      labels: { app: 'x', 'projectcalico.org/namespace': 'ns', 'projectcalico.org/orchestrator': 'k8s' },
      ipv4Nets: ['10.0.0.1/32', '10.0.0.2/32'],
      ipv6Nets: ['fc00::1/128'],
    });
  });

  it('turns an invalid endpoint into a delete of the key it had, with a reason', () => {
    const invalid: InvalidResource[] = [];
    const p = new UpdateProcessor({ onInvalid: (i) => invalid.push(i) });
    const ep = { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: { name: 'n-k8s-web-eth0', namespace: 'prod' }, spec: { ipNetworks: ['10.0.0.1/32'] } } as V3Resource;
    p.process({ op: 'upsert', resource: ep });
    const out = p.process({ op: 'upsert', resource: { ...ep, spec: { ipNetworks: ['10.0.0.0/24'] } } as V3Resource });
    expect(out).toEqual([{ kind: 'endpoint', key: 'prod/n-k8s-web-eth0', value: null }]);
    expect(invalid).toEqual([expect.objectContaining({ kind: 'WorkloadEndpoint', namespace: 'prod', name: 'n-k8s-web-eth0', reason: expect.stringContaining('spec.ipNetworks[0]') })]);
    expect(invalid[0]?.failClosed).toBeUndefined();
  });

  it('moves a policy whose tier changed: delete under the old id, then upsert under the new', () => {
    const p = new UpdateProcessor({ onInvalid: () => {} });
    p.process({ op: 'upsert', resource: knpWeb });
    const out = p.process({ op: 'upsert', resource: { ...knpWeb, metadata: { ...knpWeb.metadata, name: 'web2' } } });
    expect(out.map((u) => [u.key, u.value === null])).toEqual([['NetworkPolicy/prod/default/web2', false]]);
    const moved = p.process({ op: 'upsert', resource: { ...knpWeb, metadata: { ...knpWeb.metadata, name: 'web2' }, spec: { ...knpWeb.spec, tier: 'security' } } });
    expect(moved.map((u) => [u.key, u.value === null])).toEqual([
      ['NetworkPolicy/prod/default/web2', true],
      ['NetworkPolicy/prod/security/web2', false],
    ]);
    expect(p.process({ op: 'delete', kind: 'NetworkPolicy', namespace: 'prod', name: 'web2' })).toEqual([
      { kind: 'policy', key: 'NetworkPolicy/prod/security/web2', value: null },
    ]);
  });
});

describe('UpdateProcessor: invalid policies and profiles fail closed', () => {
  function run(...resources: V3Resource[]): { out: ModelUpdate[]; invalid: InvalidResource[]; counts: Map<string, number>[]; p: UpdateProcessor } {
    const invalid: InvalidResource[] = [];
    const counts: Map<string, number>[] = [];
    const p = new UpdateProcessor({ onInvalid: (i) => invalid.push(i), onFailClosedCount: (c) => counts.push(new Map(c)) });
    let out: ModelUpdate[] = [];
    for (const r of resources) out = p.process({ op: 'upsert', resource: r });
    return { out, invalid, counts, p };
  }
  const policyIn = (out: ModelUpdate[]): ModelPolicy => {
    const u = out.at(-1);
    if (u?.kind !== 'policy' || u.value === null) throw new Error('no policy');
    return u.value;
  };

  it('keeps id, order, selector and directions of a policy with an invalid rule, and drops every rule', () => {
    const valid = policyOf(knpWeb);
    // "HTTP" is not a Kubernetes port name: Calico's validator refuses it.
    const bad = { ...knpWeb, spec: { ...knpWeb.spec, egress: [{ action: 'Allow' }], types: ['Ingress', 'Egress'], ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['HTTP'] } }] } } as NetworkPolicy;
    const { out, invalid, counts } = run(knpWeb, bad);
    expect(out).toEqual([{ kind: 'policy', key: valid.key, value: expect.anything() }]);
    expect(policyIn(out)).toEqual({ ...valid, inboundRules: [], outboundRules: [], governsIngress: true, governsEgress: true });
    expect(invalid).toEqual([
      { kind: 'NetworkPolicy', namespace: 'prod', name: 'knp.default.web', reason: expect.stringContaining('spec.ingress[0].destination.ports[0]'), failClosed: {} },
    ]);
    expect(counts).toEqual([new Map([['NetworkPolicy', 1]])]);
  });

  it('selects every endpoint of its namespace when a NetworkPolicy selector cannot be parsed', () => {
    const { out, invalid } = run({ ...knpWeb, spec: { ...knpWeb.spec, selector: 'a ==' } } as NetworkPolicy);
    expect(policyIn(out)).toMatchObject({ selector: "projectcalico.org/namespace == 'prod'", inboundRules: [], governsIngress: true, governsEgress: false });
    expect(invalid[0]?.failClosed).toEqual({ selectorFallback: "projectcalico.org/namespace == 'prod'" });
  });

  it('never builds a selector it cannot parse, whatever the namespace of an object that bypassed the API server', () => {
    for (const [namespace, selector] of [["it's", `projectcalico.org/namespace == "it's"`], [`it's "x"`, '!all()']] as const) {
      const { out } = run({ ...knpWeb, metadata: { ...knpWeb.metadata, namespace }, spec: { ...knpWeb.spec, selector: 'a ==' } } as NetworkPolicy);
      expect(policyIn(out).selector).toBe(selector);
      expect(() => parseSelector(policyIn(out).selector)).not.toThrow();
    }
  });

  it('selects all() when a GlobalNetworkPolicy selector cannot be parsed, and keeps a readable one', () => {
    const g = (spec: Record<string, unknown>): GlobalNetworkPolicy => ({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec } as unknown as GlobalNetworkPolicy);
    expect(policyIn(run(g({ selector: "app == 'x' &&", types: ['Egress'] })).out)).toMatchObject({ selector: 'all()', governsIngress: false, governsEgress: true });
    expect(policyIn(run(g({ selector: "app == 'x'", namespaceSelector: "team == 'a'", types: ['Egress', 'Egress'] })).out)).toMatchObject({
      selector: canon("(app == 'x') && (pcns.team == 'a')"),
      governsIngress: false,
      governsEgress: true,
    });
  });

  it('reads the stricter value where a field cannot be read: tier default, no order, both directions, no untracked/preDNAT', () => {
    const bad = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'g' },
      spec: { tier: 'Not_A_Tier', order: 'high', types: 'Ingress', selector: "app == 'x'", doNotTrack: true, preDNAT: 'yes' },
    } as unknown as GlobalNetworkPolicy;
    expect(policyIn(run(bad).out)).toMatchObject({
      id: { tier: 'default', name: 'g', kind: 'GlobalNetworkPolicy' },
      order: undefined,
      selector: canon("app == 'x'"),
      governsIngress: true,
      governsEgress: true,
      untracked: false,
      preDnat: false,
      applyOnForward: false,
    });
  });

  it('without types, governs egress when egress rules are present, and when an egress that is not a list cannot be read', () => {
    const g = (spec: Record<string, unknown>): GlobalNetworkPolicy => ({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec } as unknown as GlobalNetworkPolicy);
    expect(policyIn(run(g({ selector: "app == 'x'", ingress: 'garbage' })).out)).toMatchObject({ governsIngress: true, governsEgress: false });
    expect(policyIn(run(g({ selector: "app == 'x'", egress: { action: 'Allow' } })).out)).toMatchObject({ governsIngress: true, governsEgress: true });
    expect(policyIn(run(g({ selector: "app == 'x' &&", egress: [{ action: 'Allow' }] })).out)).toMatchObject({ governsIngress: true, governsEgress: true });
  });

  it('is replaced by the valid policy once fixed, and removed by a delete; the count follows', () => {
    const bad = { ...knpWeb, spec: { ...knpWeb.spec, selector: 'a ==' } } as NetworkPolicy;
    const { p, counts } = run(bad);
    const fixed = p.process({ op: 'upsert', resource: knpWeb });
    expect(policyIn(fixed).inboundRules).toHaveLength(3);
    p.process({ op: 'upsert', resource: bad });
    expect(p.process({ op: 'delete', kind: 'NetworkPolicy', namespace: 'prod', name: 'knp.default.web' })).toEqual([
      { kind: 'policy', key: 'NetworkPolicy/prod/default/knp.default.web', value: null },
    ]);
    expect(counts).toEqual([new Map([['NetworkPolicy', 1]]), new Map(), new Map([['NetworkPolicy', 1]]), new Map()]);
  });

  it('keeps the valid labels of an invalid profile and drops its rules', () => {
    const prof = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.prod' },
      spec: { labelsToApply: { 'pcns.team': 'a', 'bad key!': 'x' }, ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow', protocol: 'ICMP', destination: { ports: [80] } }] },
    } as unknown as V3Resource;
    const { out, invalid, counts } = run(prof);
    expect(out).toEqual([{ kind: 'profile', key: 'kns.prod', value: { name: 'kns.prod', labels: { 'pcns.team': 'a' }, inboundRules: [], outboundRules: [] } }]);
    expect(invalid).toEqual([expect.objectContaining({ kind: 'Profile', name: 'kns.prod', failClosed: {} })]);
    expect(counts).toEqual([new Map([['Profile', 1]])]);
  });
});

describe('scoped selectors built from their parts equal the joined text re-parsed', () => {
  // What the processor printed before it built the scoped tree from its parts: the joined text, parsed and printed.
  const roundTrip = (s: string): string => parseSelector(s.trim()).toRoundTripString();
  const NS = "projectcalico.org/namespace == 'prod'";
  it.each([
    "app == 'web'",
    "a == 'x' || b == 'y'",
    "a == 'x' && b == 'y'",
    '!(!has(a))',
    '!has(a)',
    'all()',
    "((a == 'x' || b == 'y') && !(c in {'z', 'y'})) || has(d)",
    "  a  ==  'x'  ",
    "a == \"all()\" && b starts with 'q'",
  ])('%s', (sel) => {
    const p = policyOf({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'prod' },
      spec: {
        selector: sel,
        ingress: [
          { action: 'Allow', source: { selector: sel } },
          { action: 'Allow', source: { selector: sel, namespaceSelector: "team == 'ops' || all()" } },
          { action: 'Allow', source: { selector: sel, serviceAccounts: { names: ['sa'], selector: "x == 'y'" } } },
        ],
      },
    });
    expect(p.selector).toBe(roundTrip(`(${roundTrip(sel)}) && ${NS}`));
    expect(p.inboundRules[0]?.src.selector).toBe(roundTrip(`(${NS}) && (${roundTrip(sel)})`));
    const nsSel = "pcns.team == \"ops\" || has(projectcalico.org/namespace)";
    expect(p.inboundRules[1]?.src.selector).toBe(roundTrip(`(${nsSel}) && (${roundTrip(sel)})`));
    const sa = `(pcsa.x == "y") && (projectcalico.org/serviceaccount in {"sa"})`;
    expect(p.inboundRules[2]?.src.selector).toBe(roundTrip(`(${NS}) && ((${sa}) && (${roundTrip(sel)}))`));
  });
});
