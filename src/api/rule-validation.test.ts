/**
 * Rule-level validation, exercised through a NetworkPolicy (or a GlobalNetworkPolicy where
 * the rule differs by scope). Each test states one Calico rule.
 */
import { describe, expect, it } from 'vitest';
import type { FieldError } from './field-error.ts';
import { validateResource } from './validation.ts';
import { SERVICES_NAMESPACE_DEFAULT_MESSAGE } from './rule-validation.ts';

function np(spec: Record<string, unknown>): unknown {
  return { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'web', namespace: 'shop' }, spec };
}
function gnp(spec: Record<string, unknown>): unknown {
  return { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'web' }, spec };
}
/** Findings for one ingress rule. */
function ingress(rule: unknown): FieldError[] {
  return validateResource(np({ ingress: [rule] }));
}
function egress(rule: unknown): FieldError[] {
  return validateResource(np({ egress: [rule] }));
}
const errors = (findings: FieldError[]) => findings.filter((f) => f.severity !== 'warning');

describe('action', () => {
  it.each(['Allow', 'Deny', 'Log', 'Pass'])('accepts %s', (action) => {
    expect(validateResource(np({ ingress: [{ action }, { action: 'Deny' }] }))).toEqual([]);
  });

  it('requires an action', () => {
    expect(ingress({})).toEqual([{ path: 'spec.ingress[0].action', message: 'action is required (Allow, Deny, Log or Pass)' }]);
  });

  it('rejects unknown actions and wrong case, naming the valid ones', () => {
    expect(ingress({ action: 'Reject' })).toEqual([
      { path: 'spec.ingress[0].action', message: 'action "Reject" is not valid (use Allow, Deny, Log or Pass)' },
    ]);
    expect(ingress({ action: 'pass' })).toEqual([
      { path: 'spec.ingress[0].action', message: 'action "pass" is not valid: actions are case-sensitive (use "Pass")' },
    ]);
  });
});

describe('ipVersion', () => {
  it('accepts 4 and 6 only', () => {
    expect(ingress({ action: 'Allow', ipVersion: 4 })).toEqual([]);
    expect(ingress({ action: 'Allow', ipVersion: 6 })).toEqual([]);
    expect(ingress({ action: 'Allow', ipVersion: 5 })).toEqual([
      { path: 'spec.ingress[0].ipVersion', message: 'ipVersion must be 4 or 6, not 5' },
    ]);
  });
});

describe('protocol', () => {
  it('accepts names and numbers 1-255 in protocol and notProtocol', () => {
    expect(ingress({ action: 'Allow', protocol: 'UDPLite', notProtocol: 47 })).toEqual([]);
  });

  it('reports a bad protocol and a bad notProtocol separately', () => {
    expect(ingress({ action: 'Allow', protocol: 'tcp', notProtocol: 0 })).toEqual([
      { path: 'spec.ingress[0].protocol', message: 'protocol "tcp" is not valid: names are case-sensitive (use "TCP")' },
      { path: 'spec.ingress[0].notProtocol', message: 'protocol 0 is out of range (1-255)' },
    ]);
  });
});

describe('ICMP fields', () => {
  it('accepts type 0-254 and code 0-255 with protocol ICMP or ICMPv6', () => {
    expect(ingress({ action: 'Allow', protocol: 'ICMP', icmp: { type: 0, code: 255 } })).toEqual([]);
    expect(ingress({ action: 'Allow', protocol: 'ICMPv6', icmp: { type: 254 } })).toEqual([]);
    expect(ingress({ action: 'Allow', protocol: 1, icmp: { type: 8 } })).toEqual([]);
  });

  it('rejects type 255 and code 256', () => {
    expect(ingress({ action: 'Allow', protocol: 'ICMP', icmp: { type: 255 } })).toEqual([
      { path: 'spec.ingress[0].icmp.type', message: 'ICMP type must be an integer 0-254, not 255' },
    ]);
    expect(ingress({ action: 'Allow', protocol: 'ICMP', notICMP: { type: 3, code: 256 } })).toEqual([
      { path: 'spec.ingress[0].notICMP.code', message: 'ICMP code must be an integer 0-255, not 256' },
    ]);
  });

  it('rejects a code without a type (an iptables limitation)', () => {
    expect(ingress({ action: 'Allow', protocol: 'ICMP', icmp: { code: 0 } })).toEqual([
      { path: 'spec.ingress[0].icmp.code', message: 'ICMP code specified without an ICMP type' },
    ]);
  });

  it('requires protocol ICMP or ICMPv6 for icmp', () => {
    const want = [{ path: 'spec.ingress[0].icmp', message: 'ICMP fields require protocol to be ICMP or ICMPv6' }];
    expect(ingress({ action: 'Allow', icmp: { type: 8 } })).toEqual(want);
    expect(ingress({ action: 'Allow', protocol: 'TCP', icmp: { type: 8 } })).toEqual(want);
  });

  it('requires ipVersion 4 with ICMP and 6 with ICMPv6 (protocol or notProtocol)', () => {
    expect(ingress({ action: 'Allow', protocol: 'ICMP', ipVersion: 6 })).toEqual([
      { path: 'spec.ingress[0].ipVersion', message: 'protocol ICMP requires ipVersion 4' },
    ]);
    expect(ingress({ action: 'Allow', notProtocol: 'ICMPv6', ipVersion: 4 })).toEqual([
      { path: 'spec.ingress[0].ipVersion', message: 'notProtocol ICMPv6 requires ipVersion 6' },
    ]);
    expect(ingress({ action: 'Allow', protocol: 'ICMP', icmp: { type: 8 } })).toEqual([]);
  });
});

describe('ports', () => {
  it('reports each bad port at its own index with a message naming the value', () => {
    expect(ingress({ action: 'Allow', protocol: 'TCP', destination: { ports: [80, '80-90', 'http', '90:80', 0] } })).toEqual([
      { path: 'spec.ingress[0].destination.ports[1]', message: '"80-90" is not a port or a range (use "80:90")' },
      { path: 'spec.ingress[0].destination.ports[3]', message: 'port range "90:80" has min greater than max' },
      { path: 'spec.ingress[0].destination.ports[4]', message: 'port 0 is out of range (1-65535)' },
    ]);
  });

  it('accepts ports with TCP, UDP and SCTP, by name or number', () => {
    for (const protocol of ['TCP', 'UDP', 'SCTP', 6, 17, 132]) {
      expect(ingress({ action: 'Allow', protocol, source: { ports: [1] }, destination: { notPorts: ['1:2'] } })).toEqual([]);
    }
  });

  it('rejects numeric ports without a protocol, but allows named ports (they carry their own protocol)', () => {
    expect(ingress({ action: 'Allow', destination: { ports: ['http'], notPorts: ['metrics'] } })).toEqual([]);
    expect(ingress({ action: 'Allow', destination: { ports: ['http', 80] } })).toEqual([
      {
        path: 'spec.ingress[0].destination.ports',
        message: 'rules with numeric port or port range must set protocol to TCP or UDP or SCTP',
      },
    ]);
  });

  it('rejects any ports with a protocol that has none', () => {
    expect(ingress({ action: 'Allow', protocol: 'ICMP', source: { notPorts: ['http'] } })).toEqual([
      { path: 'spec.ingress[0].source.notPorts', message: 'rules that specify ports must set protocol to TCP or UDP or SCTP' },
    ]);
    expect(ingress({ action: 'Allow', protocol: 47, destination: { ports: [] } })).toEqual([]);
  });

  it('limits a port list to 50 entries', () => {
    const ports = Array.from({ length: 51 }, (_, i) => i + 1);
    expect(ingress({ action: 'Allow', protocol: 'TCP', destination: { ports } })).toEqual([
      { path: 'spec.ingress[0].destination.ports', message: 'has 51 items; at most 50 are allowed' },
    ]);
  });
});

describe('nets', () => {
  it('accepts v4 and v6 CIDRs and plain addresses', () => {
    expect(ingress({ action: 'Allow', source: { nets: ['10.0.0.0/8', '192.168.0.1'] } })).toEqual([]);
    expect(ingress({ action: 'Allow', source: { notNets: ['2001:db8::/32', '::1'] } })).toEqual([]);
  });

  it('rejects strings that are not CIDRs', () => {
    expect(ingress({ action: 'Allow', source: { nets: ['10.0.0.0/33', 'ten'] } })).toEqual([
      { path: 'spec.ingress[0].source.nets[0]', message: '"10.0.0.0/33" has an invalid prefix length (IPv4 allows 0-32)' },
      { path: 'spec.ingress[0].source.nets[1]', message: '"ten" is not a CIDR or IP address (unable to parse IP)' },
    ]);
  });

  it('rejects a CIDR with host bits set, as Calico does, and names the network meant', () => {
    expect(ingress({ action: 'Allow', source: { nets: ['10.1.2.3/16'] } })).toEqual([
      { path: 'spec.ingress[0].source.nets[0]', message: '"10.1.2.3/16" has host bits set (did you mean "10.1.0.0/16"?)' },
    ]);
  });

  it('rejects a rule that mixes IPv4 and IPv6 CIDRs', () => {
    expect(ingress({ action: 'Allow', source: { nets: ['10.0.0.0/8'] }, destination: { nets: ['fd00::/8'] } })).toEqual([
      { path: 'spec.ingress[0].destination.nets', message: 'rule contains both IPv4 and IPv6 CIDRs' },
    ]);
  });

  it('rejects CIDRs of the other family than ipVersion', () => {
    expect(ingress({ action: 'Allow', ipVersion: 6, destination: { notNets: ['10.0.0.0/8'] } })).toEqual([
      { path: 'spec.ingress[0].destination.notNets[0]', message: '"10.0.0.0/8" is an IPv4 CIDR but the rule has ipVersion 6' },
    ]);
  });

  it('rejects a catch-all in notNets, which would match nothing', () => {
    const message = 'catch-all CIDR in negation creates logical contradiction (matches no traffic)';
    expect(ingress({ action: 'Allow', source: { notNets: ['0.0.0.0/0'] } })).toEqual([
      { path: 'spec.ingress[0].source.notNets[0]', message },
    ]);
    expect(ingress({ action: 'Allow', source: { notNets: ['0:0:0::/0'] } })).toEqual([
      { path: 'spec.ingress[0].source.notNets[0]', message },
    ]);
    expect(ingress({ action: 'Allow', source: { nets: ['0.0.0.0/0'] } })).toEqual([]);
  });
});

describe('selectors in rules', () => {
  it('reports the parser message at the selector field', () => {
    const rules = [{ action: 'Allow' }, { action: 'Allow' }, { action: 'Allow', source: { selector: "role == 'db' && && tier == 'x'" } }];
    expect(validateResource(np({ ingress: rules }))).toEqual([
      { path: 'spec.ingress[2].source.selector', message: "unexpected token '&&' at column 17" },
    ]);
  });

  it('parses selector, notSelector, namespaceSelector and serviceAccounts.selector', () => {
    const bad = "a == 'b' &&";
    const findings = ingress({
      action: 'Allow',
      source: { selector: bad, notSelector: bad, namespaceSelector: bad, serviceAccounts: { selector: bad } },
    });
    expect(findings.map((f) => f.path)).toEqual([
      'spec.ingress[0].source.selector',
      'spec.ingress[0].source.notSelector',
      'spec.ingress[0].source.namespaceSelector',
      'spec.ingress[0].source.serviceAccounts.selector',
    ]);
  });

  it('allows global() only as the whole of a namespaceSelector', () => {
    expect(ingress({ action: 'Allow', source: { namespaceSelector: 'global()' } })).toEqual([]);
    expect(ingress({ action: 'Allow', source: { namespaceSelector: "global() && a == 'b'" } })).toEqual([
      { path: 'spec.ingress[0].source.namespaceSelector', message: 'global() cannot be combined with other selectors' },
    ]);
    expect(ingress({ action: 'Allow', source: { selector: 'global()' } })).toEqual([
      { path: 'spec.ingress[0].source.selector', message: 'global() can only be used in an EntityRule namespaceSelector' },
    ]);
  });
});

describe('service accounts', () => {
  it('accepts names and a selector', () => {
    expect(ingress({ action: 'Allow', source: { serviceAccounts: { names: ['frontend'], selector: "team == 'a'" } } })).toEqual([]);
  });

  it('admits an empty name as Calico does (no check on names), with a warning', () => {
    expect(ingress({ action: 'Allow', source: { serviceAccounts: { names: [''] } } })).toEqual([
      { path: 'spec.ingress[0].source.serviceAccounts.names[0]', message: 'an empty service account name matches no pod', severity: 'warning' },
    ]);
  });

  it('rejects a repeated name (the CRD list is a set) and non-list names', () => {
    expect(ingress({ action: 'Allow', source: { serviceAccounts: { names: ['a', 'b', 'a'] } } })).toEqual([
      { path: 'spec.ingress[0].source.serviceAccounts.names[2]', message: '"a" is listed more than once' },
    ]);
    expect(ingress({ action: 'Allow', source: { serviceAccounts: { names: 'frontend' } } })).toEqual([
      { path: 'spec.ingress[0].source.serviceAccounts.names', message: 'must be a list, not a string' },
    ]);
  });
});

describe('services', () => {
  it('accepts a service in an egress destination and an ingress source', () => {
    expect(egress({ action: 'Allow', destination: { services: { name: 'api', namespace: 'shop' } } })).toEqual([]);
    expect(ingress({ action: 'Allow', source: { services: { name: 'api', namespace: 'shop' } } })).toEqual([]);
  });

  it("warns that a NetworkPolicy's service without a namespace means the policy's own namespace here and nothing to Felix (the Felix differential's find)", () => {
    expect(ingress({ action: 'Allow', source: { services: { name: 'api' } } })).toEqual([{ path: 'spec.ingress[0].source.services.namespace', message: SERVICES_NAMESPACE_DEFAULT_MESSAGE, severity: 'warning' }]);
  });

  it('requires a name and excludes selectors, service accounts, nets and ports', () => {
    expect(
      egress({
        action: 'Allow',
        protocol: 'TCP',
        destination: {
          services: {},
          selector: "a == 'b'",
          namespaceSelector: 'all()',
          serviceAccounts: { names: ['x'] },
          nets: ['10.0.0.0/8'],
          ports: [80],
        },
      }).map((f) => f.message),
    ).toEqual([
      'services must specify a service name',
      'cannot specify NamespaceSelector and Services on the same rule',
      'cannot specify Selector/NotSelector and Services on the same rule',
      'cannot specify ServiceAccounts and Services on the same rule',
      'cannot specify Nets/NotNets and Services on the same rule',
      'ports and notPorts cannot be specified with services',
      SERVICES_NAMESPACE_DEFAULT_MESSAGE,
    ]);
  });

  it('rejects services on the local side of a policy rule', () => {
    expect(egress({ action: 'Allow', source: { services: { name: 'api' } } })).toEqual([
      { path: 'spec.egress[0].source.services', message: 'services are not allowed in the source of an egress rule' },
    ]);
    expect(ingress({ action: 'Allow', destination: { services: { name: 'api' } } })).toEqual([
      { path: 'spec.ingress[0].destination.services', message: 'services are not allowed in the destination of an ingress rule' },
    ]);
  });

  it('requires a service namespace in a GlobalNetworkPolicy', () => {
    expect(validateResource(gnp({ egress: [{ action: 'Allow', destination: { services: { name: 'api' } } }] }))).toEqual([
      { path: 'spec.egress[0].destination.services.namespace', message: 'a GlobalNetworkPolicy must give the namespace of a service' },
    ]);
  });
});

describe('rule shape', () => {
  it('rejects unknown fields (typos) and wrong types', () => {
    expect(ingress({ action: 'Allow', sourc: {}, destination: { port: [80] } })).toEqual([
      { path: 'spec.ingress[0].sourc', message: 'unknown field "sourc"' },
      { path: 'spec.ingress[0].destination.port', message: 'unknown field "port"' },
    ]);
    expect(ingress('Allow')).toEqual([{ path: 'spec.ingress[0]', message: 'must be an object, not a string' }]);
    expect(ingress({ action: 'Allow', source: { nets: '10.0.0.0/8' } })).toEqual([
      { path: 'spec.ingress[0].source.nets', message: 'must be a list, not a string' },
    ]);
  });

  it('checks rule metadata annotations keys', () => {
    expect(ingress({ action: 'Allow', metadata: { annotations: { 'bad key': 'x' } } })).toEqual([
      {
        path: 'spec.ingress[0].metadata.annotations["bad key"]',
        message: "invalid key: the name part must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
      },
    ]);
  });
});

describe('HTTP match', () => {
  it('is accepted with a warning that Tessera does not enforce it', () => {
    expect(ingress({ action: 'Allow', http: { methods: ['GET'], paths: [{ prefix: '/api' }] } })).toEqual([
      {
        path: 'spec.ingress[0].http',
        message: 'HTTP match is not enforced by Tessera (no application-layer policy); the rule matches as if http were absent',
        severity: 'warning',
      },
    ]);
  });

  it("keeps Calico's rules: unique methods, one of exact/prefix, absolute paths", () => {
    const findings = errors(
      ingress({
        action: 'Allow',
        http: { methods: ['GET', 'GET'], paths: [{ exact: '/a', prefix: '/b' }, {}, { exact: 'a?b' }] },
      }),
    );
    expect(findings).toEqual([
      { path: 'spec.ingress[0].http.methods[1]', message: 'method "GET" is listed more than once' },
      { path: 'spec.ingress[0].http.paths[0]', message: "set only one of 'exact' and 'prefix'" },
      { path: 'spec.ingress[0].http.paths[1]', message: "set one of 'exact' or 'prefix'" },
      {
        path: 'spec.ingress[0].http.paths[2].exact',
        message: `"a?b" is not a valid path (must start with '/' and not contain '?', '#' or spaces)`,
      },
    ]);
  });

  it('requires protocol TCP (or none), action Allow, and an ingress rule', () => {
    expect(errors(ingress({ action: 'Deny', protocol: 'UDP', http: {} })).map((f) => f.message)).toEqual([
      'rules with HTTP match must have protocol TCP or unset',
      'HTTP match is only valid on Allow rules',
    ]);
    expect(errors(egress({ action: 'Allow', http: {} })).map((f) => f.message)).toEqual([
      'HTTP match is not allowed in egress rules',
    ]);
  });
});

describe('nets are sets', () => {
  it('rejects a CIDR repeated in nets or notNets, as the API server does for a set list', () => {
    expect(ingress({ action: 'Allow', source: { nets: ['10.0.0.0/8', '10.0.0.0/8'] }, destination: { notNets: ['10.1.0.0/16', '10.2.0.0/16', '10.1.0.0/16'] } })).toEqual([
      { path: 'spec.ingress[0].source.nets[1]', message: '"10.0.0.0/8" is listed more than once' },
      { path: 'spec.ingress[0].destination.notNets[2]', message: '"10.1.0.0/16" is listed more than once' },
    ]);
  });
});
