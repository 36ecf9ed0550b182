import { describe, expect, it } from 'vitest';
import { applyDefaults } from './defaults.ts';
import type { FieldError } from './field-error.ts';
import { frontendEndpoint, namespaceProfile, securityTier, shopFrontend, VALID_FIXTURES } from '../../test/api/fixtures.ts';
import type { V3Resource } from './types.ts';
import { assertValid, checkReservedName, formatFinding, validateResource, ValidationError } from './validation.ts';

/** A copy of `base` with its spec replaced by `spec` (loosely typed: tests build bad input). */
function withSpec(base: V3Resource, spec: Record<string, unknown>): Record<string, unknown> {
  return { ...structuredClone(base), spec };
}
function withMeta(base: V3Resource, metadata: Record<string, unknown>): Record<string, unknown> {
  return { ...structuredClone(base), metadata };
}
const pathsOf = (findings: FieldError[]) => findings.map((f) => f.path);

const np = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'shop' },
  spec,
});
const gnp = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name },
  spec,
});
const tier = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Tier',
  metadata: { name },
  spec,
});

describe('realistic objects', () => {
  it.each(VALID_FIXTURES.map((f) => [`${f.kind} ${f.metadata.name}`, f] as const))('%s validates clean', (_name, fixture) => {
    expect(validateResource(fixture)).toEqual([]);
    expect(validateResource(applyDefaults(fixture))).toEqual([]);
  });
});

describe('every problem is reported, not just the first', () => {
  it('lists errors from metadata, spec and several rules in document order', () => {
    const bad = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'Web', namespace: 'shop' },
      spec: {
        order: 'first',
        selector: 'app ==',
        types: ['Ingress', 'Ingress'],
        ingress: [
          { action: 'Allow', protocol: 'TCP', destination: { ports: ['80-90'] } },
          { action: 'Nope', source: { nets: ['10.0.0.1/8'] } },
        ],
        egress: [{ action: 'Allow', protocol: 'ICMP', icmp: { type: 300 } }],
      },
    };
    expect(pathsOf(validateResource(bad))).toEqual([
      'metadata.name',
      'spec.order',
      'spec.selector',
      'spec.types[1]',
      'spec.ingress[0].destination.ports[0]',
      'spec.ingress[1].action',
      'spec.ingress[1].source.nets[0]',
      'spec.egress[0].icmp.type',
    ]);
  });
});

describe('ValidationError', () => {
  it('names the object and the field, one line per error', () => {
    const bad = np('web', {
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80, '80-90'] } }],
      egress: [{ action: 'Allow', source: { selector: "a == 'b' && && c" } }],
    });
    let caught: unknown;
    try {
      assertValid(bad);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as ValidationError;
    expect(err.message).toBe(
      [
        'NetworkPolicy shop/web: spec.ingress[0].destination.ports[1]: "80-90" is not a port or a range (use "80:90")',
        "NetworkPolicy shop/web: spec.egress[0].source.selector: unexpected token '&&' at column 13",
      ].join('\n'),
    );
    expect(err.name).toBe('ValidationError');
    expect(err.kind).toBe('NetworkPolicy');
    expect(err.namespace).toBe('shop');
    expect(err.resourceName).toBe('web');
    expect(err.errors).toHaveLength(2);
  });

  it('is not thrown for warnings alone', () => {
    expect(() => assertValid(np('web', { ingress: [{ action: 'Log' }] }))).not.toThrow();
  });

  it('formatFinding omits an empty path', () => {
    expect(formatFinding({ kind: 'Tier', metadata: { name: 't' } }, { path: '', message: 'm' })).toBe('Tier t: m');
  });
});

describe('resource envelope', () => {
  it('rejects a wrong apiVersion, an unknown kind and non-objects', () => {
    expect(validateResource({ ...shopFrontend, apiVersion: 'projectcalico.org/v1' })).toEqual([
      { path: 'apiVersion', message: 'must be projectcalico.org/v3, not "projectcalico.org/v1"' },
    ]);
    expect(validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool' })).toEqual([
      {
        path: 'kind',
        message: 'must be one of NetworkPolicy, GlobalNetworkPolicy, Tier, Profile, WorkloadEndpoint, NetworkSet, GlobalNetworkSet, HostEndpoint, not "IPPool"',
      },
    ]);
    expect(validateResource([])).toEqual([{ path: '', message: 'must be an object, not a list' }]);
  });

  it('rejects unknown top-level and spec fields', () => {
    expect(validateResource({ ...withSpec(shopFrontend, { selectr: 'all()' }), extra: 1 })).toEqual([
      { path: 'extra', message: 'unknown field "extra"' },
      { path: 'spec.selectr', message: 'unknown field "selectr"' },
    ]);
  });

  it('requires a spec on policies and tiers, not on profiles', () => {
    const { spec: _spec, ...noSpec } = structuredClone(shopFrontend);
    expect(validateResource(noSpec)).toEqual([{ path: 'spec', message: 'spec is required for a NetworkPolicy' }]);
    expect(validateResource({ ...tier('t', {}), spec: undefined })).toEqual([{ path: 'spec', message: 'spec is required for a Tier' }]);
    expect(validateResource({ ...structuredClone(namespaceProfile), spec: undefined })).toEqual([]);
  });

  it('requires metadata with a name', () => {
    expect(validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'Tier', spec: {} })).toEqual([
      { path: 'metadata', message: 'metadata is required (with at least a name)' },
    ]);
    expect(validateResource(withMeta(securityTier, {}))).toEqual([{ path: 'metadata.name', message: 'name is required' }]);
  });

  it('requires a namespace for namespaced kinds and warns about one on cluster-scoped kinds', () => {
    expect(validateResource(withMeta(shopFrontend, { name: 'web' }))).toEqual([
      { path: 'metadata.namespace', message: 'namespace is required: NetworkPolicy is a namespaced kind' },
    ]);
    expect(validateResource(withMeta(securityTier, { name: 'security', namespace: 'x' }))).toEqual([
      { path: 'metadata.namespace', message: 'Tier is cluster-scoped; the namespace is ignored', severity: 'warning' },
    ]);
  });

  it('checks label keys and values and annotation keys', () => {
    const findings = validateResource(
      withMeta(namespaceProfile, { name: 'kns.shop', labels: { 'a/b/c': 'x', ok: 'bad value' }, annotations: { '/x': 'y' } }),
    );
    expect(pathsOf(findings)).toEqual([
      'metadata.labels["a/b/c"]',
      'metadata.labels.ok',
      'metadata.annotations["/x"]',
    ]);
  });
});

describe('policy names', () => {
  it('accepts a DNS-1123 label or two labels, with no tier prefix required (current Calico)', () => {
    expect(validateResource(np('web', { tier: 'security' }))).toEqual([]);
    expect(validateResource(np('other.web', { tier: 'security' }))).toEqual([]);
    expect(validateResource(gnp('security.web'))).toEqual([]);
  });

  it('rejects names with more than one dot or invalid characters', () => {
    expect(validateResource(np('a.b.c'))).toEqual([
      {
        path: 'metadata.name',
        message: `"a.b.c" is not a valid NetworkPolicy name: use a DNS-1123 label or two labels joined by one '.' (lower-case letters, digits and '-')`,
      },
    ]);
    expect(pathsOf(validateResource(gnp('Web_1')))).toEqual(['metadata.name']);
  });

  it('accepts converter-style knp.default.* names on NetworkPolicy (reservation is checked separately)', () => {
    expect(validateResource(np('knp.default.allow.dns'))).toEqual([]);
    expect(pathsOf(validateResource(gnp('knp.default.web')))).toEqual(['metadata.name']);
  });

  it('rejects names longer than 253 bytes', () => {
    const name = 'a'.repeat(254);
    expect(validateResource(np(name))).toEqual([{ path: 'metadata.name', message: 'name is too long: 254 bytes (at most 253)' }]);
  });
});

describe('policy spec', () => {
  it('reports policy selector parse errors at the field', () => {
    expect(validateResource(np('web', { selector: "app == 'web' &&" }))).toEqual([
      { path: 'spec.selector', message: 'unexpected end of selector at column 16' },
    ]);
  });

  it('rejects global() in the policy selector, serviceAccountSelector and GNP namespaceSelector', () => {
    expect(pathsOf(validateResource(gnp('g', { selector: 'global()', serviceAccountSelector: 'global()', namespaceSelector: 'global()' })))).toEqual([
      'spec.selector',
      'spec.serviceAccountSelector',
      'spec.namespaceSelector',
    ]);
  });

  it('rejects unknown and repeated types', () => {
    expect(validateResource(np('web', { types: ['ingress', 'Egress', 'Egress'] }))).toEqual([
      { path: 'spec.types[0]', message: '"ingress" is not a policy type (use Ingress or Egress)' },
      { path: 'spec.types[2]', message: "'Egress' type specified more than once" },
    ]);
  });

  it('accepts a dotted tier name, as Calico does (its tier field is a name: a DNS-1123 subdomain)', () => {
    expect(validateResource(np('web', { tier: 'team.security' }))).toEqual([]);
  });

  it('requires the tier to be a DNS-1123 subdomain and the order a number', () => {
    expect(validateResource(np('web', { tier: 'My.Tier', order: '10' }))).toEqual([
      { path: 'spec.tier', message: '"My.Tier" is not a valid tier name (DNS-1123 subdomain)' },
      { path: 'spec.order', message: 'must be a number, not a string' },
    ]);
  });

  it('accepts the AssumeNeededOnEveryNode performance hint once', () => {
    expect(validateResource(np('web', { performanceHints: ['AssumeNeededOnEveryNode'] }))).toEqual([]);
    expect(pathsOf(validateResource(np('web', { performanceHints: ['AssumeNeededOnEveryNode', 'AssumeNeededOnEveryNode', 'Fast'] })))).toEqual([
      'spec.performanceHints[1]',
      'spec.performanceHints[2]',
    ]);
  });

  it('warns when every rule of a governed direction is Log (the end-of-tier action still applies)', () => {
    expect(validateResource(np('web', { types: ['Ingress'], ingress: [{ action: 'Log' }] }))).toEqual([
      {
        path: 'spec.ingress',
        message:
          "every rule is Log: Log does not end evaluation, so the policy still applies and traffic falls through to the end of the tier (dropped when the tier's defaultAction is Deny)",
        severity: 'warning',
      },
    ]);
    expect(validateResource(np('web', { types: ['Egress'], ingress: [{ action: 'Log' }] }))).toEqual([]);
    expect(validateResource(np('web', { ingress: [{ action: 'Log' }, { action: 'Deny' }] }))).toEqual([]);
  });
});

describe('GlobalNetworkPolicy flags', () => {
  it('accepts preDNAT and doNotTrack policies with applyOnForward', () => {
    expect(validateResource(gnp('p', { preDNAT: true, applyOnForward: true, ingress: [{ action: 'Deny' }] }))).toEqual([]);
    expect(validateResource(gnp('u', { doNotTrack: true, applyOnForward: true }))).toEqual([]);
  });

  it('rejects preDNAT with doNotTrack, egress rules or the Egress type, and either without applyOnForward', () => {
    expect(
      validateResource(gnp('p', { preDNAT: true, doNotTrack: true, types: ['Egress'], egress: [{ action: 'Allow' }] })),
    ).toEqual([
      { path: 'spec.preDNAT', message: 'preDNAT and doNotTrack cannot both be true' },
      { path: 'spec.egress', message: 'preDNAT policy cannot have any egress rules' },
      { path: 'spec.types', message: "preDNAT policy cannot have 'Egress' type" },
      { path: 'spec.applyOnForward', message: 'applyOnForward must be true if either preDNAT or doNotTrack is true' },
    ]);
  });

  it('requires the flags to be booleans', () => {
    expect(validateResource(gnp('p', { doNotTrack: 'yes' }))).toEqual([
      { path: 'spec.doNotTrack', message: 'must be true or false, not a string' },
    ]);
  });

  it('reports each rule of reference §B on its own, with its message', () => {
    // The Egress type alone (no egress rules) is enough.
    expect(validateResource(gnp('p', { preDNAT: true, applyOnForward: true, types: ['Ingress', 'Egress'] }))).toEqual([
      { path: 'spec.types', message: "preDNAT policy cannot have 'Egress' type" },
    ]);
    // Egress rules alone, with the type not stated: defaulting derives [Egress] from them, so both rules fire.
    expect(validateResource(applyDefaults(gnp('p', { preDNAT: true, applyOnForward: true, egress: [{ action: 'Deny' }] }) as V3Resource))).toEqual([
      { path: 'spec.egress', message: 'preDNAT policy cannot have any egress rules' },
      { path: 'spec.types', message: "preDNAT policy cannot have 'Egress' type" },
    ]);
    expect(validateResource(gnp('u', { doNotTrack: true, ingress: [{ action: 'Allow' }] }))).toEqual([
      { path: 'spec.applyOnForward', message: 'applyOnForward must be true if either preDNAT or doNotTrack is true' },
    ]);
    expect(validateResource(gnp('u', { doNotTrack: true, applyOnForward: false }))).toEqual([
      { path: 'spec.applyOnForward', message: 'applyOnForward must be true if either preDNAT or doNotTrack is true' },
    ]);
    expect(validateResource(gnp('p', { preDNAT: true, doNotTrack: true, applyOnForward: true }))).toEqual([
      { path: 'spec.preDNAT', message: 'preDNAT and doNotTrack cannot both be true' },
    ]);
  });

  it('accepts what the rules leave open: an empty egress list with preDNAT, doNotTrack both ways, applyOnForward alone, false flags', () => {
    expect(validateResource(gnp('p', { preDNAT: true, applyOnForward: true, types: ['Ingress'], egress: [] }))).toEqual([]);
    expect(validateResource(gnp('u', { doNotTrack: true, applyOnForward: true, types: ['Ingress', 'Egress'], ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }))).toEqual([]);
    expect(validateResource(gnp('f', { applyOnForward: true, egress: [{ action: 'Deny' }] }))).toEqual([]);
    expect(validateResource(gnp('n', { preDNAT: false, doNotTrack: false, applyOnForward: false, types: ['Egress'], egress: [{ action: 'Deny' }] }))).toEqual([]);
  });

  it('are GlobalNetworkPolicy fields only: a namespaced NetworkPolicy has none of them', () => {
    expect(validateResource(np('p', { preDNAT: true, doNotTrack: true, applyOnForward: true }))).toEqual([
      { path: 'spec.preDNAT', message: 'unknown field "preDNAT"' },
      { path: 'spec.doNotTrack', message: 'unknown field "doNotTrack"' },
      { path: 'spec.applyOnForward', message: 'unknown field "applyOnForward"' },
    ]);
  });
});

describe('Tier', () => {
  it('accepts Deny and Pass default actions and rejects others', () => {
    expect(validateResource(tier('t', { defaultAction: 'Pass' }))).toEqual([]);
    expect(validateResource(tier('t', { defaultAction: 'Allow' }))).toEqual([
      { path: 'spec.defaultAction', message: 'defaultAction "Allow" is not valid (use Deny or Pass)' },
    ]);
  });

  it('requires a DNS-1123 label name of at most 63 characters', () => {
    expect(pathsOf(validateResource(tier('a.b', {})))).toEqual(['metadata.name']);
    expect(validateResource(tier('a'.repeat(64), {}))).toEqual([
      { path: 'metadata.name', message: 'name is too long: 64 bytes (at most 63)' },
    ]);
  });

  it('keeps the well-known tiers at their order and default action', () => {
    expect(validateResource(tier('default', { order: 1_000_000 }))).toEqual([]);
    expect(validateResource(tier('default', { order: 5, defaultAction: 'Pass' }))).toEqual([
      { path: 'spec.defaultAction', message: "the 'default' tier must have default action 'Deny'" },
      { path: 'spec.order', message: 'default tier order must be 1000000' },
    ]);
    expect(validateResource(tier('kube-admin', { order: 1000 }))).toEqual([
      { path: 'spec.defaultAction', message: "the 'kube-admin' tier must have default action 'Pass'" },
    ]);
    expect(validateResource(tier('kube-baseline', { defaultAction: 'Pass' }))).toEqual([
      { path: 'spec.order', message: 'kube-baseline tier order must be 10000000' },
    ]);
  });
});

describe('Profile', () => {
  it('validates its rules and labelsToApply', () => {
    expect(
      validateResource(withSpec(namespaceProfile, { ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [0] } }], labelsToApply: { 'bad key!': 'v' } })),
    ).toEqual([
      { path: 'spec.ingress[0].destination.ports[0]', message: 'port 0 is out of range (1-65535)' },
      {
        path: 'spec.labelsToApply["bad key!"]',
        message: "invalid key: the name part must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
      },
    ]);
  });

  it("accepts what a generated profile carries beyond a label: a long ServiceAccount name, a label key too long once prefixed (issue 27 item 15)", () => {
    const sa70 = 's'.repeat(70);
    const key60 = 'k'.repeat(60);
    const labels = (labelsToApply: Record<string, string>) => validateResource(withSpec(namespaceProfile, { labelsToApply }));
    expect(labels({ 'pcsa.projectcalico.org/name': sa70, [`pcns.${key60}`]: 'v', [`pcsa.${key60}`]: 'v' })).toEqual([]);
    expect(labels({ 'pcsa.projectcalico.org/name': `${'s'.repeat(250)}.com` })).toEqual([
      expect.objectContaining({ path: 'spec.labelsToApply["pcsa.projectcalico.org/name"]', message: expect.stringContaining('neither a valid label value nor a ServiceAccount name') }),
    ]);
    // Anything else is held to label rules: another key's long value, a bad key after the prefix, an unprefixed long key.
    expect(labels({ 'pcsa.team': sa70, 'pcns.bad key!': 'v', [`${key60}xxxx`]: 'v' }).map((e) => e.path)).toEqual([
      'spec.labelsToApply["pcsa.team"]',
      'spec.labelsToApply["pcns.bad key!"]',
      `spec.labelsToApply.${key60}xxxx`,
    ]);
  });
});

describe('WorkloadEndpoint', () => {
  const wep = (spec: Record<string, unknown>) => withSpec(frontendEndpoint, { ...frontendEndpoint.spec, ...spec });

  it('requires single-address ipNetworks', () => {
    expect(validateResource(wep({ ipNetworks: ['10.244.1.0/24'] }))).toEqual([
      { path: 'spec.ipNetworks[0]', message: '"10.244.1.0/24" contains multiple addresses; an endpoint network must be a /32' },
    ]);
  });

  it('accepts an endpoint without an interface name (the agent resolves it from the host route), not a bad one', () => {
    expect(validateResource(wep({ interfaceName: undefined }))).toEqual([]);
    expect(validateResource(wep({ interfaceName: '' }))).toEqual([]);
    expect(validateResource(wep({ interfaceName: 'cali/0' }))).toEqual([
      { path: 'spec.interfaceName', message: `"cali/0" is not a valid interface name (1-15 of alphanumerics, '_', '.' and '-')` },
    ]);
  });

  it('checks MAC, container ID and gateways', () => {
    expect(
      validateResource(wep({ mac: 'zz:zz', containerID: '-x', ipv4Gateway: 'fe80::1', ipv6Gateway: '10.0.0.1' })),
    ).toEqual([
      { path: 'spec.containerID', message: `"-x" is not a valid container ID (alphanumerics and '-')` },
      { path: 'spec.mac', message: '"zz:zz" is not a MAC address' },
      { path: 'spec.ipv4Gateway', message: '"fe80::1" is not an IPv4 address' },
      { path: 'spec.ipv6Gateway', message: '"10.0.0.1" is not an IPv6 address' },
    ]);
  });

  it('requires NATs inside the endpoint networks and of one IP version', () => {
    expect(validateResource(wep({ ipNATs: [{ internalIP: '10.244.1.17', externalIP: '203.0.113.5' }] }))).toEqual([]);
    expect(validateResource(wep({ ipNATs: [{ internalIP: '10.9.9.9', externalIP: '2001:db8::1' }] }))).toEqual([
      { path: 'spec.ipNATs[0]', message: 'internalIP and externalIP must be the same IP version' },
      { path: 'spec.ipNATs[0].internalIP', message: 'NAT is not in the endpoint networks' },
    ]);
  });

  it('checks named ports: IANA name unless a hostPort is set, TCP/UDP/SCTP by name, port 1-65535', () => {
    expect(validateResource(wep({ ports: [{ protocol: 'UDP', port: 53, hostPort: 53, hostIP: '10.0.0.1' }] }))).toEqual([]);
    expect(
      validateResource(
        wep({
          ports: [
            { name: 'HTTP', protocol: 'TCP', port: 80 },
            { protocol: 'ICMP', port: 0 },
            { name: 'dns', protocol: 17, port: 53 },
          ],
        }),
      ),
    ).toEqual([
      {
        path: 'spec.ports[0].name',
        message: `"HTTP" is not a valid port name (1-15 of lower-case letters, digits and '-', with at least one letter)`,
      },
      { path: 'spec.ports[1].protocol', message: '"ICMP" does not have ports (use TCP, UDP or SCTP)' },
      { path: 'spec.ports[1].port', message: 'port is required (1-65535)' },
      { path: 'spec.ports[1].name', message: 'a port needs a name unless it has a hostPort' },
      { path: 'spec.ports[2].protocol', message: '17 does not have ports (use TCP, UDP or SCTP)' },
    ]);
  });

  it('judges a repeated value the same every time (valid ones are remembered, invalid ones re-checked)', () => {
    const bad = wep({ node: 'Node_1', ports: [{ name: 'HTTP', protocol: 'TCP', port: 80 }] });
    const first = validateResource({ ...bad, metadata: { ...frontendEndpoint.metadata, labels: { app: '-x-' } } });
    expect(pathsOf(first)).toEqual(['metadata.labels.app', 'spec.node', 'spec.ports[0].name']);
    for (let i = 0; i < 3; i++) {
      expect(validateResource({ ...bad, metadata: { ...frontendEndpoint.metadata, labels: { app: '-x-' } } })).toEqual(first);
      expect(validateResource(frontendEndpoint)).toEqual([]);
    }
  });

  it('checks profile names and spoofable prefixes', () => {
    expect(pathsOf(validateResource(wep({ profiles: ['Kns_shop'], allowSpoofedSourcePrefixes: ['10.1.2.3/16', 'nope'] })))).toEqual([
      'spec.profiles[0]',
      'spec.allowSpoofedSourcePrefixes[1]',
    ]);
  });
});

describe('checkReservedName', () => {
  it('reports knp.default.* names on objects not written by the converter', () => {
    expect(checkReservedName(np('knp.default.web'), { asConverter: false })).toEqual([
      {
        path: 'metadata.name',
        message: 'names starting "knp.default." are reserved for policies converted from Kubernetes NetworkPolicies',
      },
    ]);
  });

  it('accepts the converter writing a default-tier NetworkPolicy', () => {
    expect(checkReservedName(np('knp.default.web', { tier: 'default' }), { asConverter: true })).toEqual([]);
    expect(checkReservedName(np('knp.default.web'), { asConverter: true })).toEqual([]);
  });

  it('holds the converter to NetworkPolicy in the default tier', () => {
    expect(pathsOf(checkReservedName({ ...gnp('knp.default.web', { tier: 'security' }) }, { asConverter: true }))).toEqual([
      'metadata.name',
      'spec.tier',
    ]);
  });

  it('ignores other names', () => {
    expect(checkReservedName(np('web'), { asConverter: false })).toEqual([]);
    expect(checkReservedName(np('default.knp.default.web'), { asConverter: false })).toEqual([]);
    expect(checkReservedName('nonsense', { asConverter: false })).toEqual([]);
  });
});

describe('NetworkSet and GlobalNetworkSet', () => {
  const set = (kind: 'NetworkSet' | 'GlobalNetworkSet', nets: unknown, namespace?: string): unknown => ({
    apiVersion: 'projectcalico.org/v3',
    kind,
    metadata: { name: 'saas-allow', labels: { role: 'trusted-saas' }, ...(namespace === undefined ? {} : { namespace }) },
    spec: { nets },
  });

  it('accepts CIDRs and single addresses of both families; a set without spec is empty', () => {
    expect(validateResource(set('GlobalNetworkSet', ['52.1.0.0/16', '198.51.100.7', '2600:1f00::/40']))).toEqual([]);
    expect(validateResource(set('NetworkSet', ['10.0.0.0/8'], 'shop'))).toEqual([]);
    expect(validateResource({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata: { name: 'empty' } })).toEqual([]);
  });

  it('names the entry that is not a CIDR, warns about host bits, and requires a namespace only of a NetworkSet', () => {
    expect(validateResource(set('GlobalNetworkSet', ['52.1.0.0/16', 'not-a-cidr', '10.0.0.1/33']))).toEqual([
      { path: 'spec.nets[1]', message: '"not-a-cidr" is not a CIDR or IP address (unable to parse IP)' },
      { path: 'spec.nets[2]', message: '"10.0.0.1/33" has an invalid prefix length (IPv4 allows 0-32)' },
    ]);
    expect(validateResource(set('GlobalNetworkSet', ['52.1.2.3/16']))).toEqual([
      { path: 'spec.nets[0]', message: '"52.1.2.3/16" has host bits set; the network 52.1.0.0/16 is used', severity: 'warning' },
    ]);
    expect(validateResource(set('NetworkSet', ['10.0.0.0/8']))).toEqual([{ path: 'metadata.namespace', message: 'namespace is required: NetworkSet is a namespaced kind' }]);
    expect(applyDefaults(set('NetworkSet', ['10.0.0.0/8']) as V3Resource).metadata.namespace).toBe('default');
  });

  it('rejects a set that claims a namespace through projectcalico.org/namespace (issue 27 item 4; Calico validateGlobalNetworkSet)', () => {
    const claim = (kind: 'NetworkSet' | 'GlobalNetworkSet', namespace?: string): unknown => ({
      apiVersion: 'projectcalico.org/v3',
      kind,
      metadata: { name: 'inject', labels: { 'projectcalico.org/namespace': 'ns1', role: 'db' }, ...(namespace === undefined ? {} : { namespace }) },
      spec: { nets: ['203.0.113.0/24'] },
    });
    for (const [kind, ns] of [['GlobalNetworkSet', undefined], ['NetworkSet', 'ns2'], ['NetworkSet', 'ns1']] as const) {
      expect(validateResource(claim(kind, ns))).toEqual([
        {
          path: 'metadata.labels.projectcalico.org/namespace',
          message: `projectcalico.org/namespace is not a valid label name on a ${kind}: Calico sets it from the namespace an object is in, and namespace-scoped rule selectors would match the set's nets as that namespace's`,
        },
      ]);
    }
    // Other projectcalico.org labels, and the label on other kinds, are not this rule's business.
    expect(validateResource({ ...(claim('GlobalNetworkSet') as object), metadata: { name: 'ok', labels: { 'projectcalico.org/name': 'x' } } })).toEqual([]);
  });
});
