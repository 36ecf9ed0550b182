/**
 * Name rules for v3 resources and the Kubernetes name formats they build on.
 *
 * Calico checks names in `libcalico-go/lib/validator/v3/validator.go`:
 * - most resources (Profile, WorkloadEndpoint): a DNS-1123 subdomain, at most 253 bytes;
 * - Tier: a DNS-1123 label (no dots — tier names become parts of other names), at most
 *   63 bytes, because in KDD mode the tier is also stored as a label value;
 * - NetworkPolicy: a label, or two labels joined by one '.', or `knp.default.<subdomain>`
 *   (converted Kubernetes policies) or `ossg.default.<subdomain>` (OpenStack);
 * - GlobalNetworkPolicy: a label, or two labels joined by one '.'.
 *
 * Older Calico (≤ v3.2x) required a policy in tier `t` to be named `t.<name>`. Current
 * Calico has no such requirement (`clientv3/networkpolicy_e2e_test.go`, "NetworkPolicy name
 * validation tests": "we have no name formatting requirements"), so neither do we.
 */

// k8s.io/apimachinery/pkg/util/validation: DNS1123LabelMaxLength, DNS1123SubdomainMaxLength.
export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;

/**
 * Names starting with this prefix belong to the Kubernetes NetworkPolicy converter, which
 * creates, rewrites and deletes them (`names.K8sNetworkPolicyNamePrefix` upstream). A user
 * object with such a name would fight the converter; admission will reject it (a later
 * issue), `checkReservedName` reports it today.
 */
export const KNP_NAME_PREFIX = 'knp.default.';

/**
 * Calico's built-in allow-all profile (libcalico-go `resources.DefaultAllowProfileName`): the
 * datastore backends synthesise it, never store it; automatic host endpoints name it.
 */
export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';

/**
 * The label through which Calico matches an endpoint's or a network set's namespace
 * (`apiv3.LabelNamespace`): Felix's namespace-scoped selectors test it. Calico sets it itself
 * when it maps a namespaced object into its v1 model; on a v3 NetworkSet or GlobalNetworkSet
 * it is rejected (validator.go `validateNetworkSet`, `validateGlobalNetworkSet`): a
 * GlobalNetworkSet carrying `projectcalico.org/namespace: ns1` would be matched by ns1's
 * namespace-scoped rule selectors, so whoever may write GlobalNetworkSets could put addresses
 * into another namespace's rules.
 */
export const NAMESPACE_LABEL = 'projectcalico.org/namespace';

/** The other converter-owned prefix Calico's NetworkPolicy name rule admits (OpenStack). */
export const OSSG_NAME_PREFIX = 'ossg.default.';

const LABEL = '[a-z0-9](?:[-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = `${LABEL}(?:\\.${LABEL})*`;

const labelRegex = new RegExp(`^${LABEL}$`);
const subdomainRegex = new RegExp(`^${SUBDOMAIN}$`);
const networkPolicyNameRegex = new RegExp(
  `^(?:${LABEL}(?:\\.${LABEL})?|(?:knp|ossg)\\.default\\.${SUBDOMAIN})$`,
);
const globalNetworkPolicyNameRegex = new RegExp(`^(?:${LABEL}\\.)?${LABEL}$`);

/** A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, ≤ 63. */
export function isDns1123Label(name: string): boolean {
  return name.length <= DNS1123_LABEL_MAX_LENGTH && labelRegex.test(name);
}

/** A DNS-1123 subdomain: labels joined by '.', ≤ 253 in total. */
export function isDns1123Subdomain(name: string): boolean {
  return name.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && subdomainRegex.test(name);
}

/** Calico's NetworkPolicy name shape (length is checked separately). */
export function isNetworkPolicyName(name: string): boolean {
  return networkPolicyNameRegex.test(name);
}

/** Calico's GlobalNetworkPolicy name shape (length is checked separately). */
export function isGlobalNetworkPolicyName(name: string): boolean {
  return globalNetworkPolicyNameRegex.test(name);
}

/** True when the name is reserved for policies the Kubernetes NetworkPolicy converter owns. */
export function isReservedPolicyName(name: string): boolean {
  return name.startsWith(KNP_NAME_PREFIX);
}

// k8s IsQualifiedName: [prefix/]name, name ≤ 63 of [A-Za-z0-9_.-] with alphanumeric ends,
// prefix a DNS-1123 subdomain.
const qualifiedNamePartRegex = /^(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Problems with a label or annotation key (`k8s IsQualifiedName`); empty when valid. */
export function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) {
    name = key;
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) return [`invalid key: the prefix before '/' must be non-empty`];
    if (!isDns1123Subdomain(prefix)) {
      return [`invalid key: the prefix before '/' must be a DNS-1123 subdomain`];
    }
  } else {
    return [`invalid key: a qualified name has at most one '/'`];
  }
  if (name.length === 0) return [`invalid key: the name part must be non-empty`];
  if (name.length > DNS1123_LABEL_MAX_LENGTH) {
    return [`invalid key: the name part must be at most ${DNS1123_LABEL_MAX_LENGTH} characters`];
  }
  if (!qualifiedNamePartRegex.test(name)) {
    return [
      `invalid key: the name part must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`,
    ];
  }
  return [];
}

/** k8s IsValidLabelValue: empty, or ≤ 63 of [A-Za-z0-9_.-] with alphanumeric ends. */
export function isValidLabelValue(value: string): boolean {
  return value === '' || (value.length <= DNS1123_LABEL_MAX_LENGTH && qualifiedNamePartRegex.test(value));
}

/**
 * k8s IsValidPortName (an IANA service name), which Calico uses for WorkloadEndpoint port
 * names: 1–15 of [a-z0-9-], at least one letter, no leading/trailing or double '-'.
 */
export function isValidEndpointPortName(name: string): boolean {
  return (
    name.length >= 1 &&
    name.length <= 15 &&
    /^[-a-z0-9]+$/.test(name) &&
    /[a-z]/.test(name) &&
    !name.startsWith('-') &&
    !name.endsWith('-') &&
    !name.includes('--')
  );
}

// validator.go interfaceRegex.
const interfaceNameRegex = /^[a-zA-Z0-9_.-]{1,15}$/;

/**
 * A Linux interface name as Calico's validator admits it (`interface`: `interfaceRegex`): 1–15
 * of alphanumerics, '_', '.' and '-'. It ends up in iptables-restore input.
 */
export function isValidInterfaceName(name: string): boolean {
  return interfaceNameRegex.test(name);
}
