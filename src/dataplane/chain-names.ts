/**
 * iptables chain names (dataplane.md §1, calico-semantics §1.8).
 *
 * Every chain Tessera owns starts with `cali-` (Felix's prefix, so operators' muscle memory and
 * tooling carry over) and is at most 28 characters (`XT_EXTENSION_MAXNAMELEN` 29 incl. NUL;
 * Felix `MaxChainNameLength = 28`).
 *
 * Policy chain suffix: HEAD-style `<kindcode>/<namespace>/<name>` (`np/shop/web`,
 * `gnp/deny-all` for the cluster-scoped kind, `kcnp/<name>` for a ClusterNetworkPolicy). The
 * tier is not part of it: Calico policy names
 * are unique per kind and namespace across tiers (a non-default tier's policies carry the tier
 * as a name prefix), and leaving it out keeps the chain — and so its rule hashes and packet
 * counters — stable if a policy is re-tiered. Short kind codes keep more names readable
 * (unhashed) within 28 characters.
 */
import { createHash } from 'node:crypto';
import type { PolicyId } from '../proto/index.ts';

/** Felix: `MaxChainNameLength = 28`. */
export const MAX_CHAIN_NAME_LENGTH = 28;

/** Prefix of every chain Tessera owns. */
export const CHAIN_PREFIX = 'cali-';

/**
 * Felix `hash.GetLengthLimitedID(prefix, suffix, maxLen)`:
 * `prefix + suffix` when it fits (a full-length result must not start its suffix with `_`, so
 * it can never collide with a hashed one); otherwise `prefix + "_" + base64url(SHA-256(suffix))`
 * cut to `maxLen` characters.
 */
export function getLengthLimitedId(prefix: string, suffix: string, maxLen: number): string {
  if (!Number.isInteger(maxLen) || maxLen <= prefix.length + 1) {
    throw new RangeError(`getLengthLimitedId: maxLen ${maxLen} leaves no room after prefix '${prefix}'`);
  }
  const s = suffix === '' ? '_' : suffix;
  const len = prefix.length + s.length;
  if (len < maxLen || (len === maxLen && !s.startsWith('_'))) return prefix + s;
  const digest = createHash('sha256').update(s).digest('base64url');
  return `${prefix}_${digest.slice(0, maxLen - 1 - prefix.length)}`;
}

/**
 * Characters we let into an unhashed chain name. iptables accepts more, but a chain name ends
 * up in `iptables-restore` input, so anything that could split a token (spaces, quotes,
 * newlines) forces the hashed form instead. Kubernetes names never need that.
 */
const SAFE_SUFFIX = /^[A-Za-z0-9._:/-]*$/;

/** `getLengthLimitedId` with the iptables limit, hashing any suffix with unsafe characters. */
export function chainName(prefix: string, suffix: string): string {
  if (!SAFE_SUFFIX.test(suffix)) {
    const digest = createHash('sha256').update(suffix).digest('base64url');
    return `${prefix}_${digest.slice(0, MAX_CHAIN_NAME_LENGTH - 1 - prefix.length)}`;
  }
  return getLengthLimitedId(prefix, suffix, MAX_CHAIN_NAME_LENGTH);
}

const KIND_CODE: Record<PolicyId['kind'], string> = {
  NetworkPolicy: 'np',
  GlobalNetworkPolicy: 'gnp',
  StagedNetworkPolicy: 'snp',
  StagedGlobalNetworkPolicy: 'sgnp',
  // Felix `ShortKindKubernetesClusterNetworkPolicy` (felix/types/policy_id.go).
  KubernetesClusterNetworkPolicy: 'kcnp',
};

/** The policy chain suffix: `np/<ns>/<name>`, `gnp/<name>` or `kcnp/<name>`. */
export function policyChainSuffix(id: PolicyId): string {
  const code = KIND_CODE[id.kind];
  return id.namespace === undefined || id.namespace === '' ? `${code}/${id.name}` : `${code}/${id.namespace}/${id.name}`;
}

export type Direction = 'ingress' | 'egress';

/** `cali-pi-…` (ingress rules) or `cali-po-…` (egress rules). */
export function policyChainName(id: PolicyId, dir: Direction): string {
  return chainName(dir === 'ingress' ? 'cali-pi-' : 'cali-po-', policyChainSuffix(id));
}

/** `cali-pri-<profile>` (inbound rules) or `cali-pro-<profile>` (outbound rules). */
export function profileChainName(profile: string, dir: Direction): string {
  return chainName(dir === 'ingress' ? 'cali-pri-' : 'cali-pro-', profile);
}

/** `cali-tw-<iface>` (to workload: ingress) or `cali-fw-<iface>` (from workload: egress). */
export function endpointChainName(iface: string, dir: Direction): string {
  return chainName(dir === 'ingress' ? 'cali-tw-' : 'cali-fw-', iface);
}

export const CHAIN_FILTER_INPUT = 'cali-INPUT';
export const CHAIN_FILTER_FORWARD = 'cali-FORWARD';
export const CHAIN_FILTER_OUTPUT = 'cali-OUTPUT';
export const CHAIN_WL_TO_HOST = 'cali-wl-to-host';
export const CHAIN_FROM_WL_DISPATCH = 'cali-from-wl-dispatch';
export const CHAIN_TO_WL_DISPATCH = 'cali-to-wl-dispatch';
/** Raw table: the anti-spoofing check of packets from workloads (anti-spoofing.ts). */
export const CHAIN_RAW_PREROUTING = 'cali-PREROUTING';
/** Raw table: untracked policy of host-originated packets (static-chains.ts). */
export const CHAIN_RAW_OUTPUT = 'cali-OUTPUT';
/** Mangle table: preDNAT host endpoint policy (static-chains.ts). */
export const CHAIN_MANGLE_PREROUTING = 'cali-PREROUTING';
/** Mangle table: host endpoint egress policy of DNAT'd host-originated packets. */
export const CHAIN_MANGLE_POSTROUTING = 'cali-POSTROUTING';
/** Host endpoint dispatch chains (Felix `ChainDispatch*HostEndpoint*`; host-dispatch.ts). */
export const CHAIN_FROM_HOST_ENDPOINT = 'cali-from-host-endpoint';
export const CHAIN_TO_HOST_ENDPOINT = 'cali-to-host-endpoint';
export const CHAIN_FROM_HEP_FORWARD = 'cali-from-hep-forward';
export const CHAIN_TO_HEP_FORWARD = 'cali-to-hep-forward';
/** Ports a host endpoint never blocks (failsafes.ts). */
export const CHAIN_FAILSAFE_IN = 'cali-failsafe-in';
export const CHAIN_FAILSAFE_OUT = 'cali-failsafe-out';

/**
 * The pseudo-interface of the `*` host endpoint (Felix `allInterfaces`): 20 characters, longer
 * than any Linux interface name on purpose, so it can never be a real interface.
 */
export const ALL_INTERFACES_IFACE = 'any-interface-at-all';

/** Which per-host-endpoint chain (Felix `HostToEndpointPfx` …). */
export type HostEndpointChainKind = 'to-host' | 'from-host' | 'to-host-forward' | 'from-host-forward';

const HOST_ENDPOINT_PREFIX: Readonly<Record<HostEndpointChainKind, string>> = {
  'to-host': 'cali-th-',
  'from-host': 'cali-fh-',
  'to-host-forward': 'cali-thfw-',
  'from-host-forward': 'cali-fhfw-',
};

/**
 * `cali-th-<iface>` (egress: leaving the host by `iface`), `cali-fh-<iface>` (ingress: arriving
 * on it), `cali-thfw-`/`cali-fhfw-` (the same for forwarded packets); Felix's
 * `EndpointChainName`, so `any-interface-at-all` gives `cali-th-any-interface-at-all` and,
 * hashed, `cali-thfw-_Nqh4HyA73udmyanQI`.
 */
export function hostEndpointChainName(iface: string, kind: HostEndpointChainKind): string {
  return chainName(HOST_ENDPOINT_PREFIX[kind], iface);
}
/** Raw table: workload source prefixes exempt from that check (Felix `ChainRpfSkip`). */
export const CHAIN_RPF_SKIP = 'cali-rpf-skip';

/**
 * The direction a policy, profile or endpoint chain decides: `ingress` for `cali-pi-`,
 * `cali-pri-`, `cali-tw-` (to the workload), `cali-fh-`/`cali-fhfw-` (into the host),
 * `egress` for `cali-po-`, `cali-pro-`, `cali-fw-`, `cali-th-`/`cali-thfw-`; undefined for any
 * other chain.
 */
export function chainDirection(chain: string): Direction | undefined {
  if (chain.startsWith('cali-pi-') || chain.startsWith('cali-pri-') || chain.startsWith('cali-tw-') || chain.startsWith('cali-fh-') || chain.startsWith('cali-fhfw-')) return 'ingress';
  if (chain.startsWith('cali-po-') || chain.startsWith('cali-pro-') || chain.startsWith('cali-fw-') || chain.startsWith('cali-th-') || chain.startsWith('cali-thfw-')) return 'egress';
  return undefined;
}
