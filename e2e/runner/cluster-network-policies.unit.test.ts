/**
 * ClusterNetworkPolicies in the cluster runners (cluster-network-policies.ts) and the project's
 * ClusterNetworkPolicy scenario file: what can be checked without a cluster.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { KubeConfig } from '@kubernetes/client-node';

import { parseScenarioFile as parseForSimulate } from '../../src/simulate/scenario-file.ts';
import { hasNodesPeer, installExperimentalCnpCrd, isClusterNetworkPolicyObject, scenarioUsesClusterNetworkPolicies, scenarioUsesNodePeers } from './cluster-network-policies.ts';
import { parseScenarioFile, stepsOf, type ManifestObject, type Scenario } from './scenario.ts';

const FILE = fileURLToPath(new URL('../scenarios/cluster-network-policy.json', import.meta.url));

const cnp = (apiVersion: string, spec: object): ManifestObject => ({ apiVersion, kind: 'ClusterNetworkPolicy', metadata: { name: 'c' }, spec });

describe('ClusterNetworkPolicy objects', () => {
  it('are the kind in any version of policy.networking.k8s.io, nothing else', () => {
    expect(isClusterNetworkPolicyObject({ apiVersion: 'policy.networking.k8s.io/v1beta1', kind: 'ClusterNetworkPolicy' })).toBe(true);
    expect(isClusterNetworkPolicyObject({ apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy' })).toBe(true);
    // A version the CRD does not serve is still one: the API server refuses it, naming it.
    expect(isClusterNetworkPolicyObject({ apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'ClusterNetworkPolicy' })).toBe(true);
    expect(isClusterNetworkPolicyObject({ apiVersion: 'policy.networking.k8s.io/v1alpha1', kind: 'AdminNetworkPolicy' })).toBe(false);
    expect(isClusterNetworkPolicyObject({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' })).toBe(false);
  });

  it('a nodes peer is an egress peer with `nodes` (even empty); ingress and other peers are not', () => {
    expect(hasNodesPeer(cnp('policy.networking.k8s.io/v1beta1', { egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }, { nodes: {} }] }] }))).toBe(true);
    expect(hasNodesPeer(cnp('policy.networking.k8s.io/v1beta1', { egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }] }], ingress: [{ action: 'Deny', from: [{ nodes: {} }] }] }))).toBe(false);
    const s: Scenario = {
      name: 's',
      namespaces: [],
      pods: [],
      policies: [cnp('policy.networking.k8s.io/v1beta1', { egress: [] })],
      probes: [],
      steps: [{ policies: [cnp('policy.networking.k8s.io/v1alpha2', { egress: [{ action: 'Accept', to: [{ nodes: { matchLabels: { role: 'infra' } } }] }] })], probes: [] }],
    };
    expect(scenarioUsesClusterNetworkPolicies(s)).toBe(true);
    expect(scenarioUsesNodePeers(s)).toBe(true);
    expect(scenarioUsesNodePeers({ ...s, steps: [] })).toBe(false);
  });

  it('installing the experimental CRD fails naming a missing manifest', async () => {
    await expect(installExperimentalCnpCrd('kubectl', '/nonexistent', new KubeConfig(), '/nonexistent/clusternetworkpolicies.yaml')).rejects.toThrow(/\/nonexistent\/clusternetworkpolicies\.yaml does not exist/);
  });
});

describe('e2e/scenarios/cluster-network-policy.json', () => {
  const text = readFileSync(FILE, 'utf8');
  const file = parseScenarioFile(FILE, text);
  const objects = (s: Scenario) => stepsOf(s).flatMap((st) => [...(st.policies ?? [])]);

  it('is valid for the runner and for tessera simulate', () => {
    expect(() => parseForSimulate(text, FILE)).not.toThrow();
    expect(file.scenarios.length).toBeGreaterThanOrEqual(20);
  });

  it('every scenario uses a ClusterNetworkPolicy, cites its source, and probes TCP/UDP only; both served versions appear', () => {
    for (const s of file.scenarios) {
      expect(scenarioUsesClusterNetworkPolicies(s), s.name).toBe(true);
      expect(s.description ?? '', s.name).toMatch(/network-policy-api@v0\.3\.0 (conformance\/tests\/|apis\/v1beta1\/clusternetworkpolicy_types\.go)|Calico 3\.32/);
      for (const st of stepsOf(s)) for (const p of st.probes) expect(['TCP', 'UDP'], s.name).toContain(p.protocol ?? 'TCP');
    }
    const versions = new Set(file.scenarios.flatMap((s) => objects(s).filter(isClusterNetworkPolicyObject).map((o) => o.apiVersion)));
    expect([...versions].sort()).toEqual(['policy.networking.k8s.io/v1alpha2', 'policy.networking.k8s.io/v1beta1']);
  });

  it('a scenario with a nodes peer names no node address in any object (on kind, nodes are probed at their own addresses)', () => {
    const withPeers = file.scenarios.filter(scenarioUsesNodePeers);
    expect(withPeers.length).toBeGreaterThan(0);
    for (const s of withPeers) {
      const text = JSON.stringify(objects(s));
      for (const n of s.nodes ?? []) expect(text, `${s.name}: ${n.name}`).not.toContain(n.ip);
    }
  });
});
