/**
 * Tier and policy ordering (Felix: `calc/policy_sorter.go`, calico-semantics §4.1–4.2).
 *
 * - Tiers: tiers with a Tier object first; then ascending `order`, absent = +∞; then name.
 * - Policies within a tier: ascending `order`, absent = +∞; ties broken by the string
 *   `"<name>/<namespace>/<kind>"` of Felix's policy key (Calico ≥ 3.32, `PolKVLess`). Felix
 *   keys a Kubernetes NetworkPolicy by its own name with kind `KubernetesNetworkPolicy` (and a
 *   StagedKubernetesNetworkPolicy by its name with kind `StagedKubernetesNetworkPolicy`), not
 *   by the converted name `knp.default.<name>` Tessera's policies carry: `felixPolicyKey`
 *   maps one to the other as Calico maps a pre-3.32 key (`model.parseLegacyPolicyName`). So
 *   the Kubernetes policy `zeta` (`knp.default.zeta`) runs after a Calico NetworkPolicy `m` of
 *   the same order, tier and namespace — `m/…` < `zeta/…` — where comparing the converted
 *   names would put it first (`k` < `m`).
 *   A ClusterNetworkPolicy is held as Calico 3.32 holds it, under its own name with kind
 *   `KubernetesClusterNetworkPolicy` and no namespace: two CNPs of equal priority in a tier
 *   run in name order, and a GlobalNetworkPolicy written into `kube-admin`/`kube-baseline`
 *   with the same order and name runs before the CNP (`x//GlobalNetworkPolicy` <
 *   `x//KubernetesClusterNetworkPolicy`); with different names, the name decides.
 * - Untracked (doNotTrack) and pre-DNAT policies stay active but are left out of workload
 *   endpoint tiers: Felix's event sequencer files them under separate untracked / pre-DNAT
 *   tiers, which only host endpoints use (`tierInfoToProtoTierInfo`, `sortHostEndpointTiers`).
 * - A tier appears only if at least one of its policies matches the endpoint; it carries
 *   separate ingress and egress lists (`GovernsIngress` / `GovernsEgress`), either of which
 *   may be empty.
 * - Staged policies go to the tier's staged lists, never to the enforced ones: a tier only
 *   staged policies select carries empty enforced lists, so nothing of it is enforced (no
 *   end-of-tier drop: the renderer and the simulator skip a direction without policies).
 */
import { KNP_NAME_PREFIX } from '../api/index.ts';
import { isStagedPolicy, type PolicyId, type TierInfo } from '../proto/index.ts';
import type { ModelPolicy, ModelTier } from './model.ts';

function orderOf(order: number | undefined): number {
  return order ?? Number.POSITIVE_INFINITY;
}

function cmpString(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Felix's policy order within a tier (module comment); anything with an `order` and an `id` sorts so (the simulator's report lists policies this way). */
export function comparePolicies(a: Pick<ModelPolicy, 'order' | 'id'>, b: Pick<ModelPolicy, 'order' | 'id'>): number {
  const oa = orderOf(a.order);
  const ob = orderOf(b.order);
  if (oa !== ob) return oa < ob ? -1 : 1;
  return cmpString(tieBreak(a.id), tieBreak(b.id));
}

/** A policy's key as Felix (Calico ≥ 3.32) holds it: a converted Kubernetes policy under its own name and kind. */
export interface FelixPolicyKey {
  readonly name: string;
  readonly namespace: string;
  readonly kind: PolicyId['kind'] | 'KubernetesNetworkPolicy' | 'StagedKubernetesNetworkPolicy';
}

/**
 * The Felix key of a Tessera policy id. Only the controllers write `knp.default.*`
 * NetworkPolicies (admission refuses anyone else), and a StagedKubernetesNetworkPolicy
 * reaches the calc graph as a StagedNetworkPolicy of that name, so the prefix is what marks
 * a Kubernetes policy, as in Calico's own reading of pre-3.32 keys.
 */
export function felixPolicyKey(id: PolicyId): FelixPolicyKey {
  const namespace = id.namespace ?? '';
  if (namespace !== '' && id.name.startsWith(KNP_NAME_PREFIX)) {
    const name = id.name.slice(KNP_NAME_PREFIX.length);
    if (id.kind === 'NetworkPolicy') return { name, namespace, kind: 'KubernetesNetworkPolicy' };
    if (id.kind === 'StagedNetworkPolicy') return { name, namespace, kind: 'StagedKubernetesNetworkPolicy' };
  }
  return { name: id.name, namespace, kind: id.kind };
}

function tieBreak(id: PolicyId): string {
  const k = felixPolicyKey(id);
  return `${k.name}/${k.namespace}/${k.kind}`;
}

export function compareTiers(a: { name: string; tier: ModelTier | undefined }, b: { name: string; tier: ModelTier | undefined }): number {
  const va = a.tier !== undefined;
  const vb = b.tier !== undefined;
  if (va !== vb) return va ? -1 : 1;
  const oa = orderOf(a.tier?.order);
  const ob = orderOf(b.tier?.order);
  if (oa !== ob) return oa < ob ? -1 : 1;
  return cmpString(a.name, b.name);
}

/** The ordered tiers for one workload endpoint, given the policies that match it. */
export function sortEndpointTiers(policies: Iterable<ModelPolicy>, tiers: ReadonlyMap<string, ModelTier>): TierInfo[] {
  return tierInfos(policies, tiers, (p) => !p.untracked && !p.preDnat, NORMAL);
}

/** A host endpoint's four tier lists (proto `HostEndpoint`). */
export interface HostEndpointTiers {
  readonly tiers: TierInfo[];
  readonly untrackedTiers: TierInfo[];
  readonly preDnatTiers: TierInfo[];
  readonly forwardTiers: TierInfo[];
}

/**
 * The tier lists of one host endpoint, as Felix's `tierInfoToProtoTierInfo` files them
 * (reference host-endpoints-and-services §A.3): doNotTrack policies only in `untrackedTiers`
 * and preDNAT ones only in `preDnatTiers` (ingress lists only), both with the tier's default
 * forced to Pass so the normal tiers still decide what they do not; applyOnForward policies in
 * `forwardTiers` and `tiers`, both keeping the tier's default; every other policy in `tiers`.
 */
export function sortHostEndpointTiers(policies: Iterable<ModelPolicy>, tiers: ReadonlyMap<string, ModelTier>): HostEndpointTiers {
  const list = [...policies];
  return {
    tiers: tierInfos(list, tiers, (p) => !p.untracked && !p.preDnat, NORMAL),
    untrackedTiers: tierInfos(list, tiers, (p) => p.untracked, { forcePass: true, egress: true }),
    preDnatTiers: tierInfos(list, tiers, (p) => !p.untracked && p.preDnat, { forcePass: true, egress: false }),
    forwardTiers: tierInfos(list, tiers, (p) => !p.untracked && !p.preDnat && p.applyOnForward, NORMAL),
  };
}

interface TierListOptions {
  /** The tier's default becomes Pass (untracked and preDNAT lists). */
  readonly forcePass: boolean;
  /** Egress lists are filled (not for preDNAT, which is ingress only). */
  readonly egress: boolean;
}

const NORMAL: TierListOptions = { forcePass: false, egress: true };

/**
 * The ordered tiers holding the policies `include` admits. A tier is listed only when it holds
 * at least one of them in a list this kind of tier fills (either direction, enforced or staged).
 */
function tierInfos(policies: Iterable<ModelPolicy>, tiers: ReadonlyMap<string, ModelTier>, include: (p: ModelPolicy) => boolean, opts: TierListOptions): TierInfo[] {
  const byTier = new Map<string, ModelPolicy[]>();
  for (const p of policies) {
    if (!include(p) || !(p.governsIngress || (opts.egress && p.governsEgress))) continue;
    let list = byTier.get(p.id.tier);
    if (list === undefined) byTier.set(p.id.tier, (list = []));
    list.push(p);
  }
  const names = [...byTier.keys()].map((name) => ({ name, tier: tiers.get(name) }));
  names.sort(compareTiers);
  const egressOf = (ps: readonly ModelPolicy[]): PolicyId[] => (opts.egress ? ps.filter((p) => p.governsEgress).map((p) => p.id) : []);
  return names.map(({ name, tier }) => {
    const all = (byTier.get(name) ?? []).sort(comparePolicies);
    const list = all.filter((p) => !isStagedPolicy(p.id));
    const info: TierInfo = {
      name,
      defaultAction: opts.forcePass ? 'Pass' : (tier?.defaultAction ?? 'Deny'),
      ingressPolicies: list.filter((p) => p.governsIngress).map((p) => p.id),
      egressPolicies: egressOf(list),
    };
    if (list.length === all.length) return info;
    const staged = all.filter((p) => isStagedPolicy(p.id));
    return { ...info, stagedIngressPolicies: staged.filter((p) => p.governsIngress).map((p) => p.id), stagedEgressPolicies: egressOf(staged) };
  });
}
