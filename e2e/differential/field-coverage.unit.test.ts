/**
 * fieldCoverage: field paths with kinds in front and indices and names removed, value keys for
 * the behaviour-selecting values, data maps counted once, and counts added across calls.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { fieldCoverage } from './field-coverage.ts';
import { Draw, FELIX_V3_28, PolicyGenerator } from './policy-generator.ts';

const gnp = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'pol-a' },
  spec: {
    order: 10,
    namespaceSelector: 'global()',
    ingress: [
      { action: 'Pass', protocol: 'ICMPv6', ipVersion: 6, destination: { notNets: ['fd00:66::/32'] } },
      { action: 'Allow', source: { namespaceSelector: ' global() ', nets: ['10.0.0.0/8', '10.1.0.0/16'] }, destination: { notNets: ['10.66.1.0/24'] } },
    ],
  },
};
const np = { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: 'pol-b', namespace: 'alpha' }, spec: { ingress: [{ action: 'Deny', notProtocol: 'UDP', source: { services: { name: 'web' } } }] } };
const knp = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'pol-c', namespace: 'beta' },
  spec: { podSelector: { matchLabels: { app: 'web', role: 'x' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }, { podSelector: {} }], ports: [{ protocol: 'TCP', port: 80 }] }] },
};
const gns = { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkSet', metadata: { name: 'pol-d', labels: { set: 'a', zone: 'x' } }, spec: { nets: ['10.66.1.0/24', 'fd00:66::/32'] } };

describe('fieldCoverage', () => {
  const cov = fieldCoverage([gnp, np, knp, gns]);

  it('counts field paths per holder, with kinds in front and no indices or names', () => {
    expect(cov.get('GlobalNetworkPolicy.spec.ingress')).toBe(1);
    expect(cov.get('GlobalNetworkPolicy.spec.ingress[].action')).toBe(2);
    expect(cov.get('GlobalNetworkPolicy.spec.ingress[].destination')).toBe(2);
    expect(cov.get('GlobalNetworkPolicy.spec.ingress[].destination.notNets')).toBe(2);
    expect(cov.get('GlobalNetworkPolicy.spec.ingress[].source.nets')).toBe(1);
    expect(cov.get('NetworkPolicy.spec.ingress[].source.services')).toBe(1);
    expect(cov.get('NetworkPolicy.spec.ingress[].source.services.name')).toBe(1);
    expect(cov.get('NetworkPolicy.metadata.namespace')).toBe(1);
    expect(cov.get('networking.k8s.io/NetworkPolicy.spec.ingress[].from[].ipBlock.except')).toBe(1);
    expect(cov.get('networking.k8s.io/NetworkPolicy.spec.ingress[].from[].podSelector')).toBe(1);
    expect(cov.get('networking.k8s.io/NetworkPolicy.spec.ingress[].ports[].port')).toBe(1);
    expect(cov.get('GlobalNetworkSet.spec.nets')).toBe(1);
    expect([...cov.keys()].filter((k) => /\d\]|\[\d|pol-/.test(k))).toEqual([]);
  });

  it('counts objects by kind and the behaviour-selecting values wherever they occur', () => {
    expect(cov.get('kind=GlobalNetworkPolicy')).toBe(1);
    expect(cov.get('kind=networking.k8s.io/NetworkPolicy')).toBe(1);
    expect(cov.get('kind=NetworkPolicy')).toBe(1);
    expect(cov.get('action=Pass')).toBe(1);
    expect(cov.get('action=Allow')).toBe(1);
    expect(cov.get('action=Deny')).toBe(1);
    expect(cov.get('protocol=ICMPv6')).toBe(1);
    expect(cov.get('protocol=TCP')).toBe(1);
    expect(cov.get('notProtocol=UDP')).toBe(1);
    expect(cov.get('ipVersion=6')).toBe(1);
    expect(cov.get('namespaceSelector=global()')).toBe(2);
  });

  it('counts a data map once and never its keys', () => {
    expect(cov.get('GlobalNetworkSet.metadata.labels')).toBe(1);
    expect(cov.get('networking.k8s.io/NetworkPolicy.spec.podSelector.matchLabels')).toBe(1);
    expect([...cov.keys()].filter((k) => /labels\.|matchLabels\./.test(k))).toEqual([]);
  });

  it('adds to a given map across rounds', () => {
    const into = fieldCoverage([gns]);
    fieldCoverage([gns, gnp], into);
    expect(into.get('GlobalNetworkSet.spec.nets')).toBe(2);
    expect(into.get('kind=GlobalNetworkPolicy')).toBe(1);
  });

  it('over generated Felix rounds: the fields the brief names are drawn, and no tier', () => {
    const gen = new PolicyGenerator(new Draw(seededRandom(7)), FELIX_V3_28);
    const all = new Map<string, number>();
    for (let i = 0; i < 400; i++) fieldCoverage(gen.round().objects, all);
    for (const key of [
      'GlobalNetworkPolicy.spec.ingress[].destination.notNets',
      'NetworkPolicy.spec.egress[].destination.services',
      'GlobalNetworkPolicy.spec.ingress[].source.services',
      'networking.k8s.io/NetworkPolicy.spec.ingress[].from[].ipBlock.except',
      'GlobalNetworkSet.spec.nets',
      'NetworkSet.spec.nets',
      'action=Pass',
      'protocol=ICMPv6',
      'ipVersion=6',
      'namespaceSelector=global()',
    ]) {
      expect(all.get(key) ?? 0, key).toBeGreaterThan(0);
    }
    expect([...all.keys()].filter((k) => k.includes('tier') || k === 'kind=Tier' || k === 'kind=Profile')).toEqual([]);
  });
});
