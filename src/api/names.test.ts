import { describe, expect, it } from 'vitest';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isGlobalNetworkPolicyName,
  isNetworkPolicyName,
  isReservedPolicyName,
  isValidEndpointPortName,
  isValidLabelValue,
  KNP_NAME_PREFIX,
  qualifiedNameProblems,
} from './names.ts';

describe('DNS-1123 names', () => {
  it.each(['a', 'web', 'web-1', '0abc', 'a'.repeat(63)])('%s is a label', (n) => expect(isDns1123Label(n)).toBe(true));
  it.each(['', 'Web', '-web', 'web-', 'a.b', 'a_b', 'a'.repeat(64)])('%j is not a label', (n) =>
    expect(isDns1123Label(n)).toBe(false),
  );
  it.each(['a.b', 'kns.shop', 'ksa.shop.frontend', 'a'.repeat(253)])('%s is a subdomain', (n) =>
    expect(isDns1123Subdomain(n)).toBe(true),
  );
  it.each(['', 'a..b', '.a', 'a.', 'A.b', 'a'.repeat(254)])('%j is not a subdomain', (n) =>
    expect(isDns1123Subdomain(n)).toBe(false),
  );
});

describe('policy names (current Calico: no tier prefix required)', () => {
  it.each(['web', 'security.web', 'knp.default.allow-dns', 'knp.default.a.b.c', 'ossg.default.sg-1'])(
    '%s is a valid NetworkPolicy name',
    (n) => expect(isNetworkPolicyName(n)).toBe(true),
  );
  it.each(['a.b.c', 'Web', 'knp.default.', 'web_1'])('%s is not a valid NetworkPolicy name', (n) =>
    expect(isNetworkPolicyName(n)).toBe(false),
  );
  it.each(['web', 'security.web'])('%s is a valid GlobalNetworkPolicy name', (n) =>
    expect(isGlobalNetworkPolicyName(n)).toBe(true),
  );
  it.each(['a.b.c', 'knp.default.web'])('%s is not a valid GlobalNetworkPolicy name', (n) =>
    expect(isGlobalNetworkPolicyName(n)).toBe(false),
  );
});

describe('reserved converter names', () => {
  it('the prefix is knp.default.', () => expect(KNP_NAME_PREFIX).toBe('knp.default.'));
  it('names starting knp.default. are reserved; others are not', () => {
    expect(isReservedPolicyName('knp.default.web')).toBe(true);
    expect(isReservedPolicyName('knp.web')).toBe(false);
    expect(isReservedPolicyName('default.web')).toBe(false);
  });
});

describe('label keys and values', () => {
  it.each(['app', 'app.kubernetes.io/name', 'projectcalico.org/namespace', 'A_b.c-D'])('%s is a qualified name', (k) =>
    expect(qualifiedNameProblems(k)).toEqual([]),
  );
  it.each([
    ['', 'invalid key: the name part must be non-empty'],
    ['/app', "invalid key: the prefix before '/' must be non-empty"],
    ['Bad_Prefix/app', "invalid key: the prefix before '/' must be a DNS-1123 subdomain"],
    ['a/b/c', "invalid key: a qualified name has at most one '/'"],
    ['-app', "invalid key: the name part must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"],
    ['x'.repeat(64), 'invalid key: the name part must be at most 63 characters'],
  ])('%j is not a qualified name: %s', (k, problem) => expect(qualifiedNameProblems(k)).toEqual([problem]));

  it('label values are empty or ≤ 63 characters with alphanumeric ends', () => {
    expect(isValidLabelValue('')).toBe(true);
    expect(isValidLabelValue('v1.2_a-b')).toBe(true);
    expect(isValidLabelValue('-v')).toBe(false);
    expect(isValidLabelValue('a b')).toBe(false);
    expect(isValidLabelValue('x'.repeat(64))).toBe(false);
  });
});

describe('endpoint port names (IANA service names)', () => {
  it.each(['http', 'dns-tcp', 'h2c', 'a'.repeat(15)])('%s is valid', (n) => expect(isValidEndpointPortName(n)).toBe(true));
  it.each(['', '8080', 'HTTP', '-http', 'http-', 'a--b', 'a'.repeat(16), 'my_port'])('%j is not valid', (n) =>
    expect(isValidEndpointPortName(n)).toBe(false),
  );
});
