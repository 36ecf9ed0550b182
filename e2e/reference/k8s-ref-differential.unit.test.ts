/**
 * The second reading of Kubernetes NetworkPolicy semantics: first the reference evaluator
 * itself against the documentation's own statements, then the randomized differential —
 * Tessera's simulate path (convert → calc graph → verdict engine) vs the evaluator — over a
 * few thousand random clusters. More runs: `npm run bench -- k8s-ref-differential`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RefEvaluator, refCidr, type RefCluster, type RefNetworkPolicy, type RefPod } from './k8s-ref-netpol-evaluator.ts';
import { caseArb, type GenCase } from './k8s-ref-cases.ts';
import { reproducer, runCase } from './k8s-ref-differential.ts';

/** Cases per unit run (about 4-5 ms each); the bench runs as many as asked. */
const CASES = 3000;

const here = path.dirname(fileURLToPath(import.meta.url));

const pod = (namespace: string, name: string, ip: string, labels: Record<string, string> = {}, ports: RefPod['ports'] = []): RefPod => ({
  namespace,
  name,
  labels,
  ips: [ip],
  ports,
});

const np = (namespace: string, spec: unknown, name = 'p'): RefNetworkPolicy => ({ metadata: { name, namespace }, spec });

function cluster(policies: RefNetworkPolicy[]): RefCluster {
  return {
    namespaces: [
      { name: 'prod', labels: { team: 'a' } },
      { name: 'dev', labels: { team: 'b' } },
    ],
    pods: [
      pod('prod', 'web', '10.0.0.1', { app: 'web' }, [{ name: 'http', containerPort: 8080 }, { name: 'dns', containerPort: 53, protocol: 'UDP' }]),
      pod('prod', 'db', '10.0.0.2', { app: 'db' }),
      pod('dev', 'web', '10.0.1.1', { app: 'web' }, [{ name: 'http', containerPort: 9090 }]),
    ],
    policies,
  };
}

const allowed = (c: RefCluster, src: string, dst: string, port = 8080, protocol: 'TCP' | 'UDP' | 'SCTP' = 'TCP'): boolean =>
  new RefEvaluator(c).decide({ src, dst, protocol, port }).allowed;

describe('reference evaluator: the API documentation, read directly', () => {
  it('a pod no policy selects is not isolated; a selected pod allows only what a rule allows', () => {
    expect(allowed(cluster([]), '10.0.0.2', '10.0.0.1')).toBe(true);
    const c = cluster([np('prod', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }] }] })]);
    expect(allowed(c, '10.0.0.2', '10.0.0.1')).toBe(true);
    expect(allowed(c, '10.0.1.1', '10.0.0.1')).toBe(false); // podSelector alone: the policy's namespace only
    expect(allowed(c, '10.0.0.1', '10.0.0.2')).toBe(true); // db is not selected
  });

  it('policies are additive, and ingress: [] (or absent) isolates without allowing', () => {
    const deny = np('prod', { podSelector: {}, policyTypes: ['Ingress'] }, 'deny');
    const allowDb = np('prod', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }] }] }, 'db');
    expect(allowed(cluster([deny]), '10.0.0.2', '10.0.0.1')).toBe(false);
    expect(allowed(cluster([deny, allowDb]), '10.0.0.2', '10.0.0.1')).toBe(true);
  });

  it('namespaceSelector and podSelector in one peer are AND-ed; separate peers are OR-ed', () => {
    const and = cluster([np('prod', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } }, podSelector: { matchLabels: { app: 'db' } } }] }] })]);
    expect(allowed(and, '10.0.1.1', '10.0.0.1')).toBe(false);
    const or = cluster([np('prod', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }, { podSelector: { matchLabels: { app: 'db' } } }] }] })]);
    expect(allowed(or, '10.0.1.1', '10.0.0.1')).toBe(true);
    expect(allowed(or, '10.0.0.2', '10.0.0.1')).toBe(true);
  });

  it('namespaces carry kubernetes.io/metadata.name; an empty namespaceSelector selects every namespace', () => {
    const byName = cluster([np('prod', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'dev' } } }] }] })]);
    expect(allowed(byName, '10.0.1.1', '10.0.0.1')).toBe(true);
    const all = cluster([np('prod', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {} }] }] })]);
    expect(allowed(all, '10.0.1.1', '10.0.0.1')).toBe(true);
    expect(allowed(all, '192.168.1.1', '10.0.0.1')).toBe(false);
  });

  it('ipBlock: in cidr and in no except; leading zeros read as decimal, IPv4-mapped as IPv4', () => {
    const c = (cidr: string, except: string[] = []): RefCluster => cluster([np('prod', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr, except } }] }] })]);
    expect(allowed(c('192.168.0.0/16', ['192.168.1.0/24']), '192.168.2.1', '10.0.0.1')).toBe(true);
    expect(allowed(c('192.168.0.0/16', ['192.168.1.0/24']), '192.168.1.1', '10.0.0.1')).toBe(false);
    expect(allowed(c('010.0.0.0/08'), '10.0.0.2', '10.0.0.1')).toBe(true);
    expect(allowed(c('::ffff:10.0.0.0/104'), '10.0.0.2', '10.0.0.1')).toBe(true);
    expect(allowed(c('::ffff:10.0.0.0/64'), '10.0.0.2', '10.0.0.1')).toBe(false);
    expect(refCidr('::ffff:10.0.0.0/104')).toEqual({ family: 4, network: 'a000000', prefix: 8 });
  });

  it('ports: protocol (default TCP), endPort inclusive; named ports on the destination pod', () => {
    const c = (ports: unknown[], dir: 'ingress' | 'egress' = 'ingress'): RefCluster =>
      cluster([np('prod', dir === 'ingress' ? { podSelector: {}, ingress: [{ ports }] } : { podSelector: {}, policyTypes: ['Egress'], egress: [{ ports }] })]);
    expect(allowed(c([{ port: 8000, endPort: 8080 }]), '10.0.1.1', '10.0.0.1', 8080)).toBe(true);
    expect(allowed(c([{ port: 8000, endPort: 8080 }]), '10.0.1.1', '10.0.0.1', 8081)).toBe(false);
    expect(allowed(c([{ port: 8080 }]), '10.0.1.1', '10.0.0.1', 8080, 'UDP')).toBe(false);
    expect(allowed(c([{ port: 'http' }]), '10.0.1.1', '10.0.0.1', 8080)).toBe(true); // web's http
    expect(allowed(c([{ port: 'dns', protocol: 'UDP' }]), '10.0.1.1', '10.0.0.1', 53, 'UDP')).toBe(true);
    expect(allowed(c([{ port: 'dns' }]), '10.0.1.1', '10.0.0.1', 53, 'UDP')).toBe(false); // TCP named port
    // Egress: the destination pod's port of that name, and no outside address has one.
    expect(allowed(c([{ port: 'http' }], 'egress'), '10.0.0.1', '10.0.1.1', 9090)).toBe(true);
    expect(allowed(c([{ port: 'http' }], 'egress'), '10.0.0.1', '10.0.1.1', 8080)).toBe(false);
    expect(allowed(c([{ port: 'http' }], 'egress'), '10.0.0.1', '192.168.1.1', 8080)).toBe(false);
  });

  it('policyTypes unset: ingress always, egress only with a non-empty egress section', () => {
    expect(allowed(cluster([np('prod', { podSelector: {}, egress: [] })]), '10.0.0.1', '192.168.1.1')).toBe(true);
    expect(allowed(cluster([np('prod', { podSelector: {}, egress: [{ to: [{ podSelector: {} }] }] })]), '10.0.0.1', '192.168.1.1')).toBe(false);
    expect(allowed(cluster([np('prod', { podSelector: {}, policyTypes: ['Egress'] })]), '192.168.1.1', '10.0.0.1')).toBe(true);
  });

  it('null elements are Go zero values: ingress: [null] allows all, from: [null] is the policy namespace', () => {
    expect(allowed(cluster([np('prod', { podSelector: {}, ingress: [null] })]), '192.168.1.1', '10.0.0.1')).toBe(true);
    const c = cluster([np('prod', { podSelector: {}, ingress: [{ from: [null] }] })]);
    expect(allowed(c, '10.0.0.2', '10.0.0.1')).toBe(true);
    expect(allowed(c, '10.0.1.1', '10.0.0.1')).toBe(false);
  });
});

describe('the reference stays a second reading', () => {
  it('imports nothing from src/, and nothing in src/ imports it', () => {
    for (const f of ['k8s-ref-netpol-evaluator.ts']) {
      expect(readFileSync(path.join(here, f), 'utf8')).not.toMatch(/from '(\.\.\/)+src\//);
    }
    const src = path.join(here, '..', '..', 'src');
    const offenders = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && readFileSync(path.join(src, f), 'utf8').includes('e2e/reference'))
      .sort();
    expect(offenders).toEqual([]);
  });
});

describe('Tessera (convert → calc graph → verdict engine) vs the reference, on random clusters', () => {
  it(`agrees on every probe of ${CASES} random clusters (a failure prints a minimal reproducer)`, { timeout: 180_000 }, () => {
    let probes = 0;
    fc.assert(
      fc.property(caseArb, (c: GenCase) => {
        const outcome = runCase(c);
        probes += outcome.probes;
        if (outcome.failure !== undefined || outcome.disagreements.length > 0) {
          throw new Error(`Tessera and the Kubernetes reference disagree; reproducer (tessera simulate -f):\n${reproducer(c, outcome)}`);
        }
      }),
      { numRuns: CASES, seed: 16 },
    );
    expect(probes).toBeGreaterThan(CASES * 100);
  });
});
