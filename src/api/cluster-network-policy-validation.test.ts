import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { validateClusterNetworkPolicy } from './cluster-network-policy-validation.ts';
import type { CnpChannel } from './cluster-network-policy-schema.ts';
import { isError } from './field-error.ts';
import type { FieldError } from './field-error.ts';

const cnp = (spec: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'policy.networking.k8s.io/v1beta1',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'p' },
  ...(spec === undefined ? {} : { spec }),
  ...extra,
});
const base = { tier: 'Admin', priority: 10, subject: { namespaces: {} } };
const errors = (obj: unknown, channel?: CnpChannel): FieldError[] => validateClusterNetworkPolicy(obj, channel === undefined ? {} : { channel }).filter(isError);
const paths = (obj: unknown, channel?: CnpChannel): string[] => errors(obj, channel).map((f) => f.path);

describe('validateClusterNetworkPolicy (network-policy-api v0.3.0 CRD rules)', () => {
  it('accepts a minimal policy under both versions, and a policy with no rules', () => {
    expect(validateClusterNetworkPolicy(cnp(base))).toEqual([]);
    expect(validateClusterNetworkPolicy(cnp(base, { apiVersion: 'policy.networking.k8s.io/v1alpha2' }))).toEqual([]);
    expect(validateClusterNetworkPolicy(cnp({ ...base, ingress: [], egress: null }))).toEqual([]);
  });

  it('names the object envelope: apiVersion v1alpha1 (ANP) is not a CNP version, kind, metadata.name, spec', () => {
    expect(paths(cnp(base, { apiVersion: 'policy.networking.k8s.io/v1alpha1' }))).toEqual(['apiVersion']);
    expect(paths(cnp(base, { kind: 'AdminNetworkPolicy' }))).toEqual(['kind']);
    expect(paths(cnp(base, { metadata: { name: 'Bad_Name' } }))).toEqual(['metadata.name']);
    expect(paths(cnp(undefined))).toEqual(['spec']);
    expect(errors(cnp({}))).toEqual([
      { path: 'spec.tier', message: 'Required value' },
      { path: 'spec.priority', message: 'Required value' },
      { path: 'spec.subject', message: 'Required value' },
    ]);
  });

  it('priority 0..1000 integers; tier Admin|Baseline (the exact adversarial values)', () => {
    expect(errors(cnp({ ...base, priority: 1001 }))).toEqual([
      { path: 'spec.priority', message: 'Invalid value: 1001: spec.priority in body should be less than or equal to 1000' },
    ]);
    expect(paths(cnp({ ...base, priority: -1 }))).toEqual(['spec.priority']);
    expect(paths(cnp({ ...base, priority: 1.5 }))).toEqual(['spec.priority']);
    expect(paths(cnp({ ...base, priority: '5' }))).toEqual(['spec.priority']);
    expect(validateClusterNetworkPolicy(cnp({ ...base, priority: 0 }))).toEqual([]);
    expect(validateClusterNetworkPolicy(cnp({ ...base, priority: 1000, tier: 'Baseline' }))).toEqual([]);
    expect(errors(cnp({ ...base, tier: 'admin' }))).toEqual([{ path: 'spec.tier', message: 'Unsupported value: "admin": supported values: "Admin", "Baseline"' }]);
  });

  it('subject: exactly one of namespaces and pods; pods needs podSelector', () => {
    expect(paths(cnp({ ...base, subject: { namespaces: {}, pods: { podSelector: {} } } }))).toEqual(['spec.subject']);
    expect(paths(cnp({ ...base, subject: {} }))).toEqual(['spec.subject']);
    // A null field is dropped by the API server: it does not count.
    expect(paths(cnp({ ...base, subject: { namespaces: {}, pods: null } }))).toEqual([]);
    expect(paths(cnp({ ...base, subject: { pods: { namespaceSelector: {} } } }))).toEqual(['spec.subject.pods.podSelector']);
    expect(paths(cnp({ ...base, subject: { namespaces: { matchLabels: { a: 1 } } } }))).toEqual(['spec.subject.namespaces.matchLabels.a']);
    expect(paths(cnp({ ...base, subject: { namespaces: { matchExpressions: [{ operator: 'In' }] } } }))).toEqual(['spec.subject.namespaces.matchExpressions[0].key']);
  });

  it('warns (not an error: the API server admits them) about label-selector operators and values metav1 would refuse', () => {
    const found = validateClusterNetworkPolicy(cnp({ ...base, subject: { namespaces: { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }, { key: 'b', operator: 'In' }, { key: 'c', operator: 'Exists', values: ['y'] }] } } }));
    expect(found.map((f) => [f.path, f.severity])).toEqual([
      ['spec.subject.namespaces.matchExpressions[0].operator', 'warning'],
      ['spec.subject.namespaces.matchExpressions[1].values', 'warning'],
      ['spec.subject.namespaces.matchExpressions[2].values', 'warning'],
    ]);
  });

  it('rules: action Accept|Deny|Pass required, peers 1..25 required, name at most 100 characters, at most 25 rules', () => {
    const rule = (r: Record<string, unknown>): Record<string, unknown> => cnp({ ...base, ingress: [r] });
    expect(paths(rule({ action: 'Allow', from: [{ namespaces: {} }] }))).toEqual(['spec.ingress[0].action']);
    expect(paths(rule({ from: [{ namespaces: {} }] }))).toEqual(['spec.ingress[0].action']);
    expect(paths(rule({ action: 'Deny' }))).toEqual(['spec.ingress[0].from']);
    expect(paths(rule({ action: 'Deny', from: [] }))).toEqual(['spec.ingress[0].from']);
    expect(paths(rule({ action: 'Deny', from: Array.from({ length: 26 }, () => ({ namespaces: {} })) }))).toEqual(['spec.ingress[0].from']);
    expect(paths(rule({ action: 'Deny', name: 'x'.repeat(101), from: [{ namespaces: {} }] }))).toEqual(['spec.ingress[0].name']);
    expect(paths(rule({ action: 'Deny', name: 'x'.repeat(100), from: [{ namespaces: {} }] }))).toEqual([]);
    expect(paths(cnp({ ...base, egress: Array.from({ length: 26 }, () => ({ action: 'Deny', to: [{ namespaces: {} }] })) }))).toEqual(['spec.egress']);
    // `to` on an ingress rule is unknown, and `from` is then missing.
    expect(paths(rule({ action: 'Deny', to: [{ namespaces: {} }] }))).toEqual(['spec.ingress[0].to', 'spec.ingress[0].from']);
  });

  it('peers: exactly one field; networks only on egress; canonical CIDRs, each once', () => {
    const egress = (to: unknown[]): Record<string, unknown> => cnp({ ...base, egress: [{ action: 'Deny', to }] });
    expect(paths(egress([{ namespaces: {}, networks: ['10.0.0.0/8'] }]))).toEqual(['spec.egress[0].to[0]']);
    expect(paths(egress([{}]))).toEqual(['spec.egress[0].to[0]']);
    expect(paths(cnp({ ...base, ingress: [{ action: 'Deny', from: [{ networks: ['10.0.0.0/8'] }] }] }))).toEqual(['spec.ingress[0].from[0].networks', 'spec.ingress[0].from[0]']);
    expect(validateClusterNetworkPolicy(egress([{ networks: ['0.0.0.0/0', '::/0', '10.0.0.0/8', 'fd00::/8', '192.168.1.1/32', '2001:db8::1/128'] }]))).toEqual([]);
    for (const bad of ['10.0.0.1/8', '10.0.0.1', '2001:db8::1', '2001:db8::1/64', '10.0.0.0/33', '10.0.0.0/08', 'fe80::%eth0/64', 'example.com', '']) {
      const found = errors(egress([{ networks: [bad] }]));
      expect(found.map((f) => f.path), bad).toEqual(['spec.egress[0].to[0].networks[0]']);
      expect(found[0]!.message, bad).toContain('Invalid CIDR format provided');
    }
    expect(errors(egress([{ networks: ['10.0.0.1/8'] }]))[0]!.message).toBe('Invalid CIDR format provided (host bits set: 10.0.0.0/8)');
    expect(paths(egress([{ networks: ['10.0.0.0/8', '10.0.0.0/8'] }]))).toEqual(['spec.egress[0].to[0].networks[1]']);
    expect(paths(egress([{ networks: [] }]))).toEqual(['spec.egress[0].to[0].networks']);
  });

  it('protocols: exactly one of tcp/udp/sctp (and destinationNamedPort), a port number 1-65535 or a range start < end', () => {
    const protos = (p: unknown[]): Record<string, unknown> => cnp({ ...base, ingress: [{ action: 'Deny', from: [{ namespaces: {} }], protocols: p }] });
    expect(validateClusterNetworkPolicy(protos([{ tcp: { destinationPort: { number: 80 } } }, { udp: { destinationPort: { range: { start: 1, end: 65535 } } } }, { sctp: { destinationPort: { number: 9003 } } }]))).toEqual([]);
    expect(paths(protos([{ tcp: { destinationPort: { number: 80 } }, udp: { destinationPort: { number: 53 } } }]))).toEqual(['spec.ingress[0].protocols[0]']);
    expect(paths(protos([{}]))).toEqual(['spec.ingress[0].protocols[0]']);
    expect(paths(protos([]))).toEqual(['spec.ingress[0].protocols']);
    expect(paths(protos([{ tcp: {} }]))).toEqual(['spec.ingress[0].protocols[0].tcp']);
    expect(paths(protos([{ tcp: { destinationPort: { number: 0 } } }]))).toEqual(['spec.ingress[0].protocols[0].tcp.destinationPort.number']);
    expect(paths(protos([{ tcp: { destinationPort: { number: 65536 } } }]))).toEqual(['spec.ingress[0].protocols[0].tcp.destinationPort.number']);
    expect(paths(protos([{ tcp: { destinationPort: { number: 80, range: { start: 1, end: 2 } } } }]))).toEqual(['spec.ingress[0].protocols[0].tcp.destinationPort']);
    expect(errors(protos([{ tcp: { destinationPort: { range: { start: 80, end: 80 } } } }]))).toEqual([
      { path: 'spec.ingress[0].protocols[0].tcp.destinationPort.range', message: 'Start port must be less than End port' },
    ]);
    expect(paths(protos([{ udp: { destinationPort: { range: { start: 90, end: 80 } } } }]))).toEqual(['spec.ingress[0].protocols[0].udp.destinationPort.range']);
    expect(paths(protos([{ udp: { destinationPort: { range: { start: 90 } } } }]))).toEqual(['spec.ingress[0].protocols[0].udp.destinationPort.range.end']);
    expect(paths(protos([{ icmp: {} }]))).toEqual(['spec.ingress[0].protocols[0].icmp', 'spec.ingress[0].protocols[0]']);
  });

  it('the experimental fields: accepted with a warning by default, unknown on the standard channel', () => {
    const obj = cnp({
      ...base,
      ingress: [{ action: 'Accept', from: [{ pods: { podSelector: {} } }], protocols: [{ destinationNamedPort: 'web' }] }],
      egress: [{ action: 'Accept', to: [{ nodes: {} }] }, { action: 'Accept', to: [{ domainNames: ['*.example.com'] }] }],
    });
    expect(errors(obj)).toEqual([]);
    expect(validateClusterNetworkPolicy(obj).map((f) => [f.path, f.severity])).toEqual([
      ['spec.ingress[0].protocols[0].destinationNamedPort', 'warning'],
      ['spec.egress[0].to[0].nodes', 'warning'],
      ['spec.egress[1].to[0].domainNames', 'warning'],
    ]);
    expect(paths(obj, 'standard')).toEqual([
      'spec.ingress[0].protocols[0].destinationNamedPort',
      'spec.ingress[0].protocols[0]',
      'spec.egress[0].to[0].nodes',
      'spec.egress[0].to[0]',
      'spec.egress[1].to[0].domainNames',
      'spec.egress[1].to[0]',
    ]);
    expect(errors(obj, 'standard')[0]!.message).toBe('unknown field "destinationNamedPort" (an experimental-channel field: the standard CRD does not have it)');
  });

  it('the experimental rule: no named port with a networks, nodes or domainNames peer in the same egress rule', () => {
    const named = [{ destinationNamedPort: 'web' }];
    for (const peer of [{ networks: ['10.0.0.0/8'] }, { nodes: {} }, { domainNames: ['a.example.com'] }]) {
      expect(errors(cnp({ ...base, egress: [{ action: 'Accept', to: [{ pods: { podSelector: {} } }, peer], protocols: named }] }))).toEqual([
        { path: 'spec.egress[0]', message: 'networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for networks/nodes/domainNames' },
      ]);
    }
    expect(errors(cnp({ ...base, egress: [{ action: 'Accept', to: [{ pods: { podSelector: {} } }], protocols: named }] }))).toEqual([]);
  });

  it('domainNames: the DomainName pattern, a set; on a Deny rule only a warning (upstream has no rule for it)', () => {
    const egress = (action: string, names: unknown[]): Record<string, unknown> => cnp({ ...base, egress: [{ action, to: [{ domainNames: names }] }] });
    expect(errors(egress('Accept', ['kubernetes.io', '*.kubernetes.io', 'a_b.example.com', 'fqdn.example.com.']))).toEqual([]);
    for (const bad of ['www.*.example.com', '*', 'localhost', '-a.example.com', '*.*.example.com']) {
      expect(paths(egress('Accept', [bad])), bad).toEqual(['spec.egress[0].to[0].domainNames[0]']);
    }
    expect(paths(egress('Accept', ['a.io', 'a.io']))).toEqual(['spec.egress[0].to[0].domainNames[1]']);
    const deny = validateClusterNetworkPolicy(egress('Deny', ['blocked.example.com']));
    expect(deny.filter(isError)).toEqual([]);
    expect(deny.at(-1)).toMatchObject({ path: 'spec.egress[0].to[0].domainNames', severity: 'warning' });
    expect(deny.at(-1)!.message).toContain('only supported for Accept rules');
  });
});

describe('validateClusterNetworkPolicy agrees with the API server on the shared fixtures (crds/testdata/cluster-network-policy)', () => {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds', 'testdata', 'cluster-network-policy');
  const load = (sub: 'valid' | 'invalid'): Array<{ file: string; obj: unknown; channels: CnpChannel[]; path: string | undefined; expect: string | undefined }> =>
    readdirSync(join(dir, sub))
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .map((f) => {
        const text = readFileSync(join(dir, sub, f), 'utf8');
        const channel = /^# channel: (.*)$/m.exec(text)?.[1] as CnpChannel | undefined;
        return {
          file: `${sub}/${f}`,
          obj: parse(text) as unknown,
          channels: channel === undefined ? ['standard', 'experimental'] : [channel],
          path: /^# path: (.*)$/m.exec(text)?.[1],
          expect: /^# expect: (.*)$/m.exec(text)?.[1],
        };
      });

  it.each(load('valid').flatMap((f) => f.channels.map((ch) => [f.file, ch, f] as const)))('accepts %s on the %s channel', (_file, channel, f) => {
    expect(errors(f.obj, channel)).toEqual([]);
  });

  it.each(load('invalid').flatMap((f) => f.channels.map((ch) => [f.file, ch, f] as const)))('rejects %s on the %s channel, at the field and with the words the API server uses', (_file, channel, f) => {
    expect(f.path, 'a "# path:" header').toBeDefined();
    const found = errors(f.obj, channel);
    const atPath = found.filter((e) => e.path === f.path);
    expect(atPath, JSON.stringify(found)).not.toEqual([]);
    // The API server prints `<path>: <message>` (or `<message>` alone for a CEL rule, or a
    // strict-decoding error naming the unknown field): the message part must be ours too.
    const words = (f.expect ?? '').replace(/^[^ ]*: /, '').replace(/^unknown field "([^"]*\.)?([^".]*)"$/, 'unknown field "$2"');
    expect(atPath.some((e) => e.message.includes(words)), `${JSON.stringify(atPath)} should contain ${JSON.stringify(words)}`).toBe(true);
  });

  it('covers both channels\' valid and invalid objects', () => {
    expect(load('valid').length).toBeGreaterThanOrEqual(4);
    expect(load('invalid').filter((f) => f.channels.includes('standard')).length).toBeGreaterThanOrEqual(20);
    expect(load('invalid').filter((f) => f.channels.includes('experimental')).length).toBeGreaterThanOrEqual(20);
  });
});
