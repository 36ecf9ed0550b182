import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

import { kindOf } from './keys.ts';
import { DECLARED_V3_KINDS, V3_KINDS } from './types.ts';
import { validateResource } from './validation.ts';

const hep = (spec: Record<string, unknown> | undefined, name = 'node-1-eth0'): Record<string, unknown> => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'HostEndpoint',
  metadata: { name, labels: { role: 'ingress' } },
  ...(spec === undefined ? {} : { spec }),
});

describe('HostEndpoint validation (libcalico-go validateHostEndpointSpec and field tags)', () => {
  it('accepts what Calico accepts: interface and node, expected IPs only, both, "*", prefixed profiles, clashing port names', () => {
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0' }))).toEqual([]);
    expect(validateResource(hep({ node: 'node01', expectedIPs: ['192.168.0.1', 'fe80::1'] }))).toEqual([]);
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0', expectedIPs: ['10.0.0.1', '2001:db8::1'] }))).toEqual([]);
    expect(validateResource(hep({ node: 'node01', interfaceName: '*' }))).toEqual([]);
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0', profiles: ['knp.default.fun', 'knp.default.funner.11234-a', 'projectcalico-default-allow'] }))).toEqual([]);
    expect(
      validateResource(
        hep({
          node: 'node01',
          interfaceName: 'eth0',
          ports: [
            { name: 'a-valid-port', protocol: 'TCP', port: 1234 },
            { name: 'a-valid-port', protocol: 'UDP', port: 5456 },
            { name: 'sctp9', protocol: 'SCTP', port: 65535 },
            { name: 'by-number', protocol: 6, port: 1 },
            { name: 'numeric-string', protocol: '17', port: 53 },
          ],
        }),
      ),
    ).toEqual([]);
    // Interface names are Linux's: upper case, '_' and '.' included; 15 characters at most.
    expect(validateResource(hep({ node: 'node01', interfaceName: 'Ens3_f0.100-ab' }))).toEqual([]);
    expect(validateResource(hep({ node: 'node01', interfaceName: 'x'.repeat(15) }))).toEqual([]);
  });

  it('requires a node: "no node has been specified" (absent, empty or with no spec at all)', () => {
    expect(validateResource(hep({ interfaceName: 'eth0' }))).toEqual([{ path: 'spec.node', message: 'no node has been specified' }]);
    expect(validateResource(hep({ node: '', interfaceName: 'eth0' }))).toEqual([{ path: 'spec.node', message: 'no node has been specified' }]);
    expect(validateResource(hep(undefined))).toEqual([{ path: 'spec', message: 'spec is required for a HostEndpoint' }]);
    // validator_test "should reject host endpoint with no config": both rules.
    expect(validateResource(hep({}))).toEqual([
      { path: 'spec.node', message: 'no node has been specified' },
      { path: 'spec.interfaceName', message: 'no interface or expected IPs have been specified' },
    ]);
  });

  it('rejects a node that is not a name', () => {
    expect(validateResource(hep({ node: 'Node_1', interfaceName: 'eth0' }))).toEqual([
      { path: 'spec.node', message: '"Node_1" is not a valid node name (DNS-1123 subdomain)' },
    ]);
    expect(validateResource(hep({ node: 7, interfaceName: 'eth0' }))).toEqual([{ path: 'spec.node', message: 'must be a string, not a number' }]);
  });

  it('requires an interface or expected IPs: empty name and an empty list is neither', () => {
    expect(validateResource(hep({ node: 'node01', interfaceName: '', expectedIPs: [] }))).toEqual([
      { path: 'spec.interfaceName', message: 'no interface or expected IPs have been specified' },
    ]);
  });

  it('rejects interface names Calico rejects: too long, "/", a space, "**", "eth*"', () => {
    for (const bad of ['x'.repeat(16), 'cali/0', 'eth 0', '**', 'eth*', '*eth0']) {
      expect(validateResource(hep({ node: 'node01', interfaceName: bad })), bad).toEqual([
        { path: 'spec.interfaceName', message: `${JSON.stringify(bad)} is not a valid interface name (use "*", or 1-15 of alphanumerics, '_', '.' and '-')` },
      ]);
    }
  });

  it('takes addresses, not networks or names, as expected IPs, and each once (the CRD lists them as a set)', () => {
    const findings = validateResource(hep({ node: 'node01', expectedIPs: ['10.0.0.1/32', 'node01', '10.0.0.256', '10.0.0.1', '10.0.0.1'] }));
    expect(findings.map((f) => f.path)).toEqual(['spec.expectedIPs[0]', 'spec.expectedIPs[1]', 'spec.expectedIPs[2]', 'spec.expectedIPs[4]']);
    expect(findings[0]?.message).toMatch(/^"10\.0\.0\.1\/32" is not an IP address/);
    expect(findings[3]).toEqual({ path: 'spec.expectedIPs[4]', message: '"10.0.0.1" is listed more than once' });
    // A list of non-strings, and a list that is not one.
    expect(validateResource(hep({ node: 'node01', expectedIPs: [10] })).map((f) => f.path)).toEqual(['spec.expectedIPs[0]']);
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0', expectedIPs: '10.0.0.1' }))).toEqual([
      { path: 'spec.expectedIPs', message: 'must be a list, not a string' },
    ]);
  });

  it('rejects profile names that are not names, and repeats (validator_test ".fun")', () => {
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0', profiles: ['.fun', 'ok', 'ok'] }))).toEqual([
      { path: 'spec.profiles[0]', message: '".fun" is not a valid profile name (DNS-1123 subdomain)' },
      { path: 'spec.profiles[2]', message: '"ok" is listed more than once' },
    ]);
  });

  it('checks named ports: a Kubernetes port name, a protocol with ports, a port 1-65535, no other field', () => {
    const findings = validateResource(
      hep({
        node: 'node01',
        interfaceName: 'eth0',
        ports: [
          { protocol: 'TCP', port: 1234 },
          { name: 'HTTP', protocol: 'tcp', port: 80 },
          { name: 'icmp-port', protocol: 'ICMP', port: 1 },
          { name: 'numbered', protocol: 123, port: 0 },
          { name: 'big', protocol: 'UDP', port: 65536 },
          { name: 'host', protocol: 'TCP', port: 22, hostPort: 22 },
          { name: 'a--b', port: 22 },
          'ssh',
        ],
      }),
    );
    expect(findings).toEqual([
      { path: 'spec.ports[0].name', message: 'name is required (a Kubernetes port name)' },
      { path: 'spec.ports[1].name', message: '"HTTP" is not a valid port name (1-15 of lower-case letters, digits and \'-\', with at least one letter)' },
      { path: 'spec.ports[1].protocol', message: 'protocol "tcp" is not valid: names are case-sensitive (use "TCP")' },
      { path: 'spec.ports[2].protocol', message: '"ICMP" does not have ports (use TCP, UDP or SCTP)' },
      { path: 'spec.ports[3].protocol', message: '123 does not have ports (use TCP, UDP or SCTP)' },
      { path: 'spec.ports[3].port', message: 'port is required (1-65535)' },
      { path: 'spec.ports[4].port', message: 'port must be an integer 1-65535, not 65536' },
      { path: 'spec.ports[5].hostPort', message: 'unknown field "hostPort"' },
      { path: 'spec.ports[6].name', message: '"a--b" is not a valid port name (1-15 of lower-case letters, digits and \'-\', with at least one letter)' },
      { path: 'spec.ports[6].protocol', message: 'protocol is required (TCP, UDP or SCTP)' },
      { path: 'spec.ports[7]', message: 'must be an object, not a string' },
    ]);
  });

  it('rejects fields a HostEndpoint does not have, and a namespace is ignored with a warning (cluster-scoped)', () => {
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0', ipNetworks: ['10.0.0.1/32'] }))).toEqual([
      { path: 'spec.ipNetworks', message: 'unknown field "ipNetworks"' },
    ]);
    const namespaced = { ...hep({ node: 'node01', interfaceName: 'eth0' }), metadata: { name: 'h', namespace: 'shop' } };
    expect(validateResource(namespaced)).toEqual([{ path: 'metadata.namespace', message: 'HostEndpoint is cluster-scoped; the namespace is ignored', severity: 'warning' }]);
  });

  it('checks the name as a DNS-1123 subdomain and the labels as labels', () => {
    expect(validateResource(hep({ node: 'node01', interfaceName: 'eth0' }, 'Node_1'))).toEqual([
      { path: 'metadata.name', message: '"Node_1" is not a valid HostEndpoint name: use a DNS-1123 subdomain (lower-case letters, digits, \'-\' and \'.\')' },
    ]);
  });
});

describe('HostEndpoint is read by the tools', () => {
  it('is a declared kind, validated, and among the kinds kindOf reads', () => {
    expect(DECLARED_V3_KINDS).toContain('HostEndpoint');
    expect(V3_KINDS).toContain('HostEndpoint');
    expect(kindOf(hep({ node: 'node01', interfaceName: 'eth0' }))).toBe('HostEndpoint');
  });
});

describe('HostEndpoint validation agrees with the CRD fixtures (what the API server admits)', () => {
  const testdata = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds', 'testdata');
  const heps = (dir: string): Array<readonly [string, Record<string, unknown>, string | undefined]> =>
    readdirSync(join(testdata, dir))
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => {
        const text = readFileSync(join(testdata, dir, f), 'utf8');
        const header = /^# expect: (.*)$/m.exec(text)?.[1];
        return parseAllDocuments(text)
          .map((d) => d.toJS() as Record<string, unknown>)
          .filter((o) => o.kind === 'HostEndpoint')
          .map((o) => [`${dir}/${f}`, o, header] as const);
      });

  it.each(heps('valid'))('accepts %s', (_file, obj) => {
    expect(validateResource(obj)).toEqual([]);
  });

  it.each(heps('invalid'))('rejects %s at the field the API server names', (_file, obj, field) => {
    expect(validateResource(obj).some((f) => field !== undefined && f.path.startsWith(field))).toBe(true);
  });

  it.each(heps('invalid-cel'))('rejects %s, which only a CEL rule of the CRD rejects', (_file, obj) => {
    expect(validateResource(obj).length).toBeGreaterThan(0);
  });

  it('covers every HostEndpoint fixture', () => {
    expect(heps('valid').length).toBe(3);
    expect(heps('invalid').length + heps('invalid-cel').length).toBe(11);
  });
});
