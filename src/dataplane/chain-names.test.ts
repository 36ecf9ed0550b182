import { describe, expect, it } from 'vitest';
import { chainName, endpointChainName, getLengthLimitedId, MAX_CHAIN_NAME_LENGTH, policyChainName, profileChainName } from './chain-names.ts';

describe('getLengthLimitedId (calico-semantics §1.8)', () => {
  it('matches the upstream test vector ("felix", "_2345", 10) → felix_kMQI', () => {
    expect(getLengthLimitedId('felix', '_2345', 10)).toBe('felix_kMQI');
  });

  it('hashes the v3.30-style suffix default/knp.default.allow-dns to cali-pi-_N0mE1uEul9nsAbL_P-4', () => {
    expect(getLengthLimitedId('cali-pi-', 'default/knp.default.allow-dns', 28)).toBe('cali-pi-_N0mE1uEul9nsAbL_P-4');
  });

  it('keeps a name shorter than the limit as prefix + suffix', () => {
    expect(getLengthLimitedId('cali-pro-', 'kns.default', 28)).toBe('cali-pro-kns.default');
  });

  it('keeps a name of exactly the limit unless its suffix starts with _', () => {
    const suffix = 'x'.repeat(20);
    expect(getLengthLimitedId('cali-pi-', suffix, 28)).toBe(`cali-pi-${suffix}`);
    const underscored = `_${'x'.repeat(19)}`;
    const r = getLengthLimitedId('cali-pi-', underscored, 28);
    expect(r).not.toBe(`cali-pi-${underscored}`);
    expect(r).toHaveLength(28);
  });

  it('replaces an empty suffix with _', () => {
    expect(getLengthLimitedId('cali-pi-', '', 28)).toBe('cali-pi-_');
  });

  it('rejects a limit that leaves no room for the hash', () => {
    expect(() => getLengthLimitedId('cali-pi-', 'x', 9)).toThrow(RangeError);
  });
});

describe('chain names', () => {
  it('uses <kindcode>/<ns>/<name> for policy chains, hashed when too long', () => {
    expect(policyChainName({ tier: 'default', name: 'web', namespace: 'shop', kind: 'NetworkPolicy' }, 'ingress')).toBe('cali-pi-np/shop/web');
    expect(policyChainName({ tier: 'security', name: 'deny-all', kind: 'GlobalNetworkPolicy' }, 'egress')).toBe('cali-po-gnp/deny-all');
    // Felix's short kind for a ClusterNetworkPolicy (felix/types/policy_id.go).
    expect(policyChainName({ tier: 'kube-admin', name: 'deny-all', kind: 'KubernetesClusterNetworkPolicy' }, 'ingress')).toBe('cali-pi-kcnp/deny-all');
    expect(policyChainName({ tier: 'kube-baseline', name: 'deny-all', kind: 'KubernetesClusterNetworkPolicy' }, 'egress')).toBe('cali-po-kcnp/deny-all');
    const long = policyChainName({ tier: 'default', name: 'knp.default.allow-dns-and-more', namespace: 'production', kind: 'NetworkPolicy' }, 'ingress');
    expect(long).toMatch(/^cali-pi-_[A-Za-z0-9_-]{19}$/);
  });

  it('ignores the tier: a re-tiered policy keeps its chain', () => {
    const a = policyChainName({ tier: 'default', name: 'web', namespace: 'shop', kind: 'NetworkPolicy' }, 'ingress');
    const b = policyChainName({ tier: 'security', name: 'web', namespace: 'shop', kind: 'NetworkPolicy' }, 'ingress');
    expect(a).toBe(b);
  });

  it('hashes suffixes with characters that could split a restore token', () => {
    const n = chainName('cali-pri-', 'a b"c');
    expect(n).toMatch(/^cali-pri-_[A-Za-z0-9_-]+$/);
    expect(n.length).toBeLessThanOrEqual(MAX_CHAIN_NAME_LENGTH);
  });

  it('names endpoint and profile chains as Felix does', () => {
    expect(endpointChainName('cali1234567890a', 'ingress')).toBe('cali-tw-cali1234567890a');
    expect(endpointChainName('cali1234567890a', 'egress')).toBe('cali-fw-cali1234567890a');
    expect(profileChainName('kns.default', 'egress')).toBe('cali-pro-kns.default');
    expect(profileChainName('ksa.a-very-long-namespace.a-long-service-account', 'ingress')).toHaveLength(28);
  });
});
