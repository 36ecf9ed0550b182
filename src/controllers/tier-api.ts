/**
 * The two API calls the tier controller makes besides creating default tiers (which go
 * through the ObjectWriter): setting a Tier's finalizers under optimistic concurrency, and
 * listing, from the API server itself, the policies that name a tier.
 *
 * Why not server-side apply for the finalizer: a finalizer the controllers created a tier
 * with is owned by an Update operation, and an apply that omits it would not remove it; a
 * JSON merge patch that carries the whole list and the resourceVersion says exactly what
 * the list becomes, and fails (409) if anyone changed the tier since it was read.
 *
 * Why a live list: the informers for tiers and policies are separate watches, so a script
 * that creates a policy and at once deletes its tier may deliver the tier's deletion first.
 * Before the finalizer is released, the policies are listed from the API server (a quorum
 * read), which sees every policy written before the tier's DELETE.
 */
import { ApiException, CustomObjectsApi, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';

import { apiVersionOf, kindRow, type KindRow } from '../api/kinds.ts';
import { FIELD_MANAGER } from './ownership.ts';
import { policyTier } from './tier-reconciler.ts';

/** A kind of policy that names a tier (`spec.tier`). */
export type TieredPolicyKind = 'NetworkPolicy' | 'GlobalNetworkPolicy';

/**
 * The policy kinds whose `spec.tier` holds a Tier's deletion, with their kind-table rows: the
 * tier controller's informers and the live list before a finalizer is released read the same
 * kinds, so the two can never disagree about what holds a tier.
 */
export const TIERED_POLICIES: ReadonlyArray<{ readonly kind: TieredPolicyKind; readonly row: KindRow }> = [
  { kind: 'NetworkPolicy', row: kindRow('networkpolicies.projectcalico.org') },
  { kind: 'GlobalNetworkPolicy', row: kindRow('globalnetworkpolicies.projectcalico.org') },
];

const TIERS = kindRow('tiers.projectcalico.org');

/** A policy that names a tier. */
export interface PolicyRef {
  readonly kind: TieredPolicyKind;
  readonly namespace?: string;
  readonly name: string;
}

/** What the tier controller needs from the API server (KubeTierApi; fakes in unit tests). */
export interface TierApi {
  /**
   * Sets Tier `name`'s `metadata.finalizers` to exactly `finalizers`, provided its
   * resourceVersion is still `resourceVersion` (else rejects with a 409). A tier that is
   * already gone (404) is success.
   */
  setFinalizers(name: string, resourceVersion: string, finalizers: readonly string[]): Promise<void>;
  /** The NetworkPolicies and GlobalNetworkPolicies naming `tier`, listed from the API server. */
  listPoliciesInTier(tier: string): Promise<PolicyRef[]>;
}

export interface KubeTierApiOptions {
  kubeConfig: KubeConfig;
  /** Page size of the live policy lists. @default 500 */
  pageSize?: number;
}

export class KubeTierApi implements TierApi {
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;
  private readonly pageSize: number;

  constructor(opts: KubeTierApiOptions) {
    const { kubeConfig, pageSize = 500 } = opts;
    if (!Number.isInteger(pageSize) || pageSize < 1) throw new RangeError(`KubeTierApi: pageSize must be a positive integer, got ${pageSize}`);
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.pageSize = pageSize;
  }

  async setFinalizers(name: string, resourceVersion: string, finalizers: readonly string[]): Promise<void> {
    const patch = { apiVersion: apiVersionOf(TIERS), kind: TIERS.kind, metadata: { name, resourceVersion, finalizers: [...finalizers] } };
    try {
      await this.objects.patch(patch as KubernetesObject, undefined, undefined, FIELD_MANAGER, undefined, PatchStrategy.MergePatch);
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return;
      throw err;
    }
  }

  async listPoliciesInTier(tier: string): Promise<PolicyRef[]> {
    const out: PolicyRef[] = [];
    for (const { kind, row } of TIERED_POLICIES) {
      let continueToken: string | undefined;
      do {
        // Raw JSON (custom objects are not deserialized): `metadata.continue`, not `_continue`.
        const page = (await this.custom.listClusterCustomObject({
          group: row.group,
          version: row.version,
          plural: row.plural,
          limit: this.pageSize,
          ...(continueToken === undefined ? {} : { _continue: continueToken }),
        })) as { items?: Array<KubernetesObject & { spec?: unknown }>; metadata?: { continue?: string } };
        for (const p of page.items ?? []) {
          if (policyTier(p) !== tier) continue;
          const namespace = p.metadata?.namespace;
          out.push({ kind, name: p.metadata?.name ?? '', ...(namespace === undefined || namespace === '' ? {} : { namespace }) });
        }
        continueToken = page.metadata?.continue || undefined;
      } while (continueToken !== undefined);
    }
    return out;
  }
}
